/* route_sync.c: wsproxy's app routes kept and restored (see route_sync.h). */
#include "route_sync.h"

#include "app_routes.h"
#include "context.h"
#include "db_common.h"
#include "libcommon/httpc.h"
#include "libcommon/log.h"
#include "repairs.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* wsproxy's names (services/wsproxy/routes.h) */
#define ROUTES_JOURNAL "wsproxy:routes:journal"
#define ROUTES_EPOCH "wsproxy:routes:epoch"
#define JOURNAL_BATCH "500"
#define RESTORE_CHUNK 500
#define CALL_TIMEOUT_MS 5000
#define CLEANUP_EVERY 30 /* passes */

/* Sessions whose routes are kept: wsproxy keeps them through a restart. */
#define ROUTES_LIVE "('RUNNING', 'RESTARTING')"

static bool read_state(PGconn *conn, char last_id[64], char epoch[64], ts_err *err)
{
    PGresult *r = reg_exec(
        conn, "SELECT journal_last_id, epoch FROM registry.route_sync WHERE id = 1", 0, NULL, err);
    if (!r) return false;
    bool ok = PQntuples(r) == 1;
    if (ok) {
        ts_strlcpy(last_id, PQgetvalue(r, 0, 0), 64);
        ts_strlcpy(epoch, PQgetvalue(r, 0, 1), 64);
    } else {
        ts_err_set(err, "registry.route_sync has no row");
    }
    PQclear(r);
    return ok;
}

static bool redis_epoch(rds *rd, char epoch[64], ts_err *err)
{
    const char *argv[] = {"GET", ROUTES_EPOCH};
    redisReply *rep = rds_command(rd, 2, argv, NULL, err);
    if (!rep) return false;
    epoch[0] = '\0';
    bool ok = rep->type == REDIS_REPLY_STRING || rep->type == REDIS_REPLY_NIL;
    if (rep->type == REDIS_REPLY_STRING) ts_strlcpy(epoch, rep->str, 64);
    if (!ok) ts_err_set(err, "Redis GET %s: unexpected reply", ROUTES_EPOCH);
    freeReplyObject(rep);
    return ok;
}

static const char *field(redisReply *f, const char *name)
{
    for (size_t k = 0; f && f->type == REDIS_REPLY_ARRAY && k + 1 < f->elements; k += 2)
        if (f->element[k]->type == REDIS_REPLY_STRING && strcmp(f->element[k]->str, name) == 0 &&
            f->element[k + 1]->type == REDIS_REPLY_STRING)
            return f->element[k + 1]->str;
    return NULL;
}

static const char copy_sql[] =
    "WITH ins AS (INSERT INTO registry.app_routes (key, session_id, route, expires_at)"
    "   SELECT e->>'key', s.id, e->'route',"
    "     to_timestamp((e->'route'->>'expires_at')::bigint / 1000.0)"
    "   FROM jsonb_array_elements($1::jsonb) e"
    "   JOIN registry.sessions s ON s.id::text = e->'route'->>'session_id'"
    "   WHERE s.status IN " ROUTES_LIVE " AND e->'route'->>'expires_at' ~ '^[0-9]{1,15}$'"
    "   ON CONFLICT (key) DO NOTHING RETURNING 1)"
    " UPDATE registry.route_sync SET journal_last_id = $2"
    " WHERE id = 1 AND (SELECT count(*) FROM ins) >= 0";

/* The journal's entries after last_id into registry.app_routes. */
static bool copy_journal(rds *rd, PGconn *conn, char last_id[64], ts_err *err)
{
    for (int round = 0; round < 20; round++) {
        char start[80];
        snprintf(start, sizeof(start), "(%s", last_id);
        const char *argv[] = {"XRANGE", ROUTES_JOURNAL, start, "+", "COUNT", JOURNAL_BATCH};
        redisReply *rep = rds_command(rd, 6, argv, NULL, err);
        if (!rep) return false;
        if (rep->type != REDIS_REPLY_ARRAY) {
            ts_err_set(err, "Redis XRANGE: %s", rep->type == REDIS_REPLY_ERROR ? rep->str : "?");
            freeReplyObject(rep);
            return false;
        }
        size_t n = rep->elements;
        json_t *arr = json_array();
        char next[64];
        ts_strlcpy(next, last_id, sizeof(next));
        for (size_t i = 0; i < n; i++) {
            redisReply *e = rep->element[i];
            if (e->type != REDIS_REPLY_ARRAY || e->elements != 2 ||
                e->element[0]->type != REDIS_REPLY_STRING)
                continue;
            ts_strlcpy(next, e->element[0]->str, sizeof(next));
            const char *key = field(e->element[1], "key");
            const char *route = field(e->element[1], "route");
            json_t *rj = route ? json_loads(route, 0, NULL) : NULL;
            if (key && json_is_object(rj))
                json_array_append_new(arr, json_pack("{s:s, s:O}", "key", key, "route", rj));
            json_decref(rj);
        }
        freeReplyObject(rep);
        if (n == 0) {
            json_decref(arr);
            return true;
        }
        char *text = json_dumps(arr, JSON_COMPACT);
        json_decref(arr);
        const char *p[] = {text, next};
        bool ok = reg_run(conn, copy_sql, 2, p, err);
        free(text);
        if (!ok) return false;
        ts_strlcpy(last_id, next, 64);
        if (n < (size_t)atoi(JOURNAL_BATCH)) return true;
    }
    return true;
}

/* POST /v1/routes/restore with the routes of rows [from, to) of r. */
static bool post_restore(httpc *c, PGresult *r, int from, int to, char epoch[64], ts_err *err)
{
    json_t *routes = json_array();
    for (int i = from; i < to; i++) {
        json_t *rj = json_loads(PQgetvalue(r, i, 1), 0, NULL);
        if (json_is_object(rj))
            json_array_append_new(routes,
                                  json_pack("{s:s, s:o}", "key", PQgetvalue(r, i, 0), "route", rj));
        else
            json_decref(rj);
    }
    json_t *body = json_pack("{s:o}", "routes", routes);
    char *url = ts_asprintf("%s/v1/routes/restore", reg_settings.wsproxy_url);
    long status = 0;
    json_t *answer = NULL;
    bool ok = httpc_json(c, "POST", url, body, NULL, &status, &answer, err);
    if (ok && status != 200) {
        ts_err_set(err, "%s answered %ld", url, status);
        ok = false;
    }
    if (ok) ts_strlcpy(epoch, json_string_value(json_object_get(answer, "epoch")) ?: "", 64);
    json_decref(answer);
    json_decref(body);
    free(url);
    return ok;
}

/* Redis lost the routes: restore the kept ones; the epoch they now belong to
 * into new_epoch. */
static bool restore(PGconn *conn, const char *old_epoch, const char *cur_epoch, char new_epoch[64],
                    ts_err *err)
{
    static __thread httpc *c;
    if (!c) c = httpc_new_internal(CALL_TIMEOUT_MS);
    PGresult *r = reg_exec(conn,
                           "SELECT r.key, r.route::text, r.session_id::text"
                           " FROM registry.app_routes r JOIN registry.sessions s"
                           " ON s.id = r.session_id WHERE s.status IN " ROUTES_LIVE
                           " AND r.expires_at > now() ORDER BY r.session_id",
                           0, NULL, err);
    if (!r) return false;
    int n = PQntuples(r);
    bool ok = true;
    for (int from = 0; ok && (from < n || from == 0); from += RESTORE_CHUNK) {
        int to = from + RESTORE_CHUNK < n ? from + RESTORE_CHUNK : n;
        ok = post_restore(c, r, from, to, new_epoch, err);
        if (n == 0) break;
    }
    if (!ok) {
        PQclear(r);
        return false;
    }
    /* one repair per session; sessions that ended meanwhile lose them again */
    const char **ids = ts_calloc((size_t)n + 1, sizeof(*ids));
    int *count = ts_calloc((size_t)n + 1, sizeof(*count));
    size_t ns = 0;
    for (int i = 0; i < n; i++) {
        const char *sid = PQgetvalue(r, i, 2);
        if (ns == 0 || strcmp(ids[ns - 1], sid) != 0) ids[ns++] = sid;
        count[ns - 1]++;
    }
    for (size_t i = 0; i < ns; i++) {
        char why[300];
        snprintf(why, sizeof(why),
                 "Redis lost the app routes (epoch '%s', now '%s'): %d routes restored", old_epoch,
                 cur_epoch, count[i]);
        repairs_record(RK_ROUTES_RESTORED, ids[i], NULL, NULL, why);
    }
    if (ns > 0) {
        char *arr = reg_uuid_array(ids, ns);
        const char *p[] = {arr};
        PGresult *gone =
            reg_exec(conn,
                     "SELECT id::text FROM registry.sessions WHERE id = ANY($1::uuid[])"
                     " AND status NOT IN " ROUTES_LIVE,
                     1, p, err);
        free(arr);
        for (int i = 0; gone && i < PQntuples(gone); i++)
            app_routes_revoke(PQgetvalue(gone, i, 0));
        if (gone) PQclear(gone);
    }
    free(ids);
    free(count);
    PQclear(r);
    return true;
}

/* Sessions that ended (or went) with rows here: their routes removed in
 * wsproxy again (the removal at their end may have been lost: a registry
 * killed with it queued, a wsproxy instance killed with the call in
 * flight), then their rows; a session wsproxy did not answer for keeps its
 * rows for the next cleanup. Then the expired rows. */
static bool cleanup(PGconn *conn, ts_err *err)
{
    static __thread httpc *c;
    if (!c) c = httpc_new_internal(CALL_TIMEOUT_MS);
    PGresult *r = reg_exec(conn,
                           "SELECT DISTINCT r.session_id::text FROM registry.app_routes r"
                           " WHERE NOT EXISTS (SELECT 1 FROM registry.sessions s"
                           "   WHERE s.id = r.session_id AND s.status NOT IN ('TERMINATING', "
                           "'TERMINATED', 'CANCELLED', 'ERROR'))",
                           0, NULL, err);
    if (!r) return false;
    bool ok = true;
    for (int i = 0; ok && i < PQntuples(r); i++) {
        const char *sid = PQgetvalue(r, i, 0);
        char *url = ts_asprintf("%s/v1/sessions/%s/routes", reg_settings.wsproxy_url, sid);
        long status = 0;
        json_t *answer = NULL;
        ts_err call = {{0}};
        bool removed = httpc_json(c, "DELETE", url, NULL, NULL, &status, &answer, &call) &&
                       (status == 200 || status == 404);
        json_decref(answer);
        free(url);
        const char *p[] = {sid};
        if (removed)
            ok = reg_run(conn, "DELETE FROM registry.app_routes WHERE session_id = $1::uuid", 1, p,
                         err);
        else
            TLOG_WARN("app routes of an ended session not removed (next cleanup)",
                      "session=%s status=%ld error=\"%s\"", sid, status, call.msg);
    }
    PQclear(r);
    return ok &&
           reg_run(conn, "DELETE FROM registry.app_routes WHERE expires_at < now()", 0, NULL, err);
}

void route_sync_pass(void)
{
    static __thread unsigned passes;
    if (!reg_settings.wsproxy_url || !*reg_settings.wsproxy_url) return;
    ts_err err = {{0}};
    rds *rd = reg_redis(&err);
    PGconn *conn = rd ? reg_pg_get(&err) : NULL;
    if (!conn) {
        TLOG_WARN("route sync: Redis or database unreachable", "error=\"%s\"", err.msg);
        return;
    }
    char last_id[64], stored[64], cur[64], renewed[64] = "";
    bool ok = read_state(conn, last_id, stored, &err) && redis_epoch(rd, cur, &err);
    if (ok && strcmp(cur, stored) != 0) {
        if (!stored[0]) {
            ts_strlcpy(renewed, cur, sizeof(renewed)); /* the first routes: nothing lost */
        } else if (restore(conn, stored, cur, renewed, &err)) {
            TLOG_WARN("app routes restored after a Redis loss", "epoch=%s was=%s now=%s", renewed,
                      stored, cur);
        } else {
            ok = false;
        }
        const char *p[] = {renewed};
        ok = ok &&
             reg_run(conn, "UPDATE registry.route_sync SET epoch = $1 WHERE id = 1", 1, p, &err);
    }
    ok = ok && copy_journal(rd, conn, last_id, &err);
    if (ok && ++passes % CLEANUP_EVERY == 0) ok = cleanup(conn, &err);
    if (!ok) TLOG_WARN("route sync failed", "error=\"%s\"", err.msg);
    reg_pg_put(conn);
}
