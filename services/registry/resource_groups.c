/* resource_groups.c: see resource_groups.h. */
#include "resource_groups.h"

#include "caller.h"
#include "db_common.h"
#include "idle_scopes.h"
#include "libcommon/log.h"
#include "libcommon/pgjson.h"
#include "listing.h"

#include <stdlib.h>
#include <string.h>

#define SELECT_GROUPS                                                                              \
    "SELECT g.name, g.description, g.is_active, g.scheduler, g.agent_selector,"                    \
    " g.allowed_session_types, g.pending_timeout, g.idle_timeout, g.idle_inference,"               \
    " g.created_at, g.modified_at,"                                                                \
    " (SELECT count(*) FROM registry.agents a WHERE a.resource_group = g.name"                     \
    "   AND a.status = 'ALIVE')::int AS agents"

static const listing_one group_row = {
    "read resource group", SELECT_GROUPS " FROM registry.resource_groups g WHERE g.name = $1",
    "unknown resource group", "resource_group"};

static void h_list(http_req *req, http_resp *resp, void *ctx)
{
    ts_caller c;
    if (!caller_get_admin(req, resp, false, "resource groups", &c)) return;
    listing l = {.what = "list resource groups",
                 .sql = SELECT_GROUPS ", count(*) OVER () AS total"
                                      " FROM registry.resource_groups g"
                                      " WHERE ($1::bool IS NULL OR g.is_active = $1::bool)"
                                      " ORDER BY g.name LIMIT $2::bigint OFFSET $3::bigint",
                 .params = {http_query_arg(req, "is_active")},
                 .n_params = 1};
    listing_reply(ctx, req, resp, &l);
    caller_free(&c);
}

static void h_get(http_req *req, http_resp *resp, void *ctx)
{
    listing_admin_get(ctx, req, resp, "resource groups", &group_row, "name", false);
}

/* The fields of a create or update body, as text parameters (NULL = absent). */
typedef struct rg_fields {
    const char *name, *description, *scheduler, *selector;
    char active[8], timeout[24], idle[24], inference[8];
    char *types; /* text[] literal */
    bool has_active, has_timeout, has_idle, has_inference;
} rg_fields;

static bool parse_fields(json_t *body, bool create, rg_fields *f, http_resp *resp)
{
    static const char *const keys[] = {"name",
                                       "description",
                                       "is_active",
                                       "scheduler",
                                       "agent_selector",
                                       "allowed_session_types",
                                       "pending_timeout",
                                       "idle_timeout",
                                       "idle_inference",
                                       NULL};
    memset(f, 0, sizeof(*f));
    bool active, inf;
    long long timeout, idle;
    if (!pgjson_only_keys(body, keys, resp) ||
        !pgjson_field_str(body, "name", create, 1, 64, &f->name, resp) ||
        !pgjson_field_str(body, "description", false, 0, 1000, &f->description, resp) ||
        !pgjson_field_bool(body, "is_active", false, &active, &f->has_active, resp) ||
        !pgjson_field_enum(body, "scheduler", false, "fifo|lifo|drf", &f->scheduler, resp) ||
        !pgjson_field_enum(body, "agent_selector", false, "concentrated|dispersed|roundrobin",
                           &f->selector, resp) ||
        !pgjson_field_int(body, "pending_timeout", false, 0, 86400 * 365, &timeout, &f->has_timeout,
                          resp) ||
        !pgjson_field_int(body, "idle_timeout", false, 0, 86400 * 365, &idle, &f->has_idle, resp) ||
        !pgjson_field_bool(body, "idle_inference", false, &inf, &f->has_inference, resp))
        return false;
    if (f->has_inference) ts_strlcpy(f->inference, inf ? "true" : "false", sizeof(f->inference));
    if (f->has_idle) snprintf(f->idle, sizeof(f->idle), "%lld", idle);
    if (f->has_active) ts_strlcpy(f->active, active ? "true" : "false", sizeof(f->active));
    if (f->has_timeout) snprintf(f->timeout, sizeof(f->timeout), "%lld", timeout);
    json_t *types = json_object_get(body, "allowed_session_types");
    if (types && !json_is_null(types)) {
        if (!json_is_array(types) || json_array_size(types) == 0) goto bad_types;
        char buf[128] = "{";
        size_t i;
        json_t *t;
        json_array_foreach(types, i, t)
        {
            const char *v = json_string_value(t);
            if (!v || (strcmp(v, "interactive") != 0 && strcmp(v, "batch") != 0 &&
                       strcmp(v, "inference") != 0))
                goto bad_types;
            if (strstr(buf, v)) continue;
            strcat(buf, buf[1] ? "," : "");
            strcat(buf, v);
        }
        strcat(buf, "}");
        f->types = ts_strdup(buf);
    }
    if (f->name) {
        for (const char *p = f->name; *p; p++)
            if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
                  (*p >= '0' && *p <= '9') ||
                  ((*p == '-' || *p == '_' || *p == '.') && p != f->name))) {
                http_problem(resp, 400, "invalid-api-params", NULL,
                             "\"name\" may hold letters, digits, '-', '_' and '.' (not first)");
                return false;
            }
    }
    return true;
bad_types:
    http_problem(resp, 400, "invalid-api-params", NULL,
                 "\"allowed_session_types\" must be a non-empty list of interactive, batch, "
                 "inference");
    return false;
}

static PGresult *insert_group(PGconn *conn, http_resp *resp, const rg_fields *f)
{
    const char *p[] = {f->name,
                       f->description ? f->description : "",
                       f->has_active ? f->active : "true",
                       f->scheduler ? f->scheduler : "fifo",
                       f->selector ? f->selector : "concentrated",
                       f->types ? f->types : "{interactive,batch,inference}",
                       f->has_timeout ? f->timeout : "0",
                       f->has_idle ? f->idle : "0",
                       f->has_inference ? f->inference : "false"};
    return pgjson_query(conn, resp, "create resource group",
                        "INSERT INTO registry.resource_groups (name, description, is_active,"
                        " scheduler, agent_selector, allowed_session_types, pending_timeout,"
                        " idle_timeout, idle_inference) VALUES ($1, $2, $3::bool, $4, $5,"
                        " $6::text[], $7::int, $8::int, $9::bool)",
                        9, p);
}

static PGresult *update_group(PGconn *conn, http_resp *resp, const char *name, const rg_fields *f)
{
    const char *p[] = {name,
                       f->description,
                       f->has_active ? f->active : NULL,
                       f->scheduler,
                       f->selector,
                       f->types,
                       f->has_timeout ? f->timeout : NULL,
                       f->has_idle ? f->idle : NULL,
                       f->has_inference ? f->inference : NULL};
    return pgjson_query(
        conn, resp, "update resource group",
        "UPDATE registry.resource_groups SET description = coalesce($2, description),"
        " is_active = coalesce($3::bool, is_active), scheduler = coalesce($4, scheduler),"
        " agent_selector = coalesce($5, agent_selector),"
        " allowed_session_types = coalesce($6::text[], allowed_session_types),"
        " pending_timeout = coalesce($7::int, pending_timeout),"
        " idle_timeout = coalesce($8::int, idle_timeout),"
        " idle_inference = coalesce($9::bool, idle_inference), modified_at = now()"
        " WHERE name = $1",
        9, p);
}

/* POST /v1/admin/resource-groups (the body names it) and PATCH
 * /v1/admin/resource-groups/{name}. */
static void h_write(http_req *req, http_resp *resp, void *ctx)
{
    const char *name = http_param(req, "name");
    reg_req x;
    rg_fields f = {0};
    if (!reg_req_begin(&x, ctx, req, resp, REQ_SUPERADMIN,
                       "only superadmins may change resource groups"))
        goto out;
    if (name) tlog_ctx_entity("resource_group", name);
    if (!req_frame_body(&x.fr, NULL) || !parse_fields(x.fr.body, !name, &f, resp) ||
        !req_frame_conn(&x.fr))
        goto out;
    if (name && f.name && strcmp(f.name, name) != 0) {
        http_problem(resp, 400, "invalid-api-params", NULL, "a resource group cannot be renamed");
        goto out;
    }
    if (!name) tlog_ctx_entity("resource_group", f.name);
    /* a changed idle setting reaches the group's sessions in the same transaction */
    PGconn *conn = x.fr.conn;
    bool rescope = name && (f.has_idle || f.has_inference);
    if (rescope && !pgjson_begin(conn, resp)) goto out;
    PGresult *r = name ? update_group(conn, resp, name, &f) : insert_group(conn, resp, &f);
    if (rescope) {
        ts_err err = {{0}};
        if (r && !idle_scopes_changed(conn, IDLE_SCOPE_RESOURCE_GROUP, name, 0, NULL, &err)) {
            char q[256];
            TLOG_ERROR("resource group not changed: idle timeouts not recomputed", "error=%s",
                       tlog_quote(q, sizeof(q), err.msg));
            http_problem(resp, 503, "service-unavailable", NULL,
                         "resource group not changed: its sessions' idle timeouts could not be "
                         "recomputed: %s",
                         err.msg);
            PQclear(r);
            r = NULL;
        }
        if (r && !pgjson_commit(conn, resp)) {
            PQclear(r);
            r = NULL;
        }
        if (!r) pg_rollback(conn);
    }
    if (r) {
        PQclear(r);
        listing_reply_one(resp, x.fr.conn, &group_row, name ? name : f.name, name ? 200 : 201);
    }
out:
    free(f.types);
    reg_req_end(&x);
}

/* DELETE .../{name} (superadmins): a group no agent serves (but
 * TERMINATED ones) and no live session uses; `default` stays. 200
 * {"deleted": true}; 404 unknown; 409 in use. Its access rows (tessera-auth)
 * are left: they name a group that no longer exists, and apply again if one
 * of that name is made. */
static void h_delete(http_req *req, http_resp *resp, void *ctx)
{
    svc *s = ctx;
    ts_caller c;
    if (!caller_get_admin(req, resp, true, "resource groups", &c)) return;
    const char *name = http_param(req, "name");
    tlog_ctx_entity("resource_group", name);
    if (strcmp(name, "default") == 0) {
        http_problem(resp, 409, "invalid-state", NULL,
                     "the default resource group cannot be deleted");
        caller_free(&c);
        return;
    }
    PGconn *conn = pgjson_get(s, resp);
    const char *p[] = {name};
    PGresult *r =
        conn ? pgjson_query(conn, resp, "delete resource group",
                            "WITH use AS (SELECT"
                            " (SELECT count(*) FROM registry.agents a WHERE a.resource_group = $1"
                            "   AND a.status <> 'TERMINATED') AS agents,"
                            " (SELECT count(*) FROM registry.sessions x WHERE x.resource_group = $1"
                            "   AND x.status NOT IN " SQL_FINAL ") AS sessions),"
                            " del AS (DELETE FROM registry.resource_groups g WHERE g.name = $1"
                            "   AND (SELECT agents + sessions FROM use) = 0 RETURNING 1)"
                            " SELECT (SELECT count(*) FROM del), (SELECT count(*) FROM"
                            " registry.resource_groups WHERE name = $1), agents, sessions FROM use",
                            1, p)
             : NULL;
    if (r && PQntuples(r) == 1) {
        if (atoi(PQgetvalue(r, 0, 0)) == 1) {
            TLOG_INFO("deleted", "what=\"resource group\" by=%s", c.access_key);
            http_reply_json(resp, 200, json_pack("{s:b}", "deleted", 1));
        } else if (atoi(PQgetvalue(r, 0, 1)) == 0) {
            http_problem(resp, 404, "not-found", NULL, "unknown resource group %s", name);
        } else {
            http_problem(resp, 409, "invalid-state", NULL,
                         "resource group %s is in use: %s agent(s), %s live session(s)", name,
                         PQgetvalue(r, 0, 2), PQgetvalue(r, 0, 3));
        }
    }
    PQclear(r);
    pgjson_put(s, conn);
    caller_free(&c);
}

void resource_groups_routes(svc *s)
{
    http_router *r = svc_router(s);
    http_route(r, "GET", "/v1/admin/resource-groups", h_list, s);
    http_route(r, "POST", "/v1/admin/resource-groups", h_write, s);
    http_route(r, "GET", "/v1/admin/resource-groups/{name}", h_get, s);
    http_route(r, "PATCH", "/v1/admin/resource-groups/{name}", h_write, s);
    http_route(r, "DELETE", "/v1/admin/resource-groups/{name}", h_delete, s);
}
