/* validation.c: see validation.h. */
#include "validation.h"

#include "context.h"
#include "libcommon/image_ref.h"
#include "mounts.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

static bool bad(http_resp *resp, const char *field, const char *what)
{
    http_problem(resp, 400, "invalid-api-params", NULL, "\"%s\" %s", field, what);
    return false;
}

/* A string field among aliases; absent: *out = def. */
static bool str_field(json_t *o, const char *const *names, size_t max, const char *def,
                      const char **out, http_resp *resp)
{
    *out = def;
    for (; *names; names++) {
        json_t *v = json_object_get(o, *names);
        if (!v || json_is_null(v)) continue;
        if (!json_is_string(v)) return bad(resp, *names, "must be a string");
        const char *s = json_string_value(v);
        if (strlen(s) != json_string_length(v)) return bad(resp, *names, "must not contain NUL");
        if (strlen(s) > max) return bad(resp, *names, "is too long");
        *out = s;
        return true;
    }
    return true;
}

static bool int_field(json_t *o, const char *name, long long min, long long max, long long def,
                      long long *out, http_resp *resp)
{
    json_t *v = json_object_get(o, name);
    *out = def;
    if (!v || json_is_null(v)) return true;
    long long n;
    if (json_is_integer(v)) {
        n = json_integer_value(v);
    } else if (json_is_string(v)) {
        const char *s = json_string_value(v);
        char *end;
        n = strtoll(s, &end, 10);
        if (!*s || *end) goto wrong;
    } else {
        goto wrong;
    }
    if (n < min || n > max) goto wrong;
    *out = n;
    return true;
wrong:
    http_problem(resp, 400, "invalid-api-params", NULL, "\"%s\" must be an integer %lld..%lld",
                 name, min, max);
    return false;
}

static bool bool_field(json_t *o, const char *name, bool *out, http_resp *resp)
{
    json_t *v = json_object_get(o, name);
    *out = false;
    if (!v || json_is_null(v)) return true;
    if (json_is_boolean(v)) {
        *out = json_is_true(v);
        return true;
    }
    const char *s = json_string_value(v);
    if (s && (!strcasecmp(s, "true") || !strcmp(s, "1") || !strcasecmp(s, "yes"))) {
        *out = true;
        return true;
    }
    if (s && (!strcasecmp(s, "false") || !strcmp(s, "0") || !strcasecmp(s, "no") || !*s))
        return true;
    if (json_is_integer(v) && (json_integer_value(v) == 0 || json_integer_value(v) == 1)) {
        *out = json_integer_value(v) == 1;
        return true;
    }
    return bad(resp, name, "must be true or false");
}

bool session_name_valid(const char *name)
{
    size_t n = strlen(name);
    if (n < 1 || n > 64 || !isalnum((unsigned char)name[0]) || ts_uuid_valid(name)) return false;
    for (const char *p = name; *p; p++)
        if (!isalnum((unsigned char)*p) && *p != '_' && *p != '-' && *p != '.') return false;
    return true;
}

#define MAX_PREOPEN_PORTS 16

/* config.preopen_ports: up to 16 distinct TCP ports (numbers, or digit strings
 * as some clients send), 1024..65535: the agent publishes them. */
static bool preopen_parse(json_t *config, json_t **out, http_resp *resp)
{
    *out = json_array();
    json_t *pp = config ? json_object_get(config, "preopen_ports") : NULL;
    if (!pp || json_is_null(pp)) return true;
    if (!json_is_array(pp) || json_array_size(pp) > MAX_PREOPEN_PORTS)
        return bad(resp, "config.preopen_ports", "must be a list of at most 16 ports");
    size_t i;
    json_t *v;
    json_array_foreach(pp, i, v)
    {
        json_int_t port = -1;
        if (json_is_integer(v)) {
            port = json_integer_value(v);
        } else if (json_is_string(v)) {
            const char *t = json_string_value(v);
            char *end;
            long n = strtol(t, &end, 10);
            if (*t && isdigit((unsigned char)*t) && !*end && strlen(t) <= 5) port = n;
        }
        if (port < 1024 || port > 65535) {
            http_problem(resp, 400, "invalid-api-params", NULL,
                         "\"config.preopen_ports\" item %zu: a port must be a number from 1024 to "
                         "65535",
                         i);
            return false;
        }
        size_t j;
        json_t *w;
        json_array_foreach(*out, j, w)
        {
            if (json_integer_value(w) == port) {
                http_problem(resp, 400, "invalid-api-params", NULL,
                             "\"config.preopen_ports\": port %lld is named twice", (long long)port);
                return false;
            }
        }
        json_array_append_new(*out, json_integer(port));
    }
    return true;
}

bool session_environ_valid(json_t *env, const char *field, http_resp *resp)
{
    if (!json_is_object(env)) return bad(resp, field, "must be an object");
    if (json_object_size(env) > 256) return bad(resp, field, "has too many entries");
    const char *k;
    json_t *v;
    json_object_foreach(env, k, v)
    {
        bool ok = (isalpha((unsigned char)k[0]) || k[0] == '_') && strlen(k) <= 128;
        for (const char *p = k; ok && *p; p++)
            ok = isalnum((unsigned char)*p) || *p == '_';
        if (!ok) {
            http_problem(resp, 400, "invalid-api-params", NULL, "%s: bad variable name \"%.60s\"",
                         field, k);
            return false;
        }
        if (json_is_integer(v) || json_is_real(v) || json_is_boolean(v)) {
            char buf[64];
            if (json_is_integer(v))
                snprintf(buf, sizeof(buf), "%lld", (long long)json_integer_value(v));
            else if (json_is_real(v))
                snprintf(buf, sizeof(buf), "%.15g", json_real_value(v));
            else
                snprintf(buf, sizeof(buf), "%s", json_is_true(v) ? "true" : "false");
            json_object_set_new(env, k, json_string(buf));
        } else if (!json_is_string(v) || strlen(json_string_value(v)) > 65536 ||
                   strlen(json_string_value(v)) != json_string_length(v)) {
            http_problem(resp, 400, "invalid-api-params", NULL, "%s: %.60s must be a string", field,
                         k);
            return false;
        }
    }
    return true;
}

/* agentList / agent_list: null, [], one agent id (every kernel goes there),
 * or one per kernel (kernel i to the i-th; checked against cluster_size and
 * cluster_mode by agent_list_check). */
static bool agent_list_field(json_t *body, create_req *r, http_resp *resp)
{
    static const char *const names[] = {"agentList", "agent_list", NULL};
    r->agent = NULL;
    r->n_agents = 0;
    for (const char *const *n = names; *n; n++) {
        json_t *v = json_object_get(body, *n);
        if (!v || json_is_null(v)) continue;
        if (!json_is_array(v)) return bad(resp, *n, "must be a list of agent ids");
        if (json_array_size(v) > CREATE_MAX_AGENTS)
            return bad(resp, *n, "names more agents than a session has kernels (at most 64)");
        for (size_t i = 0; i < json_array_size(v); i++) {
            const char *id = json_string_value(json_array_get(v, i));
            bool ok = id && isalnum((unsigned char)id[0]) && strlen(id) < 64 &&
                      strlen(id) == json_string_length(json_array_get(v, i));
            for (const char *p = id; ok && *p; p++)
                ok = isalnum((unsigned char)*p) || strchr("_.:-", *p);
            if (!ok) return bad(resp, *n, "must hold agent ids (letters, digits, '_.:-', < 64)");
            r->agents[r->n_agents++] = id;
        }
        return true;
    }
    return true;
}

/* One agent (or the same one for every kernel): the session's designated
 * agent; several: one per kernel of a multi-node session. */
static bool agent_list_check(create_req *r, http_resp *resp)
{
    bool same = true;
    for (int i = 1; i < r->n_agents; i++)
        same &= strcmp(r->agents[i], r->agents[0]) == 0;
    if (r->n_agents == 0) return true;
    if (same) {
        r->agent = r->agents[0];
        r->n_agents = 0;
        return true;
    }
    if (strcmp(r->cluster_mode, "multi-node") != 0)
        return bad(resp, "agentList",
                   "names several agents: a single-node session goes to one agent "
                   "(cluster_mode multi-node places its kernels on several)");
    if (r->n_agents != r->cluster_size) {
        http_problem(resp, 400, "invalid-api-params", NULL,
                     "\"agentList\" names %d agents: name one (every kernel there) or one per "
                     "kernel (cluster_size %d)",
                     r->n_agents, r->cluster_size);
        return false;
    }
    return true;
}

/* config.resources and config.resource_opts.shmem. */
static bool config_resources(json_t *config, create_req *r, http_resp *resp)
{
    slots_clear(&r->slots);
    json_t *res = config ? json_object_get(config, "resources") : NULL;
    if (res && !json_is_null(res)) {
        if (!json_is_object(res)) return bad(resp, "config.resources", "must be an object");
        ts_err err = {{0}};
        if (!slots_from_json(&r->slots, res, &err)) {
            http_problem(resp, 400, "invalid-api-params", NULL, "config.resources: %s", err.msg);
            return false;
        }
        r->explicit_slots = r->slots.mask;
    }
    json_t *opts = config ? json_object_get(config, "resource_opts") : NULL;
    if (opts && !json_is_null(opts) && !json_is_object(opts))
        return bad(resp, "config.resource_opts", "must be an object");
    json_t *shmem = json_is_object(opts) ? json_object_get(opts, "shmem") : NULL;
    if (shmem && !json_is_null(shmem)) {
        ts_err err = {{0}};
        if (!slot_parse_json(SLOT_MEM, shmem, &r->shmem, &err)) {
            http_problem(resp, 400, "invalid-api-params", NULL, "config.resource_opts.shmem: %s",
                         err.msg + (strncmp(err.msg, "mem: ", 5) == 0 ? 5 : 0));
            return false;
        }
    }
    return true;
}

bool create_req_parse(json_t *body, create_req *r, http_resp *resp)
{
    memset(r, 0, sizeof(*r));
    r->shmem = -1;
    static const char *const n_image[] = {"image", "lang", NULL};
    static const char *const n_name[] = {"name", "clientSessionToken", "sessionName", NULL};
    static const char *const n_type[] = {"type", "sessionType", "session_type", NULL};
    static const char *const n_group[] = {"group_name", "group", "groupName", NULL};
    static const char *const n_domain[] = {"domain", "domain_name", "domainName", NULL};
    static const char *const n_startup[] = {"startupCommand", "startup_command", NULL};
    static const char *const n_boot[] = {"bootstrap_script", "bootstrapScript", NULL};
    static const char *const n_owner[] = {"owner_access_key", "ownerAccessKey", NULL};
    static const char *const n_mode[] = {"cluster_mode", "clusterMode", NULL};
    static const char *const n_starts[] = {"starts_at", "startsAt", NULL};
    static const char *const n_rg[] = {"scaling_group", "resource_group", "scalingGroup", NULL};
    json_t *config = json_object_get(body, "config");
    if (config && !json_is_null(config) && !json_is_object(config))
        return bad(resp, "config", "must be an object");
    if (!json_is_object(config)) config = NULL;
    long long v;
    if (!str_field(body, n_image, 500, NULL, &r->image, resp) ||
        !str_field(body, n_name, 200, NULL, &r->name, resp) ||
        !str_field(body, n_type, 32, "interactive", &r->type, resp) ||
        !str_field(body, n_group, 256, "default", &r->group, resp) ||
        !str_field(body, n_domain, 256, NULL, &r->domain, resp) ||
        !str_field(body, n_startup, 65536, "", &r->startup_command, resp) ||
        !str_field(body, n_boot, 65536, "", &r->bootstrap_script, resp) ||
        !str_field(body, n_owner, 64, NULL, &r->owner_access_key, resp) ||
        !str_field(body, n_mode, 32, "single-node", &r->cluster_mode, resp) ||
        !str_field(body, n_starts, 64, NULL, &r->starts_at, resp))
        return false;
    if (!r->image || !*r->image) return bad(resp, "image", "is required");
    ts_err ref_err = {{0}};
    if (!image_ref_valid(r->image, &ref_err)) { /* before any lookup or fetch */
        http_problem(resp, 400, "invalid-api-params", NULL, "\"image\": %s", ref_err.msg);
        return false;
    }
    if (!r->name || !*r->name) return bad(resp, "name", "(or clientSessionToken) is required");
    if (!session_name_valid(r->name))
        return bad(resp, "name",
                   "must be 1 to 64 letters, digits, '_', '-' or '.', start with a letter or "
                   "digit, and not be a UUID");
    if (strcmp(r->type, "interactive") && strcmp(r->type, "batch") && strcmp(r->type, "inference"))
        return bad(resp, "type", "must be interactive, batch or inference");
    if (strcmp(r->cluster_mode, "single-node") && strcmp(r->cluster_mode, "multi-node"))
        return bad(resp, "cluster_mode", "must be single-node or multi-node");
    if (!*r->group) r->group = "default";
    if (r->owner_access_key && !*r->owner_access_key) r->owner_access_key = NULL;
    if (r->starts_at && !*r->starts_at) r->starts_at = NULL;
    if (!agent_list_field(body, r, resp)) return false;
    /* the resource group: in config, or at the top level */
    const char *rg = NULL;
    if (config && !str_field(config, n_rg, 64, NULL, &rg, resp)) return false;
    if (!rg && !str_field(body, n_rg, 64, NULL, &rg, resp)) return false;
    r->resource_group = rg && *rg ? rg : "default";
    if (!int_field(body, "cluster_size", 1, 64, 1, &v, resp)) return false;
    r->cluster_size = (int)v;
    if (!agent_list_check(r, resp)) return false;
    if (!int_field(body, "priority", 0, 100, 0, &v, resp)) return false;
    r->priority = (int)v;
    if (!bool_field(body, "enqueueOnly", &r->enqueue_only, resp) ||
        !bool_field(body, "reuseIfExists", &r->reuse, resp))
        return false;
    if (!int_field(body, "maxWaitSeconds", 0, 3600, reg_settings.default_wait_ms / 1000, &v, resp))
        return false;
    r->max_wait_ms = v * 1000;
    if (!json_object_get(body, "maxWaitSeconds")) r->max_wait_ms = reg_settings.default_wait_ms;
    /* 0: Backend.AI waits without limit (its clients' default); here as
     * long as a create may wait */
    if (v == 0 && json_object_get(body, "maxWaitSeconds"))
        r->max_wait_ms = reg_settings.max_wait_ms;
    if (r->max_wait_ms > reg_settings.max_wait_ms) r->max_wait_ms = reg_settings.max_wait_ms;
    if (!config_resources(config, r, resp)) return false;
    /* environ */
    json_t *env = config ? json_object_get(config, "environ") : NULL;
    r->environ = env && !json_is_null(env) ? json_deep_copy(env) : json_object();
    if (!session_environ_valid(r->environ, "config.environ", resp)) return false;
    if (!preopen_parse(config, &r->preopen_ports, resp)) return false;
    /* mounts: checked here, resolved by tessera-vfolder at create (mounts.h) */
    return mounts_parse(config, &r->mounts, &r->mount_map, resp);
}

void create_req_free(create_req *r)
{
    json_decref(r->environ);
    json_decref(r->mounts);
    json_decref(r->mount_map);
    json_decref(r->preopen_ports);
    r->environ = r->mounts = r->mount_map = r->preopen_ports = NULL;
}
