/* policies.c: keypair, user and project resource policies (see
 * policies.h): one table row per kind, one set of handlers. */
#include "policies.h"

#include "admin.h"
#include "libcommon/log.h"
#include "limits.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The parameters of a kind's update_sql, from a create or patch body. */
typedef struct policy_params {
    const char *v[10];
    char ints[7][24];
    char *slots, *hosts;
} policy_params;

typedef struct policy_kind policy_kind;
struct policy_kind {
    admin_resource res; /* first: the kind is also an admin_resource */
    const char *kind;   /* PolicyChanged.policy_kind */
    const char *write_refusal;
    const char *users;      /* what in_use_sql counts: "keypairs" */
    const char *count_sql;  /* $1 name prefix filter (NULL: all) */
    const char *page_sql;   /* $1 filter, $2 limit, $3 offset */
    const char *insert_sql; /* $1 name: a row of defaults */
    const char *update_sql; /* the parameters of params; NULL leaves a column as it is */
    const char *in_use_sql; /* $1 name -> count of referencing rows */
    int n_params;           /* of update_sql */
    bool (*params)(json_t *body, bool create, policy_params *p, http_resp *resp);
};

#define KP_COLS                                                                                    \
    "name, total_resource_slots, max_concurrent_sessions, max_containers_per_session,"             \
    " max_pending_session_count, max_session_lifetime, idle_timeout, allowed_vfolder_hosts,"       \
    " max_rootfs_size, created_at"
#define UP_COLS "name, max_vfolder_count, max_quota_scope_size, created_at"
#define NAME_FILTER " WHERE ($1::text IS NULL OR starts_with(name, $1))"

/* The SQL of a kind whose table is auth.<name>_resource_policies. */
#define KIND_SQL(name, cols, users)                                                                \
    .count_sql = "SELECT count(*) FROM auth." name "_resource_policies" NAME_FILTER,               \
    .page_sql = "SELECT " cols " FROM auth." name "_resource_policies" NAME_FILTER                 \
                " ORDER BY name LIMIT $2::bigint OFFSET $3::bigint",                               \
    .insert_sql = "INSERT INTO auth." name "_resource_policies (name) VALUES ($1)",                \
    .in_use_sql = "SELECT count(*) FROM auth." users " WHERE resource_policy = $1"
#define KIND_RES(name, cols)                                                                       \
    .res = {.noun = name " resource policy",                                                       \
            .refusal = "only admins may read " name " policies",                                   \
            .get_sql = "SELECT " cols " FROM auth." name "_resource_policies WHERE name = $1",     \
            .delete_sql = "DELETE FROM auth." name "_resource_policies WHERE name = $1"            \
                          " RETURNING " cols,                                                      \
            .visible = visible_name},                                                              \
    .kind = name, .write_refusal = "only superadmins may change " name " policies"

/* The {name} parameter when it can be a policy name; else a 404. */
static const char *visible_name(admin_req *a, const admin_resource *r)
{
    const char *name = http_param(a->fr.req, "name");
    if (!limits_name_ok(name)) {
        admin_not_found(r, a->fr.resp);
        return NULL;
    }
    tlog_ctx_entity("policy", name);
    return name;
}

static bool int_param(json_t *body, const char *key, long long min, long long max, char *buf,
                      const char **slot, http_resp *resp)
{
    long long v;
    bool present;
    if (!pgjson_field_int(body, key, false, min, max, &v, &present, resp)) return false;
    if (present) {
        snprintf(buf, 24, "%lld", v);
        *slot = buf;
    }
    return true;
}

/* The smallest max_rootfs_size but 0 (the agent's RDISK_MIN_BYTES). */
#define MIN_ROOTFS_SIZE (16LL << 20)

/* $2 slots, $3..$4 and $6..$8 the limits, $5 whether $6 (which may be NULL:
 * no limit) replaces max_pending_session_count, $9 vfolder hosts, $10
 * max_rootfs_size. */
static bool keypair_params(json_t *body, bool create, policy_params *p, http_resp *resp)
{
    static const char *const create_keys[] = {"name",
                                              "total_resource_slots",
                                              "max_concurrent_sessions",
                                              "max_containers_per_session",
                                              "max_pending_session_count",
                                              "max_session_lifetime",
                                              "idle_timeout",
                                              "allowed_vfolder_hosts",
                                              "max_rootfs_size",
                                              NULL};
    if (!pgjson_only_keys(body, create ? create_keys : create_keys + 1, resp)) return false;
    if (!limits_field_slots(body, "total_resource_slots", &p->slots, resp) ||
        !limits_field_vfolder_hosts(body, "allowed_vfolder_hosts", &p->hosts, resp) ||
        !int_param(body, "max_concurrent_sessions", 0, 1000000, p->ints[0], &p->v[2], resp) ||
        !int_param(body, "max_containers_per_session", 1, 1000000, p->ints[1], &p->v[3], resp) ||
        !int_param(body, "max_pending_session_count", 0, 1000000, p->ints[2], &p->v[5], resp) ||
        !int_param(body, "max_session_lifetime", 0, INT32_MAX, p->ints[3], &p->v[6], resp) ||
        !int_param(body, "idle_timeout", -1, INT32_MAX, p->ints[4], &p->v[7], resp) ||
        !int_param(body, "max_rootfs_size", 0, INT64_MAX, p->ints[5], &p->v[9], resp))
        return false;
    if (p->v[9] && atoll(p->v[9]) > 0 && atoll(p->v[9]) < MIN_ROOTFS_SIZE) {
        http_problem(resp, 400, "invalid-api-params", NULL,
                     "\"max_rootfs_size\" must be 0 (the agent's own limit) or at least %lld "
                     "bytes (16 MiB)",
                     MIN_ROOTFS_SIZE);
        return false;
    }
    /* max_pending_session_count: present (even as null = no limit) replaces. */
    p->v[4] = json_object_get(body, "max_pending_session_count") ? "true" : "false";
    p->v[1] = p->slots;
    p->v[8] = p->hosts;
    return true;
}

/* $2 max_vfolder_count, $3 max_quota_scope_size. */
static bool user_params(json_t *body, bool create, policy_params *p, http_resp *resp)
{
    static const char *const create_keys[] = {"name", "max_vfolder_count", "max_quota_scope_size",
                                              NULL};
    if (!pgjson_only_keys(body, create ? create_keys : create_keys + 1, resp)) return false;
    return int_param(body, "max_vfolder_count", 0, INT32_MAX, p->ints[0], &p->v[1], resp) &&
           int_param(body, "max_quota_scope_size", 0, INT64_MAX, p->ints[1], &p->v[2], resp);
}

/* A kind with folder limits only (user and project policies). */
#define FOLDER_KIND(name, users_)                                                                  \
    {                                                                                              \
        KIND_RES(name, UP_COLS), KIND_SQL(name, UP_COLS, users_),                                  \
            .users = users_,                                                                       \
            .update_sql = "UPDATE auth." name "_resource_policies SET"                             \
                          " max_vfolder_count = COALESCE($2::int, max_vfolder_count),"             \
                          " max_quota_scope_size = COALESCE($3::bigint, max_quota_scope_size)"     \
                          " WHERE name = $1 RETURNING " UP_COLS,                                   \
            .n_params = 3, .params = user_params,                                                  \
    }

static policy_kind keypair_kind = {
    KIND_RES("keypair", KP_COLS),
    KIND_SQL("keypair", KP_COLS, "keypairs"),
    .users = "keypairs",
    .update_sql = "UPDATE auth.keypair_resource_policies SET"
                  " total_resource_slots = COALESCE($2::jsonb, total_resource_slots),"
                  " max_concurrent_sessions = COALESCE($3::int, max_concurrent_sessions),"
                  " max_containers_per_session = COALESCE($4::int, max_containers_per_session),"
                  " max_pending_session_count = CASE WHEN $5::bool THEN $6::int"
                  "   ELSE max_pending_session_count END,"
                  " max_session_lifetime = COALESCE($7::int, max_session_lifetime),"
                  " idle_timeout = COALESCE($8::int, idle_timeout),"
                  " allowed_vfolder_hosts = COALESCE($9::jsonb, allowed_vfolder_hosts),"
                  " max_rootfs_size = COALESCE($10::bigint, max_rootfs_size)"
                  " WHERE name = $1 RETURNING " KP_COLS,
    .n_params = 10,
    .params = keypair_params,
};
static policy_kind user_kind = FOLDER_KIND("user", "users");
static policy_kind project_kind = FOLDER_KIND("project", "projects");

/* PolicyChanged for a changed row (committed). */
static void publish(admin_req *a, const policy_kind *k, auth_change change, json_t *row)
{
    const char *name = json_string_value(json_object_get(row, "name"));
    if (k == &keypair_kind)
        events_policy_changed(
            a->fr.s, a->fr.req->request_id, name, k->kind, change,
            change == AUTH_CHANGE_DELETED ? NULL : json_object_get(row, "total_resource_slots"),
            (int)json_integer_value(json_object_get(row, "max_concurrent_sessions")),
            (int)json_integer_value(json_object_get(row, "max_session_lifetime")),
            (int)json_integer_value(json_object_get(row, "idle_timeout")));
    else
        events_policy_changed(a->fr.s, a->fr.req->request_id, name, k->kind, change, NULL, 0, 0, 0);
}

/* r, one row or none, inside the transaction: commit, publish and answer it
 * with status; or roll back (404 when no row). */
static void finish(admin_req *a, const policy_kind *k, PGresult *r, int status, auth_change change)
{
    if (r && PQntuples(r) == 1 && pgjson_commit(a->fr.conn, a->fr.resp)) {
        json_t *row = pgjson_row_json(r, 0);
        publish(a, k, change, row);
        http_reply_json(a->fr.resp, status, row);
        return;
    }
    if (r && PQntuples(r) != 1) admin_not_found(&k->res, a->fr.resp);
    pg_rollback(a->fr.conn);
}

/* ---- handlers ------------------------------------------------------------ */

static void h_list(http_req *req, http_resp *resp, void *ctx)
{
    const policy_kind *k = ctx;
    pgjson_page pg;
    if (!pgjson_page_parse(req, resp, &pg)) return;
    const char *prefix = admin_query_arg(req, "name");
    if (prefix && !limits_name_ok(prefix)) {
        http_problem(resp, 400, "invalid-api-params", NULL, "name must be a valid policy name");
        return;
    }
    admin_req a;
    if (!admin_begin_for(&a, &k->res, req, resp)) return;
    admin_reply_page(&a, k->res.noun, k->count_sql, k->page_sql, 1, &prefix, &pg);
    admin_end(&a);
}

/* Create (name from the body) or patch (name from the path): one
 * transaction; a create inserts the name with the schema's defaults and then
 * applies the given fields like a patch. */
static void h_write(http_req *req, http_resp *resp, void *ctx)
{
    const policy_kind *k = ctx;
    bool create = strcmp(req->method, "POST") == 0;
    admin_req a;
    if (!admin_begin(&a, k->res.s, req, resp, REQ_SUPERADMIN, k->write_refusal)) return;
    json_t *body = http_json_body(req, resp);
    policy_params p = {{0}};
    const char *name = NULL;
    bool ok = body && k->params(body, create, &p, resp);
    if (ok && create) ok = limits_field_name(body, "name", true, &name, resp);
    if (ok && !create) ok = (name = visible_name(&a, &k->res)) != NULL;
    if (ok && create) tlog_ctx_entity("policy", name);
    if (ok && pgjson_begin(a.fr.conn, resp)) {
        p.v[0] = name;
        const char *what = k->res.noun;
        PGresult *ins = create ? pgjson_query(a.fr.conn, resp, what, k->insert_sql, 1, p.v) : NULL;
        PGresult *r = (!create || ins)
                          ? pgjson_query(a.fr.conn, resp, what, k->update_sql, k->n_params, p.v)
                          : NULL;
        finish(&a, k, r, create ? 201 : 200, create ? AUTH_CHANGE_CREATED : AUTH_CHANGE_UPDATED);
        PQclear(ins);
        PQclear(r);
    }
    free(p.slots);
    free(p.hosts);
    json_decref(body);
    admin_end(&a);
}

/* Delete: refused (409) while keypairs, users or projects use it, and for
 * "default", which bootstrap and new users rely on. */
static void h_delete(http_req *req, http_resp *resp, void *ctx)
{
    const policy_kind *k = ctx;
    admin_req a;
    if (!admin_begin(&a, k->res.s, req, resp, REQ_SUPERADMIN, k->write_refusal)) return;
    const char *name = visible_name(&a, &k->res), *what = k->res.noun;
    if (name && strcmp(name, "default") == 0) {
        http_problem(resp, 409, "conflict", NULL, "the default %s cannot be deleted", what);
    } else if (name && pgjson_begin(a.fr.conn, resp)) {
        PGresult *u = pgjson_query(a.fr.conn, resp, what, k->in_use_sql, 1, &name);
        long long users = u ? atoll(PQgetvalue(u, 0, 0)) : 0;
        PGresult *r = u && users == 0
                          ? pgjson_query(a.fr.conn, resp, what, k->res.delete_sql, 1, &name)
                          : NULL;
        if (u && users > 0)
            http_problem(resp, 409, "conflict", NULL, "the %s is used by %lld %s", what, users,
                         k->users);
        finish(&a, k, r, 200, AUTH_CHANGE_DELETED);
        PQclear(u);
        PQclear(r);
    }
    admin_end(&a);
}

void policies_routes(svc *s)
{
    static const admin_crud keypair = {"/v1/admin/keypair-resource-policies",
                                       "/v1/admin/keypair-resource-policies/{name}",
                                       h_list,
                                       h_write,
                                       admin_h_get,
                                       h_write,
                                       h_delete};
    admin_crud user = keypair, project = keypair;
    user.path = "/v1/admin/user-resource-policies";
    user.item = "/v1/admin/user-resource-policies/{name}";
    project.path = "/v1/admin/project-resource-policies";
    project.item = "/v1/admin/project-resource-policies/{name}";
    /* The kind is the context of every handler (admin_h_get reads its res). */
    admin_crud_routes(s, &keypair, &keypair_kind.res);
    admin_crud_routes(s, &user, &user_kind.res);
    admin_crud_routes(s, &project, &project_kind.res);
}
