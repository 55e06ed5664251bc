/* gql_shapes.c: the services' REST items as Backend.AI's GraphQL objects
 * (gql_shapes.h). */
#include "gql_shapes.h"

#include "libcommon/cluster_names.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- shapes ---------------------------------------------------------------- */

/* o[dst] = src[key] (null when absent). */
static void _copy(json_t *o, const char *dst, const json_t *src, const char *key)
{
    json_t *v = json_object_get(src, key);
    json_object_set(o, dst, v ? v : json_null());
}

/* A GraphQL field and the REST member it is read from. */
typedef struct field_from {
    const char *to, *from;
} field_from;

/* _copy for each pair of map (ends with {NULL}). */
static void _copy_all(json_t *o, const json_t *src, const field_from *map)
{
    for (; map->to; map++)
        _copy(o, map->to, src, map->from);
}

/* The registry part of an image reference ("host:5000/a/b:t" -> "host:5000"),
 * or NULL for a Docker Hub name. Heap. */
static char *_image_registry(const char *ref)
{
    if (!ref) return NULL;
    const char *slash = strchr(ref, '/');
    if (!slash) return NULL;
    size_t n = (size_t)(slash - ref);
    if (!memchr(ref, '.', n) && !memchr(ref, ':', n) && strncmp(ref, "localhost", n) != 0)
        return NULL;
    return ts_strndup(ref, n);
}

/* o["registry"]: the registry part of the image reference ref. */
static void _set_registry(json_t *o, const char *ref)
{
    char *reg = _image_registry(ref);
    json_object_set_new(o, "registry", reg ? json_string(reg) : json_null());
    free(reg);
}

static const field_from KERNEL_FIELDS[] = {{"id", "id"},
                                           {"kernel_id", "id"},
                                           {"idx", "idx"},
                                           {"cluster_idx", "idx"},
                                           {"local_rank", "idx"},
                                           {"role", "role"},
                                           {"cluster_role", "role"},
                                           {"status", "status"},
                                           {"status_info", "statusInfo"},
                                           {"agent", "agent"},
                                           {"container_id", "containerId"},
                                           {NULL, NULL}};
static const field_from KERNEL_SESSION_FIELDS[] = {{"session_id", "sessionUuid"},
                                                   {"image", "image"},
                                                   {"architecture", "architecture"},
                                                   {"created_at", "creationTime"},
                                                   {"terminated_at", "terminationTime"},
                                                   {"starts_at", "startsAt"},
                                                   {"occupied_slots", "occupiedSlots"},
                                                   {"status_changed", "statusChangedAt"},
                                                   {NULL, NULL}};

/* A kernel k of session s as Backend.AI's ComputeContainer. */
static json_t *_container(const json_t *s, const json_t *k)
{
    json_t *o = json_object();
    _copy_all(o, k, KERNEL_FIELDS);
    _copy_all(o, s, KERNEL_SESSION_FIELDS);
    char host[CLUSTER_NAME_MAX];
    int idx = (int)json_integer_value(json_object_get(k, "idx"));
    cluster_hostname(gql_str(k, "role"), idx, host, sizeof(host));
    /* Backend.AI's cluster_idx is one-based among the kernels of a role;
     * local_rank the session-wide zero-based index (the stored one) */
    json_object_set_new(o, "idx", json_integer(cluster_role_index(gql_str(k, "role"), idx)));
    json_object_set_new(o, "cluster_idx",
                        json_integer(cluster_role_index(gql_str(k, "role"), idx)));
    json_object_set_new(o, "hostname", json_string(host));
    json_object_set_new(o, "cluster_hostname", json_string(host));
    _set_registry(o, gql_str(s, "image"));
    json_object_set_new(o, "preopen_ports", json_array());
    /* the kernel's latest sample (the registry's session view, which is
     * scoped as the session is); Backend.AI's last_stat is an alias of it */
    json_t *live = json_object_get(json_object_get(s, "kernelLiveStat"), gql_str(k, "id"));
    json_object_set(o, "live_stat", live ? live : json_null());
    json_object_set(o, "last_stat", live ? live : json_null());
    return o;
}

static const field_from SESSION_FIELDS[] = {{"id", "sessionUuid"},
                                            {"session_id", "sessionUuid"},
                                            {"row_id", "sessionUuid"},
                                            {"name", "sessionName"},
                                            {"session_name", "sessionName"},
                                            {"sess_id", "sessionName"},
                                            {"type", "type"},
                                            {"priority", "priority"},
                                            {"image", "image"},
                                            {"lang", "image"},
                                            {"architecture", "architecture"},
                                            {"cluster_mode", "clusterMode"},
                                            {"cluster_size", "clusterSize"},
                                            {"domain_name", "domainName"},
                                            {"group_name", "groupName"},
                                            {"group_id", "groupId"},
                                            {"project_id", "groupId"},
                                            {"user_id", "userId"},
                                            {"created_user_id", "userId"},
                                            {"_user", "userId"},
                                            {"access_key", "accessKey"},
                                            {"status", "status"},
                                            {"status_info", "statusInfo"},
                                            {"created_at", "creationTime"},
                                            {"terminated_at", "terminationTime"},
                                            {"starts_at", "startsAt"},
                                            {"status_changed", "statusChangedAt"},
                                            {"result", "result"},
                                            {"scaling_group", "scalingGroup"},
                                            {"service_ports", "servicePorts"},
                                            {"occupied_slots", "occupiedSlots"},
                                            {"occupying_slots", "occupiedSlots"},
                                            {"requested_slots", "requestedSlots"},
                                            {"idle_checks", "idleChecks"},
                                            {NULL, NULL}};

json_t *gql_shape_session(gql_exec *ex, const json_t *s)
{
    (void)ex;
    json_t *o = json_object();
    _copy_all(o, s, SESSION_FIELDS);
    _set_registry(o, gql_str(s, "image"));
    json_t *containers = json_array(), *agents = json_array();
    size_t i;
    json_t *k;
    json_array_foreach(json_object_get(s, "kernels"), i, k)
    {
        json_array_append_new(containers, _container(s, k));
        const char *agent = gql_str(k, "agent");
        bool seen = !agent;
        size_t j;
        json_t *a;
        json_array_foreach(agents, j, a) if (agent && strcmp(json_string_value(a), agent) == 0)
            seen = true;
        if (!seen) json_array_append_new(agents, json_string(agent));
        if (i == 0) {
            _copy(o, "main_kernel_id", k, "id");
            _copy(o, "main_kernel_role", k, "role");
        }
    }
    json_object_set_new(o, "containers", containers);
    json_object_set(o, "agent_ids", agents);
    json_object_set_new(o, "agents", agents);
    json_object_set_new(o, "image_references", json_pack("[O]", json_object_get(s, "image")));
    json_object_set_new(o, "mounts", json_array());
    json_object_set_new(o, "vfolder_mounts", json_array());
    json_object_set_new(o, "dependencies", json_array());
    json_object_set_new(o, "abusing_reports", json_array());
    return o;
}

json_t *gql_shape_session_node(gql_exec *ex, const json_t *s)
{
    json_t *o = gql_shape_session(ex, s);
    json_object_set_new(o, "id", gql_global_id("ComputeSessionNode", gql_str(s, "sessionUuid")));
    return o;
}

json_t *gql_shape_keypair(gql_exec *ex, const json_t *k)
{
    (void)ex;
    static const field_from fields[] = {{"id", "access_key"},
                                        {"access_key", "access_key"},
                                        {"is_active", "is_active"},
                                        {"is_admin", "is_admin"},
                                        {"resource_policy", "resource_policy"},
                                        {"created_at", "created_at"},
                                        {"last_used", "last_used"},
                                        {"rate_limit", "rate_limit"},
                                        {"user", "user_id"},
                                        {"_user", "user_id"},
                                        {NULL, NULL}};
    json_t *o = json_object();
    _copy_all(o, k, fields);
    json_object_set_new(o, "user_info", json_pack("{s:O}", "_user", json_object_get(k, "user_id")));
    json_object_set_new(o, "projects", json_array());
    return o;
}

static json_t *_user_common(const json_t *u)
{
    static const field_from fields[] = {{"username", "username"},
                                        {"email", "email"},
                                        {"full_name", "full_name"},
                                        {"description", "description"},
                                        {"status", "status"},
                                        {"created_at", "created_at"},
                                        {"modified_at", "modified_at"},
                                        {"domain_name", "domain_name"},
                                        {"role", "role"},
                                        {"resource_policy", "resource_policy"},
                                        {NULL, NULL}};
    json_t *o = json_object();
    _copy_all(o, u, fields);
    const char *status = gql_str(u, "status");
    json_object_set_new(o, "is_active", json_boolean(status && strcmp(status, "active") == 0));
    json_object_set_new(o, "need_password_change", json_false());
    json_object_set_new(o, "totp_activated", json_false());
    json_object_set_new(o, "sudo_session_enabled", json_false());
    return o;
}

json_t *gql_shape_user(gql_exec *ex, const json_t *u)
{
    (void)ex;
    json_t *o = _user_common(u);
    _copy(o, "id", u, "id");
    _copy(o, "uuid", u, "id");
    json_t *groups = json_array();
    const json_t *names = json_object_get(u, "project_names");
    size_t i;
    json_t *p;
    json_array_foreach(json_object_get(u, "projects"), i, p)
    {
        json_t *name = json_array_get(names, i);
        json_array_append_new(groups, json_pack("{s:O, s:O}", "id", p, "name",
                                                json_is_string(name) ? name : json_null()));
    }
    json_object_set_new(o, "groups", groups);
    return o;
}

json_t *gql_shape_user_node(gql_exec *ex, const json_t *u)
{
    (void)ex;
    json_t *o = _user_common(u);
    json_object_set_new(o, "id", gql_global_id("UserNode", gql_str(u, "id")));
    _copy(o, "row_id", u, "id");
    return o;
}

static json_t *_grouping(const json_t *g)
{
    static const field_from fields[] = {{"name", "name"},
                                        {"description", "description"},
                                        {"is_active", "is_active"},
                                        {"created_at", "created_at"},
                                        {"modified_at", "modified_at"},
                                        {"total_resource_slots", "total_resource_slots"},
                                        {"allowed_vfolder_hosts", "allowed_vfolder_hosts"},
                                        {"idle_timeout", "idle_timeout"},
                                        {NULL, NULL}};
    json_t *o = json_object();
    _copy_all(o, g, fields);
    return o;
}

json_t *gql_shape_group(gql_exec *ex, const json_t *g)
{
    (void)ex;
    json_t *o = _grouping(g);
    _copy(o, "id", g, "id");
    _copy(o, "domain_name", g, "domain_name");
    _copy(o, "resource_policy", g, "resource_policy");
    json_object_set_new(o, "type", json_string("GENERAL"));
    return o;
}

json_t *gql_shape_domain(gql_exec *ex, const json_t *d)
{
    (void)ex;
    json_t *o = _grouping(d);
    json_object_set_new(o, "allowed_docker_registries", json_array());
    return o;
}

static json_t *_kv_list(const json_t *obj)
{
    json_t *out = json_array();
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)obj, k, v)
        json_array_append_new(out, json_pack("{s:s, s:O}", "key", k, "value", v));
    return out;
}

json_t *gql_shape_image(gql_exec *ex, const json_t *im)
{
    (void)ex;
    json_t *o = json_object();
    const char *ref = gql_str(im, "reference");
    _copy(o, "humanized_name", im, "reference");
    _copy(o, "architecture", im, "architecture");
    _copy(o, "digest", im, "digest");
    _copy(o, "hash", im, "digest");
    char *reg = _image_registry(ref);
    json_object_set_new(o, "registry", reg ? json_string(reg) : json_null());
    /* name: the repository without the registry and the tag */
    const char *repo = ref ? ref + (reg ? strlen(reg) + 1 : 0) : NULL;
    free(reg);
    if (repo) {
        const char *at = strchr(repo, '@');
        size_t n = at ? (size_t)(at - repo) : strlen(repo);
        const char *colon = memchr(repo, ':', n);
        const char *tag = colon ? colon + 1 : "latest";
        size_t tag_n = colon ? n - (size_t)(colon - repo) - 1 : strlen(tag);
        if (colon) n = (size_t)(colon - repo);
        char *name = ts_strndup(repo, n), *t = ts_strndup(tag, tag_n);
        json_object_set_new(o, "name", json_string(name));
        json_object_set_new(o, "namespace", json_string(name));
        const char *base = strrchr(name, '/');
        json_object_set_new(o, "base_image_name", json_string(base ? base + 1 : name));
        json_object_set_new(o, "tag", json_string(t));
        free(name);
        free(t);
    }
    json_object_set_new(o, "labels", _kv_list(json_object_get(im, "labels")));
    json_t *limits = json_array();
    const char *slot;
    json_t *v;
    json_t *mins = json_object_get(im, "min_slots"), *maxs = json_object_get(im, "max_slots");
    json_object_foreach(mins, slot, v)
    {
        json_t *mx = json_object_get(maxs, slot);
        json_array_append_new(limits, json_pack("{s:s, s:O, s:O}", "key", slot, "min", v, "max",
                                                mx ? mx : json_null()));
    }
    json_object_foreach(maxs, slot, v)
    {
        if (!json_object_get(mins, slot))
            json_array_append_new(limits,
                                  json_pack("{s:s, s:s, s:O}", "key", slot, "min", "0", "max", v));
    }
    json_object_set_new(o, "resource_limits", limits);
    json_object_set_new(o, "tags", json_array());
    json_object_set_new(o, "aliases", json_array());
    json_object_set_new(o, "supported_accelerators", json_pack("[s]", "cuda"));
    json_object_set_new(o, "installed", json_true());
    json_object_set_new(o, "installed_agents", json_array());
    json_object_set_new(o, "is_local", json_false());
    json_object_set_new(o, "status", json_string("ALIVE"));
    return o;
}

/* A slot amount (decimal text) as a number, for the legacy *_slots fields. */
static json_t *_slot_number(const json_t *slots, const char *name)
{
    const char *v = gql_str(slots, name);
    return v ? json_real(strtod(v, NULL)) : json_real(0);
}

/* Backend.AI's hardware_metadata: per device kind (the slot's prefix,
 * "cuda"), {status, status_info, metadata: {text: text}}, here the count
 * and model of the agent's devices of that kind. */
static json_t *_hardware_metadata(const json_t *devices)
{
    json_t *out = json_object();
    size_t i;
    json_t *d;
    json_array_foreach(devices, i, d)
    {
        const char *slot = gql_str(d, "slot_name");
        char kind[32];
        snprintf(kind, sizeof(kind), "%.*s", (int)strcspn(slot ? slot : "device", "."),
                 slot ? slot : "device");
        json_t *k = json_object_get(out, kind);
        if (!k) {
            k = json_pack("{s:s, s:n, s:{s:s, s:s}}", "status", "healthy", "status_info",
                          "metadata", "devices", "0", "model",
                          gql_str(d, "model") ? gql_str(d, "model") : "");
            json_object_set_new(out, kind, k);
        }
        json_t *meta = json_object_get(k, "metadata");
        char n[24];
        snprintf(n, sizeof(n), "%ld", strtol(gql_str(meta, "devices"), NULL, 10) + 1);
        json_object_set_new(meta, "devices", json_string(n));
    }
    return out;
}

json_t *gql_shape_agent(gql_exec *ex, const json_t *a)
{
    (void)ex;
    static const field_from fields[] = {{"id", "id"},
                                        {"status", "status"},
                                        {"addr", "addr"},
                                        {"architecture", "architecture"},
                                        {"first_contact", "first_contact"},
                                        {"version", "version"},
                                        {"status_changed", "status_changed_at"},
                                        {"scaling_group", "resource_group"},
                                        {"available_slots", "slots"},
                                        {"occupied_slots", "occupied_slots"},
                                        {"container_count", "kernels"},
                                        {NULL, NULL}};
    json_t *o = json_object();
    _copy_all(o, a, fields);
    /* the agent's flag (false: drained), whatever its status, as the reference */
    json_t *sched = json_object_get(a, "schedulable");
    json_object_set_new(o, "schedulable",
                        json_boolean(!json_is_boolean(sched) || json_is_true(sched)));
    json_object_set_new(o, "auto_terminate_abusing_kernel", json_false());
    json_object_set_new(o, "compute_plugins", json_object());
    json_object_set_new(o, "hardware_metadata", _hardware_metadata(json_object_get(a, "devices")));
    const json_t *cap = json_object_get(a, "slots"), *used = json_object_get(a, "occupied_slots");
    json_object_set_new(o, "cpu_slots", _slot_number(cap, "cpu"));
    json_object_set_new(o, "mem_slots",
                        json_integer((json_int_t)json_real_value(_slot_number(cap, "mem"))));
    json_object_set_new(o, "gpu_slots", _slot_number(cap, "cuda.device"));
    json_object_set_new(o, "used_cpu_slots", _slot_number(used, "cpu"));
    json_object_set_new(o, "used_mem_slots",
                        json_integer((json_int_t)json_real_value(_slot_number(used, "mem"))));
    json_object_set_new(o, "used_gpu_slots", _slot_number(used, "cuda.device"));
    /* live statistics are not collected: 0, as the reference answers when
     * an agent has none */
    json_object_set_new(o, "cpu_cur_pct", json_real(0));
    json_object_set_new(o, "mem_cur_bytes", json_integer(0));
    return o;
}

json_t *gql_shape_scaling_group(gql_exec *ex, const json_t *g)
{
    (void)ex;
    static const field_from fields[] = {{"name", "name"},           {"description", "description"},
                                        {"is_active", "is_active"}, {"created_at", "created_at"},
                                        {"scheduler", "scheduler"}, {NULL, NULL}};
    json_t *o = json_object();
    _copy_all(o, g, fields);
    json_object_set_new(o, "is_public", json_true());
    json_object_set_new(o, "driver", json_string("static"));
    json_object_set_new(o, "driver_opts", json_object());
    json_object_set_new(o, "use_host_network", json_false());
    json_object_set_new(o, "scheduler_opts",
                        json_pack("{s:O, s:O, s:O, s:O, s:O}", "agent_selector",
                                  json_object_get(g, "agent_selector"), "allowed_session_types",
                                  json_object_get(g, "allowed_session_types"), "pending_timeout",
                                  json_object_get(g, "pending_timeout"), "idle_timeout",
                                  json_object_get(g, "idle_timeout"), "idle_inference",
                                  json_object_get(g, "idle_inference")));
    return o;
}

/* The policies and presets keep the REST names, which are the reference's. */
json_t *gql_shape_as_is(gql_exec *ex, const json_t *p)
{
    (void)ex;
    return json_deep_copy(p);
}

json_t *gql_shape_keypair_policy(gql_exec *ex, const json_t *p)
{
    (void)ex;
    json_t *o = json_deep_copy(p);
    json_object_set_new(o, "default_for_unspecified", json_string("UNLIMITED"));
    return o;
}

json_t *gql_shape_preset(gql_exec *ex, const json_t *p)
{
    (void)ex;
    json_t *o = json_deep_copy(p);
    const char *shm = gql_str(p, "shared_memory");
    json_object_set_new(o, "shared_memory",
                        shm ? json_integer(strtoll(shm, NULL, 10)) : json_null());
    return o;
}

json_t *gql_shape_volume(gql_exec *ex, const json_t *v)
{
    (void)ex;
    static const field_from fields[] = {
        {"id", "name"}, {"name", "name"}, {"backend", "fs_type"}, {"path", "path"}, {NULL, NULL}};
    json_t *o = json_object();
    _copy_all(o, v, fields);
    json_object_set_new(o, "proxy", json_string("tessera-vfolder"));
    json_object_set_new(o, "fsprefix", json_string("."));
    json_object_set_new(
        o, "capabilities",
        json_pack("[s, s]", "vfolder",
                  json_is_true(json_object_get(v, "xfs_quota")) ? "quota" : "metric"));
    json_object_set_new(o, "hardware_metadata", json_object());
    json_object_set_new(o, "performance_metric", json_object());
    json_object_set_new(o, "usage",
                        json_pack("{s:O, s:O}", "capacity_bytes",
                                  json_object_get(v, "capacity_bytes"), "used_bytes",
                                  json_object_get(v, "used_bytes")));
    return o;
}

json_t *gql_shape_vfolder(gql_exec *ex, const json_t *f)
{
    (void)ex;
    static const field_from fields[] = {{"id", "id"},
                                        {"host", "host"},
                                        {"name", "name"},
                                        {"user", "user"},
                                        {"group", "group"},
                                        {"usage_mode", "usage_mode"},
                                        {"permission", "permission"},
                                        {"ownership_type", "ownership_type"},
                                        {"created_at", "created_at"},
                                        {"cloneable", "cloneable"},
                                        {"status", "status"},
                                        {"max_size", "max_size"},
                                        {"user_email", "user_email"},
                                        {"group_name", "group_name"},
                                        {"creator", "creator"},
                                        {"quota_scope_id", "quota_scope_id"},
                                        {"domain_name", "domain_name"},
                                        {"cur_size", "used_bytes"},
                                        {"last_used", "last_used"},
                                        {NULL, NULL}};
    json_t *o = json_object();
    _copy_all(o, f, fields);
    return o;
}
