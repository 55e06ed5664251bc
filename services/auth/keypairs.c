/* keypairs.c: /v1/admin/keypairs (see keypairs.h). */
#include "keypairs.h"

#include "caller.h"
#include "db_util.h"
#include "events.h"
#include "libcommon/log.h"
#include "libcommon/sign.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* What GET answers, for a keypair aliased k (never the secret). */
#define KEYPAIR_COLUMNS                                                                            \
    "k.access_key, k.user_id::text AS user_id, k.is_active, k.is_admin, k.resource_policy,"        \
    " k.rate_limit, k.created_at, k.last_used, k.revoked_at"

#define RATE_LIMIT_MAX 1000000000LL

/* The keypair with its owner's domain and role (for scoping), or NULL after
 * a 404 (also when the caller may not see it). */
static json_t *load_visible(PGconn *conn, http_resp *resp, const auth_caller *c, const char *ak,
                            char *owner_domain, size_t dsize, char *owner_role, size_t rsize)
{
    if (!ak || strlen(ak) != 20) {
        http_problem(resp, 404, "not-found", NULL, "no such keypair");
        return NULL;
    }
    const char *p[] = {ak};
    PGresult *r = db_query(conn, resp, "read keypair",
                           "SELECT " KEYPAIR_COLUMNS ", u.domain_name AS owner_domain,"
                           " u.role AS owner_role FROM auth.keypairs k"
                           " JOIN auth.users u ON u.id = k.user_id WHERE k.access_key = $1",
                           1, p);
    if (!r) return NULL;
    json_t *k = NULL;
    if (PQntuples(r) == 1) {
        const char *dom = PQgetvalue(r, 0, 9), *role = PQgetvalue(r, 0, 10);
        if (caller_can_see_user(c, PQgetvalue(r, 0, 1), dom, role)) {
            k = db_row_json(r, 0);
            json_object_del(k, "owner_domain");
            json_object_del(k, "owner_role");
            ts_strlcpy(owner_domain, dom, dsize);
            ts_strlcpy(owner_role, role, rsize);
        }
    }
    PQclear(r);
    if (!k) http_problem(resp, 404, "not-found", NULL, "no such keypair");
    return k;
}

static json_t *reload(PGconn *conn, http_resp *resp, const char *ak)
{
    const char *p[] = {ak};
    return pgjson_query_one(conn, resp, "read keypair",
                            "SELECT " KEYPAIR_COLUMNS
                            " FROM auth.keypairs k WHERE k.access_key = $1",
                            1, p, "no such keypair");
}

/* ---- GET /v1/admin/keypairs ------------------------------------------- */

#define LIST_WHERE                                                                                 \
    " FROM auth.keypairs k JOIN auth.users u ON u.id = k.user_id"                                  \
    " WHERE ($1::uuid IS NULL OR k.user_id = $1::uuid)"                                            \
    " AND ($2::text IS NULL OR u.domain_name = $2)"                                                \
    " AND (NOT $3::bool OR u.role <> 'superadmin')"                                                \
    " AND ($4::uuid IS NULL OR k.user_id = $4::uuid)"

static void h_list(http_req *req, http_resp *resp, void *ctx)
{
    svc *s = ctx;
    db_page page;
    if (!db_page_parse(req, resp, &page)) return;
    const char *user = http_query_arg(req, "user");
    if (user && !*user) user = NULL;
    if (user && !ts_uuid_valid(user)) {
        http_problem(resp, 400, "invalid-api-params", NULL, "user must be a user id (UUID)");
        return;
    }
    PGconn *conn = db_get(s, resp);
    if (!conn) return;
    auth_caller c;
    if (!caller_resolve(conn, req, resp, &c)) goto out;
    const char *p[] = {user,
                       caller_is_superadmin(&c) ? NULL : c.domain_name,
                       caller_is_superadmin(&c) ? "f" : "t",
                       caller_is_admin(&c) ? NULL : c.user_id,
                       page.limit_s,
                       page.offset_s};
    PGresult *n = db_query(conn, resp, "count keypairs", "SELECT count(*)" LIST_WHERE, 4, p);
    if (!n) goto out;
    long long total = atoll(PQgetvalue(n, 0, 0));
    PQclear(n);
    PGresult *r =
        db_query(conn, resp, "list keypairs",
                 "SELECT " KEYPAIR_COLUMNS LIST_WHERE
                 " ORDER BY k.created_at, k.access_key LIMIT $5::bigint OFFSET $6::bigint",
                 6, p);
    if (!r) goto out;
    http_reply_json(resp, 200, db_page_json(db_rows_json(r), total, &page));
    PQclear(r);
out:
    db_put(s, conn);
}

/* ---- POST /v1/admin/keypairs (issue) ---------------------------------- */

static bool insert_keypair(PGconn *conn, http_resp *resp, const char *user_id, bool is_admin,
                           const char *policy, const char *rate_limit, char ak[21], char sk[41])
{
    /* A collision of 20 random characters is practically impossible, but a
     * retry costs nothing. */
    for (int attempt = 0; attempt < 3; attempt++) {
        sign_new_keypair(ak, sk);
        const char *p[] = {ak, sk, user_id, is_admin ? "t" : "f", policy, rate_limit};
        PGresult *r = PQexecParams(conn,
                                   "INSERT INTO auth.keypairs (access_key, secret_key, user_id,"
                                   " is_admin, resource_policy, rate_limit)"
                                   " VALUES ($1, $2, $3::uuid, $4::bool, $5,"
                                   " COALESCE($6::int, 1000))",
                                   6, NULL, p, NULL, NULL, 0);
        bool ok = PQresultStatus(r) == PGRES_COMMAND_OK;
        bool dup = !ok && strcmp(db_sqlstate(r), "23505") == 0;
        if (!ok && !dup) db_problem(resp, r, "issue keypair");
        PQclear(r);
        if (ok) return true;
        if (!dup) return false;
    }
    http_problem(resp, 500, "internal-server-error", NULL, "could not pick a unique access key");
    return false;
}

bool keypairs_issue_main(PGconn *conn, http_resp *resp, const char *user_id, bool is_admin,
                         char ak_out[21])
{
    char sk[41];
    bool ok = insert_keypair(conn, resp, user_id, is_admin, "default", NULL, ak_out, sk);
    memset(sk, 0, sizeof(sk));
    return ok;
}

/* The owner's domain, role and status; NULL fields when no such user. */
static bool load_owner(PGconn *conn, http_resp *resp, const char *user_id, char *domain, char *role,
                       char *status, size_t size, bool *found)
{
    const char *p[] = {user_id};
    PGresult *r =
        db_query(conn, resp, "read user",
                 "SELECT domain_name, role, status FROM auth.users WHERE id = $1::uuid", 1, p);
    if (!r) return false;
    *found = PQntuples(r) == 1;
    if (*found) {
        ts_strlcpy(domain, PQgetvalue(r, 0, 0), size);
        ts_strlcpy(role, PQgetvalue(r, 0, 1), size);
        ts_strlcpy(status, PQgetvalue(r, 0, 2), size);
    }
    PQclear(r);
    return true;
}

static void h_issue(http_req *req, http_resp *resp, void *ctx)
{
    svc *s = ctx;
    json_t *body = http_json_body(req, resp);
    if (!body) return;
    static const char *const keys[] = {"user_id", "resource_policy", "rate_limit", "is_admin",
                                       NULL};
    const char *user_id, *policy;
    long long rate = 1000;
    bool has_rate, is_admin = false, has_admin;
    PGconn *conn = NULL;
    json_t *k = NULL;
    if (!db_only_keys(body, keys, resp) || !db_field_uuid(body, "user_id", false, &user_id, resp) ||
        !db_field_str(body, "resource_policy", false, 1, 64, &policy, resp) ||
        !db_field_int(body, "rate_limit", false, 0, RATE_LIMIT_MAX, &rate, &has_rate, resp) ||
        !db_field_bool(body, "is_admin", false, &is_admin, &has_admin, resp))
        goto out;
    conn = db_get(s, resp);
    if (!conn) goto out;
    auth_caller c;
    if (!caller_resolve(conn, req, resp, &c)) goto out;
    if (!caller_is_admin(&c)) {
        http_problem(resp, 403, "forbidden", NULL, "only administrators issue keypairs");
        goto out;
    }
    if (!user_id) user_id = c.user_id;
    char domain[AUTH_NAME_MAX], role[AUTH_NAME_MAX], status[AUTH_NAME_MAX];
    bool found;
    if (!load_owner(conn, resp, user_id, domain, role, status, sizeof(domain), &found)) goto out;
    if (!found || !caller_can_see_user(&c, user_id, domain, role)) {
        http_problem(resp, 404, "not-found", NULL, "no such user");
        goto out;
    }
    if (!caller_can_manage_user(&c, domain, role)) {
        http_problem(resp, 403, "forbidden", NULL, "you cannot issue keypairs for this user");
        goto out;
    }
    if (strcmp(status, "deleted") == 0) {
        http_problem(resp, 400, "invalid-api-params", NULL, "the user is deleted");
        goto out;
    }
    if (is_admin && strcmp(role, "user") == 0) {
        http_problem(resp, 400, "invalid-api-params", NULL,
                     "is_admin keypairs belong to administrators (the user's role is user)");
        goto out;
    }
    char rate_s[24], ak[21], sk[41];
    snprintf(rate_s, sizeof(rate_s), "%lld", rate);
    if (!insert_keypair(conn, resp, user_id, is_admin, policy ? policy : "default", rate_s, ak, sk))
        goto out;
    k = reload(conn, resp, ak);
    if (!k) goto out;
    json_object_set_new(k, "secret_key", json_string(sk));
    memset(sk, 0, sizeof(sk));
    TLOG_INFO("keypair issued", "access_key=%s user=%s by=%s", ak, user_id, c.user_id);
    http_reply_json(resp, 201, json_incref(k));
out:
    json_decref(k);
    if (conn) db_put(s, conn);
    json_decref(body);
}

/* ---- GET /v1/admin/keypairs/{access_key} ------------------------------ */

static void h_get(http_req *req, http_resp *resp, void *ctx)
{
    svc *s = ctx;
    PGconn *conn = db_get(s, resp);
    if (!conn) return;
    auth_caller c;
    if (caller_resolve(conn, req, resp, &c)) {
        char d[AUTH_NAME_MAX], r[AUTH_NAME_MAX];
        json_t *k =
            load_visible(conn, resp, &c, http_param(req, "access_key"), d, sizeof(d), r, sizeof(r));
        if (k) http_reply_json(resp, 200, k);
    }
    db_put(s, conn);
}

/* ---- PATCH /v1/admin/keypairs/{access_key} ---------------------------- */

static void h_patch(http_req *req, http_resp *resp, void *ctx)
{
    svc *s = ctx;
    json_t *body = http_json_body(req, resp);
    if (!body) return;
    static const char *const keys[] = {"is_active", "is_admin", "resource_policy", "rate_limit",
                                       NULL};
    const char *policy;
    long long rate = 0;
    bool is_active = false, has_active, is_admin = false, has_admin, has_rate;
    PGconn *conn = NULL;
    json_t *before = NULL, *after = NULL;
    if (!db_only_keys(body, keys, resp) ||
        !db_field_bool(body, "is_active", false, &is_active, &has_active, resp) ||
        !db_field_bool(body, "is_admin", false, &is_admin, &has_admin, resp) ||
        !db_field_str(body, "resource_policy", false, 1, 64, &policy, resp) ||
        !db_field_int(body, "rate_limit", false, 0, RATE_LIMIT_MAX, &rate, &has_rate, resp))
        goto out;
    conn = db_get(s, resp);
    if (!conn) goto out;
    auth_caller c;
    if (!caller_resolve(conn, req, resp, &c)) goto out;
    const char *ak = http_param(req, "access_key");
    char domain[AUTH_NAME_MAX], role[AUTH_NAME_MAX];
    before = load_visible(conn, resp, &c, ak, domain, sizeof(domain), role, sizeof(role));
    if (!before) goto out;
    if (!caller_can_manage_user(&c, domain, role)) {
        http_problem(resp, 403, "forbidden", NULL, "only administrators change keypairs");
        goto out;
    }
    if (has_active && is_active && !json_is_null(json_object_get(before, "revoked_at"))) {
        http_problem(resp, 409, "already-exists", NULL,
                     "a revoked keypair stays revoked; issue a new one");
        goto out;
    }
    if (has_admin && is_admin && strcmp(role, "user") == 0) {
        http_problem(resp, 400, "invalid-api-params", NULL,
                     "is_admin keypairs belong to administrators (the owner's role is user)");
        goto out;
    }
    char rate_s[24];
    snprintf(rate_s, sizeof(rate_s), "%lld", rate);
    const char *p[] = {ak, has_active ? (is_active ? "t" : "f") : NULL,
                       has_admin ? (is_admin ? "t" : "f") : NULL, policy, has_rate ? rate_s : NULL};
    PGresult *r = db_query(conn, resp, "update keypair",
                           "UPDATE auth.keypairs SET is_active = COALESCE($2::bool, is_active),"
                           " is_admin = COALESCE($3::bool, is_admin),"
                           " resource_policy = COALESCE($4, resource_policy),"
                           " rate_limit = COALESCE($5::int, rate_limit) WHERE access_key = $1",
                           5, p);
    if (!r) goto out;
    PQclear(r);
    after = reload(conn, resp, ak);
    if (!after) goto out;
    bool was_active = json_is_true(json_object_get(before, "is_active"));
    bool now_active = json_is_true(json_object_get(after, "is_active"));
    const char *user_id = json_string_value(json_object_get(after, "user_id"));
    if (was_active && !now_active)
        events_keypair_revoked(s, req->request_id, ak, user_id, "deactivated", c.user_id);
    else if (json_object_size(body) > 0 && !json_equal(before, after))
        events_keypair_changed(s, req->request_id, after, c.user_id);
    http_reply_json(resp, 200, json_incref(after));
out:
    json_decref(before);
    json_decref(after);
    if (conn) db_put(s, conn);
    json_decref(body);
}

/* ---- DELETE /v1/admin/keypairs/{access_key} (revoke) ------------------ */

static void h_revoke(http_req *req, http_resp *resp, void *ctx)
{
    svc *s = ctx;
    PGconn *conn = db_get(s, resp);
    if (!conn) return;
    json_t *before = NULL, *after = NULL;
    auth_caller c;
    if (!caller_resolve(conn, req, resp, &c)) goto out;
    const char *ak = http_param(req, "access_key");
    char domain[AUTH_NAME_MAX], role[AUTH_NAME_MAX];
    before = load_visible(conn, resp, &c, ak, domain, sizeof(domain), role, sizeof(role));
    if (!before) goto out;
    if (!caller_can_manage_user(&c, domain, role)) {
        http_problem(resp, 403, "forbidden", NULL, "only administrators revoke keypairs");
        goto out;
    }
    const char *p[] = {ak};
    PGresult *r = db_query(conn, resp, "revoke keypair",
                           "UPDATE auth.keypairs SET is_active = false,"
                           " revoked_at = COALESCE(revoked_at, now()) WHERE access_key = $1",
                           1, p);
    if (!r) goto out;
    PQclear(r);
    after = reload(conn, resp, ak);
    if (!after) goto out;
    /* Published also for a keypair that was only deactivated before: a
     * replayed revocation is harmless to caches. */
    events_keypair_revoked(s, req->request_id, ak,
                           json_string_value(json_object_get(after, "user_id")), "deleted",
                           c.user_id);
    TLOG_INFO("keypair revoked", "access_key=%s by=%s", ak, c.user_id);
    http_reply_json(resp, 200, json_incref(after));
out:
    json_decref(before);
    json_decref(after);
    db_put(s, conn);
}

void keypairs_routes(svc *s)
{
    http_router *r = svc_router(s);
    http_route(r, "GET", "/v1/admin/keypairs", h_list, s);
    http_route(r, "POST", "/v1/admin/keypairs", h_issue, s);
    http_route(r, "GET", "/v1/admin/keypairs/{access_key}", h_get, s);
    http_route(r, "PATCH", "/v1/admin/keypairs/{access_key}", h_patch, s);
    http_route(r, "DELETE", "/v1/admin/keypairs/{access_key}", h_revoke, s);
}
