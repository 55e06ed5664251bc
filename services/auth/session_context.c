/* session_context.c: GET /v1/session-context (see session_context.h). Three
 * indexed queries: the keypair with its user, policy and domain; the project;
 * the allowed resource groups. */
#include "session_context.h"

#include "libcommon/pgjson.h"
#include "libcommon/log.h"

#include <string.h>

static const char key_sql[] =
    "SELECT k.access_key, k.is_active, k.is_admin,"
    " u.id::text AS id, u.email, u.username, u.role, u.status, u.domain_name,"
    " p.name AS policy, p.total_resource_slots AS kp_slots, p.max_concurrent_sessions,"
    " p.max_containers_per_session, p.max_pending_session_count, p.max_session_lifetime,"
    " p.idle_timeout, p.max_rootfs_size, d.idle_timeout AS domain_idle_timeout,"
    " d.is_active AS domain_active, d.total_resource_slots AS "
    "domain_slots,"
    " p.allowed_vfolder_hosts AS kp_vfolder_hosts, d.allowed_vfolder_hosts AS domain_vfolder_hosts,"
    " up.name AS user_policy, up.max_vfolder_count, up.max_quota_scope_size,"
    " COALESCE(kc.bootstrap_script, '') AS bootstrap_script,"
    " COALESCE(kc.dotfiles, '[]'::jsonb)::text AS dotfiles,"
    " COALESCE(kc.ssh_public_key, '') AS ssh_public_key"
    " FROM auth.keypairs k JOIN auth.users u ON u.id = k.user_id"
    " LEFT JOIN auth.keypair_configs kc ON kc.access_key = k.access_key"
    " JOIN auth.keypair_resource_policies p ON p.name = k.resource_policy"
    " JOIN auth.user_resource_policies up ON up.name = u.resource_policy"
    " JOIN auth.domains d ON d.name = u.domain_name WHERE k.access_key = $1";

static const char project_sql[] =
    "SELECT p.id::text AS id, p.name, p.is_active,"
    " EXISTS (SELECT 1 FROM auth.project_members m WHERE m.project_id = p.id"
    "   AND m.user_id = $3::uuid) AS is_member, p.total_resource_slots, p.allowed_vfolder_hosts,"
    " pp.max_vfolder_count, pp.max_quota_scope_size, p.idle_timeout"
    " FROM auth.projects p JOIN auth.project_resource_policies pp ON pp.name = p.resource_policy"
    " WHERE p.domain_name = $1"
    " AND (p.name = $2 OR ($4 AND p.id::text = $2))";

static const char groups_sql[] =
    "SELECT resource_group FROM auth.resource_group_access"
    " WHERE (scope_type = 'domain' AND scope_id = $1)"
    "    OR (scope_type = 'project' AND scope_id = $2)"
    "    OR (scope_type = 'keypair' AND scope_id = $3)"
    " UNION SELECT 'default' WHERE NOT EXISTS"
    "   (SELECT 1 FROM auth.resource_group_access WHERE resource_group = 'default')"
    " ORDER BY 1";

/* The user's projects (tessera-vfolder: project folders visible to members). */
static const char projects_sql[] =
    "SELECT p.id::text AS id, p.name, p.is_active, p.allowed_vfolder_hosts,"
    " pp.max_vfolder_count, pp.max_quota_scope_size"
    " FROM auth.project_members m JOIN auth.projects p ON p.id = m.project_id"
    " JOIN auth.project_resource_policies pp ON pp.name = p.resource_policy"
    " WHERE m.user_id = $1::uuid ORDER BY p.name";

/* The superadmins whose domain is the caller's: a domain admin's context
 * carries them, because a domain admin never acts on a superadmin's things
 * (docs/api.md) and the services it reaches own no users to tell. */
static const char superadmins_sql[] =
    "SELECT COALESCE(array_agg(id::text ORDER BY id), '{}') FROM auth.users"
    " WHERE domain_name = $1 AND role = 'superadmin'";

/* GET /v1/user-lookup?email=: a user by email (tessera-vfolder's invitations
 * and shares). */
#define LOOKUP_SELECT                                                                              \
    "SELECT u.id::text AS id, u.email, u.username, u.role, u.status, u.domain_name,"               \
    " COALESCE((SELECT array_agg(m.project_id::text ORDER BY m.project_id)"                        \
    "   FROM auth.project_members m WHERE m.user_id = u.id), '{}') AS projects"                    \
    " FROM auth.users u"
static const char lookup_sql[] = LOOKUP_SELECT " WHERE lower(u.email) = lower($1)";
static const char lookup_id_sql[] = LOOKUP_SELECT " WHERE u.id = $1::uuid";

static json_t *col(const PGresult *r, const char *name)
{
    return pgjson_cell_json(r, 0, PQfnumber(r, name));
}

/* The context's answer from the keypair's row k, the project (held, not
 * taken), the resource groups g, the memberships pj and, for a domain admin,
 * the domain's superadmins sa. */
static json_t *context_body(PGresult *k, json_t *project, PGresult *g, PGresult *pj, PGresult *sa)
{
    json_t *groups = json_array();
    for (int i = 0; i < PQntuples(g); i++)
        json_array_append_new(groups, json_string(PQgetvalue(g, i, 0)));
    json_t *user =
        json_pack("{s:o, s:o, s:o, s:o, s:o, s:o}", "id", col(k, "id"), "email", col(k, "email"),
                  "username", col(k, "username"), "role", col(k, "role"), "status",
                  col(k, "status"), "domain_name", col(k, "domain_name"));
    json_t *dom = json_pack("{s:o, s:o, s:o, s:o}", "name", col(k, "domain_name"), "is_active",
                            col(k, "domain_active"), "total_resource_slots", col(k, "domain_slots"),
                            "idle_timeout", col(k, "domain_idle_timeout"));
    json_t *policy = json_pack(
        "{s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:o}", "name", col(k, "policy"),
        "total_resource_slots", col(k, "kp_slots"), "max_concurrent_sessions",
        col(k, "max_concurrent_sessions"), "max_containers_per_session",
        col(k, "max_containers_per_session"), "max_pending_session_count",
        col(k, "max_pending_session_count"), "max_session_lifetime", col(k, "max_session_lifetime"),
        "idle_timeout", col(k, "idle_timeout"), "max_rootfs_size", col(k, "max_rootfs_size"));
    json_t *user_policy = json_pack("{s:o, s:o, s:o}", "name", col(k, "user_policy"),
                                    "max_vfolder_count", col(k, "max_vfolder_count"),
                                    "max_quota_scope_size", col(k, "max_quota_scope_size"));
    json_t *vfolder_hosts = json_pack("{s:o, s:o}", "keypair", col(k, "kp_vfolder_hosts"), "domain",
                                      col(k, "domain_vfolder_hosts"));
    json_t *body =
        json_pack("{s:o, s:o, s:o, s:o, s:o, s:O, s:o, s:o, s:o, s:o, s:o, s:o}", "access_key",
                  col(k, "access_key"), "is_active", col(k, "is_active"), "is_admin",
                  col(k, "is_admin"), "user", user, "domain", dom, "project", project,
                  "keypair_policy", policy, "user_total_resource_slots", json_object(),
                  "allowed_resource_groups", groups, "user_policy", user_policy,
                  "allowed_vfolder_hosts", vfolder_hosts, "projects", pgjson_rows_json(pj));
    if (sa) json_object_set_new(body, "domain_superadmins", pgjson_cell_json(sa, 0, 0));
    /* user_config.h: run in its sessions that bring no script of their own */
    json_object_set_new(body, "bootstrap_script", col(k, "bootstrap_script"));
    /* written into its sessions' home directories (user_config.h, ssh_keypair.h) */
    json_t *dotfiles = json_loads(PQgetvalue(k, 0, PQfnumber(k, "dotfiles")), 0, NULL);
    json_object_set_new(body, "dotfiles", json_is_array(dotfiles) ? dotfiles : json_array());
    if (!json_is_array(dotfiles)) json_decref(dotfiles);
    json_object_set_new(body, "ssh_public_key", col(k, "ssh_public_key"));
    return body;
}

static void h_context(http_req *req, http_resp *resp, void *ctx)
{
    svc *s = ctx;
    const char *ak = http_query_arg(req, "access_key");
    const char *group = http_query_arg(req, "group");
    if (!ak || strlen(ak) != 20) {
        http_problem(resp, 400, "invalid-api-params", NULL, "access_key is required");
        return;
    }
    if (group && (!*group || strlen(group) > 256)) {
        http_problem(resp, 400, "invalid-api-params", NULL, "group must be 1 to 256 bytes");
        return;
    }
    tlog_ctx_access_key(ak);
    if (group) tlog_ctx_entity("project", group);
    PGconn *conn = pgjson_get(s, resp);
    if (!conn) return;
    const char *p1[] = {ak};
    PGresult *k = pgjson_query(conn, resp, "read keypair", key_sql, 1, p1);
    PGresult *pr = NULL, *g = NULL, *pj = NULL, *sa = NULL;
    json_t *body = NULL;
    if (!k) goto out;
    if (PQntuples(k) != 1) {
        http_problem(resp, 404, "not-found", NULL, "unknown access key");
        goto out;
    }
    const char *user_id = PQgetvalue(k, 0, PQfnumber(k, "id"));
    const char *domain = PQgetvalue(k, 0, PQfnumber(k, "domain_name"));
    const char *role = PQgetvalue(k, 0, PQfnumber(k, "role"));
    json_t *project = json_null();
    const char *project_id = NULL;
    if (group) {
        const char *p2[] = {domain, group, user_id, ts_uuid_valid(group) ? "true" : "false"};
        pr = pgjson_query(conn, resp, "read project", project_sql, 4, p2);
        if (!pr) goto out_project;
        if (PQntuples(pr) != 1) {
            http_problem(resp, 404, "not-found", NULL, "project %s not found in domain %s", group,
                         domain);
            goto out_project;
        }
        bool member = PQgetvalue(pr, 0, 3)[0] == 't';
        bool admin = strcmp(role, "superadmin") == 0 || strcmp(role, "admin") == 0;
        if (!member && !admin) {
            http_problem(resp, 403, "forbidden", NULL, "the user is not a member of project %s",
                         PQgetvalue(pr, 0, 1));
            goto out_project;
        }
        json_decref(project);
        project = pgjson_row_json(pr, 0);
        project_id = PQgetvalue(pr, 0, 0);
    }
    const char *p3[] = {domain, project_id, ak};
    g = pgjson_query(conn, resp, "read resource group access", groups_sql, 3, p3);
    if (!g) goto out_project;
    const char *p4[] = {user_id};
    pj = pgjson_query(conn, resp, "read memberships", projects_sql, 1, p4);
    if (!pj) goto out_project;
    if (strcmp(role, "admin") == 0) {
        const char *p5[] = {domain};
        sa = pgjson_query(conn, resp, "read the domain's superadmins", superadmins_sql, 1, p5);
        if (!sa) goto out_project;
    }
    body = context_body(k, project, g, pj, sa);
    http_reply_json(resp, 200, body);
out_project:
    json_decref(project);
out:
    if (k) PQclear(k);
    if (pr) PQclear(pr);
    if (g) PQclear(g);
    if (pj) PQclear(pj);
    if (sa) PQclear(sa);
    pgjson_put(s, conn);
}

static void h_user_lookup(http_req *req, http_resp *resp, void *ctx)
{
    svc *s = ctx;
    const char *email = http_query_arg(req, "email");
    const char *id = http_query_arg(req, "id");
    if (id && (email || !ts_uuid_valid(id))) {
        http_problem(resp, 400, "invalid-api-params", NULL,
                     "id must be a user id (UUID), without email");
        return;
    }
    if (!id && (!email || !*email || strlen(email) > 254)) {
        http_problem(resp, 400, "invalid-api-params", NULL,
                     "email (up to 254 bytes) or id is required");
        return;
    }
    tlog_ctx_entity("target_user", id ? id : email);
    PGconn *conn = pgjson_get(s, resp);
    if (!conn) return;
    const char *p[] = {id ? id : email};
    PGresult *r = pgjson_query(conn, resp, "look up user", id ? lookup_id_sql : lookup_sql, 1, p);
    if (r) {
        if (PQntuples(r) != 1)
            http_problem(resp, 404, "not-found", NULL, "no user with %s %s", id ? "id" : "email",
                         p[0]);
        else
            http_reply_json(resp, 200, pgjson_row_json(r, 0));
        PQclear(r);
    }
    pgjson_put(s, conn);
}

void session_context_routes(svc *s)
{
    http_route(svc_router(s), "GET", "/v1/session-context", h_context, s);
    http_route(svc_router(s), "GET", "/v1/user-lookup", h_user_lookup, s);
}
