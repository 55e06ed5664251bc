/* gql_mutation.c: the root mutation fields of Backend.AI's GraphQL schema
 * (gql_schema.h), each one or a few calls of the services' admin REST API
 * as the caller, so the same permission checks apply.
 *
 * As in the reference, a mutation answers {ok, msg[, item]}: a refusal for
 * want of rights (401, 403) is a GraphQL error, anything else the service
 * refuses (a bad value, a name taken, a missing object) is ok: false with the
 * service's message, and nothing changed. Input fields are the reference's;
 * a field the input type does not have is a GraphQL error, and a field
 * Tessera has no use for (marked IGNORED below) is accepted and ignored.
 * docs/api.md "GraphQL" lists the differences. */
#include "gql_mutation.h"

#include "gql_fetch.h"
#include "gql_shapes.h"

#include "proxy.h"

#include "libcommon/httpc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MUTATE_TIMEOUT_MS 15000
#define SCAN_START_TIMEOUT_MS 10000

/* The outcome of one REST call. */
typedef struct outcome {
    bool ok;      /* 2xx */
    bool refused; /* answered, but not 2xx (msg says why) */
    json_t *body; /* the answer's JSON, or NULL */
    char msg[400];
} outcome;

/* method target with body (NULL: none) on upstream u. False only after a
 * GraphQL error (no answer, or a refusal for want of rights). */
static bool _call(gql_exec *ex, upstream_id u, const char *method, const char *target,
                  const json_t *body, int64_t timeout_ms, outcome *o)
{
    gql_ctx *c = gql_user(ex);
    *o = (outcome){0};
    if (!(timeout_ms = gql_time_left(ex, timeout_ms))) return false;
    long status;
    ts_err err = {{0}};
    if (!proxy_fetch_json(&c->gw->up[u], timeout_ms, method, c->req, target, c->id, body, &status,
                          &o->body, &err)) {
        gql_error(ex, "%s", err.msg);
        return false;
    }
    const char *msg = json_string_value(json_object_get(o->body, "msg"));
    if (!msg) msg = json_string_value(json_object_get(o->body, "title"));
    if (status == 401 || status == 403) {
        gql_error(ex, "%s", msg ? msg : "forbidden");
        json_decref(o->body);
        o->body = NULL;
        return false;
    }
    o->ok = status >= 200 && status < 300;
    o->refused = !o->ok;
    snprintf(o->msg, sizeof(o->msg), "%s", o->ok ? "success" : msg ? msg : "failed");
    return true;
}

/* {ok, msg} (+ item under key, a new reference or NULL). */
static json_t *_result(const outcome *o, const char *key, json_t *item)
{
    json_t *r = json_pack("{s:b, s:s}", "ok", o->ok, "msg", o->msg);
    if (key)
        json_object_set_new(r, key, item ? item : json_null());
    else
        json_decref(item);
    return r;
}

static json_t *_fail(const char *msg)
{
    return json_pack("{s:b, s:s}", "ok", false, "msg", msg);
}

/* ---- input ------------------------------------------------------------------ */

typedef struct field_map {
    const char *gql;  /* the input field */
    const char *rest; /* its REST name; NULL: accepted and ignored */
} field_map;

#define IGNORED NULL

/* The REST body for props (an input object) through map; NULL after a
 * GraphQL error naming an unknown field. JSONString values arrive parsed
 * (text holding JSON) only where the argument is typed so: here every
 * value comes as given, so text holding a JSON object is parsed for the
 * fields that REST takes as objects. */
static json_t *_body(gql_exec *ex, const json_t *props, const char *input_type,
                     const field_map *map)
{
    json_t *out = json_object();
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)props, k, v)
    {
        const field_map *m = map;
        while (m->gql && strcmp(m->gql, k) != 0)
            m++;
        if (!m->gql) {
            gql_error(ex, "Field \"%s\" is not defined by type \"%s\".", k, input_type);
            json_decref(out);
            return NULL;
        }
        if (!m->rest) continue;
        json_t *val = json_incref(v);
        static const char *const objects[] = {"total_resource_slots", "allowed_vfolder_hosts",
                                              "resource_slots", NULL};
        for (const char *const *o = objects; *o; o++)
            if (strcmp(*o, m->rest) == 0 && json_is_string(v)) {
                json_t *parsed = json_loads(json_string_value(v), 0, NULL);
                if (parsed) {
                    json_decref(val);
                    val = parsed;
                }
            }
        if (strcmp(m->rest, "allowed_vfolder_hosts") == 0 && json_is_array(val)) {
            /* Backend.AI before 22.03: a list of hosts, each with every right */
            json_t *hosts = json_object();
            size_t i;
            json_t *h;
            json_array_foreach(val, i, h) if (json_is_string(h)) json_object_set_new(
                hosts, json_string_value(h),
                json_pack("[s,s,s,s,s,s,s,s]", "create-vfolder", "modify-vfolder", "delete-vfolder",
                          "mount-in-session", "upload-file", "download-file", "invite-others",
                          "set-user-specific-permission"));
            json_decref(val);
            val = hosts;
        }
        json_object_set_new(out, m->rest, val);
    }
    return out;
}

/* "/v1/admin/<what>/<escaped key>". Heap. */
static char *_path(const char *what, const char *key)
{
    char *esc = httpc_escape(key ? key : "");
    char *t = ts_asprintf("/v1/admin/%s/%s", what, esc);
    free(esc);
    return t;
}

/* The id of the user with that e-mail address (heap), or NULL: with why
 * when there is none, after a GraphQL error otherwise. */
static char *_user_id(gql_exec *ex, const char *email, char *why, size_t n)
{
    bool missing;
    char *id = gql_user_id_by_email(ex, email, &missing);
    if (missing) snprintf(why, n, "no such user: %s", email ? email : "");
    return id;
}

/* ---- keypairs ------------------------------------------------------------------- */

static const field_map KEYPAIR_IN[] = {{"is_active", "is_active"},
                                       {"is_admin", "is_admin"},
                                       {"resource_policy", "resource_policy"},
                                       {"rate_limit", "rate_limit"},
                                       {"concurrency_limit", IGNORED},
                                       {NULL, NULL}};

json_t *gql_m_create_keypair(gql_exec *ex, const json_t *args)
{
    json_t *body = _body(ex, json_object_get(args, "props"), "KeyPairInput", KEYPAIR_IN);
    if (!body) return NULL;
    char why[300] = "";
    char *uid = _user_id(ex, gql_str(args, "user_id"), why, sizeof(why));
    if (!uid) {
        json_decref(body);
        return why[0] ? _fail(why) : NULL;
    }
    json_t *active = json_incref(json_object_get(body, "is_active"));
    json_object_del(body, "is_active");
    json_object_set_new(body, "user_id", json_string(uid));
    free(uid);
    outcome o;
    bool called =
        _call(ex, UPSTREAM_AUTH, "POST", "/v1/admin/keypairs", body, MUTATE_TIMEOUT_MS, &o);
    json_decref(body);
    if (!called) {
        json_decref(active);
        return NULL;
    }
    json_t *item = NULL;
    if (o.ok) {
        const char *ak = gql_str(o.body, "access_key");
        if (json_is_false(active) && ak) { /* issued inactive: deactivate it at once */
            char *t = _path("keypairs", ak);
            outcome p;
            json_t *patch = json_pack("{s:b}", "is_active", false);
            if (_call(ex, UPSTREAM_AUTH, "PATCH", t, patch, MUTATE_TIMEOUT_MS, &p))
                json_decref(p.body);
            json_decref(patch);
            free(t);
            json_object_set_new(o.body, "is_active", json_false());
        }
        item = json_pack(
            "{s:O, s:O, s:O, s:O, s:O, s:O, s:O, s:{s:O}}", "access_key",
            json_object_get(o.body, "access_key"), "secret_key",
            json_object_get(o.body, "secret_key"), "is_active",
            json_object_get(o.body, "is_active"), "is_admin", json_object_get(o.body, "is_admin"),
            "resource_policy", json_object_get(o.body, "resource_policy"), "rate_limit",
            json_object_get(o.body, "rate_limit"), "_user", json_object_get(o.body, "user_id"),
            "user_info", "_user", json_object_get(o.body, "user_id"));
        json_object_set_new(item, "user", json_incref(json_object_get(o.body, "user_id")));
    }
    json_decref(active);
    json_decref(o.body);
    return _result(&o, "keypair", item);
}

/* PATCH or DELETE /v1/admin/<what>/<key> with props mapped through map
 * (NULL: no body). */
static json_t *_change(gql_exec *ex, upstream_id u, const char *method, const char *what,
                       const char *key, const json_t *props, const char *input_type,
                       const field_map *map)
{
    json_t *body = NULL;
    if (map) {
        body = _body(ex, props, input_type, map);
        if (!body) return NULL;
    }
    char *t = _path(what, key);
    outcome o;
    bool called = _call(ex, u, method, t, body, MUTATE_TIMEOUT_MS, &o);
    free(t);
    json_decref(body);
    if (!called) return NULL;
    json_decref(o.body);
    return _result(&o, NULL, NULL);
}

json_t *gql_m_modify_keypair(gql_exec *ex, const json_t *args)
{
    return _change(ex, UPSTREAM_AUTH, "PATCH", "keypairs", gql_str(args, "access_key"),
                   json_object_get(args, "props"), "ModifyKeyPairInput", KEYPAIR_IN);
}

json_t *gql_m_delete_keypair(gql_exec *ex, const json_t *args)
{
    return _change(ex, UPSTREAM_AUTH, "DELETE", "keypairs", gql_str(args, "access_key"), NULL, NULL,
                   NULL);
}

/* ---- users ----------------------------------------------------------------------- */

static const field_map USER_IN[] = {{"username", "username"},
                                    {"password", "password"},
                                    {"need_password_change", IGNORED},
                                    {"full_name", "full_name"},
                                    {"description", "description"},
                                    {"is_active", "is_active"},
                                    {"status", "status"},
                                    {"domain_name", "domain_name"},
                                    {"role", "role"},
                                    {"group_ids", "projects"},
                                    {"allowed_client_ip", IGNORED},
                                    {"totp_activated", IGNORED},
                                    {"resource_policy", "resource_policy"},
                                    {"sudo_session_enabled", IGNORED},
                                    {"main_access_key", IGNORED},
                                    {"container_uid", IGNORED},
                                    {"container_main_gid", IGNORED},
                                    {"container_gids", IGNORED},
                                    {NULL, NULL}};

/* Backend.AI's is_active and status into Tessera's status; roles other
 * than Tessera's (monitor) refused. False with why. */
static bool _user_body(json_t *body, char *why, size_t n)
{
    json_t *active = json_object_get(body, "is_active");
    if (json_is_boolean(active) && !json_object_get(body, "status"))
        json_object_set_new(body, "status",
                            json_string(json_is_true(active) ? "active" : "inactive"));
    json_object_del(body, "is_active");
    const char *status = gql_str(body, "status");
    if (status && strcasecmp(status, "before-verification") == 0)
        json_object_set_new(body, "status", json_string("inactive"));
    const char *role = gql_str(body, "role");
    if (role && strcmp(role, "monitor") == 0) {
        snprintf(why, n, "role monitor is not served by Tessera");
        return false;
    }
    return true;
}

json_t *gql_m_create_user(gql_exec *ex, const json_t *args)
{
    json_t *body = _body(ex, json_object_get(args, "props"), "UserInput", USER_IN);
    if (!body) return NULL;
    char why[300];
    if (!_user_body(body, why, sizeof(why))) {
        json_decref(body);
        return _fail(why);
    }
    json_object_set_new(body, "email",
                        json_string(gql_str(args, "email") ? gql_str(args, "email") : ""));
    outcome o;
    bool called = _call(ex, UPSTREAM_AUTH, "POST", "/v1/admin/users", body, MUTATE_TIMEOUT_MS, &o);
    json_decref(body);
    if (!called) return NULL;
    json_t *item = NULL;
    if (o.ok) item = gql_shape_user(ex, o.body); /* groups with their names */
    json_decref(o.body);
    return _result(&o, "user", item);
}

json_t *gql_m_modify_user(gql_exec *ex, const json_t *args)
{
    json_t *body = _body(ex, json_object_get(args, "props"), "ModifyUserInput", USER_IN);
    if (!body) return NULL;
    char why[300] = "";
    char *uid = _user_body(body, why, sizeof(why))
                    ? _user_id(ex, gql_str(args, "email"), why, sizeof(why))
                    : NULL;
    if (!uid) {
        json_decref(body);
        return why[0] ? _fail(why) : NULL;
    }
    char *t = _path("users", uid);
    free(uid);
    outcome o;
    bool called = _call(ex, UPSTREAM_AUTH, "PATCH", t, body, MUTATE_TIMEOUT_MS, &o);
    free(t);
    json_decref(body);
    if (!called) return NULL;
    json_decref(o.body);
    return _result(&o, NULL, NULL);
}

json_t *gql_m_delete_user(gql_exec *ex, const json_t *args)
{
    char why[300] = "";
    char *uid = _user_id(ex, gql_str(args, "email"), why, sizeof(why));
    if (!uid) return why[0] ? _fail(why) : NULL;
    json_t *r = _change(ex, UPSTREAM_AUTH, "DELETE", "users", uid, NULL, NULL, NULL);
    free(uid);
    return r;
}

/* ---- domains and projects --------------------------------------------------------- */

static const field_map DOMAIN_IN[] = {{"name", "name"},
                                      {"description", "description"},
                                      {"is_active", "is_active"},
                                      {"total_resource_slots", "total_resource_slots"},
                                      {"allowed_vfolder_hosts", "allowed_vfolder_hosts"},
                                      {"idle_timeout", "idle_timeout"}, /* Tessera's */
                                      {"allowed_docker_registries", IGNORED},
                                      {"integration_id", IGNORED},
                                      {NULL, NULL}};

/* POST path with body + name; the created item (shaped by the caller) or
 * the outcome. */
static json_t *_create(gql_exec *ex, upstream_id u, const char *path, json_t *body,
                       const char *item_key)
{
    outcome o;
    bool called = _call(ex, u, "POST", path, body, MUTATE_TIMEOUT_MS, &o);
    json_decref(body);
    if (!called) return NULL;
    json_t *item = o.ok ? json_incref(o.body) : NULL;
    json_decref(o.body);
    return _result(&o, item_key, item);
}

json_t *gql_m_create_domain(gql_exec *ex, const json_t *args)
{
    json_t *body = _body(ex, json_object_get(args, "props"), "DomainInput", DOMAIN_IN);
    if (!body) return NULL;
    json_object_set_new(body, "name",
                        json_string(gql_str(args, "name") ? gql_str(args, "name") : ""));
    return _create(ex, UPSTREAM_AUTH, "/v1/admin/domains", body, "domain");
}

json_t *gql_m_modify_domain(gql_exec *ex, const json_t *args)
{
    const json_t *props = json_object_get(args, "props");
    const char *rename = gql_str(props, "name");
    if (rename && strcmp(rename, gql_str(args, "name") ? gql_str(args, "name") : "") != 0)
        return _fail("domains cannot be renamed");
    json_t *p = json_deep_copy(props);
    json_object_del(p, "name");
    json_t *r = _change(ex, UPSTREAM_AUTH, "PATCH", "domains", gql_str(args, "name"), p,
                        "ModifyDomainInput", DOMAIN_IN);
    json_decref(p);
    return r;
}

json_t *gql_m_delete_domain(gql_exec *ex, const json_t *args)
{
    return _change(ex, UPSTREAM_AUTH, "DELETE", "domains", gql_str(args, "name"), NULL, NULL, NULL);
}

static const field_map GROUP_IN[] = {{"name", "name"},
                                     {"type", IGNORED},
                                     {"description", "description"},
                                     {"is_active", "is_active"},
                                     {"domain_name", "domain_name"},
                                     {"total_resource_slots", "total_resource_slots"},
                                     {"allowed_vfolder_hosts", "allowed_vfolder_hosts"},
                                     {"integration_id", IGNORED},
                                     {"resource_policy", "resource_policy"},
                                     {"idle_timeout", "idle_timeout"}, /* Tessera's */
                                     {"container_registry", IGNORED},
                                     {"user_update_mode", "user_update_mode"},
                                     {"user_uuids", "user_uuids"},
                                     {NULL, NULL}};

json_t *gql_m_create_group(gql_exec *ex, const json_t *args)
{
    json_t *body = _body(ex, json_object_get(args, "props"), "GroupInput", GROUP_IN);
    if (!body) return NULL;
    if (json_object_get(body, "user_update_mode") || json_object_get(body, "user_uuids")) {
        gql_error(ex, "Field \"user_uuids\" is not defined by type \"GroupInput\".");
        json_decref(body);
        return NULL;
    }
    json_object_set_new(body, "name",
                        json_string(gql_str(args, "name") ? gql_str(args, "name") : ""));
    return _create(ex, UPSTREAM_AUTH, "/v1/admin/projects", body, "group");
}

json_t *gql_m_modify_group(gql_exec *ex, const json_t *args)
{
    json_t *body = _body(ex, json_object_get(args, "props"), "ModifyGroupInput", GROUP_IN);
    if (!body) return NULL;
    const char *gid = gql_str(args, "gid");
    json_t *mode = json_incref(json_object_get(body, "user_update_mode"));
    json_t *uuids = json_incref(json_object_get(body, "user_uuids"));
    json_object_del(body, "user_update_mode");
    json_object_del(body, "user_uuids");
    json_object_del(body, "domain_name"); /* a project stays in its domain */
    outcome o = {.ok = true};
    snprintf(o.msg, sizeof(o.msg), "success");
    if (json_object_size(body)) {
        char *t = _path("projects", gid);
        bool called = _call(ex, UPSTREAM_AUTH, "PATCH", t, body, MUTATE_TIMEOUT_MS, &o);
        free(t);
        json_decref(o.body);
        if (!called) goto out;
    }
    if (o.ok && json_array_size(uuids)) {
        const char *m = json_string_value(mode);
        const char *method = m && strcmp(m, "remove") == 0 ? "DELETE" : "POST";
        char *base = _path("projects", gid);
        char *t = ts_asprintf("%s/members", base);
        free(base);
        json_t *members = json_pack("{s:O}", "user_ids", uuids);
        bool called = _call(ex, UPSTREAM_AUTH, method, t, members, MUTATE_TIMEOUT_MS, &o);
        json_decref(members);
        free(t);
        json_decref(o.body);
        if (!called) goto out;
    }
    json_decref(body);
    json_decref(mode);
    json_decref(uuids);
    return _result(&o, NULL, NULL);
out:
    json_decref(body);
    json_decref(mode);
    json_decref(uuids);
    return NULL;
}

json_t *gql_m_delete_group(gql_exec *ex, const json_t *args)
{
    return _change(ex, UPSTREAM_AUTH, "DELETE", "projects", gql_str(args, "gid"), NULL, NULL, NULL);
}

/* ---- policies and presets -------------------------------------------------------- */

static const field_map KP_POLICY_IN[] = {
    {"default_for_unspecified", IGNORED},
    {"total_resource_slots", "total_resource_slots"},
    {"max_session_lifetime", "max_session_lifetime"},
    {"max_concurrent_sessions", "max_concurrent_sessions"},
    {"max_concurrent_sftp_sessions", IGNORED},
    {"max_containers_per_session", "max_containers_per_session"},
    {"idle_timeout", "idle_timeout"},
    {"allowed_vfolder_hosts", "allowed_vfolder_hosts"},
    {"max_vfolder_count", IGNORED},
    {"max_vfolder_size", IGNORED},
    {"max_quota_scope_size", IGNORED},
    {"max_pending_session_count", "max_pending_session_count"},
    {"max_pending_session_resource_slots", IGNORED},
    {"max_rootfs_size", "max_rootfs_size"}, /* Tessera's: bytes a container may write */
    {NULL, NULL}};

static const field_map USER_POLICY_IN[] = {{"max_vfolder_count", "max_vfolder_count"},
                                           {"max_quota_scope_size", "max_quota_scope_size"},
                                           {"max_session_count_per_model_session", IGNORED},
                                           {"max_customized_image_count", IGNORED},
                                           {"max_network_count", IGNORED},
                                           {NULL, NULL}};

typedef struct kind {
    upstream_id up;
    const char *what;      /* the REST collection under /v1/admin */
    const char *create_in; /* input type names */
    const char *modify_in;
    const field_map *map;
    const char *item_key; /* the create mutation's item field */
} kind;

static const kind KP_POLICY = {UPSTREAM_AUTH,
                               "keypair-resource-policies",
                               "CreateKeyPairResourcePolicyInput",
                               "ModifyKeyPairResourcePolicyInput",
                               KP_POLICY_IN,
                               "resource_policy"};
static const kind USER_POLICY = {UPSTREAM_AUTH,
                                 "user-resource-policies",
                                 "CreateUserResourcePolicyInput",
                                 "ModifyUserResourcePolicyInput",
                                 USER_POLICY_IN,
                                 "resource_policy"};
static const kind PROJECT_POLICY = {UPSTREAM_AUTH,
                                    "project-resource-policies",
                                    "CreateProjectResourcePolicyInput",
                                    "ModifyProjectResourcePolicyInput",
                                    USER_POLICY_IN,
                                    "resource_policy"};

static const field_map PRESET_IN[] = {{"resource_slots", "resource_slots"},
                                      {"shared_memory", "shared_memory"},
                                      {"scaling_group_name", "scaling_group_name"},
                                      {"name", "name"},
                                      {NULL, NULL}};
static const kind PRESET = {
    UPSTREAM_REGISTRY,           "resource-presets", "CreateResourcePresetInput",
    "ModifyResourcePresetInput", PRESET_IN,          "resource_preset"};

static json_t *_named_create(gql_exec *ex, const json_t *args, const kind *k)
{
    json_t *body = _body(ex, json_object_get(args, "props"), k->create_in, k->map);
    if (!body) return NULL;
    const json_t *sg = json_object_get(body, "scaling_group_name");
    if (sg && !json_is_null(sg)) {
        json_decref(body);
        return _fail("resource presets are not tied to a resource group in Tessera");
    }
    json_object_del(body, "scaling_group_name");
    json_object_set_new(body, "name",
                        json_string(gql_str(args, "name") ? gql_str(args, "name") : ""));
    char *path = ts_asprintf("/v1/admin/%s", k->what);
    json_t *r = _create(ex, k->up, path, body, k->item_key);
    free(path);
    return r;
}

static json_t *_named_modify(gql_exec *ex, const json_t *args, const kind *k)
{
    json_t *props = json_deep_copy(json_object_get(args, "props"));
    const char *rename = gql_str(props, "name");
    if (rename && strcmp(rename, gql_str(args, "name") ? gql_str(args, "name") : "") != 0) {
        json_decref(props);
        return _fail("renaming is not supported");
    }
    json_object_del(props, "name");
    const json_t *sg = json_object_get(props, "scaling_group_name");
    if (sg && !json_is_null(sg)) {
        json_decref(props);
        return _fail("resource presets are not tied to a resource group in Tessera");
    }
    json_object_del(props, "scaling_group_name");
    json_t *r =
        _change(ex, k->up, "PATCH", k->what, gql_str(args, "name"), props, k->modify_in, k->map);
    json_decref(props);
    return r;
}

static json_t *_named_delete(gql_exec *ex, const json_t *args, const kind *k)
{
    return _change(ex, k->up, "DELETE", k->what, gql_str(args, "name"), NULL, NULL, NULL);
}

#define NAMED(prefix, k)                                                                           \
    json_t *gql_m_create_##prefix(gql_exec *ex, const json_t *a)                                   \
    {                                                                                              \
        return _named_create(ex, a, &(k));                                                         \
    }                                                                                              \
    json_t *gql_m_modify_##prefix(gql_exec *ex, const json_t *a)                                   \
    {                                                                                              \
        return _named_modify(ex, a, &(k));                                                         \
    }                                                                                              \
    json_t *gql_m_delete_##prefix(gql_exec *ex, const json_t *a)                                   \
    {                                                                                              \
        return _named_delete(ex, a, &(k));                                                         \
    }

NAMED(kp_policy, KP_POLICY)
NAMED(user_policy, USER_POLICY)
NAMED(project_policy, PROJECT_POLICY)
NAMED(preset, PRESET)

/* ---- resource groups ----------------------------------------------------------------- */

static const field_map SGROUP_IN[] = {{"description", "description"},
                                      {"is_active", "is_active"},
                                      {"is_public", IGNORED},
                                      {"wsproxy_addr", IGNORED},
                                      {"wsproxy_api_token", IGNORED},
                                      {"driver", IGNORED},
                                      {"driver_opts", IGNORED},
                                      {"scheduler", "scheduler"},
                                      {"scheduler_opts", "scheduler_opts"},
                                      {"use_host_network", IGNORED},
                                      {NULL, NULL}};

/* scheduler_opts (JSON text or an object) into Tessera's fields. */
static void _scheduler_opts(json_t *body)
{
    json_t *opts = json_incref(json_object_get(body, "scheduler_opts"));
    json_object_del(body, "scheduler_opts");
    if (json_is_string(opts)) {
        json_t *parsed = json_loads(json_string_value(opts), 0, NULL);
        json_decref(opts);
        opts = parsed;
    }
    static const char *const keys[] = {"agent_selector", "allowed_session_types", "pending_timeout",
                                       "idle_timeout",   "idle_inference",        NULL};
    for (const char *const *k = keys; *k; k++) {
        json_t *v = json_object_get(opts, *k);
        if (v) json_object_set(body, *k, v);
    }
    json_decref(opts);
}

json_t *gql_m_create_scaling_group(gql_exec *ex, const json_t *args)
{
    json_t *body = _body(ex, json_object_get(args, "props"), "CreateScalingGroupInput", SGROUP_IN);
    if (!body) return NULL;
    _scheduler_opts(body);
    json_object_set_new(body, "name",
                        json_string(gql_str(args, "name") ? gql_str(args, "name") : ""));
    return _create(ex, UPSTREAM_REGISTRY, "/v1/admin/resource-groups", body, "scaling_group");
}

json_t *gql_m_modify_scaling_group(gql_exec *ex, const json_t *args)
{
    json_t *body = _body(ex, json_object_get(args, "props"), "ModifyScalingGroupInput", SGROUP_IN);
    if (!body) return NULL;
    _scheduler_opts(body);
    char *t = _path("resource-groups", gql_str(args, "name"));
    outcome o;
    bool called = _call(ex, UPSTREAM_REGISTRY, "PATCH", t, body, MUTATE_TIMEOUT_MS, &o);
    free(t);
    json_decref(body);
    if (!called) return NULL;
    json_decref(o.body);
    return _result(&o, NULL, NULL);
}

json_t *gql_m_delete_scaling_group(gql_exec *ex, const json_t *args)
{
    return _change(ex, UPSTREAM_REGISTRY, "DELETE", "resource-groups", gql_str(args, "name"), NULL,
                   NULL, NULL);
}

/* POST or DELETE /v1/admin/resource-group-access for one scope. */
static json_t *_access(gql_exec *ex, const char *method, const char *scope_type,
                       const char *scope_id, const char *group)
{
    json_t *body = json_pack("{s:s, s:s, s:s}", "resource_group", group ? group : "", "scope_type",
                             scope_type, "scope_id", scope_id ? scope_id : "");
    outcome o;
    bool called = _call(ex, UPSTREAM_AUTH, method, "/v1/admin/resource-group-access", body,
                        MUTATE_TIMEOUT_MS, &o);
    json_decref(body);
    if (!called) return NULL;
    json_decref(o.body);
    return _result(&o, NULL, NULL);
}

#define ACCESS(name, method, type, arg)                                                            \
    json_t *gql_m_##name(gql_exec *ex, const json_t *a)                                            \
    {                                                                                              \
        return _access(ex, method, type, gql_str(a, arg), gql_str(a, "scaling_group"));            \
    }

ACCESS(assoc_domain, "POST", "domain", "domain")
ACCESS(dissoc_domain, "DELETE", "domain", "domain")
ACCESS(assoc_group, "POST", "project", "user_group")
ACCESS(dissoc_group, "DELETE", "project", "user_group")
ACCESS(assoc_keypair, "POST", "keypair", "access_key")
ACCESS(dissoc_keypair, "DELETE", "keypair", "access_key")

/* ---- images ---------------------------------------------------------------------------- */

json_t *gql_m_rescan_images(gql_exec *ex, const json_t *args)
{
    /* answered at once: the scan runs as a registry background task, followed
     * on GET /events/background-task?taskId= (bgtasks.h) */
    const char *registry = gql_str(args, "registry");
    json_t *body = registry ? json_pack("{s:s}", "registry", registry) : json_object();
    outcome o;
    bool called = _call(ex, UPSTREAM_REGISTRY, "POST", "/v1/admin/images/scan?background=true",
                        body, SCAN_START_TIMEOUT_MS, &o);
    json_decref(body);
    if (!called) return NULL;
    const char *task = json_string_value(json_object_get(o.body, "task_id"));
    if (o.ok && !task) {
        o.ok = false;
        snprintf(o.msg, sizeof(o.msg), "the registry answered no task id");
    } else if (o.ok) {
        snprintf(o.msg, sizeof(o.msg), "image scan started");
    }
    json_t *r = _result(&o, NULL, NULL);
    json_object_set_new(r, "task_id", o.ok ? json_string(task) : json_null());
    json_decref(o.body);
    return r;
}

/* ---- agents ---------------------------------------------------------------------------------- */

static const field_map AGENT_IN[] = {
    {"schedulable", "schedulable"}, {"scaling_group", "scaling_group"}, {NULL, NULL}};

/* Backend.AI's modify_agent(id, props: {schedulable, scaling_group}):
 * schedulable (default true, as the reference's input type has it) drains or
 * undrains the agent (POST /v1/admin/agents/{id}/drain|undrain); a
 * scaling_group other than the agent's own is refused: an agent's resource
 * group is its configuration's (agent.resource_group). */
json_t *gql_m_modify_agent(gql_exec *ex, const json_t *args)
{
    json_t *body = _body(ex, json_object_get(args, "props"), "ModifyAgentInput", AGENT_IN);
    if (!body) return NULL;
    json_t *sched = json_object_get(body, "schedulable");
    const char *group = gql_str(body, "scaling_group");
    bool on = !sched || json_is_null(sched) || json_is_true(sched);
    char *t = _path("agents", gql_str(args, "id"));
    json_t *r = NULL;
    outcome o = {0};
    if (sched && !json_is_null(sched) && !json_is_boolean(sched)) {
        r = _fail("schedulable must be true or false");
    } else if (group) {
        if (!_call(ex, UPSTREAM_REGISTRY, "GET", t, NULL, MUTATE_TIMEOUT_MS, &o)) goto out;
        const char *own = gql_str(o.body, "resource_group");
        if (!o.ok)
            r = _result(&o, NULL, NULL);
        else if (!own || strcmp(own, group) != 0)
            r = _fail("moving an agent to another scaling group is not served: its "
                      "agent.resource_group setting decides");
        json_decref(o.body);
    }
    if (!r) {
        char *action = ts_asprintf("%s/%s", t, on ? "undrain" : "drain");
        bool called = _call(ex, UPSTREAM_REGISTRY, "POST", action, NULL, MUTATE_TIMEOUT_MS, &o);
        free(action);
        if (called) {
            json_decref(o.body);
            r = _result(&o, NULL, NULL);
        }
    }
out:
    free(t);
    json_decref(body);
    return r;
}
