/* depinfo.c: see depinfo.h. */
#include "libcommon/depinfo.h"

#include "libcommon/httpc.h"

#include <string.h>

static json_t *failed(const char *fmt, const char *why)
{
    char msg[300];
    snprintf(msg, sizeof(msg), fmt, why && *why ? why : "failed");
    return json_pack("{s:s}", "status", msg);
}

json_t *depinfo_pg(pg_pool *p)
{
    if (!p) return failed("%s", "not connected");
    ts_err err = {{0}};
    PGconn *conn = pg_pool_get(p, 500, &err);
    if (!conn) return failed("%s", err.msg);
    const char *v = PQparameterStatus(conn, "server_version");
    json_t *o = json_pack("{s:s}", "status", "ok");
    if (v && *v) json_object_set_new(o, "version", json_string(v));
    pg_pool_put(p, conn);
    return o;
}

bool depinfo_info_field(const char *info, const char *key, char *out, size_t n)
{
    size_t klen = strlen(key);
    for (const char *line = info; line && *line;) {
        const char *end = line + strcspn(line, "\r\n");
        if ((size_t)(end - line) > klen && strncmp(line, key, klen) == 0 && line[klen] == ':') {
            size_t vlen = (size_t)(end - line) - klen - 1;
            if (vlen == 0 || n == 0) return false;
            if (vlen >= n) vlen = n - 1;
            memcpy(out, line + klen + 1, vlen);
            out[vlen] = '\0';
            return true;
        }
        line = end + strspn(end, "\r\n");
    }
    return false;
}

json_t *depinfo_redis(rds *r, const char *why)
{
    if (!r) return failed("%s", why);
    ts_err err = {{0}};
    const char *argv[] = {"INFO", "server"};
    redisReply *rep = rds_command(r, 2, argv, NULL, &err);
    if (!rep) return failed("%s", err.msg);
    json_t *o;
    char v[64];
    if (rep->type == REDIS_REPLY_ERROR) {
        o = failed("INFO: %s", rep->str);
    } else if (rep->type == REDIS_REPLY_STRING && rep->str &&
               depinfo_info_field(rep->str, "redis_version", v, sizeof(v))) {
        o = json_pack("{s:s, s:s}", "status", "ok", "version", v);
    } else {
        o = json_pack("{s:s}", "status", "ok");
    }
    freeReplyObject(rep);
    return o;
}

json_t *depinfo_http(const char *url, int timeout_ms, long ok_status)
{
    httpc *c = httpc_new(timeout_ms);
    httpc_resp r = {0};
    ts_err err = {{0}};
    json_t *o;
    if (!httpc_request(c, "GET", url, NULL, NULL, 0, NULL, &r, &err)) {
        o = failed("unreachable: %s", err.msg);
    } else if (r.status != ok_status && r.status != 401) {
        char why[32];
        snprintf(why, sizeof(why), "%ld", r.status);
        o = failed("answered %s", why);
    } else {
        o = json_pack("{s:s}", "status", "ok");
    }
    json_object_set_new(o, "url", json_string(url));
    httpc_resp_free(&r);
    httpc_free(c);
    return o;
}
