/* sessions.c: get, list, destroy, restart and history (see sessions.h);
 * create is session_create.c. */
#include "sessions.h"

#include "caller.h"
#include "db_common.h"
#include "idle_network.h"
#include "libcommon/log.h"
#include "libcommon/pgjson.h"
#include "listing.h"
#include "session_view.h"
#include "tessera/v1/session.pb-c.h"
#include "transitions.h"
#include "usage_api.h"
#include "validation.h"

#include <stdlib.h>
#include <string.h>

/* May the caller see (and act on) a session of that user and domain? */
/* May the caller reach a session of user_id in domain, made with owner_ak?
 * Its owner and superadmins may; a domain admin may for its domain, but never
 * a superadmin's session (docs/api.md: a domain admin never acts on a
 * superadmin's things), so the owner's current role is read (auth's cached
 * context). False with resp unset when not allowed; false with resp set when
 * the owner's role could not be read (auth's answer, e.g. 503). */
static bool may_access(http_req *req, http_resp *resp, const ts_caller *c, const char *user_id,
                       const char *domain, const char *owner_ak)
{
    if (caller_is_superadmin(c)) return true;
    if (strcmp(c->user_id, user_id) == 0) return true;
    if (strcmp(c->role, "admin") != 0 || strcmp(c->domain_name, domain) != 0) return false;
    json_t *owner = NULL;
    http_resp *scratch = http_resp_new();
    bool got = context_get(req, scratch, owner_ak, NULL, &owner);
    int status = http_resp_status(scratch);
    http_resp_free(scratch);
    if (!got) {
        /* a keypair auth no longer knows is no superadmin's any more */
        if (status == 404) return true;
        http_problem(resp, 503, "service-unavailable", NULL,
                     "the session owner's role could not be read from tessera-auth (%d)", status);
        return false;
    }
    bool super = context_is_superadmin(owner);
    json_decref(owner);
    return !super;
}

bool sessions_find(PGconn *conn, http_req *req, http_resp *resp, const ts_caller *c,
                   char id[TS_UUID_STRLEN])
{
    const char *key = http_param(req, "id");
    const char *owner = http_query_arg(req, "owner_access_key");
    if (owner && *owner && strcmp(owner, c->access_key) != 0 && !caller_is_admin(c)) {
        http_problem(resp, 403, "forbidden", NULL,
                     "only administrators may address another keypair's sessions");
        return false;
    }
    const char *ak = owner && *owner ? owner : c->access_key;
    PGresult *r;
    if (ts_uuid_valid(key)) {
        const char *p[] = {key};
        r = pgjson_query(conn, resp, "find session",
                         "SELECT id::text, user_id::text, domain_name, access_key"
                         " FROM registry.sessions WHERE id = $1::uuid",
                         1, p);
    } else {
        const char *p[] = {ak, key};
        r = pgjson_query(conn, resp, "find session",
                         "SELECT id::text, user_id::text, domain_name, access_key"
                         " FROM registry.sessions WHERE access_key = $1 AND name = $2"
                         " ORDER BY (status NOT IN " SQL_FINAL ") DESC, created_at DESC LIMIT 1",
                         2, p);
    }
    if (!r) return false;
    bool ok = PQntuples(r) == 1 && may_access(req, resp, c, PQgetvalue(r, 0, 1),
                                              PQgetvalue(r, 0, 2), PQgetvalue(r, 0, 3));
    if (ok) {
        ts_strlcpy(id, PQgetvalue(r, 0, 0), TS_UUID_STRLEN);
        tlog_ctx_session(id);
    } else if (http_resp_status(resp) == 0)
        http_problem(resp, 404, "session-not-found", NULL, "no session %s", key);
    PQclear(r);
    return ok;
}

static void reply_view(http_resp *resp, PGconn *conn, const char *id, json_t *extra)
{
    const char *p[] = {id};
    json_t *v = session_view_one(conn, resp, "s.id = $1::uuid", 1, p);
    if (v) {
        idle_checks_refine(json_object_get(v, "idleChecks"), id);
        if (extra) json_object_update(v, extra);
        http_reply_json(resp, 200, v);
    }
    json_decref(extra);
}

/* A handler's work on the session the request names, found for the caller. */
typedef void (*session_fn)(http_resp *resp, PGconn *conn, const char *id);

static void on_session(http_req *req, http_resp *resp, svc *s, session_fn fn)
{
    ts_caller c;
    if (!caller_get(req, resp, NULL, &c)) return;
    PGconn *conn = pgjson_get(s, resp);
    char id[TS_UUID_STRLEN];
    if (conn && sessions_find(conn, req, resp, &c, id)) fn(resp, conn, id);
    pgjson_put(s, conn);
    caller_free(&c);
}

/* The view with the live figures of its latest usage samples (usage_api.h). */
static void reply_info(http_resp *resp, PGconn *conn, const char *id)
{
    reply_view(resp, conn, id, usage_live_json(conn, id));
}

static void reply_history(http_resp *resp, PGconn *conn, const char *id)
{
    const char *p[] = {id};
    PGresult *r = pgjson_query(conn, resp, "read history",
                               "SELECT status, reason, at FROM registry.session_status_history"
                               " WHERE session_id = $1::uuid ORDER BY id",
                               1, p);
    if (!r) return;
    http_reply_json(resp, 200,
                    json_pack("{s:s, s:o}", "sessionUuid", id, "items", pgjson_rows_json(r)));
    PQclear(r);
}

/* Backend.AI's status history: {status: when it was last entered}, and
 * the same under "result" with the statuses in lower case, which is what
 * Backend.AI's Python CLI (`session status-history`) reads. */
static void reply_status_history(http_resp *resp, PGconn *conn, const char *id)
{
    const char *p[] = {id};
    PGresult *r = pgjson_query(conn, resp, "read history",
                               "SELECT status, max(at) FROM registry.session_status_history"
                               " WHERE session_id = $1::uuid GROUP BY status ORDER BY max(at)",
                               1, p);
    if (!r) return;
    json_t *out = json_object(), *lower = json_object();
    for (int i = 0; i < PQntuples(r); i++) {
        char name[32];
        ts_strlcpy(name, PQgetvalue(r, i, 0), sizeof(name));
        json_object_set_new(out, name, pgjson_cell_json(r, i, 1));
        for (char *c = name; *c; c++)
            if (*c >= 'A' && *c <= 'Z') *c = (char)(*c - 'A' + 'a');
        json_object_set_new(lower, name, pgjson_cell_json(r, i, 1));
    }
    json_object_set_new(out, "result", lower);
    PQclear(r);
    http_reply_json(resp, 200, out);
}

static void h_status_history(http_req *req, http_resp *resp, void *ctx)
{
    on_session(req, resp, ctx, reply_status_history);
}

/* POST /v1/sessions/{id}/rename {"session_name"} (or "name",
 * "clientSessionToken", or ?name=): a live session's new name, unique among
 * its owner's live sessions. 204; 400 a bad name, 409 taken or ended. */
static void h_rename(http_req *req, http_resp *resp, void *ctx)
{
    svc *s = ctx;
    ts_caller c;
    if (!caller_get(req, resp, NULL, &c)) return;
    json_t *body = NULL;
    const char *name = http_query_arg(req, "name");
    if (req->body_len) {
        if (!(body = http_json_body(req, resp))) goto out;
        static const char *const keys[] = {"session_name", "name", "clientSessionToken"};
        for (size_t i = 0; i < TS_ARRAY_LEN(keys) && !name; i++) {
            const json_t *v = json_object_get(body, keys[i]);
            if (v && !json_is_string(v)) {
                http_problem(resp, 400, "invalid-api-params", NULL, "%s must be a string", keys[i]);
                goto out;
            }
            name = json_string_value(v);
        }
    }
    if (!name || !session_name_valid(name)) {
        http_problem(resp, 400, "invalid-api-params", NULL,
                     "session_name: the new name, 1 to 64 of letters, digits, '_', '-', '.'");
        goto out;
    }
    PGconn *conn = pgjson_get(s, resp);
    char id[TS_UUID_STRLEN];
    if (conn && sessions_find(conn, req, resp, &c, id)) {
        const char *p[] = {id, name};
        PGresult *r = pgjson_query(conn, resp, "rename session",
                                   "UPDATE registry.sessions SET name = $2 WHERE id = $1::uuid"
                                   " AND status NOT IN " SQL_FINAL " RETURNING 1",
                                   2, p);
        if (r && PQntuples(r) == 1) {
            TLOG_INFO("session renamed", "name=%s by=%s", name, c.access_key);
            http_reply(resp, 204, NULL, NULL, 0);
        } else if (r) {
            http_problem(resp, 409, "invalid-state", NULL, "the session has ended");
        }
        PQclear(r);
    }
    pgjson_put(s, conn);
out:
    json_decref(body);
    caller_free(&c);
}

static void h_get(http_req *req, http_resp *resp, void *ctx)
{
    on_session(req, resp, ctx, reply_info);
}

static void activity(http_resp *resp, PGconn *conn, const char *id)
{
    (void)conn;
    ts_err err = {{0}};
    if (idle_mark_active(id, &err)) {
        http_reply(resp, 204, NULL, NULL, 0);
        return;
    }
    TLOG_WARN("activity not recorded", "error=\"%s\"", err.msg);
    http_problem(resp, 503, "service-unavailable", NULL, "activity cannot be recorded now");
}

/* Use of the session outside the registry (the gateway's streams): the idle
 * checker counts it (idle_network.h). */
static void h_activity(http_req *req, http_resp *resp, void *ctx)
{
    on_session(req, resp, ctx, activity);
}

static void h_history(http_req *req, http_resp *resp, void *ctx)
{
    on_session(req, resp, ctx, reply_history);
}

static void h_list(http_req *req, http_resp *resp, void *ctx)
{
    ts_caller c;
    if (!caller_get(req, resp, NULL, &c)) return;
    const char *owner = http_query_arg(req, "owner");
    if (!owner) owner = http_query_arg(req, "owner_access_key");
    if (owner && !*owner) owner = NULL;
    /* users: their own sessions; a user asking for another owner gets none */
    const char *user = caller_is_admin(&c) ? NULL : c.user_id;
    const char *domain = strcmp(c.role, "admin") == 0 ? c.domain_name : NULL;
    const char *status = http_query_arg(req, "status");
    const char *type = http_query_arg(req, "type");
    /* narrowing to a project or a domain (GraphQL's compute_session_list) */
    const char *group = http_query_arg(req, "group_id");
    const char *domain_name = http_query_arg(req, "domain_name");
    if (group && !*group) group = NULL;
    if (domain_name && !*domain_name) domain_name = NULL;
    if (group && !ts_uuid_valid(group)) {
        http_problem(resp, 400, "invalid-api-params", NULL, "group_id: not a project id: %.64s",
                     group);
        caller_free(&c);
        return;
    }
    /* a domain admin does not see its domain's superadmins' sessions */
    char *hidden = caller_hidden_users(&c);
    /* The page's ids first, from registry.sessions alone (sessions_created_at:
     * a page reads its offset + limit index entries), then the view (kernels,
     * lifetime) for those rows only; the total counts the filtered rows
     * without the view. count(*) OVER () over the view built every matching
     * session's view: 3 s for a page at 50,000 sessions (docs/benchmarks.md,
     * "Scale"). */
#define LIST_WHERE                                                                                 \
    " WHERE ($1::uuid IS NULL OR s.user_id = $1::uuid)"                                            \
    " AND ($2::text IS NULL OR s.domain_name = $2)"                                                \
    " AND ($3::text IS NULL OR s.access_key = $3)"                                                 \
    " AND ($4::text IS NULL OR s.status = ANY(string_to_array($4, ',')))"                          \
    " AND ($5::text IS NULL OR s.type = $5)"                                                       \
    " AND NOT (s.user_id = ANY($6::uuid[]))"                                                       \
    " AND ($7::uuid IS NULL OR s.project_id = $7::uuid)"                                           \
    " AND ($8::text IS NULL OR s.domain_name = $8)"
    char *sql = ts_asprintf(
        "WITH p AS (SELECT s.id FROM registry.sessions s" LIST_WHERE
        " ORDER BY s.created_at DESC, s.id LIMIT $9::bigint OFFSET $10::bigint)"
        " SELECT v.*, (SELECT count(*) FROM registry.sessions s" LIST_WHERE ") AS total"
        " FROM (%s WHERE s.id IN (SELECT id FROM p)) v ORDER BY created_at DESC, id::uuid",
        session_view_sql);
#undef LIST_WHERE
    listing l = {.what = "list sessions",
                 .sql = sql,
                 .params = {user, domain, owner, status && *status ? status : NULL,
                            type && *type ? type : NULL, hidden, group, domain_name},
                 .n_params = 8,
                 .row = session_view_json};
    listing_reply(ctx, req, resp, &l);
    free(sql);
    free(hidden);
    caller_free(&c);
}

/* ---- destroy and restart ------------------------------------------------------------------------
 */

typedef enum { ACT_DESTROY, ACT_RESTART } action;

static bool act(PGconn *conn, outbox *ob, sess *se, action a, bool forced, const ts_caller *c,
                http_resp *resp, ts_err *err)
{
    if (reg_status_final(se->status)) {
        http_problem(resp, 404, "session-not-found", NULL, "session %s has already ended (%s)",
                     se->name, se->status);
        return false;
    }
    if (a == ACT_RESTART) {
        if (strcmp(se->status, ST_RUNNING) != 0) {
            http_problem(resp, 409, "invalid-state", NULL,
                         "session %s is %s: only a RUNNING session can be restarted", se->name,
                         se->status);
            return false;
        }
        /* Same kernel ids, agents and slots: DestroyKernel for the current
         * generation, then CreateKernel for the next one (docs/sessions.md). */
        const char *p[] = {se->id};
        return tr_set(conn, ob, se, ST_RESTARTING, "restart requested", err) &&
               tr_destroy_kernels(conn, ob, se, "restarting", false, "RESTARTING", err) &&
               reg_run(conn,
                       "UPDATE registry.kernels SET generation = generation + 1"
                       " WHERE session_id = $1::uuid AND status = 'RESTARTING'",
                       1, p, err) &&
               tr_create_kernels(conn, ob, se, "RESTARTING", NULL, err);
    }
    char by[80];
    snprintf(by, sizeof(by), "%s", c->user_id);
    if (strcmp(se->status, ST_PENDING) == 0)
        return tr_end(conn, ob, se, ST_CANCELLED, "user-requested", NULL, NULL, NULL, by, err);
    if (forced) {
        char why[160];
        snprintf(why, sizeof(why), "force-terminated by %s", c->user_id);
        return tr_destroy_kernels(conn, ob, se, why, true, "TERMINATED", err) &&
               tr_end(conn, ob, se, ST_TERMINATED, why, NULL, NULL, NULL, by, err);
    }
    if (strcmp(se->status, ST_TERMINATING) == 0) /* again: resend the commands */
        return tr_destroy_kernels(conn, ob, se, "user-requested", false, NULL, err);
    return tr_terminate(conn, ob, se, "user-requested", "user-requested", by, err);
}

static void h_action(http_req *req, http_resp *resp, svc *s, action a)
{
    ts_caller c;
    if (!caller_get(req, resp, NULL, &c)) return;
    const char *fq = http_query_arg(req, "forced");
    bool forced = fq && (!strcmp(fq, "true") || !strcmp(fq, "1") || !strcmp(fq, "yes"));
    PGconn *conn = NULL;
    char id[TS_UUID_STRLEN];
    if (forced && !caller_is_admin(&c)) {
        http_problem(resp, 403, "forbidden", NULL, "only administrators may force a destroy");
        goto out;
    }
    if (!(conn = pgjson_get(s, resp)) || !sessions_find(conn, req, resp, &c, id)) goto out;
    outbox ob;
    ob_init(&ob, req->request_id);
    sess se;
    bool found = false;
    ts_err err = {{0}};
    bool ok = pg_begin(conn, &err) && tr_lock(conn, id, &se, &found, &err);
    if (ok && found && act(conn, &ob, &se, a, forced, &c, resp, &err)) {
        if (pg_commit(conn, &err)) {
            ob_flush(&ob);
            reply_view(resp, conn, id, json_pack("{s:o}", "stats", json_object()));
            goto out;
        }
    } else if (http_resp_status(resp) >= 400) {
        pg_rollback(conn);
        ob_discard(&ob);
        goto out;
    }
    pg_rollback(conn);
    ob_discard(&ob);
    TLOG_ERROR("session action failed", "error=\"%s\"", err.msg);
    http_problem(resp, 500, "internal-server-error", NULL, "database error");
out:
    pgjson_put(s, conn);
    caller_free(&c);
}

static void h_destroy(http_req *req, http_resp *resp, void *ctx)
{
    h_action(req, resp, ctx, ACT_DESTROY);
}

static void h_restart(http_req *req, http_resp *resp, void *ctx)
{
    h_action(req, resp, ctx, ACT_RESTART);
}

void sessions_routes(svc *s)
{
    http_router *r = svc_router(s);
    http_route(r, "GET", "/v1/sessions", h_list, s);
    http_route(r, "GET", "/v1/sessions/{id}", h_get, s);
    http_route(r, "DELETE", "/v1/sessions/{id}", h_destroy, s);
    http_route(r, "PATCH", "/v1/sessions/{id}", h_restart, s);
    http_route(r, "GET", "/v1/sessions/{id}/history", h_history, s);
    http_route(r, "GET", "/v1/sessions/{id}/status-history", h_status_history, s);
    http_route(r, "POST", "/v1/sessions/{id}/rename", h_rename, s);
    http_route(r, "POST", "/v1/sessions/{id}/activity", h_activity, s);
}
