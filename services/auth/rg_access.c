/* rg_access.c: /v1/admin/resource-group-access (see rg_access.h). */
#include "rg_access.h"

#include "admin.h"
#include "events.h"
#include "libcommon/log.h"
#include "limits.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

/* Each entry with the domain its scope belongs to (NULL when the scope is
 * gone) and, for keypairs, the owner's role (domain admins do not see
 * superadmins' keypairs). */
#define ENTRIES                                                                                    \
    "WITH a AS (SELECT r.resource_group, r.scope_type, r.scope_id, r.created_at,"                  \
    " CASE r.scope_type WHEN 'domain' THEN (SELECT d.name FROM auth.domains d"                     \
    "     WHERE d.name = r.scope_id)"                                                              \
    "   WHEN 'project' THEN (SELECT p.domain_name FROM auth.projects p"                            \
    "     WHERE p.id::text = r.scope_id)"                                                          \
    "   ELSE (SELECT u.domain_name FROM auth.keypairs k JOIN auth.users u ON u.id = k.user_id"     \
    "     WHERE k.access_key = r.scope_id) END AS domain_name,"                                    \
    " CASE WHEN r.scope_type = 'keypair' THEN (SELECT u.role FROM auth.keypairs k"                 \
    "   JOIN auth.users u ON u.id = k.user_id WHERE k.access_key = r.scope_id) END AS owner_role"  \
    " FROM auth.resource_group_access r) "

/* $1 resource group, $2 scope type, $3 scope id: filters or NULL; $4 only
 * scopes of this domain (a domain admin's) or NULL. */
#define FILTER                                                                                     \
    " FROM a WHERE ($1::text IS NULL OR resource_group = $1)"                                      \
    " AND ($2::text IS NULL OR scope_type = $2) AND ($3::text IS NULL OR scope_id = $3)"           \
    " AND ($4::text IS NULL OR (domain_name = $4 AND owner_role IS DISTINCT FROM 'superadmin'))"
#define COLS "resource_group, scope_type, scope_id, domain_name, created_at"

static const char count_sql[] = ENTRIES "SELECT count(*)" FILTER;
static const char page_sql[] =
    ENTRIES "SELECT " COLS FILTER " ORDER BY resource_group, scope_type, scope_id"
            " LIMIT $5::bigint OFFSET $6::bigint";
static const char get_sql[] = ENTRIES "SELECT " COLS " FROM a WHERE resource_group = $1"
                                      " AND scope_type = $2 AND scope_id = $3";

/* The scope's domain and (keypairs) owner role; no row when it does not exist. */
static const char scope_sql[] =
    "SELECT d.name, NULL FROM auth.domains d WHERE $1 = 'domain' AND d.name = $2"
    " UNION ALL SELECT p.domain_name, NULL FROM auth.projects p"
    "   WHERE $1 = 'project' AND p.id = $3::uuid"
    " UNION ALL SELECT u.domain_name, u.role FROM auth.keypairs k"
    "   JOIN auth.users u ON u.id = k.user_id WHERE $1 = 'keypair' AND k.access_key = $2";
static const char insert_sql[] =
    "INSERT INTO auth.resource_group_access (resource_group, scope_type, scope_id)"
    " VALUES ($1, $2, $3) ON CONFLICT DO NOTHING";
static const char delete_sql[] =
    "DELETE FROM auth.resource_group_access WHERE resource_group = $1 AND scope_type = $2"
    " AND scope_id = $3";

#define REFUSAL "only admins may manage resource-group access"

static bool access_key_ok(const char *s)
{
    if (strlen(s) != 20) return false;
    for (const char *p = s; *p; p++)
        if (!((*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9'))) return false;
    return true;
}

/* The scope id in its stored form (project ids lower-case) into out; false
 * when it cannot be a scope of that type. */
static bool scope_id_form(const char *type, const char *id, char *out, size_t size)
{
    if (strcmp(type, "domain") == 0) {
        if (!limits_name_ok(id)) return false;
    } else if (strcmp(type, "project") == 0) {
        if (!ts_uuid_valid(id)) return false;
    } else if (!access_key_ok(id)) {
        return false;
    }
    ts_strlcpy(out, id, size);
    if (strcmp(type, "project") == 0)
        for (char *p = out; *p; p++)
            *p = (char)tolower((unsigned char)*p);
    return true;
}

static void h_list(http_req *req, http_resp *resp, void *ctx)
{
    pgjson_page pg;
    if (!pgjson_page_parse(req, resp, &pg)) return;
    const char *rg = admin_query_arg(req, "resource_group");
    const char *type = admin_query_arg(req, "scope_type");
    const char *id = admin_query_arg(req, "scope_id");
    char id_form[AUTH_NAME_MAX];
    if (rg && !limits_name_ok(rg)) {
        http_problem(resp, 400, "invalid-api-params", NULL, "resource_group is not a valid name");
        return;
    }
    if (type && strcmp(type, "domain") != 0 && strcmp(type, "project") != 0 &&
        strcmp(type, "keypair") != 0) {
        http_problem(resp, 400, "invalid-api-params", NULL,
                     "scope_type must be domain, project or keypair");
        return;
    }
    if (id) {
        /* Without a type, any form is a possible match (so none is refused). */
        bool ok = type ? scope_id_form(type, id, id_form, sizeof(id_form))
                       : limits_name_ok(id) && ts_strlcpy(id_form, id, sizeof(id_form));
        if (!ok) {
            http_problem(resp, 400, "invalid-api-params", NULL, "scope_id is not a %s",
                         type ? type : "valid scope id");
            return;
        }
        id = id_form;
    }
    admin_req a;
    if (!admin_begin(&a, ctx, req, resp, REQ_ADMIN, REFUSAL)) return;
    const char *filters[] = {rg, type, id, caller_is_superadmin(&a.c) ? NULL : a.c.domain_name};
    admin_reply_page(&a, "list resource-group access", count_sql, page_sql, 4, filters, &pg);
    admin_end(&a);
}

typedef struct rg_entry {
    const char *rg, *type;
    char id[AUTH_NAME_MAX];
} rg_entry;

/* The body {"resource_group", "scope_type", "scope_id"}; false after a 400. */
static bool parse_entry(json_t *body, rg_entry *e, http_resp *resp)
{
    static const char *const keys[] = {"resource_group", "scope_type", "scope_id", NULL};
    const char *id;
    if (!pgjson_only_keys(body, keys, resp) ||
        !limits_field_name(body, "resource_group", true, &e->rg, resp) ||
        !pgjson_field_enum(body, "scope_type", true, "domain|project|keypair", &e->type, resp) ||
        !pgjson_field_str(body, "scope_id", true, 1, 64, &id, resp))
        return false;
    if (!scope_id_form(e->type, id, e->id, sizeof(e->id))) {
        http_problem(resp, 400, "invalid-api-params", NULL, "scope_id must be %s",
                     strcmp(e->type, "domain") == 0    ? "a domain name"
                     : strcmp(e->type, "project") == 0 ? "a project id (UUID)"
                                                       : "an access key (20 of A-Z 0-9)");
        return false;
    }
    return true;
}

/* May the caller name this scope? Superadmins: any scope that exists (400
 * otherwise; when must_exist is false, also ones that are gone). Domain
 * admins: scopes of their domain (403 otherwise, whether or not it exists). */
static bool scope_allowed(PGconn *conn, const auth_caller *c, const rg_entry *e, bool must_exist,
                          http_resp *resp)
{
    const char *params[] = {e->type, e->id, strcmp(e->type, "project") == 0 ? e->id : NULL};
    PGresult *r = pgjson_query(conn, resp, "find scope", scope_sql, 3, params);
    if (!r) return false;
    bool found = PQntuples(r) == 1, ok = true;
    if (caller_is_superadmin(c)) {
        if (!found && must_exist) {
            http_problem(resp, 400, "invalid-api-params", NULL, "no %s \"%s\"", e->type, e->id);
            ok = false;
        }
    } else if (!found || strcmp(PQgetvalue(r, 0, 0), c->domain_name) != 0 ||
               strcmp(PQgetvalue(r, 0, 1), "superadmin") == 0) {
        http_problem(resp, 403, "forbidden", NULL,
                     "domain admins may manage access only for their own domain, its projects "
                     "and its users' keypairs");
        ok = false;
    }
    PQclear(r);
    return ok;
}

/* POST (grant) or DELETE (revoke). */
static void h_change(http_req *req, http_resp *resp, void *ctx)
{
    bool removing = strcmp(req->method, "DELETE") == 0;
    admin_req a;
    if (!admin_begin(&a, ctx, req, resp, REQ_ADMIN, REFUSAL)) return;
    json_t *body = http_json_body(req, resp);
    rg_entry e = {0};
    if (body && parse_entry(body, &e, resp) &&
        scope_allowed(a.fr.conn, &a.c, &e, !removing, resp)) {
        tlog_ctx_entity("resource_group", e.rg);
        const char *params[] = {e.rg, e.type, e.id};
        PGresult *r = pgjson_query(a.fr.conn, resp, removing ? "revoke access" : "grant access",
                                   removing ? delete_sql : insert_sql, 3, params);
        bool changed = r && atoi(PQcmdTuples(r)) > 0;
        if (changed)
            events_rg_access_changed(a.fr.s, req->request_id, e.rg, e.type, e.id, !removing);
        if (r && removing) {
            http_reply_json(resp, 200,
                            json_pack("{s:s, s:s, s:s, s:b}", "resource_group", e.rg, "scope_type",
                                      e.type, "scope_id", e.id, "removed", changed));
        } else if (r) {
            PGresult *g = pgjson_query(a.fr.conn, resp, "grant access", get_sql, 3, params);
            if (g && PQntuples(g) == 1)
                http_reply_json(resp, changed ? 201 : 200, pgjson_row_json(g, 0));
            else if (g)
                http_problem(resp, 409, "conflict", NULL, "revoked concurrently; try again");
            PQclear(g);
        }
        PQclear(r);
    }
    json_decref(body);
    admin_end(&a);
}

void rg_access_routes(svc *s)
{
    http_router *r = svc_router(s);
    http_route(r, "GET", "/v1/admin/resource-group-access", h_list, s);
    http_route(r, "POST", "/v1/admin/resource-group-access", h_change, s);
    http_route(r, "DELETE", "/v1/admin/resource-group-access", h_change, s);
}
