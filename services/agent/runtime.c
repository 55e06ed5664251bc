/* runtime.c: kernels as runc containers (container.h): set-up, status, exec,
 * logs, the kernels it has, usage. Start and destroy are runtime_start.c and
 * runtime_destroy.c; what they all share, runtime_state.c. */
#include "services/agent/container.h"

#include <dirent.h>
#include <errno.h>
#include <jansson.h>
#include <net/if.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "libcommon/proc.h"
#include "services/agent/cgroups.h"
#include "services/agent/logs.h"
#include "services/agent/netsys.h"
#include "services/agent/runtime_disk.h"
#include "services/agent/runtime_state.h"

/* ---- runtime ------------------------------------------------------------------ */

runtime *runtime_new(const runtime_opts *opts, ts_err *err)
{
    if (!opts->state_dir || !*opts->state_dir) {
        ts_err_set(err, "runtime: state_dir is required");
        return NULL;
    }
    runtime *rt = ts_calloc(1, sizeof(*rt));
    rt->state_dir = ts_strdup(opts->state_dir);
    rt->kernels_dir = ts_asprintf("%s/kernels", opts->state_dir);
    rt->runc = ts_strdup(opts->runc_path && *opts->runc_path ? opts->runc_path : "runc");
    rt->cni_bin =
        ts_strdup(opts->cni_bin_dir && *opts->cni_bin_dir ? opts->cni_bin_dir : "/usr/lib/cni");
    rt->cni_net =
        ts_strdup(opts->cni_network && *opts->cni_network ? opts->cni_network : "tessera0");
    rt->cni_subnet =
        ts_strdup(opts->cni_subnet && *opts->cni_subnet ? opts->cni_subnet : "10.88.0.0/16");
    rt->cni_data = ts_asprintf("%s/cni", opts->state_dir);
    rt->cni_portmap_legacy = ts_asprintf("%s/portmap", rt->cni_bin);
    rt->cni_portmap = ts_strdup(opts->cni_portmap && *opts->cni_portmap ? opts->cni_portmap
                                                                        : rt->cni_portmap_legacy);
    rt->cni_bridge_legacy = ts_asprintf("%s/bridge", rt->cni_bin);
    rt->cni_bridge =
        ts_strdup(opts->cni_bridge && *opts->cni_bridge ? opts->cni_bridge : rt->cni_bridge_legacy);
    rt->sup_path = opts->sup_path && *opts->sup_path ? ts_strdup(opts->sup_path)
                                                     : proc_sibling_path("tessera-sup", NULL);
    rt->log_cap = opts->log_cap_bytes > 0 ? opts->log_cap_bytes : (10LL << 20);
    const char *cb = opts->cni_cluster_bridge;
    if (!cb || !*cb) {
        const char *slash = strrchr(rt->cni_bridge, '/');
        if (strcmp(slash ? slash + 1 : rt->cni_bridge, "tessera-bridge") == 0) cb = rt->cni_bridge;
    }
    rt->cni_cluster = cb && *cb ? ts_strdup(cb) : proc_sibling_path("tessera-bridge", NULL);
    if (rt->cni_cluster && access(rt->cni_cluster, X_OK) != 0) {
        free(rt->cni_cluster);
        rt->cni_cluster = NULL;
    }
    rt->cni = (cni_conf){.bin_dir = rt->cni_bin,
                         .network = rt->cni_net,
                         .subnet = rt->cni_subnet,
                         .data_dir = rt->cni_data,
                         .portmap = rt->cni_portmap,
                         .bridge = rt->cni_bridge,
                         .cluster_bridge = rt->cni_cluster,
                         .vxlan_port = opts->vxlan_port > 0 ? opts->vxlan_port : 4789};
    cg_io_accounting(); /* cgroup v1: block I/O counts for runtime_usage */
    rdisk_setup(rt);
    bool ok = true;
    if (!rt->sup_path || access(rt->sup_path, X_OK) != 0) {
        ts_err_set(err,
                   "runtime: the kernel supervisor %s: %s (it is installed beside "
                   "tessera-agent)",
                   rt->sup_path ? rt->sup_path : "tessera-sup",
                   rt->sup_path ? strerror(errno) : "cannot find the agent's own path");
        ok = false;
    }
    if (opts->userns && opts->userns->size) {
        rt->userns_copy = *opts->userns;
        rt->userns = &rt->userns_copy;
    }
    const char *dirs[] = {rt->state_dir, rt->kernels_dir, rt->cni_data};
    for (size_t i = 0; ok && i < TS_ARRAY_LEN(dirs); i++) {
        if (mkdir(dirs[i], 0750) < 0 && errno != EEXIST) {
            ts_err_set(err, "runtime: mkdir %s: %s", dirs[i], strerror(errno));
            ok = false;
        }
    }
    /* runc mounts a kernel's rootfs and files as the containers' root: the
     * way to them must be open to it (userns.h) */
    if (ok && rt->userns) {
        ok = userns_share_dir(rt->userns, rt->state_dir, err) &&
             userns_share_dir(rt->userns, rt->kernels_dir, err);
        char probe[600], why[600];
        snprintf(probe, sizeof(probe), "%s/k", rt->kernels_dir);
        if (ok && !userns_reachable(rt->userns, probe, why, sizeof(why))) {
            ts_err_set(err,
                       "the containers' root cannot reach %s: %s (give that directory "
                       "o+x, or choose another agent.state_dir)",
                       rt->kernels_dir, why);
            ok = false;
        }
        if (!ok) ts_err_prefix(err, "runtime");
    }
    if (ok) {
        rt->ports = ports_new(rt->state_dir, opts->port_pool_start, opts->port_pool_end, err);
        if (!rt->ports) {
            ts_err_prefix(err, "runtime");
            ok = false;
        }
    }
    if (!ok) {
        runtime_free(rt);
        return NULL;
    }
    return rt;
}

void runtime_free(runtime *rt)
{
    if (!rt) return;
    ports_free(rt->ports);
    free(rt->state_dir);
    free(rt->kernels_dir);
    free(rt->runc);
    free(rt->cni_bin);
    free(rt->cni_net);
    free(rt->cni_subnet);
    free(rt->cni_data);
    free(rt->cni_portmap);
    free(rt->cni_portmap_legacy);
    free(rt->cni_bridge);
    free(rt->cni_bridge_legacy);
    free(rt->cni_cluster);
    free(rt->sup_path);
    free(rt->mkfs);
    free(rt);
}

/* ---- status ------------------------------------------------------------------- */

/* <kernel>/exit ("code signal oom_kills wall_ms"), written by the supervisor
 * when init ended: *out is the exit it says (true), or untouched (false). */
static bool _read_exit(runtime *rt, const char *id, const char *rel, kernel_status *out)
{
    char *path = rts_kpath(rt, id, "exit");
    char *text = rts_read_file(path, 256);
    free(path);
    if (!text) return false;
    int code, sig;
    long long ooms;
    bool ok = sscanf(text, "%d %d %lld", &code, &sig, &ooms) == 3;
    free(text);
    if (!ok) return false;
    out->state = KERNEL_EXITED;
    out->exit_code = code;
    int64_t limit = 0;
    if (!cg_memory_limit(rel, &limit)) limit = 0; /* unknown: not named */
    if (ooms > 0) {
        out->oom_killed = true;
        if (limit > 0 && limit < (1LL << 60))
            snprintf(out->reason, sizeof(out->reason),
                     "OOM killed: out of memory (limit %lld MiB), exit code %d",
                     (long long)(limit >> 20), out->exit_code);
        else
            snprintf(out->reason, sizeof(out->reason), "OOM killed: out of memory, exit code %d",
                     out->exit_code);
    } else if (sig > 0) {
        snprintf(out->reason, sizeof(out->reason), "killed by signal %d (%s)", sig, strsignal(sig));
    } else {
        snprintf(out->reason, sizeof(out->reason), "exited with code %d", out->exit_code);
    }
    return true;
}

/* init is gone: the supervisor is writing the exit file right now, or it
 * died before it could. */
static void _after_init(runtime *rt, const char *id, const char *rel, const kstate *st,
                        kernel_status *out)
{
    for (int i = 0; i < 100 && proc_signal_checked(st->sup_pid, 0, NULL) &&
                    rts_proc_starttime(st->sup_pid) == st->sup_start;
         i++) {
        if (_read_exit(rt, id, rel, out)) return;
        usleep(10000);
    }
    if (_read_exit(rt, id, rel, out)) return;
    out->state = KERNEL_EXITED;
    out->exit_code = -1;
    int64_t k = 0;
    out->oom_killed = cg_oom_kills(rel, &k) && k > 0;
    snprintf(out->reason, sizeof(out->reason), "%sexited while unsupervised: exit code unknown",
             k > 0 ? "OOM killed: " : "");
}

bool runtime_status(runtime *rt, const char *id, kernel_status *out, ts_err *err)
{
    memset(out, 0, sizeof(*out));
    if (!rts_check_id(id, err)) return false;
    kstate st;
    if (!rts_state_load(rt, id, &st)) {
        char *kdir = rts_kdir(rt, id);
        struct stat sb;
        bool exists = stat(kdir, &sb) == 0;
        free(kdir);
        out->state = exists ? KERNEL_CREATING : KERNEL_GONE;
        if (!exists) snprintf(out->reason, sizeof(out->reason), "no such kernel on this agent");
        return true;
    }
    ts_strlcpy(out->ip, st.ip, sizeof(out->ip));
    memcpy(out->ports, st.ports, sizeof(st.ports[0]) * (size_t)st.n_ports);
    out->n_ports = st.n_ports;
    rts_state_free(&st);
    char rel[128], hint[160];
    rts_cg_rel(id, rel, sizeof(rel));
    rts_cg_hint(id, hint, sizeof(hint));
    if (_read_exit(rt, id, rel, out)) return true;
    if (strcmp(st.phase, "running") != 0) {
        out->state = KERNEL_CREATING;
        return true;
    }
    if (!proc_signal_checked(st.init_pid, 0, hint)) {
        _after_init(rt, id, rel, &st, out);
        return true;
    }
    out->state = KERNEL_RUNNING;
    int64_t k = 0;
    if (cg_oom_kills(rel, &k) && k > 0) {
        out->oom_killed = true;
        snprintf(out->reason, sizeof(out->reason), "running; %lld process(es) OOM killed",
                 (long long)k);
    }
    return true;
}

/* ---- exec, logs, list, usage ---------------------------------------------------- */

bool runtime_exec(runtime *rt, const char *id, const char *const *argv, const char *const *env,
                  int timeout_ms, size_t cap_bytes, exec_result *out, ts_err *err)
{
    memset(out, 0, sizeof(*out));
    if (!rts_check_id(id, err)) return false;
    if (!argv || !argv[0]) {
        ts_err_set(err, "exec: empty command");
        return false;
    }
    kernel_status ks;
    if (!runtime_status(rt, id, &ks, err)) return false;
    if (ks.state != KERNEL_RUNNING) {
        ts_err_set(err, "kernel %s is not running (%s)", id,
                   ks.state == KERNEL_EXITED ? ks.reason
                   : ks.state == KERNEL_GONE ? "gone"
                                             : "still starting");
        return false;
    }
    char tag[TS_UUID_STRLEN];
    ts_uuid4(tag);
    char *pid_file = ts_asprintf("%s/%s/exec-%s.pid", rt->kernels_dir, id, tag);
    size_t n_env = 0, n_argv = 0;
    for (const char *const *e = env; e && *e; e++)
        n_env++;
    for (const char *const *a = argv; *a; a++)
        n_argv++;
    const char **av = ts_calloc(n_argv + 2 * n_env + 8, sizeof(char *));
    size_t n = 0;
    av[n++] = rt->runc;
    av[n++] = "exec";
    av[n++] = "--pid-file";
    av[n++] = pid_file;
    for (size_t i = 0; i < n_env; i++) {
        av[n++] = "--env";
        av[n++] = env[i];
    }
    av[n++] = id;
    for (size_t i = 0; i < n_argv; i++)
        av[n++] = argv[i];
    av[n] = NULL;
    proc_opts o = {.argv = av,
                   .timeout_ms = timeout_ms,
                   .cap_bytes = cap_bytes ? cap_bytes : 1 << 20,
                   .kill_pid_file = pid_file};
    bool ok = proc_run(&o, out, err);
    unlink(pid_file);
    free(pid_file);
    free(av);
    if (!ok) ts_err_prefix(err, "exec in kernel %s", id);
    return ok;
}

char *runtime_home_dir(runtime *rt, const char *id)
{
    return rdisk_home(rt, id);
}

bool runtime_disk_limits(runtime *rt, char *why, size_t why_size)
{
    snprintf(why, why_size, "%s", rt->disk_why);
    return rt->disk_images;
}

void runtime_discard_kept(runtime *rt, const char *id)
{
    if (rts_valid_id(id)) rdisk_discard_kept(rt, id);
}

char *runtime_logs(runtime *rt, const char *id, size_t max, size_t *len, ts_err *err)
{
    if (!rts_check_id(id, err)) return NULL;
    char *dir = rts_kpath(rt, id, "logs");
    char *text = logs_tail(dir, max, len, err);
    free(dir);
    if (!text) ts_err_prefix(err, "logs of kernel %s", id);
    return text;
}

bool runtime_list(runtime *rt, char ***ids, int *count, ts_err *err)
{
    *ids = NULL;
    *count = 0;
    DIR *d = opendir(rt->kernels_dir);
    if (!d) {
        ts_err_set(err, "open %s: %s", rt->kernels_dir, strerror(errno));
        return false;
    }
    int n = 0, cap = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.' || !rts_valid_id(e->d_name)) continue;
        if (n == cap) {
            cap = cap ? cap * 2 : 16;
            *ids = ts_realloc(*ids, (size_t)cap * sizeof(char *));
        }
        (*ids)[n++] = ts_strdup(e->d_name);
    }
    closedir(d);
    *count = n;
    return true;
}

static int64_t _read_counter(const char *ifname, const char *name)
{
    char path[160];
    char rel[64];
    snprintf(rel, sizeof(rel), "statistics/%s", name);
    netsys_path(path, sizeof(path), ifname, rel);
    char *text = rts_read_file(path, 64);
    int64_t v = text ? strtoll(text, NULL, 10) : 0;
    free(text);
    return v;
}

/* When pid started, Unix ms (its start time is in clock ticks since boot). */
static int64_t _started_ms(pid_t pid)
{
    unsigned long long ticks = pid > 0 ? rts_proc_starttime(pid) : 0;
    long hz = sysconf(_SC_CLK_TCK);
    struct timespec bt;
    if (!ticks || hz <= 0 || clock_gettime(CLOCK_BOOTTIME, &bt) != 0) return 0;
    int64_t up_ms = (int64_t)bt.tv_sec * 1000 + bt.tv_nsec / 1000000;
    return ts_now_wall_ms() - (up_ms - (int64_t)(ticks * 1000ULL / (unsigned long long)hz));
}

bool runtime_usage(runtime *rt, const char *id, kernel_usage *out, ts_err *err)
{
    if (!rts_check_id(id, err)) return false;
    char rel[128];
    rts_cg_rel(id, rel, sizeof(rel));
    if (!cg_usage(rel, out, err)) {
        ts_err_prefix(err, "usage of kernel %s", id);
        return false;
    }
    /* network: the host end of its veth counts the other way round */
    kstate st;
    if (rts_state_load(rt, id, &st)) {
        char host_if[IF_NAMESIZE];
        if (cni_result_host_if(st.cni_result, rt->cni.network, host_if, sizeof(host_if))) {
            out->net_rx_bytes = _read_counter(host_if, "tx_bytes");
            out->net_tx_bytes = _read_counter(host_if, "rx_bytes");
        }
        /* a cluster kernel's eth1 too (cni_cluster.h): its bridge is the
         * configuration's */
        json_t *cc =
            st.cluster_result && st.cluster_conf ? json_loads(st.cluster_conf, 0, NULL) : NULL;
        const char *br = json_string_value(json_object_get(cc, "bridge"));
        if (br && cni_result_host_if(st.cluster_result, br, host_if, sizeof(host_if))) {
            out->net_rx_bytes += _read_counter(host_if, "tx_bytes");
            out->net_tx_bytes += _read_counter(host_if, "rx_bytes");
        }
        json_decref(cc);
        out->started_ms = _started_ms(st.init_pid);
        rts_state_free(&st);
    }
    return true;
}

int runtime_pids(runtime *rt, const char *id, int *pids, int max)
{
    (void)rt;
    if (!rts_valid_id(id)) return -1;
    char rel[128];
    rts_cg_rel(id, rel, sizeof(rel));
    return cg_procs(rel, pids, max);
}

bool runtime_usage_mark_save(runtime *rt, const char *id, const char *text)
{
    if (!rts_valid_id(id)) return false;
    char *path = rts_kpath(rt, id, "usage.sent");
    bool ok = rts_write_file(path, text, strlen(text));
    free(path);
    return ok;
}

char *runtime_usage_mark_load(runtime *rt, const char *id)
{
    if (!rts_valid_id(id)) return NULL;
    char *path = rts_kpath(rt, id, "usage.sent");
    char *text = rts_read_file(path, 1024);
    free(path);
    return text;
}

bool runtime_usage_total(runtime *rt, kernel_usage *out, ts_err *err)
{
    (void)rt;
    if (!cg_usage(CG_PARENT, out, err)) {
        /* no kernel ever ran here: nothing used */
        memset(out, 0, sizeof(*out));
    }
    return true;
}
