/* gql_query.c: the root query fields of Backend.AI's GraphQL schema
 * (gql_schema.h): each reads the services as the caller (gql_fetch.h) and
 * shapes what they answer (gql_shapes.h). */
#include "gql_query.h"

#include "gql_filter.h"
#include "gql_schema.h"
#include "gql_shapes.h"

#include <stdlib.h>
#include <string.h>

/* A paginated list's page: as the service pages it, or, with Backend.AI's
 * filter or order, the whole list (up to LEGACY_LIST_MAX) filtered, ordered
 * and sliced here (gql_filter.h). q is consumed. */
static json_t *_paged(gql_exec *ex, const json_t *args, upstream_id u, const char *path, ts_buf *q,
                      gql_shape_fn shape)
{
    if (!json_object_get(args, "filter") && !json_object_get(args, "order"))
        return gql_list(ex,
                        gql_page(ex, u, path, q, json_integer_value(json_object_get(args, "limit")),
                                 json_integer_value(json_object_get(args, "offset"))),
                        shape);
    json_t *all = gql_all_shaped(ex, u, path, q, shape);
    return all ? gql_refine(ex, all, args) : NULL;
}

/* ---- resolvers: sessions ----------------------------------------------------- */

static json_t *q_compute_session_list(gql_exec *ex, const json_t *args)
{
    ts_buf q = {0};
    gql_qs(&q, "all", "true");
    gql_qs(&q, "status", gql_str(args, "status"));
    gql_qs(&q, "owner_access_key", gql_str(args, "access_key"));
    gql_qs(&q, "group_id", gql_str(args, "group_id"));
    gql_qs(&q, "domain_name", gql_str(args, "domain_name"));
    return _paged(ex, args, UPSTREAM_REGISTRY, "/v1/sessions", &q, gql_shape_session);
}

static json_t *q_compute_session(gql_exec *ex, const json_t *args)
{
    return gql_one(ex, UPSTREAM_REGISTRY, "/v1/sessions", gql_str(args, "id"), gql_shape_session);
}

static json_t *q_compute_session_nodes(gql_exec *ex, const json_t *args)
{
    json_int_t offset, count;
    if (!gql_relay_window(ex, args, &offset, &count)) return NULL;
    ts_buf q = {0};
    gql_qs(&q, "all", "true");
    const char *project = gql_str(args, "project_id");
    const char *scope = gql_str(args, "scope_id");
    if (scope && strncmp(scope, "project:", 8) == 0) project = scope + 8;
    gql_qs(&q, "group_id", project);
    json_t *page = gql_page(ex, UPSTREAM_REGISTRY, "/v1/sessions", &q, count, offset);
    return gql_connection(ex, page, offset, gql_shape_session_node);
}

/* ---- resolvers: identity ----------------------------------------------------- */

/* The id of the user with that e-mail address (heap), or NULL after an
 * error (also when the caller may not see that user). */
static char *_user_id_by_email(gql_exec *ex, const char *email)
{
    bool missing;
    char *id = gql_user_id_by_email(ex, email, &missing);
    if (missing) gql_error(ex, "no such user: %s", email);
    return id;
}

static json_t *q_keypair(gql_exec *ex, const json_t *args)
{
    gql_ctx *c = gql_user(ex);
    const char *ak = gql_str(args, "access_key");
    return gql_one(ex, UPSTREAM_AUTH, "/v1/admin/keypairs", ak ? ak : c->id->access_key,
                   gql_shape_keypair);
}

/* The keypair list's filters; false after an error. */
static bool _keypair_filters(gql_exec *ex, const json_t *args, ts_buf *q)
{
    const char *email = gql_str(args, "email");
    if (email) {
        char *id = _user_id_by_email(ex, email);
        if (!id) return false;
        gql_qs(q, "user", id);
        free(id);
    }
    gql_qs_bool(q, "is_active", json_object_get(args, "is_active"));
    return true;
}

static json_t *q_keypair_list(gql_exec *ex, const json_t *args)
{
    ts_buf q = {0};
    if (!_keypair_filters(ex, args, &q)) {
        ts_buf_free(&q);
        return NULL;
    }
    return _paged(ex, args, UPSTREAM_AUTH, "/v1/admin/keypairs", &q, gql_shape_keypair);
}

static json_t *q_keypairs(gql_exec *ex, const json_t *args)
{
    ts_buf q = {0};
    if (!_keypair_filters(ex, args, &q)) {
        ts_buf_free(&q);
        return NULL;
    }
    return gql_all_shaped(ex, UPSTREAM_AUTH, "/v1/admin/keypairs", &q, gql_shape_keypair);
}

static json_t *q_user(gql_exec *ex, const json_t *args)
{
    gql_ctx *c = gql_user(ex);
    const char *email = gql_str(args, "email");
    char *id = email ? _user_id_by_email(ex, email) : ts_strdup(c->id->user_id);
    if (!id) return NULL;
    json_t *o = gql_one(ex, UPSTREAM_AUTH, "/v1/admin/users", id, gql_shape_user);
    free(id);
    return o;
}

/* The user list's filters into q. */
static void _user_filters(const json_t *args, ts_buf *q)
{
    gql_qs(q, "domain", gql_str(args, "domain_name"));
    const char *status = gql_str(args, "status");
    json_t *active = json_object_get(args, "is_active");
    if (!status && json_is_true(active)) status = "active";
    gql_qs(q, "status", status);
}

static json_t *q_user_list(gql_exec *ex, const json_t *args)
{
    if (json_object_get(args, "group_id")) {
        gql_error(ex, "group_id is not supported");
        return NULL;
    }
    ts_buf q = {0};
    _user_filters(args, &q);
    return _paged(ex, args, UPSTREAM_AUTH, "/v1/admin/users", &q, gql_shape_user);
}

static json_t *q_users(gql_exec *ex, const json_t *args)
{
    if (json_object_get(args, "group_id")) {
        gql_error(ex, "group_id is not supported");
        return NULL;
    }
    ts_buf q = {0};
    _user_filters(args, &q);
    return gql_all_shaped(ex, UPSTREAM_AUTH, "/v1/admin/users", &q, gql_shape_user);
}

static json_t *q_user_nodes(gql_exec *ex, const json_t *args)
{
    json_int_t offset, count;
    if (!gql_relay_window(ex, args, &offset, &count)) return NULL;
    ts_buf q = {0};
    json_t *page = gql_page(ex, UPSTREAM_AUTH, "/v1/admin/users", &q, count, offset);
    return gql_connection(ex, page, offset, gql_shape_user_node);
}

static json_t *q_groups(gql_exec *ex, const json_t *args)
{
    ts_buf q = {0};
    gql_qs(&q, "domain", gql_str(args, "domain_name"));
    gql_qs_bool(&q, "is_active", json_object_get(args, "is_active"));
    return gql_all_shaped(ex, UPSTREAM_AUTH, "/v1/admin/projects", &q, gql_shape_group);
}

/* Backend.AI's projects of one name (in the caller's reach: a user its own
 * projects, an admin its domain's, a superadmin any domain's). */
static json_t *q_groups_by_name(gql_exec *ex, const json_t *args)
{
    json_t *all = q_groups(ex, args);
    const char *name = gql_str(args, "name");
    for (size_t i = json_array_size(all); i-- > 0;) {
        const char *n = gql_str(json_array_get(all, i), "name");
        if (!n || strcmp(n, name) != 0) json_array_remove(all, i);
    }
    return all;
}

static json_t *q_group(gql_exec *ex, const json_t *args)
{
    return gql_one(ex, UPSTREAM_AUTH, "/v1/admin/projects", gql_str(args, "id"), gql_shape_group);
}

static json_t *q_domains(gql_exec *ex, const json_t *args)
{
    ts_buf q = {0};
    gql_qs_bool(&q, "is_active", json_object_get(args, "is_active"));
    return gql_all_shaped(ex, UPSTREAM_AUTH, "/v1/admin/domains", &q, gql_shape_domain);
}

static json_t *q_domain(gql_exec *ex, const json_t *args)
{
    gql_ctx *c = gql_user(ex);
    const char *name = gql_str(args, "name");
    return gql_one(ex, UPSTREAM_AUTH, "/v1/admin/domains", name ? name : c->id->domain,
                   gql_shape_domain);
}

static json_t *q_keypair_resource_policies(gql_exec *ex, const json_t *args)
{
    (void)args;
    ts_buf none = {0};
    return gql_all_shaped(ex, UPSTREAM_AUTH, "/v1/admin/keypair-resource-policies", &none,
                          gql_shape_keypair_policy);
}

static json_t *q_keypair_resource_policy(gql_exec *ex, const json_t *args)
{
    const char *name = gql_str(args, "name");
    json_t *mine = NULL;
    if (!name) { /* the caller's keypair's */
        gql_ctx *c = gql_user(ex);
        mine = gql_one(ex, UPSTREAM_AUTH, "/v1/admin/keypairs", c->id->access_key, gql_shape_as_is);
        if (!mine) return NULL;
        name = gql_str(mine, "resource_policy");
    }
    json_t *o = gql_one(ex, UPSTREAM_AUTH, "/v1/admin/keypair-resource-policies",
                        name ? name : "default", gql_shape_keypair_policy);
    json_decref(mine);
    return o;
}

static json_t *q_user_resource_policies(gql_exec *ex, const json_t *args)
{
    (void)args;
    ts_buf none = {0};
    return gql_all_shaped(ex, UPSTREAM_AUTH, "/v1/admin/user-resource-policies", &none,
                          gql_shape_as_is);
}

static json_t *q_user_resource_policy(gql_exec *ex, const json_t *args)
{
    const char *name = gql_str(args, "name");
    return gql_one(ex, UPSTREAM_AUTH, "/v1/admin/user-resource-policies", name ? name : "default",
                   gql_shape_as_is);
}

static json_t *q_project_resource_policies(gql_exec *ex, const json_t *args)
{
    (void)args;
    ts_buf none = {0};
    return gql_all_shaped(ex, UPSTREAM_AUTH, "/v1/admin/project-resource-policies", &none,
                          gql_shape_as_is);
}

static json_t *q_project_resource_policy(gql_exec *ex, const json_t *args)
{
    return gql_one(ex, UPSTREAM_AUTH, "/v1/admin/project-resource-policies", gql_str(args, "name"),
                   gql_shape_as_is);
}

/* ---- resolvers: resources ---------------------------------------------------- */

static json_t *q_images(gql_exec *ex, const json_t *args)
{
    (void)args; /* every image Tessera knows is launchable: agents pull on first use */
    ts_buf none = {0};
    return gql_all_shaped(ex, UPSTREAM_REGISTRY, "/v1/admin/images", &none, gql_shape_image);
}

static json_t *q_image(gql_exec *ex, const json_t *args)
{
    const char *ref = gql_str(args, "reference");
    if (!ref) ref = gql_str(args, "id");
    if (!ref) {
        gql_error(ex, "name the image by reference");
        return NULL;
    }
    return gql_one(ex, UPSTREAM_REGISTRY, "/v1/admin/images", ref, gql_shape_image);
}

static void _agent_filters(const json_t *args, ts_buf *q)
{
    gql_qs(q, "status", gql_str(args, "status"));
    gql_qs(q, "resource_group", gql_str(args, "scaling_group"));
}

static json_t *q_agents(gql_exec *ex, const json_t *args)
{
    ts_buf q = {0};
    _agent_filters(args, &q);
    return gql_all_shaped(ex, UPSTREAM_REGISTRY, "/v1/admin/agents", &q, gql_shape_agent);
}

static json_t *q_agent_list(gql_exec *ex, const json_t *args)
{
    ts_buf q = {0};
    _agent_filters(args, &q);
    return _paged(ex, args, UPSTREAM_REGISTRY, "/v1/admin/agents", &q, gql_shape_agent);
}

static json_t *q_agent(gql_exec *ex, const json_t *args)
{
    return gql_one(ex, UPSTREAM_REGISTRY, "/v1/admin/agents", gql_str(args, "agent_id"),
                   gql_shape_agent);
}

static json_t *q_scaling_groups(gql_exec *ex, const json_t *args)
{
    ts_buf q = {0};
    gql_qs_bool(&q, "is_active", json_object_get(args, "is_active"));
    json_t *all = gql_all_shaped(ex, UPSTREAM_REGISTRY, "/v1/admin/resource-groups", &q,
                                 gql_shape_scaling_group);
    const char *name = gql_str(args, "name");
    if (all && name) {
        for (size_t i = json_array_size(all); i-- > 0;)
            if (strcmp(gql_str(json_array_get(all, i), "name"), name) != 0)
                json_array_remove(all, i);
    }
    return all;
}

static json_t *q_scaling_group(gql_exec *ex, const json_t *args)
{
    return gql_one(ex, UPSTREAM_REGISTRY, "/v1/admin/resource-groups", gql_str(args, "name"),
                   gql_shape_scaling_group);
}

static json_t *q_resource_presets(gql_exec *ex, const json_t *args)
{
    ts_buf none = {0};
    json_t *all = gql_all_shaped(ex, UPSTREAM_REGISTRY, "/v1/admin/resource-presets", &none,
                                 gql_shape_preset);
    if (!all || (!json_object_get(args, "filter") && !json_object_get(args, "order"))) return all;
    /* not paged: filtered and ordered in whole */
    json_t *a = json_deep_copy(args);
    json_object_set_new(a, "limit", json_integer((json_int_t)json_array_size(all)));
    json_object_set_new(a, "offset", json_integer(0));
    json_t *page = gql_refine(ex, all, a);
    json_decref(a);
    json_t *items = page ? json_incref(json_object_get(page, "items")) : NULL;
    json_decref(page);
    return items;
}

static json_t *q_resource_preset(gql_exec *ex, const json_t *args)
{
    return gql_one(ex, UPSTREAM_REGISTRY, "/v1/admin/resource-presets", gql_str(args, "name"),
                   gql_shape_preset);
}

/* ---- resolvers: storage ------------------------------------------------------ */

static json_t *_volumes(gql_exec *ex)
{
    json_t *a = gql_get(ex, UPSTREAM_VFOLDER, "/v1/folders/_/volumes");
    if (!a) return NULL;
    json_t *out = gql_shape_each(ex, json_object_get(a, "volumes"), gql_shape_volume);
    json_decref(a);
    return out;
}

static json_t *q_storage_volume_list(gql_exec *ex, const json_t *args)
{
    json_t *all = _volumes(ex);
    return all ? gql_refine(ex, all, args) : NULL;
}

static json_t *q_storage_volume(gql_exec *ex, const json_t *args)
{
    json_t *all = _volumes(ex);
    if (!all) return NULL;
    const char *id = gql_str(args, "id");
    json_t *found = json_null();
    size_t i;
    json_t *v;
    json_array_foreach(all, i, v) if (id && strcmp(gql_str(v, "id"), id) == 0)
    {
        json_decref(found);
        found = json_incref(v);
    }
    json_decref(all);
    return found;
}

/* Which folders a vfolder list shows: what the caller may see (admins:
 * with all=true), or Backend.AI's own, invited and project lists, which
 * are the caller's own view even for admins. */
typedef enum { FOLDERS_ALL, FOLDERS_OWN, FOLDERS_INVITED, FOLDERS_PROJECT } folders_scope;

/* Whether a folder of the service's list belongs in scope. */
static bool _in_scope(const json_t *f, folders_scope scope)
{
    const char *own = gql_str(f, "ownership_type");
    bool group = own && strcmp(own, "group") == 0;
    bool owner = json_is_true(json_object_get(f, "is_owner"));
    switch (scope) {
    case FOLDERS_OWN:
        return !group && owner;
    case FOLDERS_INVITED:
        return !group && !owner;
    case FOLDERS_PROJECT:
        return group;
    default:
        return true;
    }
}

static json_t *_folders_in(gql_exec *ex, const json_t *args, folders_scope scope)
{
    gql_ctx *c = gql_user(ex);
    ts_buf q = {0};
    if (scope == FOLDERS_ALL && (c->id->is_admin || strcmp(c->id->role, "user") != 0))
        gql_qs(&q, "all", "true");
    gql_qs(&q, "group_id", gql_str(args, "group_id"));
    char *t = gql_target("/v1/folders", &q);
    json_t *a = gql_get(ex, UPSTREAM_VFOLDER, t);
    free(t);
    if (!a) return NULL;
    if (!json_is_array(a)) {
        json_decref(a);
        gql_error(ex, "unexpected answer from the service");
        return NULL;
    }
    for (size_t i = json_array_size(a); i-- > 0;)
        if (!_in_scope(json_array_get(a, i), scope)) json_array_remove(a, i);
    json_t *out = gql_shape_each(ex, a, gql_shape_vfolder);
    json_decref(a);
    return out;
}

static json_t *_folders(gql_exec *ex, const json_t *args)
{
    return _folders_in(ex, args, FOLDERS_ALL);
}

/* A page of the folders in scope, narrowed to domain_name. */
static json_t *_vfolder_page(gql_exec *ex, const json_t *args, folders_scope scope)
{
    if (json_object_get(args, "access_key")) {
        gql_error(ex, "access_key is not supported");
        return NULL;
    }
    json_t *all = _folders_in(ex, args, scope);
    if (!all) return NULL;
    const char *domain = gql_str(args, "domain_name");
    if (domain)
        for (size_t i = json_array_size(all); i-- > 0;) {
            const char *d = gql_str(json_array_get(all, i), "domain_name");
            if (d && strcmp(d, domain) != 0) json_array_remove(all, i);
        }
    return gql_refine(ex, all, args);
}

static json_t *q_vfolder_list(gql_exec *ex, const json_t *args)
{
    return _vfolder_page(ex, args, FOLDERS_ALL);
}

static json_t *q_vfolder_own_list(gql_exec *ex, const json_t *args)
{
    return _vfolder_page(ex, args, FOLDERS_OWN);
}

static json_t *q_vfolder_invited_list(gql_exec *ex, const json_t *args)
{
    return _vfolder_page(ex, args, FOLDERS_INVITED);
}

static json_t *q_vfolder_project_list(gql_exec *ex, const json_t *args)
{
    return _vfolder_page(ex, args, FOLDERS_PROJECT);
}

static json_t *q_vfolder(gql_exec *ex, const json_t *args)
{
    json_t *all = _folders(ex, args);
    if (!all) return NULL;
    const char *id = gql_str(args, "id");
    json_t *found = json_null();
    size_t i;
    json_t *f;
    json_array_foreach(all, i, f) if (id && gql_str(f, "id") && strcmp(gql_str(f, "id"), id) == 0)
    {
        json_decref(found);
        found = json_incref(f);
    }
    json_decref(all);
    return found;
}

/* Backend.AI's host permissions (allowed_vfolder_hosts' values): the ones
 * tessera-vfolder checks, in Backend.AI's names. */
static json_t *q_vfolder_host_permissions(gql_exec *ex, const json_t *args)
{
    (void)ex;
    (void)args;
    return json_pack("{s:[s,s,s,s,s,s,s,s]}", "vfolder_host_permission_list", "create-vfolder",
                     "modify-vfolder", "delete-vfolder", "mount-in-session", "upload-file",
                     "download-file", "invite-others", "set-user-specific-permission");
}

/* ---- the root ------------------------------------------------------------------ */

#define PAGED                                                                                      \
    GQL_REQ("limit", GQL_INT), GQL_REQ("offset", GQL_INT), GQL_OPT("filter", GQL_STRING),          \
        GQL_OPT("order", GQL_STRING)
#define RELAY                                                                                      \
    GQL_OPT("filter", GQL_STRING), GQL_OPT("order", GQL_STRING), GQL_OPT("offset", GQL_INT),       \
        GQL_OPT("before", GQL_STRING), GQL_OPT("after", GQL_STRING), GQL_OPT("first", GQL_INT),    \
        GQL_OPT("last", GQL_INT)

const gql_root_field gql_query_fields[] = {
    {"compute_session_list",
     (const gql_arg_def[]){PAGED, GQL_OPT("domain_name", GQL_STRING),
                           GQL_OPT("group_id", GQL_STRING), GQL_OPT("access_key", GQL_STRING),
                           GQL_OPT("status", GQL_STRING), GQL_ARGS_END},
     &gql_t_compute_session_list, false, q_compute_session_list},
    {"compute_session", (const gql_arg_def[]){GQL_REQ("id", GQL_UUID), GQL_ARGS_END},
     &gql_t_compute_session, false, q_compute_session},
    {"compute_session_nodes",
     (const gql_arg_def[]){RELAY, GQL_OPT("scope_id", GQL_STRING), GQL_OPT("project_id", GQL_UUID),
                           GQL_OPT("permission", GQL_STRING), GQL_ARGS_END},
     &gql_t_compute_session_connection, false, q_compute_session_nodes},
    {"keypair",
     (const gql_arg_def[]){GQL_OPT("domain_name", GQL_STRING), GQL_OPT("access_key", GQL_STRING),
                           GQL_ARGS_END},
     &gql_t_keypair, false, q_keypair},
    {"keypair_list",
     (const gql_arg_def[]){PAGED, GQL_OPT("domain_name", GQL_STRING), GQL_OPT("email", GQL_STRING),
                           GQL_OPT("is_active", GQL_BOOLEAN), GQL_ARGS_END},
     &gql_t_keypair_list, false, q_keypair_list},
    {"keypairs",
     (const gql_arg_def[]){GQL_OPT("domain_name", GQL_STRING), GQL_OPT("email", GQL_STRING),
                           GQL_OPT("is_active", GQL_BOOLEAN), GQL_ARGS_END},
     &gql_t_keypair, true, q_keypairs},
    {"user",
     (const gql_arg_def[]){GQL_OPT("domain_name", GQL_STRING), GQL_OPT("email", GQL_STRING),
                           GQL_ARGS_END},
     &gql_t_user, false, q_user},
    {"user_list",
     (const gql_arg_def[]){PAGED, GQL_OPT("domain_name", GQL_STRING), GQL_OPT("group_id", GQL_UUID),
                           GQL_OPT("is_active", GQL_BOOLEAN), GQL_OPT("status", GQL_STRING),
                           GQL_ARGS_END},
     &gql_t_user_list, false, q_user_list},
    {"users",
     (const gql_arg_def[]){GQL_OPT("domain_name", GQL_STRING), GQL_OPT("group_id", GQL_UUID),
                           GQL_OPT("is_active", GQL_BOOLEAN), GQL_OPT("status", GQL_STRING),
                           GQL_ARGS_END},
     &gql_t_user, true, q_users},
    {"user_nodes", (const gql_arg_def[]){RELAY, GQL_ARGS_END}, &gql_t_user_connection, false,
     q_user_nodes},
    {"images",
     (const gql_arg_def[]){
         GQL_OPT("is_installed", GQL_BOOLEAN), GQL_OPT("is_operation", GQL_BOOLEAN),
         GQL_OPT("filter_by_statuses", GQL_STRING_LIST), GQL_OPT("load_filters", GQL_STRING_LIST),
         GQL_OPT("image_filters", GQL_STRING_LIST), GQL_ARGS_END},
     &gql_t_image, true, q_images},
    {"image",
     (const gql_arg_def[]){GQL_OPT("id", GQL_STRING), GQL_OPT("reference", GQL_STRING),
                           GQL_OPT("architecture", GQL_STRING), GQL_ARGS_END},
     &gql_t_image, false, q_image},
    {"agents",
     (const gql_arg_def[]){GQL_OPT("scaling_group", GQL_STRING), GQL_OPT("status", GQL_STRING),
                           GQL_ARGS_END},
     &gql_t_agent, true, q_agents},
    {"agent_list",
     (const gql_arg_def[]){PAGED, GQL_OPT("scaling_group", GQL_STRING),
                           GQL_OPT("status", GQL_STRING), GQL_ARGS_END},
     &gql_t_agent_list, false, q_agent_list},
    {"agent", (const gql_arg_def[]){GQL_REQ("agent_id", GQL_STRING), GQL_ARGS_END}, &gql_t_agent,
     false, q_agent},
    {"groups",
     (const gql_arg_def[]){GQL_OPT("domain_name", GQL_STRING), GQL_OPT("is_active", GQL_BOOLEAN),
                           GQL_OPT("type", GQL_STRING_LIST), GQL_ARGS_END},
     &gql_t_group, true, q_groups},
    {"groups_by_name",
     (const gql_arg_def[]){GQL_REQ("name", GQL_STRING), GQL_OPT("domain_name", GQL_STRING),
                           GQL_ARGS_END},
     &gql_t_group, true, q_groups_by_name},
    {"group",
     (const gql_arg_def[]){GQL_REQ("id", GQL_UUID), GQL_OPT("domain_name", GQL_STRING),
                           GQL_OPT("type", GQL_STRING_LIST), GQL_ARGS_END},
     &gql_t_group, false, q_group},
    {"domains", (const gql_arg_def[]){GQL_OPT("is_active", GQL_BOOLEAN), GQL_ARGS_END},
     &gql_t_domain, true, q_domains},
    {"domain", (const gql_arg_def[]){GQL_OPT("name", GQL_STRING), GQL_ARGS_END}, &gql_t_domain,
     false, q_domain},
    {"scaling_groups",
     (const gql_arg_def[]){GQL_OPT("name", GQL_STRING), GQL_OPT("is_active", GQL_BOOLEAN),
                           GQL_ARGS_END},
     &gql_t_scaling_group, true, q_scaling_groups},
    {"scaling_group", (const gql_arg_def[]){GQL_OPT("name", GQL_STRING), GQL_ARGS_END},
     &gql_t_scaling_group, false, q_scaling_group},
    {"keypair_resource_policy", (const gql_arg_def[]){GQL_OPT("name", GQL_STRING), GQL_ARGS_END},
     &gql_t_keypair_policy, false, q_keypair_resource_policy},
    {"keypair_resource_policies", (const gql_arg_def[]){GQL_ARGS_END}, &gql_t_keypair_policy, true,
     q_keypair_resource_policies},
    {"user_resource_policy", (const gql_arg_def[]){GQL_OPT("name", GQL_STRING), GQL_ARGS_END},
     &gql_t_user_policy, false, q_user_resource_policy},
    {"user_resource_policies", (const gql_arg_def[]){GQL_ARGS_END}, &gql_t_user_policy, true,
     q_user_resource_policies},
    {"project_resource_policy", (const gql_arg_def[]){GQL_REQ("name", GQL_STRING), GQL_ARGS_END},
     &gql_t_project_policy, false, q_project_resource_policy},
    {"project_resource_policies", (const gql_arg_def[]){GQL_ARGS_END}, &gql_t_project_policy, true,
     q_project_resource_policies},
    {"resource_preset", (const gql_arg_def[]){GQL_OPT("name", GQL_STRING), GQL_ARGS_END},
     &gql_t_resource_preset, false, q_resource_preset},
    {"resource_presets",
     (const gql_arg_def[]){GQL_OPT("filter", GQL_STRING), GQL_OPT("order", GQL_STRING),
                           GQL_ARGS_END},
     &gql_t_resource_preset, true, q_resource_presets},
    {"storage_volume", (const gql_arg_def[]){GQL_OPT("id", GQL_STRING), GQL_ARGS_END},
     &gql_t_storage_volume, false, q_storage_volume},
    {"storage_volume_list", (const gql_arg_def[]){PAGED, GQL_ARGS_END}, &gql_t_storage_volume_list,
     false, q_storage_volume_list},
    {"vfolder_list",
     (const gql_arg_def[]){PAGED, GQL_OPT("domain_name", GQL_STRING), GQL_OPT("group_id", GQL_UUID),
                           GQL_OPT("access_key", GQL_STRING), GQL_ARGS_END},
     &gql_t_vfolder_list, false, q_vfolder_list},
    {"vfolder_own_list",
     (const gql_arg_def[]){PAGED, GQL_OPT("domain_name", GQL_STRING),
                           GQL_OPT("access_key", GQL_STRING), GQL_ARGS_END},
     &gql_t_vfolder_list, false, q_vfolder_own_list},
    {"vfolder_invited_list",
     (const gql_arg_def[]){PAGED, GQL_OPT("domain_name", GQL_STRING),
                           GQL_OPT("access_key", GQL_STRING), GQL_ARGS_END},
     &gql_t_vfolder_list, false, q_vfolder_invited_list},
    {"vfolder_project_list",
     (const gql_arg_def[]){PAGED, GQL_OPT("domain_name", GQL_STRING),
                           GQL_OPT("access_key", GQL_STRING), GQL_ARGS_END},
     &gql_t_vfolder_list, false, q_vfolder_project_list},
    {"vfolder_host_permissions", (const gql_arg_def[]){GQL_ARGS_END}, &gql_t_atomic_permissions,
     false, q_vfolder_host_permissions},
    {"vfolder", (const gql_arg_def[]){GQL_OPT("id", GQL_STRING), GQL_ARGS_END}, &gql_t_vfolder,
     false, q_vfolder},
    {NULL, NULL, NULL, false, NULL},
};
