/* keypairs.c: /v1/admin/keypairs (see keypairs.h). */
#include "keypairs.h"

#include "admin.h"
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

/* The keypair (its access key into the log context) with its owner's
 * domain and role (for scoping), or NULL after a 404 (also when the caller
 * may not see it). */
static json_t *load_visible(admin_req *a, const char *ak, char owner_domain[AUTH_NAME_MAX],
                            char owner_role[AUTH_NAME_MAX])
{
    json_t *k = NULL;
    if (ak && strlen(ak) == 20) {
        const char *p[] = {ak};
        PGresult *r = pgjson_query(a->fr.conn, a->fr.resp, "read keypair",
                                   "SELECT " KEYPAIR_COLUMNS ", u.domain_name AS owner_domain,"
                                   " u.role AS owner_role FROM auth.keypairs k"
                                   " JOIN auth.users u ON u.id = k.user_id WHERE k.access_key = $1",
                                   1, p);
        if (!r) return NULL;
        if (PQntuples(r) == 1 && caller_can_see_user(&a->c, PQgetvalue(r, 0, 1),
                                                     PQgetvalue(r, 0, 9), PQgetvalue(r, 0, 10))) {
            k = pgjson_row_json(r, 0);
            json_object_del(k, "owner_domain");
            json_object_del(k, "owner_role");
            ts_strlcpy(owner_domain, PQgetvalue(r, 0, 9), AUTH_NAME_MAX);
            ts_strlcpy(owner_role, PQgetvalue(r, 0, 10), AUTH_NAME_MAX);
        }
        PQclear(r);
    }
    if (!k) http_problem(a->fr.resp, 404, "not-found", NULL, "no such keypair");
    if (k) tlog_ctx_entity("keypair", ak);
    return k;
}

/* load_visible, and 403 saying refusal unless the caller may manage its
 * owner. */
static json_t *load_managed(admin_req *a, const char *ak, const char *refusal,
                            char owner_role[AUTH_NAME_MAX])
{
    char domain[AUTH_NAME_MAX];
    json_t *k = load_visible(a, ak, domain, owner_role);
    if (k && !caller_can_manage_user(&a->c, domain, owner_role)) {
        http_problem(a->fr.resp, 403, "forbidden", NULL, "%s", refusal);
        json_decref(k);
        k = NULL;
    }
    return k;
}

static json_t *reload(admin_req *a, const char *ak)
{
    const char *p[] = {ak};
    return pgjson_query_one(a->fr.conn, a->fr.resp, "read keypair",
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
    " AND ($4::uuid IS NULL OR k.user_id = $4::uuid)"                                              \
    " AND ($5::bool IS NULL OR k.is_active = $5::bool)"

static const char count_sql[] = "SELECT count(*)" LIST_WHERE;
static const char page_sql[] =
    "SELECT " KEYPAIR_COLUMNS LIST_WHERE
    " ORDER BY k.created_at, k.access_key LIMIT $6::bigint OFFSET $7::bigint";

static void h_list(http_req *req, http_resp *resp, void *ctx)
{
    pgjson_page page;
    if (!pgjson_page_parse(req, resp, &page)) return;
    const char *user = admin_query_arg(req, "user");
    if (user && !ts_uuid_valid(user)) {
        http_problem(resp, 400, "invalid-api-params", NULL, "user must be a user id (UUID)");
        return;
    }
    const char *active;
    if (!admin_query_bool(req, resp, "is_active", &active)) return;
    admin_req a;
    if (!admin_begin(&a, ctx, req, resp, REQ_ANY, NULL)) return;
    bool super = caller_is_superadmin(&a.c);
    const char *filters[] = {user, super ? NULL : a.c.domain_name, super ? "f" : "t",
                             caller_is_admin(&a.c) ? NULL : a.c.user_id, active};
    admin_reply_page(&a, "list keypairs", count_sql, page_sql, 5, filters, &page);
    admin_end(&a);
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
        bool dup = !ok && strcmp(pgjson_sqlstate(r), "23505") == 0;
        if (!ok && !dup) pgjson_problem(resp, r, "issue keypair");
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
        pgjson_query(conn, resp, "read user",
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

/* Whether the caller may issue a keypair (is_admin or not) for user_id: 404
 * when it cannot see the user, 403 or 400 when it may not. */
static bool issue_allowed(admin_req *a, const char *user_id, bool is_admin)
{
    char domain[AUTH_NAME_MAX], role[AUTH_NAME_MAX], status[AUTH_NAME_MAX];
    bool found;
    if (!load_owner(a->fr.conn, a->fr.resp, user_id, domain, role, status, sizeof(domain), &found))
        return false;
    if (!found || !caller_can_see_user(&a->c, user_id, domain, role)) {
        http_problem(a->fr.resp, 404, "not-found", NULL, "no such user");
    } else if (!caller_can_manage_user(&a->c, domain, role)) {
        http_problem(a->fr.resp, 403, "forbidden", NULL, "you cannot issue keypairs for this user");
    } else if (strcmp(status, "deleted") == 0) {
        http_problem(a->fr.resp, 400, "invalid-api-params", NULL, "the user is deleted");
    } else if (is_admin && strcmp(role, "user") == 0) {
        http_problem(a->fr.resp, 400, "invalid-api-params", NULL,
                     "is_admin keypairs belong to administrators (the user's role is user)");
    } else {
        return true;
    }
    return false;
}

static void h_issue(http_req *req, http_resp *resp, void *ctx)
{
    static const char *const keys[] = {"user_id", "resource_policy", "rate_limit", "is_admin",
                                       NULL};
    json_t *body = http_json_body(req, resp);
    const char *user_id, *policy;
    long long rate = 1000;
    bool has_rate, is_admin = false, has_admin;
    admin_req a;
    if (!body || !pgjson_only_keys(body, keys, resp) ||
        !pgjson_field_uuid(body, "user_id", false, &user_id, resp) ||
        !pgjson_field_str(body, "resource_policy", false, 1, 64, &policy, resp) ||
        !pgjson_field_int(body, "rate_limit", false, 0, RATE_LIMIT_MAX, &rate, &has_rate, resp) ||
        !pgjson_field_bool(body, "is_admin", false, &is_admin, &has_admin, resp) ||
        !admin_begin(&a, ctx, req, resp, REQ_ADMIN, "only administrators issue keypairs")) {
        json_decref(body);
        return;
    }
    if (!user_id) user_id = a.c.user_id;
    char rate_s[24], ak[21], sk[41];
    snprintf(rate_s, sizeof(rate_s), "%lld", rate);
    json_t *k = NULL;
    if (issue_allowed(&a, user_id, is_admin) &&
        insert_keypair(a.fr.conn, resp, user_id, is_admin, policy ? policy : "default", rate_s, ak,
                       sk)) {
        tlog_ctx_entity("keypair", ak);
        k = reload(&a, ak);
    }
    if (k) {
        json_object_set_new(k, "secret_key", json_string(sk));
        TLOG_INFO("keypair issued", "owner=%s", user_id);
        http_reply_json(resp, 201, k);
    }
    memset(sk, 0, sizeof(sk));
    json_decref(body);
    admin_end(&a);
}

/* ---- GET /v1/admin/keypairs/{access_key} ------------------------------ */

static void h_get(http_req *req, http_resp *resp, void *ctx)
{
    admin_req a;
    if (!admin_begin(&a, ctx, req, resp, REQ_ANY, NULL)) return;
    char d[AUTH_NAME_MAX], r[AUTH_NAME_MAX];
    json_t *k = load_visible(&a, http_param(req, "access_key"), d, r);
    if (k) http_reply_json(resp, 200, k);
    admin_end(&a);
}

/* ---- PATCH /v1/admin/keypairs/{access_key} ---------------------------- */

typedef struct keypair_change {
    bool is_active, has_active, is_admin, has_admin, has_rate;
    long long rate;
    const char *policy;
    char rate_s[24];
} keypair_change;

static bool parse_change(json_t *body, keypair_change *ch, http_resp *resp)
{
    static const char *const keys[] = {"is_active", "is_admin", "resource_policy", "rate_limit",
                                       NULL};
    if (!pgjson_only_keys(body, keys, resp) ||
        !pgjson_field_bool(body, "is_active", false, &ch->is_active, &ch->has_active, resp) ||
        !pgjson_field_bool(body, "is_admin", false, &ch->is_admin, &ch->has_admin, resp) ||
        !pgjson_field_str(body, "resource_policy", false, 1, 64, &ch->policy, resp) ||
        !pgjson_field_int(body, "rate_limit", false, 0, RATE_LIMIT_MAX, &ch->rate, &ch->has_rate,
                          resp))
        return false;
    snprintf(ch->rate_s, sizeof(ch->rate_s), "%lld", ch->rate);
    return true;
}

/* Whether the change may be made to the keypair before (409 or 400). */
static bool change_allowed(const json_t *before, const char *owner_role, const keypair_change *ch,
                           http_resp *resp)
{
    if (ch->has_active && ch->is_active && !json_is_null(json_object_get(before, "revoked_at"))) {
        http_problem(resp, 409, "already-exists", NULL,
                     "a revoked keypair stays revoked; issue a new one");
        return false;
    }
    if (ch->has_admin && ch->is_admin && strcmp(owner_role, "user") == 0) {
        http_problem(resp, 400, "invalid-api-params", NULL,
                     "is_admin keypairs belong to administrators (the owner's role is user)");
        return false;
    }
    return true;
}

static const char update_sql[] =
    "UPDATE auth.keypairs SET is_active = COALESCE($2::bool, is_active),"
    " is_admin = COALESCE($3::bool, is_admin), resource_policy = COALESCE($4, resource_policy),"
    " rate_limit = COALESCE($5::int, rate_limit) WHERE access_key = $1";

static void h_patch(http_req *req, http_resp *resp, void *ctx)
{
    json_t *body = http_json_body(req, resp), *before = NULL, *after = NULL;
    keypair_change ch = {0};
    admin_req a;
    if (!body || !parse_change(body, &ch, resp) ||
        !admin_begin(&a, ctx, req, resp, REQ_ANY, NULL)) {
        json_decref(body);
        return;
    }
    const char *ak = http_param(req, "access_key");
    char role[AUTH_NAME_MAX];
    before = load_managed(&a, ak, "only administrators change keypairs", role);
    PGresult *r = NULL;
    if (before && change_allowed(before, role, &ch, resp)) {
        const char *p[] = {ak, ch.has_active ? (ch.is_active ? "t" : "f") : NULL,
                           ch.has_admin ? (ch.is_admin ? "t" : "f") : NULL, ch.policy,
                           ch.has_rate ? ch.rate_s : NULL};
        r = pgjson_query(a.fr.conn, resp, "update keypair", update_sql, 5, p);
    }
    if (r && (after = reload(&a, ak))) {
        bool was_active = json_is_true(json_object_get(before, "is_active"));
        bool now_active = json_is_true(json_object_get(after, "is_active"));
        const char *user_id = json_string_value(json_object_get(after, "user_id"));
        if (was_active && !now_active)
            events_keypair_revoked(a.fr.s, req->request_id, ak, user_id, "deactivated",
                                   a.c.user_id);
        else if (json_object_size(body) > 0 && !json_equal(before, after))
            events_keypair_changed(a.fr.s, req->request_id, after, a.c.user_id);
        http_reply_json(resp, 200, after);
    }
    PQclear(r);
    json_decref(before);
    json_decref(body);
    admin_end(&a);
}

/* ---- DELETE /v1/admin/keypairs/{access_key} (revoke) ------------------ */

static void h_revoke(http_req *req, http_resp *resp, void *ctx)
{
    admin_req a;
    if (!admin_begin(&a, ctx, req, resp, REQ_ANY, NULL)) return;
    const char *ak = http_param(req, "access_key");
    char role[AUTH_NAME_MAX];
    json_t *before = load_managed(&a, ak, "only administrators revoke keypairs", role), *after;
    const char *p[] = {ak};
    PGresult *r = before ? pgjson_query(a.fr.conn, resp, "revoke keypair",
                                        "UPDATE auth.keypairs SET is_active = false,"
                                        " revoked_at = COALESCE(revoked_at, now())"
                                        " WHERE access_key = $1",
                                        1, p)
                         : NULL;
    if (r && (after = reload(&a, ak))) {
        /* Published also for a keypair that was only deactivated before: a
         * replayed revocation is harmless to caches. */
        events_keypair_revoked(a.fr.s, req->request_id, ak,
                               json_string_value(json_object_get(after, "user_id")), "deleted",
                               a.c.user_id);
        TLOG_INFO("keypair revoked", "");
        http_reply_json(resp, 200, after);
    }
    PQclear(r);
    json_decref(before);
    admin_end(&a);
}

void keypairs_routes(svc *s)
{
    static const admin_crud routes = {"/v1/admin/keypairs",
                                      "/v1/admin/keypairs/{access_key}",
                                      h_list,
                                      h_issue,
                                      h_get,
                                      h_patch,
                                      h_revoke};
    admin_crud_routes(s, &routes, NULL);
}
