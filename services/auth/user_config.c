/* user_config.c: the signing keypair's bootstrap script and dotfiles (see
 * user_config.h). */
#include "user_config.h"

#include "admin.h"
#include "libcommon/home_path.h"
#include "libcommon/log.h"

#include <stdlib.h>
#include <string.h>

bool user_config_begin(admin_req *a, svc *s, http_req *req, http_resp *resp)
{
    if (!admin_begin(a, s, req, resp, REQ_ANY, NULL)) return false;
    if (caller_has_access_key(&a->c, resp)) return true;
    admin_end(a);
    return false;
}

char *user_config_column(admin_req *a, const char *column, const char *what)
{
    const char *p[] = {a->c.access_key};
    char *sql = ts_asprintf("SELECT COALESCE(%s, '') FROM auth.keypair_configs"
                            " WHERE access_key = $1",
                            column);
    PGresult *r = pgjson_query(a->fr.conn, a->fr.resp, what, sql, 1, p);
    free(sql);
    if (!r) return NULL;
    char *v = ts_strdup(PQntuples(r) == 1 ? PQgetvalue(r, 0, 0) : "");
    PQclear(r);
    return v;
}

/* A text field (newlines and tabs allowed, unlike names) of at most max
 * bytes; jansson has already refused invalid UTF-8 and NUL. */
static bool _text_field(json_t *body, const char *key, size_t max, const char **out,
                        http_resp *resp)
{
    json_t *v = json_object_get(body, key);
    if (!json_is_string(v)) {
        http_problem(resp, 400, "invalid-api-params", NULL, "%s (a string) is required", key);
        return false;
    }
    if (json_string_length(v) > max) {
        http_problem(resp, 400, "invalid-api-params", NULL, "%s may have up to %zu bytes", key,
                     max);
        return false;
    }
    *out = json_string_value(v);
    return true;
}

void user_config_changed(admin_req *a)
{
    const char *p[] = {a->c.access_key};
    PGresult *r =
        pgjson_query(a->fr.conn, NULL, "read keypair",
                     "SELECT access_key, user_id::text AS user_id, is_active, is_admin,"
                     " resource_policy, rate_limit FROM auth.keypairs WHERE access_key = $1",
                     1, p);
    if (r && PQntuples(r) == 1) {
        json_t *k = pgjson_row_json(r, 0);
        events_keypair_changed(a->fr.s, a->fr.req->request_id, k, a->c.user_id);
        json_decref(k);
    }
    if (r) PQclear(r);
}

/* ---- bootstrap script ------------------------------------------------- */

static void h_script_get(http_req *req, http_resp *resp, void *ctx)
{
    admin_req a;
    if (!user_config_begin(&a, ctx, req, resp)) return;
    char *script = user_config_column(&a, "bootstrap_script", "read bootstrap script");
    if (script) http_reply_json(resp, 200, json_string(script));
    free(script);
    admin_end(&a);
}

static void h_script_set(http_req *req, http_resp *resp, void *ctx)
{
    json_t *body = http_json_body(req, resp);
    if (!body) return;
    static const char *const keys[] = {"script", NULL};
    const char *script;
    admin_req a;
    if (!pgjson_only_keys(body, keys, resp) ||
        !_text_field(body, "script", USER_CONFIG_TEXT_MAX, &script, resp) ||
        !user_config_begin(&a, ctx, req, resp)) {
        json_decref(body);
        return;
    }
    const char *p[] = {a.c.access_key, script};
    PGresult *r = pgjson_query(a.fr.conn, resp, "store bootstrap script",
                               "INSERT INTO auth.keypair_configs (access_key, bootstrap_script)"
                               " VALUES ($1, $2) ON CONFLICT (access_key) DO UPDATE SET"
                               " bootstrap_script = EXCLUDED.bootstrap_script, modified_at = now()",
                               2, p);
    if (r) {
        PQclear(r);
        user_config_changed(&a);
        TLOG_INFO("bootstrap script set", "bytes=%zu", strlen(script));
        http_reply_json(resp, 200, json_object());
    }
    json_decref(body);
    admin_end(&a);
}

/* ---- dotfiles ---------------------------------------------------------- */

/* The path argument of a GET or DELETE: the query's, else (DELETE, as the
 * SDK sends it) the JSON body's. NULL when absent; *bad after a 400. */
static const char *_path_arg(http_req *req, http_resp *resp, json_t **body, bool *bad)
{
    *bad = false;
    const char *path = admin_query_arg(req, "path");
    if (!path && req->body_len > 0) {
        *body = http_json_body(req, resp);
        if (!*body) {
            *bad = true;
            return NULL;
        }
        json_t *v = json_object_get(*body, "path");
        if (v && !json_is_string(v)) {
            http_problem(resp, 400, "invalid-api-params", NULL, "path must be a string");
            *bad = true;
            return NULL;
        }
        path = json_string_value(v);
    }
    return path;
}

/* The caller's dotfiles (a JSON array; [] when none); FOR UPDATE inside a
 * transaction. NULL after a problem. */
static json_t *_load(admin_req *a, bool for_update)
{
    const char *p[] = {a->c.access_key};
    PGresult *r = pgjson_query(a->fr.conn, a->fr.resp, "read dotfiles",
                               for_update ? "SELECT dotfiles::text FROM auth.keypair_configs"
                                            " WHERE access_key = $1 FOR UPDATE"
                                          : "SELECT dotfiles::text FROM auth.keypair_configs"
                                            " WHERE access_key = $1",
                               1, p);
    if (!r) return NULL;
    json_t *list = PQntuples(r) == 1 ? json_loads(PQgetvalue(r, 0, 0), 0, NULL) : json_array();
    PQclear(r);
    if (!json_is_array(list)) {
        json_decref(list);
        http_problem(a->fr.resp, 500, "internal-error", NULL, "stored dotfiles are not a list");
        return NULL;
    }
    return list;
}

static ssize_t _find(json_t *list, const char *path)
{
    size_t i;
    json_t *e;
    json_array_foreach(list, i, e)
    {
        const char *p = json_string_value(json_object_get(e, "path"));
        if (p && strcmp(p, path) == 0) return (ssize_t)i;
    }
    return -1;
}

static void h_dotfiles_get(http_req *req, http_resp *resp, void *ctx)
{
    json_t *body = NULL;
    bool bad;
    const char *path = _path_arg(req, resp, &body, &bad);
    admin_req a;
    if (bad || !user_config_begin(&a, ctx, req, resp)) {
        json_decref(body);
        return;
    }
    json_t *list = _load(&a, false);
    if (list && !path) {
        json_t *out = json_array();
        size_t i;
        json_t *e;
        json_array_foreach(list, i, e) json_array_append_new(
            out, json_pack("{s:O, s:O, s:O}", "path", json_object_get(e, "path"), "permission",
                           json_object_get(e, "perm"), "data", json_object_get(e, "data")));
        http_reply_json(resp, 200, out);
    } else if (list) {
        ssize_t i = _find(list, path);
        if (i < 0)
            http_problem(resp, 404, "not-found", NULL, "no dotfile %s", path);
        else
            http_reply_json(resp, 200, json_incref(json_array_get(list, (size_t)i)));
    }
    json_decref(list);
    json_decref(body);
    admin_end(&a);
}

/* Store list for the caller's key (inside the transaction), after the
 * count and size checks. */
static bool _store(admin_req *a, json_t *list)
{
    if (json_array_size(list) > USER_CONFIG_DOTFILES_MAX) {
        http_problem(a->fr.resp, 400, "invalid-api-params", NULL, "at most %d dotfiles per keypair",
                     USER_CONFIG_DOTFILES_MAX);
        return false;
    }
    char *text = json_dumps(list, JSON_COMPACT);
    if (!text || strlen(text) > USER_CONFIG_TEXT_MAX) {
        http_problem(a->fr.resp, 400, "invalid-api-params", NULL,
                     "the dotfiles of a keypair may have up to %d bytes in all (JSON)",
                     USER_CONFIG_TEXT_MAX);
        free(text);
        return false;
    }
    const char *p[] = {a->c.access_key, text};
    PGresult *r = pgjson_query(a->fr.conn, a->fr.resp, "store dotfiles",
                               "INSERT INTO auth.keypair_configs (access_key, dotfiles)"
                               " VALUES ($1, $2::jsonb) ON CONFLICT (access_key) DO UPDATE SET"
                               " dotfiles = EXCLUDED.dotfiles, modified_at = now()",
                               2, p);
    free(text);
    if (!r) return false;
    PQclear(r);
    return true;
}

/* POST (create: 400 when the path exists) and PATCH (replace: 404 when it
 * does not). */
static void _dotfile_write(http_req *req, http_resp *resp, svc *s, bool create)
{
    json_t *body = http_json_body(req, resp);
    if (!body) return;
    static const char *const keys[] = {"path", "data", "permission", "owner_access_key", NULL};
    const char *path, *data, *perm, *owner;
    const char *why = NULL;
    admin_req a;
    if (!pgjson_only_keys(body, keys, resp) ||
        !pgjson_field_str(body, "path", true, 1, HOME_PATH_MAX, &path, resp) ||
        !_text_field(body, "data", USER_CONFIG_TEXT_MAX, &data, resp) ||
        !pgjson_field_str(body, "permission", true, 3, 3, &perm, resp) ||
        !pgjson_field_str(body, "owner_access_key", false, 20, 20, &owner, resp))
        goto out;
    if ((why = home_path_problem(path))) {
        http_problem(resp, 400, "invalid-api-params", NULL, "%s", why);
        goto out;
    }
    if (strspn(perm, "01234567") != 3) {
        http_problem(resp, 400, "invalid-api-params", NULL,
                     "permission must be three octal digits, such as 644");
        goto out;
    }
    if (!user_config_begin(&a, s, req, resp)) goto out;
    if (owner && strcmp(owner, a.c.access_key) != 0) {
        /* Backend.AI lets superadmins act on another keypair's; we do not. */
        http_problem(resp, 403, "forbidden", NULL,
                     "owner_access_key must be the signing keypair's own");
    } else if (pgjson_begin(a.fr.conn, resp)) {
        json_t *list = _load(&a, true);
        ssize_t i = list ? _find(list, path) : -1;
        bool ok = list != NULL;
        if (ok && create && i >= 0) {
            http_problem(resp, 400, "invalid-api-params", NULL, "dotfile %s already exists", path);
            ok = false;
        } else if (ok && !create && i < 0) {
            http_problem(resp, 404, "not-found", NULL, "no dotfile %s", path);
            ok = false;
        }
        if (ok) {
            json_t *e = json_pack("{s:s, s:s, s:s}", "path", path, "perm", perm, "data", data);
            if (i >= 0)
                json_array_set_new(list, (size_t)i, e);
            else
                json_array_append_new(list, e);
            ok = _store(&a, list) && pgjson_commit(a.fr.conn, resp);
        }
        if (ok) {
            user_config_changed(&a);
            TLOG_INFO(create ? "dotfile created" : "dotfile updated", "path=%s bytes=%zu", path,
                      strlen(data));
            http_reply_json(resp, 200, json_object());
        } else {
            pg_rollback(a.fr.conn);
        }
        json_decref(list);
    }
    admin_end(&a);
out:
    json_decref(body);
}

static void h_dotfiles_create(http_req *req, http_resp *resp, void *ctx)
{
    _dotfile_write(req, resp, ctx, true);
}

static void h_dotfiles_update(http_req *req, http_resp *resp, void *ctx)
{
    _dotfile_write(req, resp, ctx, false);
}

static void h_dotfiles_delete(http_req *req, http_resp *resp, void *ctx)
{
    json_t *body = NULL;
    bool bad;
    const char *path = _path_arg(req, resp, &body, &bad);
    admin_req a;
    if (bad) goto out;
    if (!path) {
        http_problem(resp, 400, "invalid-api-params", NULL, "path is required");
        goto out;
    }
    if (!user_config_begin(&a, ctx, req, resp)) goto out;
    if (pgjson_begin(a.fr.conn, resp)) {
        json_t *list = _load(&a, true);
        ssize_t i = list ? _find(list, path) : -1;
        bool ok = false;
        if (list && i < 0) {
            http_problem(resp, 404, "not-found", NULL, "no dotfile %s", path);
        } else if (list) {
            json_array_remove(list, (size_t)i);
            ok = _store(&a, list) && pgjson_commit(a.fr.conn, resp);
        }
        if (ok) {
            user_config_changed(&a);
            TLOG_INFO("dotfile deleted", "path=%s", path);
            http_reply_json(resp, 200, json_pack("{s:b}", "success", 1));
        } else {
            pg_rollback(a.fr.conn);
        }
        json_decref(list);
    }
    admin_end(&a);
out:
    json_decref(body);
}

void user_config_routes(svc *s)
{
    http_router *r = svc_router(s);
    http_route(r, "GET", "/v1/user-config/bootstrap-script", h_script_get, s);
    http_route(r, "POST", "/v1/user-config/bootstrap-script", h_script_set, s);
    http_route(r, "GET", "/v1/user-config/dotfiles", h_dotfiles_get, s);
    http_route(r, "POST", "/v1/user-config/dotfiles", h_dotfiles_create, s);
    http_route(r, "PATCH", "/v1/user-config/dotfiles", h_dotfiles_update, s);
    http_route(r, "DELETE", "/v1/user-config/dotfiles", h_dotfiles_delete, s);
}
