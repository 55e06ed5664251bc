/* announcement.c: GET and POST /v1/manager/announcement (see
 * announcement.h). */
#include "announcement.h"

#include "admin.h"
#include "libcommon/log.h"

#include <string.h>

static void h_get(http_req *req, http_resp *resp, void *ctx)
{
    admin_req a;
    if (!admin_begin(&a, ctx, req, resp, REQ_ANY, NULL)) return;
    PGresult *r = pgjson_query(a.fr.conn, resp, "read announcement",
                               "SELECT enabled, message FROM auth.announcement", 0, NULL);
    if (r) {
        bool one = PQntuples(r) == 1;
        http_reply_json(resp, 200,
                        json_pack("{s:b, s:s}", "enabled", one && PQgetvalue(r, 0, 0)[0] == 't',
                                  "message", one ? PQgetvalue(r, 0, 1) : ""));
        PQclear(r);
    }
    admin_end(&a);
}

static void h_set(http_req *req, http_resp *resp, void *ctx)
{
    json_t *body = http_json_body(req, resp);
    if (!body) return;
    static const char *const keys[] = {"enabled", "message", NULL};
    bool enabled = false, has_enabled;
    json_t *m = json_object_get(body, "message");
    admin_req a;
    if (!pgjson_only_keys(body, keys, resp) ||
        !pgjson_field_bool(body, "enabled", false, &enabled, &has_enabled, resp))
        goto out;
    if (m && !json_is_null(m) && !json_is_string(m)) {
        http_problem(resp, 400, "invalid-api-params", NULL, "message must be a string or null");
        goto out;
    }
    const char *message = json_is_string(m) ? json_string_value(m) : "";
    if (strlen(message) > ANNOUNCEMENT_MAX) {
        http_problem(resp, 400, "invalid-api-params", NULL, "message may have up to %d bytes",
                     ANNOUNCEMENT_MAX);
        goto out;
    }
    if (enabled && !*message) {
        http_problem(resp, 400, "invalid-api-params", NULL,
                     "an enabled announcement needs a message");
        goto out;
    }
    if (!admin_begin(&a, ctx, req, resp, REQ_SUPERADMIN,
                     "only superadmins change the announcement"))
        goto out;
    const char *p[] = {enabled ? "true" : "false", message, a.c.user_id};
    PGresult *r =
        pgjson_query(a.fr.conn, resp, "store announcement",
                     "INSERT INTO auth.announcement (id, enabled, message, modified_by)"
                     " VALUES (true, $1::bool, $2, $3::uuid) ON CONFLICT (id) DO UPDATE SET"
                     " enabled = EXCLUDED.enabled, message = EXCLUDED.message,"
                     " modified_by = EXCLUDED.modified_by, modified_at = now()",
                     3, p);
    if (r) {
        PQclear(r);
        TLOG_INFO("announcement set", "enabled=%s bytes=%zu", p[0], strlen(message));
        http_reply(resp, 204, NULL, NULL, 0);
    }
    admin_end(&a);
out:
    json_decref(body);
}

void announcement_routes(svc *s)
{
    http_route(svc_router(s), "GET", "/v1/manager/announcement", h_get, s);
    http_route(svc_router(s), "POST", "/v1/manager/announcement", h_set, s);
}
