/* mounts.c: see mounts.h. */
#include "mounts.h"

#include "context.h"
#include "db_common.h"
#include "libcommon/httpc.h"
#include "libcommon/log.h"
#include "libcommon/pgjson.h"

#include <stdlib.h>
#include <string.h>

static __thread httpc *t_client;

bool mounts_parse(json_t *config, json_t **names, json_t **map, http_resp *resp)
{
    json_t *m = config ? json_object_get(config, "mounts") : NULL;
    json_t *mm = config ? json_object_get(config, "mount_map") : NULL;
    *names = *map = NULL;
    if (m && !json_is_null(m) && !json_is_array(m)) {
        http_problem(resp, 400, "invalid-api-params", NULL,
                     "config.mounts: must be a list of vfolder names");
        return false;
    }
    if (mm && !json_is_null(mm) && !json_is_object(mm)) {
        http_problem(resp, 400, "invalid-api-params", NULL,
                     "config.mount_map: must be an object {vfolder name: path}");
        return false;
    }
    if (json_array_size(m) > 64) {
        http_problem(resp, 400, "invalid-api-params", NULL, "config.mounts: at most 64 vfolders");
        return false;
    }
    size_t i;
    json_t *v;
    json_array_foreach(m, i, v)
    {
        const char *n = json_string_value(v);
        if (!n || !*n) {
            http_problem(resp, 400, "invalid-api-params", NULL,
                         "config.mounts[%zu]: must be a vfolder name (a non-empty string)", i);
            return false;
        }
        for (size_t j = 0; j < i; j++)
            if (json_equal(json_array_get(m, j), v)) {
                http_problem(resp, 400, "invalid-api-params", NULL,
                             "config.mounts: vfolder %s is named twice", n);
                return false;
            }
    }
    const char *k;
    json_object_foreach(mm, k, v)
    {
        if (!json_is_string(v)) {
            http_problem(resp, 400, "invalid-api-params", NULL,
                         "config.mount_map[%s]: must be a path (a string)", k);
            return false;
        }
        bool listed = false;
        for (i = 0; i < json_array_size(m) && !listed; i++)
            listed = strcmp(json_string_value(json_array_get(m, i)), k) == 0;
        if (!listed) {
            http_problem(resp, 400, "invalid-api-params", NULL,
                         "config.mount_map: vfolder %s is not in config.mounts", k);
            return false;
        }
    }
    *names = json_is_array(m) ? json_incref(m) : json_array();
    *map = json_is_object(mm) ? json_incref(mm) : json_object();
    return true;
}

/* vfolder's problem relayed: same status, its msg, and which folder. */
static void _relay_problem(http_resp *resp, long status, json_t *prob)
{
    const char *type = json_string_value(json_object_get(prob, "type"));
    const char *kind = type && strrchr(type, '/') ? strrchr(type, '/') + 1 : "invalid-api-params";
    const char *msg = json_string_value(json_object_get(prob, "msg"));
    const char *folder = json_string_value(json_object_get(prob, "vfolder"));
    const char *title = json_string_value(json_object_get(prob, "title"));
    if (!title || !*title)
        title = status == 404 ? "Not Found" : status == 403 ? "Forbidden" : "Bad Request";
    json_t *out = http_problem_json(kind, title, NULL);
    char *text = ts_asprintf("mounts: %s", msg ? msg : "refused by tessera-vfolder");
    json_object_set_new(out, "msg", json_string(text));
    free(text);
    if (folder) json_object_set_new(out, "vfolder", json_string(folder));
    char *body = json_dumps(out, JSON_COMPACT);
    http_reply(resp, (int)status, "application/problem+json", body, strlen(body));
    free(body);
    json_decref(out);
}

bool mounts_resolve(const char *access_key, json_t *names, json_t *map, const char *request_id,
                    json_t **out, http_resp *resp)
{
    *out = NULL;
    if (!reg_settings.vfolder_url || !*reg_settings.vfolder_url) {
        http_problem(resp, 503, "service-unavailable", NULL,
                     "vfolder mounts are not available: vfolder.url is not set");
        return false;
    }
    if (!t_client) t_client = httpc_new_internal((int)reg_settings.vfolder_timeout_ms);
    json_t *body =
        json_pack("{s:s, s:O, s:O}", "access_key", access_key, "names", names, "mount_map", map);
    char *url = ts_asprintf("%s/v1/mounts/resolve", reg_settings.vfolder_url);
    long status = 0;
    json_t *ans = NULL;
    ts_err err = {{0}};
    bool ok = httpc_json(t_client, "POST", url, body, request_id, &status, &ans, &err);
    free(url);
    json_decref(body);
    if (!ok) {
        TLOG_WARN("tessera-vfolder did not answer", "error=\"%s\"", err.msg);
        http_problem(resp, 503, "service-unavailable", NULL,
                     "tessera-vfolder is unavailable, vfolder mounts cannot be resolved: %s",
                     err.msg);
        return false;
    }
    if (status == 200 && json_is_array(ans) && json_array_size(ans) == json_array_size(names)) {
        *out = ans;
        return true;
    }
    if ((status == 400 || status == 403 || status == 404) && json_is_object(ans)) {
        _relay_problem(resp, status, ans);
    } else {
        TLOG_WARN("tessera-vfolder failed to resolve mounts", "status=%ld", status);
        http_problem(resp, 503, "service-unavailable", NULL,
                     "tessera-vfolder failed to resolve the mounts (HTTP %ld)", status);
    }
    json_decref(ans);
    return false;
}

/* GET /v1/vfolder-mounts/{vfolder_id}: {"vfolder_id", "sessions": [{id, name,
 * status, access_key}]} for the sessions still using it: not ended and not
 * TERMINATING (a destroyed session's folders may go to the trash at once, as
 * Backend.AI lets them: the container is on its way out, and the trash is a
 * rename its mount follows). */
static void h_vfolder_mounts(http_req *req, http_resp *resp, void *ctx)
{
    svc *s = ctx;
    const char *id = http_param(req, "vfolder_id");
    if (!id || !ts_uuid_valid(id)) {
        http_problem(resp, 400, "invalid-api-params", NULL, "vfolder_id must be a UUID");
        return;
    }
    tlog_ctx_entity("folder", id);
    PGconn *conn = pgjson_get(s, resp);
    if (!conn) return;
    json_t *probe = json_pack("[{s:s}]", "vfolder_id", id);
    char *pt = json_dumps(probe, JSON_COMPACT);
    json_decref(probe);
    const char *p[] = {pt};
    PGresult *r = pgjson_query(conn, resp, "read mounting sessions",
                               "SELECT id::text, name, status, access_key FROM registry.sessions"
                               " WHERE mounts @> $1::jsonb AND status NOT IN " SQL_FINAL
                               " AND status <> 'TERMINATING' ORDER BY created_at",
                               1, p);
    free(pt);
    if (r) {
        json_t *list = json_array();
        for (int i = 0; i < PQntuples(r); i++)
            json_array_append_new(list, json_pack("{s:s, s:s, s:s, s:s}", "id", PQgetvalue(r, i, 0),
                                                  "name", PQgetvalue(r, i, 1), "status",
                                                  PQgetvalue(r, i, 2), "access_key",
                                                  PQgetvalue(r, i, 3)));
        PQclear(r);
        http_reply_json(resp, 200, json_pack("{s:s, s:o}", "vfolder_id", id, "sessions", list));
    }
    pgjson_put(s, conn);
}

void mounts_routes(svc *s)
{
    http_route(svc_router(s), "GET", "/v1/vfolder-mounts/{vfolder_id}", h_vfolder_mounts, s);
}
