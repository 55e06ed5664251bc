/* gql_shapes.c: the services' REST items as Backend.AI's GraphQL objects
 * (gql_shapes.h). */
#include "gql_shapes.h"

#include <stdlib.h>
#include <string.h>

/* ---- shapes ---------------------------------------------------------------- */

/* o[dst] = src[key] (null when absent). */
static void _copy(json_t *o, const char *dst, const json_t *src, const char *key)
{
    json_t *v = json_object_get(src, key);
    json_object_set(o, dst, v ? v : json_null());
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

static json_t *_container(const json_t *s, const json_t *k)
{
    json_t *o = json_object();
    _copy(o, "id", k, "id");
    _copy(o, "kernel_id", k, "id");
    _copy(o, "idx", k, "idx");
    _copy(o, "cluster_idx", k, "idx");
    _copy(o, "local_rank", k, "idx");
    _copy(o, "role", k, "role");
    _copy(o, "cluster_role", k, "role");
    char *host = ts_asprintf("%s%lld", gql_str(k, "role") ? gql_str(k, "role") : "main",
                             (long long)json_integer_value(json_object_get(k, "idx")) + 1);
    json_object_set_new(o, "hostname", json_string(host));
    json_object_set_new(o, "cluster_hostname", json_string(host));
    free(host);
    _copy(o, "session_id", s, "sessionUuid");
    _copy(o, "image", s, "image");
    _copy(o, "architecture", s, "architecture");
    char *reg = _image_registry(gql_str(s, "image"));
    json_object_set_new(o, "registry", reg ? json_string(reg) : json_null());
    free(reg);
    _copy(o, "status", k, "status");
    _copy(o, "status_info", k, "statusInfo");
    _copy(o, "created_at", s, "creationTime");
    _copy(o, "terminated_at", s, "terminationTime");
    _copy(o, "starts_at", s, "startsAt");
    _copy(o, "agent", k, "agent");
    _copy(o, "container_id", k, "containerId");
    _copy(o, "occupied_slots", s, "occupiedSlots");
    json_object_set_new(o, "preopen_ports", json_array());
    return o;
}

json_t *gql_shape_session(gql_exec *ex, const json_t *s)
{
    (void)ex;
    json_t *o = json_object();
    const char *names[] = {"id", "session_id", "row_id"};
    for (size_t i = 0; i < TS_ARRAY_LEN(names); i++)
        _copy(o, names[i], s, "sessionUuid");
    const char *nm[] = {"name", "session_name", "sess_id"};
    for (size_t i = 0; i < TS_ARRAY_LEN(nm); i++)
        _copy(o, nm[i], s, "sessionName");
    _copy(o, "type", s, "type");
    _copy(o, "priority", s, "priority");
    _copy(o, "image", s, "image");
    _copy(o, "lang", s, "image");
    _copy(o, "architecture", s, "architecture");
    char *reg = _image_registry(gql_str(s, "image"));
    json_object_set_new(o, "registry", reg ? json_string(reg) : json_null());
    free(reg);
    _copy(o, "cluster_mode", s, "clusterMode");
    _copy(o, "cluster_size", s, "clusterSize");
    _copy(o, "domain_name", s, "domainName");
    _copy(o, "group_name", s, "groupName");
    _copy(o, "group_id", s, "groupId");
    _copy(o, "project_id", s, "groupId");
    _copy(o, "user_id", s, "userId");
    _copy(o, "created_user_id", s, "userId");
    _copy(o, "_user", s, "userId");
    _copy(o, "access_key", s, "accessKey");
    _copy(o, "status", s, "status");
    _copy(o, "status_info", s, "statusInfo");
    _copy(o, "created_at", s, "creationTime");
    _copy(o, "terminated_at", s, "terminationTime");
    _copy(o, "starts_at", s, "startsAt");
    _copy(o, "status_changed", s, "statusChangedAt");
    _copy(o, "result", s, "result");
    _copy(o, "scaling_group", s, "scalingGroup");
    _copy(o, "service_ports", s, "servicePorts");
    _copy(o, "occupied_slots", s, "occupiedSlots");
    _copy(o, "occupying_slots", s, "occupiedSlots");
    _copy(o, "requested_slots", s, "requestedSlots");
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
    json_object_set_new(o, "num_queries", json_integer(0));
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
    json_t *o = json_object();
    _copy(o, "id", k, "access_key");
    _copy(o, "access_key", k, "access_key");
    _copy(o, "is_active", k, "is_active");
    _copy(o, "is_admin", k, "is_admin");
    _copy(o, "resource_policy", k, "resource_policy");
    _copy(o, "created_at", k, "created_at");
    _copy(o, "last_used", k, "last_used");
    _copy(o, "rate_limit", k, "rate_limit");
    _copy(o, "user", k, "user_id");
    _copy(o, "_user", k, "user_id");
    json_object_set_new(o, "user_info", json_pack("{s:O}", "_user", json_object_get(k, "user_id")));
    json_object_set_new(o, "num_queries", json_integer(0));
    json_object_set_new(o, "projects", json_array());
    return o;
}

static json_t *_user_common(const json_t *u)
{
    json_t *o = json_object();
    const char *same[] = {"username", "email",          "full_name",   "description",
                          "status",   "created_at",     "modified_at", "domain_name",
                          "role",     "resource_policy"};
    for (size_t i = 0; i < TS_ARRAY_LEN(same); i++)
        _copy(o, same[i], u, same[i]);
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
    size_t i;
    json_t *p;
    json_array_foreach(json_object_get(u, "projects"), i, p)
        json_array_append_new(groups, json_pack("{s:O, s:n}", "id", p, "name"));
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
    json_t *o = json_object();
    const char *same[] = {"name",
                          "description",
                          "is_active",
                          "created_at",
                          "modified_at",
                          "total_resource_slots",
                          "allowed_vfolder_hosts"};
    for (size_t i = 0; i < TS_ARRAY_LEN(same); i++)
        _copy(o, same[i], g, same[i]);
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
    json_t *min;
    json_object_foreach(json_object_get(im, "min_slots"), slot, min)
        json_array_append_new(limits, json_pack("{s:s, s:O, s:n}", "key", slot, "min", min, "max"));
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

json_t *gql_shape_agent(gql_exec *ex, const json_t *a)
{
    (void)ex;
    json_t *o = json_object();
    const char *same[] = {"id", "status", "addr", "architecture", "first_contact", "version"};
    for (size_t i = 0; i < TS_ARRAY_LEN(same); i++)
        _copy(o, same[i], a, same[i]);
    _copy(o, "status_changed", a, "status_changed_at");
    _copy(o, "scaling_group", a, "resource_group");
    _copy(o, "available_slots", a, "slots");
    _copy(o, "occupied_slots", a, "occupied_slots");
    _copy(o, "container_count", a, "kernels");
    _copy(o, "hardware_metadata", a, "devices");
    json_object_set_new(
        o, "schedulable",
        json_boolean(strcmp(gql_str(a, "status") ? gql_str(a, "status") : "", "ALIVE") == 0));
    json_object_set_new(o, "auto_terminate_abusing_kernel", json_false());
    json_object_set_new(o, "compute_plugins", json_object());
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
    json_t *o = json_object();
    const char *same[] = {"name", "description", "is_active", "created_at", "scheduler"};
    for (size_t i = 0; i < TS_ARRAY_LEN(same); i++)
        _copy(o, same[i], g, same[i]);
    json_object_set_new(o, "is_public", json_true());
    json_object_set_new(o, "driver", json_string("static"));
    json_object_set_new(o, "driver_opts", json_object());
    json_object_set_new(o, "use_host_network", json_false());
    json_object_set_new(o, "scheduler_opts",
                        json_pack("{s:O, s:O, s:O}", "agent_selector",
                                  json_object_get(g, "agent_selector"), "allowed_session_types",
                                  json_object_get(g, "allowed_session_types"), "pending_timeout",
                                  json_object_get(g, "pending_timeout")));
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
    json_t *o = json_object();
    _copy(o, "id", v, "name");
    _copy(o, "name", v, "name");
    _copy(o, "backend", v, "fs_type");
    _copy(o, "path", v, "path");
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
    json_t *o = json_object();
    const char *same[] = {"id",         "host",       "name",       "user",
                          "group",      "usage_mode", "permission", "ownership_type",
                          "created_at", "cloneable",  "status",     "max_size"};
    for (size_t i = 0; i < TS_ARRAY_LEN(same); i++)
        _copy(o, same[i], f, same[i]);
    _copy(o, "user_email", f, "user_email");
    _copy(o, "group_name", f, "group_name");
    _copy(o, "creator", f, "creator");
    _copy(o, "quota_scope_id", f, "quota_scope_id");
    _copy(o, "cur_size", f, "used_bytes");
    _copy(o, "last_used", f, "last_used");
    json_object_set_new(o, "max_files", json_integer(0));
    return o;
}
