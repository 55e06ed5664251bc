/* agent.c: set-up, start, command dispatch and stop of the agent (agent.h). */
#include "services/agent/agent.h"
#include "services/agent/cni.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <netinet/in.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "libcommon/image_ref.h"
#include "libcommon/log.h"
#include "libcommon/proc.h"
#include "services/agent/heartbeat.h"
#include "services/agent/http_api.h"
#include "services/agent/kernel_files.h"
#include "services/agent/kernel_adopt.h"
#include "services/agent/netsys.h"
#include "services/agent/runtime_destroy.h"
#include "services/agent/usage.h"
#include "services/agent/term_app.h"
#include "tessera/v1/agent.pb-c.h"
#include "tessera/v1/agent_cmd.pb-c.h"

#define CMD_TOPIC_PREFIX "tessera.agent.cmd."
#define CMD_GROUP_PREFIX "tessera-agent."

struct agent {
    svc *svc;
    usage_tracker *usage; /* heartbeat samples, destroys' final samples */
    agent_config cfg;
    char id[128];
    char addr[300]; /* "http://host:port" */
    char kernel_host[256];
    char cmd_topic[200];
    node_info node;
    runtime *rt;
    image_store *store, *insecure_store;
    char **insecure; /* registry hosts, NULL-terminated */
    kernels *ks;
    char *gpu_dir;
    gpu_host gpu;
    gpu_nvml *nvml;    /* NULL: no GPU utilisation */
    char *term_path;   /* tessera-term on this host, or NULL (no ttyd) */
    char *cni_portmap; /* the CNI port plugin (agent.cni_portmap) */
    char *cni_bridge;  /* the CNI bridge plugin (agent.cni_bridge) */
    bool userns_on;    /* kernels get a user namespace (agent.userns) */
    userns_map userns;
    heartbeat *hb;
    kbus_consumer *consumer;
    http_api_agent api;      /* what the HTTP API sees, filled at start */
    http_api_source api_src; /* _api_agent(a) */
    atomic_bool started;
};

/* The HTTP API's view of the agent: NULL until started. */
static const http_api_agent *_api_agent(void *ctx)
{
    agent *a = ctx;
    return atomic_load(&a->started) ? &a->api : NULL;
}

/* ---- set-up helpers -------------------------------------------------------------- */

static image_store *_store_for(const char *reference, bool plain_http, void *ctx)
{
    agent *a = ctx;
    if (plain_http) return a->insecure_store;
    image_ref r;
    ts_err err;
    if (!image_ref_parse(reference, NULL, &r, &err)) return a->store; /* the pull says why */
    bool insecure = false;
    for (char **h = a->insecure; h && *h && !insecure; h++)
        insecure = strcmp(*h, r.registry) == 0;
    image_ref_free(&r);
    return insecure ? a->insecure_store : a->store;
}

static int64_t _device_memory(const char *device_id, void *ctx)
{
    agent *a = ctx;
    for (int i = 0; i < a->node.n_devices; i++)
        if (strcmp(a->node.devices[i].id, device_id) == 0) return a->node.devices[i].memory_bytes;
    return 0;
}

static char **_split_list(const char *s)
{
    char **out = ts_calloc(1, sizeof(char *));
    int n = 0;
    if (!s) return out;
    char *copy = ts_strdup(s), *save = NULL;
    for (char *t = strtok_r(copy, ", ", &save); t; t = strtok_r(NULL, ", ", &save)) {
        out = ts_realloc(out, sizeof(char *) * (size_t)(n + 2));
        out[n++] = ts_strdup(t);
        out[n] = NULL;
    }
    free(copy);
    return out;
}

static bool _port_range(const char *s, int *lo, int *hi, ts_err *err)
{
    if (!s || sscanf(s, "%d-%d", lo, hi) != 2 || *lo < 1 || *hi > 65535 || *lo > *hi) {
        ts_err_set(err, "agent.port_range '%s' is not <low>-<high> within 1-65535", s ? s : "");
        return false;
    }
    return true;
}

/* The address the HTTP server is bound to: the one listening TCP socket of
 * this process (svc does not export it). */
static bool _bound_addr(char *host, size_t hsize, int *port)
{
    DIR *d = opendir("/proc/self/fd");
    if (!d) return false;
    struct dirent *e;
    bool found = false;
    while (!found && (e = readdir(d))) {
        int fd = atoi(e->d_name);
        if (fd <= 2) continue;
        int listening = 0;
        socklen_t l = sizeof(listening);
        if (getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &listening, &l) != 0 || !listening) continue;
        struct sockaddr_storage ss;
        socklen_t sl = sizeof(ss);
        if (getsockname(fd, (struct sockaddr *)&ss, &sl) != 0) continue;
        if (ss.ss_family == AF_INET) {
            struct sockaddr_in *in = (struct sockaddr_in *)&ss;
            inet_ntop(AF_INET, &in->sin_addr, host, (socklen_t)hsize);
            *port = ntohs(in->sin_port);
            found = true;
        } else if (ss.ss_family == AF_INET6) {
            struct sockaddr_in6 *in = (struct sockaddr_in6 *)&ss;
            inet_ntop(AF_INET6, &in->sin6_addr, host, (socklen_t)hsize);
            *port = ntohs(in->sin6_port);
            found = true;
        }
    }
    closedir(d);
    return found;
}

static void _advertise(agent *a)
{
    char host[256] = "", port[16] = "";
    const char *adv = a->cfg.advertise_addr;
    /* a scheme, if given, is kept (https:// where a TLS terminator on the
     * node answers for this agent); without one, https:// when the agent's
     * own listener serves TLS (docs/operations.md, "Several hosts:
     * encryption") */
    const char *scheme = a->cfg.http_tls ? "https://" : "http://";
    if (adv && strncmp(adv, "https://", 8) == 0) {
        scheme = "https://";
        adv += 8;
    } else if (adv && strncmp(adv, "http://", 7) == 0) {
        adv += 7;
    }
    if (adv && *adv) {
        const char *colon = strrchr(adv, ':');
        if (colon) {
            ts_strlcpy(host, adv,
                       (size_t)(colon - adv) + 1 < sizeof(host) ? (size_t)(colon - adv) + 1
                                                                : sizeof(host));
            ts_strlcpy(port, colon + 1, sizeof(port));
        } else {
            ts_strlcpy(host, adv, sizeof(host));
        }
    } else {
        int p = 0;
        if (_bound_addr(host, sizeof(host), &p)) snprintf(port, sizeof(port), "%d", p);
    }
    /* a wildcard address is no address for others: the host name */
    if (!host[0] || strcmp(host, "0.0.0.0") == 0 || strcmp(host, "::") == 0)
        ts_strlcpy(host, a->node.hostname, sizeof(host));
    bool v6 = strchr(host, ':') != NULL;
    snprintf(a->addr, sizeof(a->addr), "%s%s%s%s%s%s", scheme, v6 ? "[" : "", host, v6 ? "]" : "",
             port[0] ? ":" : "", port);
    ts_strlcpy(a->kernel_host, host, sizeof(a->kernel_host));
}

/* ---- commands ------------------------------------------------------------------- */

static kbus_result _on_command(const kbus_msg *msg, void *ctx, ts_err *reason)
{
    agent *a = ctx;
    tlog_ctx_agent(a->id);
    const Tessera__V1__Envelope *env = msg->env;
    const char *type = env->type ? env->type : "";
    const char *corr = env->correlation_id && *env->correlation_id ? env->correlation_id : NULL;
    if (strcmp(type, "tessera.v1.CreateKernel") == 0) {
        Tessera__V1__CreateKernel *c = (Tessera__V1__CreateKernel *)envelope_payload(
            env, &tessera__v1__create_kernel__descriptor, reason);
        if (!c) return KBUS_REJECT;
        kbus_result r;
        if (c->agent_id && *c->agent_id && strcmp(c->agent_id, a->id) != 0) {
            ts_err_set(reason, "CreateKernel for agent '%s' reached agent '%s'", c->agent_id,
                       a->id);
            r = KBUS_REJECT;
        } else {
            r = kernels_create(a->ks, c, corr, reason);
        }
        protobuf_c_message_free_unpacked(&c->base, NULL);
        return r;
    }
    if (strcmp(type, "tessera.v1.DestroyKernel") == 0) {
        Tessera__V1__DestroyKernel *d = (Tessera__V1__DestroyKernel *)envelope_payload(
            env, &tessera__v1__destroy_kernel__descriptor, reason);
        if (!d) return KBUS_REJECT;
        kbus_result r = kernels_destroy(a->ks, d, corr, reason);
        protobuf_c_message_free_unpacked(&d->base, NULL);
        return r;
    }
    if (strcmp(type, "tessera.v1.Execute") == 0 || strcmp(type, "tessera.v1.StartService") == 0) {
        /* execution is synchronous: the registry calls POST /v1/kernels/{id}/execute */
        TLOG_WARN("command not handled on the bus (use the agent's HTTP API)", "type=%s key=%s",
                  type, msg->key ? msg->key : "");
        return KBUS_DONE;
    }
    TLOG_DEBUG("unknown command type ignored", "type=%s", type);
    return KBUS_DONE;
}

static bool _check_consumer(svc *s, void *ctx, ts_err *err)
{
    (void)s;
    agent *a = ctx;
    if (a->consumer && kbus_consumer_assigned(a->consumer)) return true;
    ts_err_set(err, "not yet assigned %s", a->cmd_topic);
    return false;
}

/* ---- life ------------------------------------------------------------------------- */

bool agent_setup(svc *s, const agent_config *cfg, ts_err *err)
{
    agent *a = ts_calloc(1, sizeof(*a));
    a->svc = s;
    a->cfg = *cfg;
    if (cfg->id && *cfg->id) {
        ts_strlcpy(a->id, cfg->id, sizeof(a->id));
    } else if (gethostname(a->id, sizeof(a->id) - 1) != 0 || !a->id[0]) {
        ts_strlcpy(a->id, "agent", sizeof(a->id));
    }
    for (const char *p = a->id; *p; p++) {
        if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
              *p == '-' || *p == '_' || *p == '.')) {
            ts_err_set(err,
                       "agent.id '%s': only letters, digits, '.', '_' and '-' (it names a "
                       "Kafka topic)",
                       a->id);
            free(a);
            return false;
        }
    }
    if (!cfg->state_dir || !*cfg->state_dir) {
        ts_err_set(err, "agent.state_dir is required");
        free(a);
        return false;
    }
    int lo, hi;
    if (!_port_range(cfg->port_range, &lo, &hi, err)) {
        free(a);
        return false;
    }
    snprintf(a->cmd_topic, sizeof(a->cmd_topic), CMD_TOPIC_PREFIX "%s", a->id);
    a->insecure = _split_list(cfg->insecure_registries);
    svc_set_data(s, a);
    a->api_src = (http_api_source){.get = _api_agent, .ctx = a};
    http_api_routes(s, &a->api_src);
    kernel_files_routes(svc_router(s), &a->api_src);
    return true;
}

/* Step 1: the state directory, the host's networking, the node's resources,
 * the user namespace and the GPUs. */
static bool _start_node(agent *a, ts_err *err)
{
    const agent_config *c = &a->cfg;
    if (mkdir(c->state_dir, 0750) != 0 && access(c->state_dir, W_OK) != 0) {
        ts_err_set(err, "agent.state_dir %s is not usable", c->state_dir);
        return false;
    }
    if (!netsys_setup(c->state_dir, err)) return false;
    node_opts no = {.cpu_override_milli = (int64_t)(c->cpu * 1000.0 + 0.5),
                    .mem_override_bytes = c->mem,
                    .mem_reserve_bytes = c->mem_reserve,
                    .mock_gpus = (int)c->mock_gpus,
                    .mock_gpu_memory = c->mock_gpu_memory,
                    .agent_id = a->id};
    if (!node_detect(&no, &a->node, err)) return false;
    char slots[256];
    TLOG_INFO("node resources", "cpus=%d mem=%lld capacity=\"%s\" gpus=%d gpu_note=\"%s\"",
              a->node.host_cpus, (long long)a->node.host_mem_bytes,
              slots_format(&a->node.capacity, slots, sizeof(slots)), a->node.n_devices,
              a->node.gpu_note);
    if (!userns_configure(c->userns, c->userns_base, c->userns_size, &a->userns_on, &a->userns,
                          err))
        return false;
    if (a->userns_on)
        TLOG_INFO("user namespace", "userns=on host_ids=%u-%u layers=%s/images/layers-%u-%u",
                  a->userns.base, a->userns.base + a->userns.size - 1, c->state_dir, a->userns.base,
                  a->userns.size);
    else
        TLOG_INFO("user namespace", "userns=off kernels_run_as=work caps=none");
    gpu_host_opts go = {.shim = c->cuda_shim,
                        .shim_path = c->cuda_shim_path,
                        .driver_libs = c->cuda_driver_libs,
                        .devices = a->node.devices,
                        .n_devices = a->node.n_devices};
    if (!gpu_host_init(&a->gpu, &go, err)) return false;
    char why[600];
    /* runc mounts the shim as the kernels' root (userns.h) */
    if (a->userns_on && a->gpu.shim && a->gpu.n_devices > 0 &&
        !userns_reachable(&a->userns, a->gpu.shim_path, why, sizeof(why))) {
        ts_err_set(err, "agent.cuda_shim_path %s: the kernels' root cannot reach it: %s",
                   a->gpu.shim_path, why);
        return false;
    }
    return true;
}

/* Step 2: the container runtime with its CNI plugins and port pool. */
static bool _start_runtime(agent *a, ts_err *err)
{
    const agent_config *c = &a->cfg;
    int lo = 0, hi = 0;
    if (!_port_range(c->port_range, &lo, &hi, err)) return false;
    /* every kernel publishes at least the ttyd port: no port plugin, no kernels */
    a->cni_portmap = cni_plugin_locate("agent.cni_portmap", c->cni_portmap, "tessera-portmap",
                                       c->cni_bin_dir, err);
    if (!a->cni_portmap) return false;
    a->cni_bridge =
        cni_plugin_locate("agent.cni_bridge", c->cni_bridge, "tessera-bridge", c->cni_bin_dir, err);
    if (!a->cni_bridge) return false;
    TLOG_INFO("CNI plugins", "cni_bridge=%s cni_portmap=%s", a->cni_bridge, a->cni_portmap);
    runtime_opts ro = {.state_dir = c->state_dir,
                       .userns = a->userns_on ? &a->userns : NULL,
                       .runc_path = c->runc,
                       .cni_bin_dir = c->cni_bin_dir,
                       .cni_network = c->cni_network,
                       .cni_subnet = c->cni_subnet,
                       .cni_portmap = a->cni_portmap,
                       .cni_bridge = a->cni_bridge,
                       .vxlan_port = c->cluster_vxlan_port,
                       .port_pool_start = lo,
                       .port_pool_end = hi,
                       .log_cap_bytes = c->log_cap};
    a->rt = runtime_new(&ro, err);
    if (!a->rt) return false;
    char dwhy[256];
    if (runtime_disk_limits(a->rt, dwhy, sizeof(dwhy)))
        TLOG_INFO("kernel disk sizes enforced", "rootfs_size=%lld", (long long)c->rootfs_size);
    else
        TLOG_WARN("kernel disk sizes not enforced: kernels write without a limit", "why=\"%s\"",
                  dwhy);
    return true;
}

/* Step 3: the image stores (one for TLS registries, one for the insecure
 * ones, agent.insecure_registries). */
static bool _start_images(agent *a, ts_err *err)
{
    const agent_config *c = &a->cfg;
    char *cache = ts_asprintf("%s/images", c->state_dir);
    image_store_opts io = {.cache_dir = cache,
                           .layer_id_base = a->userns_on ? a->userns.base : 0,
                           .layer_id_count = a->userns_on ? a->userns.size : 0,
                           .max_parallel_layers = 4,
                           .timeout_ms = (int)c->pull_timeout_ms,
                           .retries = (int)c->pull_retries,
                           .auth_file = c->registry_auth_file && *c->registry_auth_file
                                            ? c->registry_auth_file
                                            : NULL};
    a->store = image_store_new(&io, err);
    io.insecure_http = true;
    a->insecure_store = a->store ? image_store_new(&io, err) : NULL;
    free(cache);
    return a->store && a->insecure_store;
}

/* Step 4: the addresses the agent advertises, the kernels' network rules and
 * the terminal app. */
static bool _start_network(agent *a, ts_err *err)
{
    const agent_config *c = &a->cfg;
    char why[600];
    _advertise(a);
    /* the network's rules before any kernel's ADD (and again after a restart:
     * what was lost or changed while the agent was down is back) */
    cni_policy netpol = {.state_dir = c->state_dir,
                         .kernel_host = a->kernel_host,
                         .publish_addrs = c->cni_publish_addrs,
                         .publish_from = c->cni_publish_from,
                         .host_ports = c->cni_host_ports,
                         .deny = c->cni_deny,
                         .outbound = c->cni_outbound};
    if (!cni_policy_set(&netpol, err)) return false;
    ts_err nerr = {{0}};
    if (!cni_network_setup(c->cni_network, c->cni_subnet, &nerr))
        TLOG_ERROR("CNI network rules not set up: kernels cannot start until they are",
                   "network=%s error=\"%s\"", c->cni_network, nerr.msg);
    a->gpu_dir = ts_asprintf("%s/gpu", c->state_dir);
    ts_err terr = {{0}};
    a->term_path = term_app_locate(c->term_path, &terr);
    if (a->term_path && a->userns_on &&
        !userns_reachable(&a->userns, a->term_path, why, sizeof(why))) {
        ts_err_set(&terr, "%s: the kernels' root cannot reach it: %s", a->term_path, why);
        free(a->term_path);
        a->term_path = NULL;
    }
    if (a->term_path)
        TLOG_INFO("terminal app", "term_path=%s", a->term_path);
    else
        TLOG_WARN("no terminal app: kernels get no ttyd", "error=\"%s\"", terr.msg);
    return true;
}

/* Step 5: the kernel manager, with the usage sampler it reads. */
static bool _start_kernels(svc *s, agent *a, ts_err *err)
{
    const agent_config *c = &a->cfg;
    kernels_opts ko = {.agent_id = a->id,
                       .state_dir = c->state_dir,
                       .kernel_host = a->kernel_host,
                       .rt = a->rt,
                       .store_for = _store_for,
                       .store_ctx = a,
                       .bus = svc_bus(s),
                       .max_parallel_pulls = (int)c->max_parallel_pulls,
                       .destroy_grace_ms = (int)c->destroy_grace_ms,
                       .shm_bytes = c->shm,
                       .rootfs_size = c->rootfs_size,
                       .exited_retention_ms = c->exited_retention_ms,
                       .gpu_conf_dir = a->gpu_dir,
                       .gpu = &a->gpu,
                       .term_path = a->term_path,
                       .device_memory = _device_memory,
                       .device_ctx = a};
    if (!a->usage) {
        if (a->gpu.n_devices > 0) a->nvml = gpu_nvml_open(c->nvml_library);
        a->usage = usage_new(a->gpu_dir, a->nvml, &a->gpu);
    }
    ko.usage = a->usage;
    a->ks = kernels_new(&ko, err);
    return a->ks != NULL;
}

/* Step 6: AgentStarted on the bus, with the kernels adopted from a run before. */
static bool _announce(svc *s, agent *a, ts_err *err)
{
    const agent_config *c = &a->cfg;
    char **adopted = NULL;
    int n_adopted = kernel_adopt(a->ks, &adopted);
    node_proto np;
    node_proto_fill(&a->node, &np);
    Tessera__V1__AgentStarted m = TESSERA__V1__AGENT_STARTED__INIT;
    m.agent_id = a->id;
    m.resource_group = (char *)c->resource_group;
    m.architecture = a->node.architecture;
    m.addr = a->addr;
    m.n_slots = np.n_slots;
    m.slots = np.slotp;
    m.n_devices = np.n_devices;
    m.devices = np.devicep;
    m.version = TESSERA_VERSION;
    m.hostname = a->node.hostname;
    m.runtime = "runc";
    m.n_adopted_kernel_ids = (size_t)n_adopted;
    m.adopted_kernel_ids = adopted;
    bool ok = kbus_publish(svc_bus(s), AGENT_TOPIC, a->id, &m.base, NULL, a->id, err);
    for (int i = 0; i < n_adopted; i++)
        free(adopted[i]);
    free(adopted);
    if (!ok) {
        ts_err_prefix(err, "AgentStarted");
        return false;
    }
    TLOG_INFO("agent started", "addr=%s resource_group=%s adopted=%d", a->addr, c->resource_group,
              n_adopted);
    return true;
}

/* Step 7: the kernels' loops, the heartbeat, the command consumer and the
 * API's view of the agent. */
static bool _start_loops(svc *s, agent *a, ts_err *err)
{
    const agent_config *c = &a->cfg;
    if (!kernels_start(a->ks, err)) return false;
    heartbeat_opts ho = {.bus = svc_bus(s),
                         .agent_id = a->id,
                         .resource_group = c->resource_group,
                         .state_dir = c->state_dir,
                         .interval_ms = (int)c->heartbeat_interval_ms,
                         .node = &a->node,
                         .ks = a->ks,
                         .rt = a->rt,
                         .usage = a->usage};
    a->hb = heartbeat_start(&ho, err);
    if (!a->hb) return false;
    char group[200];
    snprintf(group, sizeof(group), CMD_GROUP_PREFIX "%s", a->id);
    const char *topics[] = {a->cmd_topic, NULL};
    a->consumer = kbus_consume_control(svc_bus(s), group, topics, _on_command, a, err);
    if (!a->consumer) return false;
    svc_add_check(s, "commands", _check_consumer, a);
    a->api = (http_api_agent){.agent_id = a->id,
                              .resource_group = c->resource_group,
                              .addr = a->addr,
                              .kernel_host = a->kernel_host,
                              .node = &a->node,
                              .rt = a->rt,
                              .ks = a->ks,
                              .exec_timeout_ms = c->exec_timeout_ms,
                              .exec_output_cap = c->exec_output_cap};
    return true;
}

bool agent_start(svc *s, ts_err *err)
{
    agent *a = svc_data(s);
    tlog_ctx_agent(a->id);
    if (!_start_node(a, err) || !_start_runtime(a, err) || !_start_images(a, err) ||
        !_start_network(a, err) || !_start_kernels(s, a, err) || !_announce(s, a, err) ||
        !_start_loops(s, a, err))
        return false;
    atomic_store(&a->started, true);
    return true;
}

/* The CNI bridge plugin creates the bridge but nothing ever removes it: on a
 * graceful stop with no kernel left, remove it when nothing is attached. */
static void _remove_idle_bridge(agent *a)
{
    char **ids = NULL;
    int n = 0;
    ts_err lerr = {{0}};
    bool listed = runtime_list(a->rt, &ids, &n, &lerr);
    for (int i = 0; i < n; i++)
        free(ids[i]);
    free(ids);
    const char *br = a->cfg.cni_network;
    if (!listed || n > 0 || !br || !*br || strchr(br, '/')) return;
    char path[300];
    netsys_path(path, sizeof(path), br, "brif");
    DIR *d = opendir(path);
    if (!d) { /* no bridge: the network's rules (made at the start) go alone */
        netsys_path(path, sizeof(path), br, "");
        if (access(path, F_OK) != 0) cni_masq_remove(br, a->cfg.cni_subnet);
        return;
    }
    struct dirent *e;
    bool attached = false;
    while (!attached && (e = readdir(d)))
        attached = e->d_name[0] != '.';
    closedir(d);
    if (attached) return;
    const char *argv[] = {"ip", "link", "delete", br, NULL};
    proc_opts po = {.argv = argv, .timeout_ms = 5000};
    exec_result r;
    ts_err err = {{0}};
    if (!proc_run(&po, &r, &err)) return;
    if (r.exit_code == 0) {
        TLOG_INFO("idle CNI bridge removed", "bridge=%s", br);
        cni_masq_remove(br, a->cfg.cni_subnet); /* the network's rules */
    }
    exec_result_free(&r);
}

/* agent.destroy_on_stop: every kernel of this node, with its mounts, cgroups,
 * netns and ports (a development stack's dev-down must leave no process). */
static void _destroy_all(agent *a)
{
    char **ids = NULL;
    int n = 0;
    ts_err lerr = {{0}};
    if (!runtime_list(a->rt, &ids, &n, &lerr))
        TLOG_WARN("kernels not destroyed at stop", "error=\"%s\"", lerr.msg);
    for (int i = 0; i < n; i++) {
        ts_err err = {{0}};
        tlog_ctx_kernel(ids[i]);
        if (!runtime_destroy(a->rt, ids[i], (int)a->cfg.destroy_grace_ms, &err))
            TLOG_WARN("kernel not destroyed at stop", "error=\"%s\"", err.msg);
        else
            TLOG_INFO("kernel destroyed at stop", "");
        free(ids[i]);
    }
    tlog_ctx_kernel(NULL);
    free(ids);
}

void agent_stop(svc *s)
{
    agent *a = svc_data(s);
    if (!a) return;
    tlog_ctx_agent(a->id);
    atomic_store(&a->started, false);
    if (a->consumer) kbus_consumer_stop(a->consumer);
    a->consumer = NULL;
    heartbeat_stop(a->hb);
    a->hb = NULL;
    if (svc_bus(s) && a->ks) {
        Tessera__V1__AgentStopped m = TESSERA__V1__AGENT_STOPPED__INIT;
        m.agent_id = a->id;
        m.reason = "shutdown";
        m.graceful = true;
        ts_err err = {{0}};
        if (!kbus_publish(svc_bus(s), AGENT_TOPIC, a->id, &m.base, NULL, a->id, &err))
            TLOG_WARN("AgentStopped not published", "error=\"%s\"", err.msg);
    }
    /* kernels keep running (their supervisors are not ours); a restart adopts
     * them, unless this agent is told to leave nothing behind */
    kernels_free(a->ks);
    a->ks = NULL;
    if (a->rt && a->cfg.destroy_on_stop) _destroy_all(a);
    usage_free(a->usage);
    gpu_nvml_close(a->nvml);
    if (a->rt) _remove_idle_bridge(a);
    netsys_teardown();
    image_store_free(a->store);
    image_store_free(a->insecure_store);
    runtime_free(a->rt);
    free(a->gpu_dir);
    gpu_host_free(&a->gpu);
    free(a->term_path);
    free(a->cni_portmap);
    free(a->cni_bridge);
    for (char **h = a->insecure; h && *h; h++)
        free(*h);
    free(a->insecure);
    svc_set_data(s, NULL);
    free(a);
}
