/* container_registries.c: see container_registries.h. */
#include "container_registries.h"

#include "caller.h"
#include "libcommon/image_ref.h"
#include "libcommon/log.h"
#include "libcommon/pgjson.h"

#include <stdlib.h>
#include <string.h>

static bool is_builtin(const char *name)
{
    return reg_settings.oci_registry && *reg_settings.oci_registry &&
           strcmp(name, reg_settings.oci_registry) == 0;
}

bool creg_plain_http(PGconn *conn, const char *host, bool *plain, ts_err *err)
{
    *plain = reg_settings.oci_plain_http;
    if (!host || !*host || is_builtin(host)) return true;
    const char *p[] = {host};
    PGresult *r = reg_exec(
        conn, "SELECT url FROM registry.container_registries WHERE hostname = $1", 1, p, err);
    bool ok = r != NULL;
    if (ok && PQntuples(r) == 1) *plain = strncmp(PQgetvalue(r, 0, 0), "http://", 7) == 0;
    if (r) PQclear(r);
    return ok;
}

static json_t *entry(const char *url, const char *type, const char *project)
{
    return json_pack("{s:s, s:s, s:s}", "", url, "type", type, "project", project);
}

json_t *creg_list(PGconn *conn, http_resp *resp)
{
    PGresult *r = pgjson_query(conn, resp, "list container registries",
                               "SELECT hostname, url, type, project"
                               " FROM registry.container_registries ORDER BY hostname",
                               0, NULL);
    if (!r) return NULL;
    json_t *out = json_object();
    if (reg_settings.oci_registry && *reg_settings.oci_registry) {
        char *url = ts_asprintf("%s://%s", reg_settings.oci_plain_http ? "http" : "https",
                                reg_settings.oci_registry);
        json_object_set_new(out, reg_settings.oci_registry, entry(url, "docker", ""));
        free(url);
    }
    for (int i = 0; i < PQntuples(r); i++)
        json_object_set_new(out, PQgetvalue(r, i, 0),
                            entry(PQgetvalue(r, i, 1), PQgetvalue(r, i, 2), PQgetvalue(r, i, 3)));
    PQclear(r);
    return out;
}

/* GET /v1/config/docker-registries: {"<name>": "<url>"} (Backend.AI's
 * deprecated listing), superadmins. */
static void h_docker_registries(http_req *req, http_resp *resp, void *ctx)
{
    reg_req x;
    json_t *regs = NULL;
    if (!reg_req_begin(&x, ctx, req, resp, REQ_SUPERADMIN,
                       "only superadmins may list container registries") ||
        !req_frame_conn(&x.fr) || !(regs = creg_list(x.fr.conn, resp)))
        goto out;
    json_t *out = json_object();
    const char *name;
    json_t *f;
    json_object_foreach(regs, name, f) json_object_set(out, name, json_object_get(f, ""));
    http_reply_json(resp, 200, out);
out:
    json_decref(regs);
    reg_req_end(&x);
}

void creg_routes(svc *s)
{
    http_route(svc_router(s), "GET", "/v1/config/docker-registries", h_docker_registries, s);
}

json_t *creg_scan_targets(PGconn *conn, const char *only, bool *known, ts_err *err)
{
    *known = false;
    json_t *out = json_array();
    if (reg_settings.oci_registry && *reg_settings.oci_registry &&
        (!only || strcmp(only, reg_settings.oci_registry) == 0)) {
        json_array_append_new(
            out, json_pack("{s:s, s:s}", "host", reg_settings.oci_registry, "project", ""));
        *known = true;
    }
    const char *p[] = {only};
    PGresult *r = reg_exec(conn,
                           "SELECT hostname, project FROM registry.container_registries"
                           " WHERE $1::text IS NULL OR hostname = $1 ORDER BY hostname",
                           1, p, err);
    if (!r) {
        json_decref(out);
        return NULL;
    }
    for (int i = 0; i < PQntuples(r); i++) {
        if (is_builtin(PQgetvalue(r, i, 0))) continue;
        json_array_append_new(out, json_pack("{s:s, s:s}", "host", PQgetvalue(r, i, 0), "project",
                                             PQgetvalue(r, i, 1)));
        *known = true;
    }
    PQclear(r);
    return out;
}

/* The URL's authority must be the registry's name; a path is not allowed. */
static bool url_valid(const char *name, const char *url, http_resp *resp)
{
    const char *rest = NULL;
    if (strncmp(url, "https://", 8) == 0)
        rest = url + 8;
    else if (strncmp(url, "http://", 7) == 0)
        rest = url + 7;
    if (!rest) {
        http_problem(resp, 400, "invalid-api-params", NULL,
                     "registry %s: the URL (\"\") must start with http:// or https://", name);
        return false;
    }
    size_t n = strlen(rest);
    while (n > 0 && rest[n - 1] == '/')
        n--;
    if (n != strlen(name) || strncmp(rest, name, n) != 0) {
        http_problem(resp, 400, "invalid-api-params", NULL,
                     "registry %s: the URL must be http(s)://%s (images are named by the "
                     "registry's host[:port]; a path is not supported)",
                     name, name);
        return false;
    }
    if (rest == url + 7 && !reg_settings.oci_plain_http) {
        http_problem(resp, 400, "invalid-api-params", NULL,
                     "registry %s: plain http:// registries need oci.plain_http (development); "
                     "use https://",
                     name);
        return false;
    }
    return true;
}

static bool name_valid(const char *name, http_resp *resp)
{
    if (is_builtin(name)) {
        http_problem(resp, 400, "invalid-api-params", NULL,
                     "%s is the built-in registry (oci.registry in the registry's configuration): "
                     "it cannot be changed or deleted here",
                     name);
        return false;
    }
    if (!image_ref_host_valid(name)) {
        http_problem(resp, 400, "invalid-api-params", NULL,
                     "registry name %s: must be the registry's host[:port] "
                     "(e.g. registry.example.com:5000)",
                     name);
        return false;
    }
    return true;
}

bool creg_set(PGconn *conn, const char *name, json_t *fields, http_resp *resp)
{
    if (!name_valid(name, resp)) return false;
    if (!json_is_object(fields)) {
        http_problem(resp, 400, "invalid-api-params", NULL,
                     "registry %s: the value must be an object {\"\": url, \"type\", \"project\"}",
                     name);
        return false;
    }
    const char *k;
    json_t *v;
    json_object_foreach(fields, k, v)
    {
        if (strcmp(k, "username") == 0 || strcmp(k, "password") == 0 ||
            strcmp(k, "ssl_verify") == 0) {
            http_problem(resp, 400, "invalid-api-params", NULL,
                         "registry %s: %s: registry credentials and TLS options are not supported "
                         "yet (the OCI client has no authentication)",
                         name, k);
            return false;
        }
        if (strcmp(k, "") != 0 && strcmp(k, "type") != 0 && strcmp(k, "project") != 0) {
            http_problem(resp, 400, "invalid-api-params", NULL,
                         "registry %s: unknown field \"%s\" (known: \"\" (the URL), type, project)",
                         name, k);
            return false;
        }
        if (!json_is_string(v) || json_string_length(v) > 255) {
            http_problem(resp, 400, "invalid-api-params", NULL,
                         "registry %s: \"%s\" must be a string of at most 255 bytes", name, k);
            return false;
        }
    }
    const char *url = json_string_value(json_object_get(fields, ""));
    const char *type = json_string_value(json_object_get(fields, "type"));
    const char *project = json_string_value(json_object_get(fields, "project"));
    if (url && !url_valid(name, url, resp)) return false;
    if (type && strcmp(type, "docker") != 0 && strcmp(type, "harbor") != 0 &&
        strcmp(type, "harbor2") != 0) {
        http_problem(resp, 400, "invalid-api-params", NULL,
                     "registry %s: type must be docker, harbor or harbor2", name);
        return false;
    }
    if (project && *project &&
        strspn(project, "abcdefghijklmnopqrstuvwxyz0123456789._-") != strlen(project)) {
        http_problem(resp, 400, "invalid-api-params", NULL,
                     "registry %s: project must be one path component ([a-z0-9._-])", name);
        return false;
    }
    const char *p[] = {name, url, type, project};
    PGresult *r = pgjson_query(
        conn, resp, "set container registry",
        "INSERT INTO registry.container_registries AS c (hostname, url, type, project)"
        " SELECT $1, $2, coalesce($3, 'docker'), coalesce($4, '') WHERE $2::text IS NOT NULL"
        " ON CONFLICT (hostname) DO UPDATE SET url = coalesce($2, c.url),"
        " type = coalesce($3, c.type), project = coalesce($4, c.project)",
        4, p);
    if (!r) return false;
    bool done = atoi(PQcmdTuples(r)) > 0;
    PQclear(r);
    if (!done && url == NULL) {
        /* not there yet and no URL: nothing inserted; an update needs the row */
        r = pgjson_query(
            conn, resp, "set container registry",
            "UPDATE registry.container_registries SET type = coalesce($3, type),"
            " project = coalesce($4, project) WHERE hostname = $1 AND $2::text IS NULL",
            4, p);
        if (!r) return false;
        done = atoi(PQcmdTuples(r)) > 0;
        PQclear(r);
    }
    if (!done) {
        http_problem(resp, 400, "invalid-api-params", NULL,
                     "registry %s is not registered: give its URL "
                     "(config/docker/registry/%s = {\"\": \"https://%s\"})",
                     name, name, name);
        return false;
    }
    TLOG_INFO("container registry set", "registry=%s", name);
    return true;
}

bool creg_delete(PGconn *conn, const char *name, http_resp *resp)
{
    if (is_builtin(name)) return name_valid(name, resp);
    const char *p[] = {name};
    PGresult *r =
        pgjson_query(conn, resp, "delete container registry",
                     "DELETE FROM registry.container_registries WHERE hostname = $1", 1, p);
    if (!r) return false;
    bool done = atoi(PQcmdTuples(r)) > 0;
    PQclear(r);
    if (!done) {
        http_problem(resp, 404, "not-found", NULL, "unknown container registry %s", name);
        return false;
    }
    TLOG_INFO("container registry deleted", "registry=%s", name);
    return true;
}
