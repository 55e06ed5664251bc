/* runtime.c: kernels as runc containers (container.h).
 *
 * Start: kernel dir, host ports, netns, then CNI ADD in a thread while the
 * overlay rootfs is mounted and config.json written; once both are done, a
 * per-kernel supervisor process (tessera-sup, services/agent/sup/main.c)
 * runs `runc run --detach`. The supervisor is not the agent's child (so a
 * restart of the agent does not touch it), calls setsid and makes itself a
 * child subreaper: when runc has started the container and exited, the container's init
 * process is re-parented to the supervisor, which therefore can wait() for it
 * and learn its exit status, something nothing else on the host can. The
 * container's stdout and stderr are a pipe the supervisor reads into the
 * size-capped log (logs.c). When init ends the supervisor writes <kernel>/exit
 * ("code signal oom_kills time"), drains the pipe and exits.
 *
 * Everything is in the kernel dir, so a restarted agent just reads it again:
 * state.json says what was set up (ip, ports, CNI result, pids), exit says how
 * it ended. */
#include "services/agent/container.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <jansson.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "libcommon/log.h"
#include "services/agent/bundle.h"
#include "services/agent/cgroups.h"
#include "services/agent/cni.h"
#include "libcommon/proc.h"
#include "services/agent/logs.h"
#include "services/agent/overlay.h"
#include "services/agent/ports.h"
#include "services/agent/userns.h"

extern char **environ;

#define START_TIMEOUT_MS 60000
#define RUNC_TIMEOUT_MS 30000
#define MAX_PORTS ((int)TS_ARRAY_LEN(((kernel_status *)0)->ports))

struct runtime {
    char *state_dir, *kernels_dir, *runc, *cni_bin, *cni_net, *cni_subnet, *cni_data, *cni_portmap,
        *cni_portmap_legacy, *cni_bridge, *cni_bridge_legacy, *sup_path;
    int64_t log_cap;
    port_pool *ports;
    cni_conf cni;
    userns_map userns_copy;
    const userns_map *userns; /* &userns_copy, or NULL: no user namespace */
};

/* ---- small file helpers ------------------------------------------------------ */

static bool _write_file(const char *path, const char *data, size_t len)
{
    char *tmp = ts_asprintf("%s.tmp", path);
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    bool ok = fd >= 0 && write(fd, data, len) == (ssize_t)len;
    if (fd >= 0) close(fd);
    ok = ok && rename(tmp, path) == 0;
    if (!ok) unlink(tmp);
    free(tmp);
    return ok;
}

static char *_read_file(const char *path, size_t max)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return NULL;
    char *buf = ts_malloc(max + 1);
    size_t len = 0;
    ssize_t k;
    while (len < max && (k = read(fd, buf + len, max - len)) > 0)
        len += (size_t)k;
    close(fd);
    buf[len] = '\0';
    return buf;
}

static int _rm_entry(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)sb;
    (void)flag;
    (void)ftw;
    (void)remove(path);
    return 0;
}

/* Whether any mount point lies below dir (in /proc/self/mountinfo, whose
 * paths escape space, tab, newline and backslash as \ooo). */
static bool _mounted_below(const char *dir)
{
    FILE *f = fopen("/proc/self/mountinfo", "re");
    if (!f) return true; /* cannot tell: keep it */
    size_t dl = strlen(dir);
    char line[8192], mnt[4096];
    bool found = false;
    while (!found && fgets(line, sizeof(line), f)) {
        char raw[4096];
        if (sscanf(line, "%*d %*d %*s %*s %4095s", raw) != 1) continue;
        size_t n = 0;
        for (const char *p = raw; *p && n < sizeof(mnt) - 1; p++) {
            if (p[0] == '\\' && p[1] >= '0' && p[1] <= '3' && p[2] >= '0' && p[2] <= '7' &&
                p[3] >= '0' && p[3] <= '7') {
                mnt[n++] = (char)((p[1] - '0') * 64 + (p[2] - '0') * 8 + (p[3] - '0'));
                p += 3;
            } else {
                mnt[n++] = *p;
            }
        }
        mnt[n] = '\0';
        found = strncmp(mnt, dir, dl) == 0 && mnt[dl] == '/';
    }
    fclose(f);
    return found;
}

/* rm -rf that never crosses into a mount point (a rootfs still mounted). */
static void _rm_tree(const char *path)
{
    (void)nftw(path, _rm_entry, 32, FTW_DEPTH | FTW_PHYS | FTW_MOUNT);
}

static bool _valid_id(const char *id)
{
    if (!id || !*id || id[0] == '.' || strlen(id) > 64) return false;
    for (const char *p = id; *p; p++)
        if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
              *p == '-' || *p == '_' || *p == '.'))
            return false;
    return true;
}

static char *_kdir(runtime *rt, const char *id)
{
    return ts_asprintf("%s/%s", rt->kernels_dir, id);
}

static char *_kpath(runtime *rt, const char *id, const char *name)
{
    return ts_asprintf("%s/%s/%s", rt->kernels_dir, id, name);
}

/* ":/tessera/<id>" as it appears in /proc/<pid>/cgroup */
static void _cg_hint(const char *id, char *buf, size_t size)
{
    snprintf(buf, size, ":/" CG_PARENT "/%s", id);
}

static void _cg_rel(const char *id, char *buf, size_t size)
{
    snprintf(buf, size, CG_PARENT "/%s", id);
}

/* /proc/<pid>/stat field 22: start time in clock ticks since boot; 0 if gone. */
static unsigned long long _proc_starttime(pid_t pid)
{
    char path[64], buf[1024];
    snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return 0;
    ssize_t n = read(fd, buf, sizeof(buf) - 1);
    close(fd);
    if (n <= 0) return 0;
    buf[n] = '\0';
    char *p = strrchr(buf, ')');
    if (!p) return 0;
    unsigned long long st = 0;
    /* after ")": state(3) ... starttime(22) is the 20th field */
    if (sscanf(p + 2,
               "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %*u %*u %*d %*d %*d %*d %*d %*d %llu",
               &st) != 1)
        return 0;
    return st;
}

/* ---- state.json --------------------------------------------------------------- */

typedef struct kstate {
    char phase[16]; /* "creating", "running" */
    char ip[64];
    kernel_ports ports[16];
    int n_ports;
    char *cni_result;  /* heap or NULL */
    char portmap[512]; /* the port plugin the kernel's CNI ADD ran */
    char bridge[512];  /* the bridge plugin the kernel's CNI ADD ran */
    pid_t init_pid, sup_pid;
    unsigned long long sup_start;
    bool batch;
    bool keepalive; /* init is the runtime's keep-alive, not the user's program */
} kstate;

static bool _state_save(runtime *rt, const char *id, const kernel_spec *spec, const kstate *s)
{
    json_t *ports = json_array();
    for (int i = 0; i < s->n_ports; i++)
        json_array_append_new(ports,
                              json_pack("{s:i, s:i}", "container", s->ports[i].container_port,
                                        "host", s->ports[i].host_port));
    json_t *j = json_pack("{s:s, s:s?, s:s, s:s, s:o, s:i, s:i, s:I, s:b, s:I}", "kernel_id", id,
                          "session_id", spec ? spec->session_id : NULL, "phase", s->phase, "ip",
                          s->ip, "ports", ports, "init_pid", (int)s->init_pid, "supervisor_pid",
                          (int)s->sup_pid, "supervisor_start", (json_int_t)s->sup_start, "batch",
                          s->batch, "updated_at", (json_int_t)ts_now_wall_ms());
    json_object_set_new(j, "keepalive", json_boolean(s->keepalive));
    if (spec) json_object_set_new(j, "cluster_size", json_integer(spec->cluster_size));
    json_object_set_new(j, "cni_portmap", json_string(s->portmap));
    json_object_set_new(j, "cni_bridge", json_string(s->bridge));
    if (s->cni_result) json_object_set_new(j, "cni_result", json_loads(s->cni_result, 0, NULL));
    char *text = json_dumps(j, JSON_COMPACT);
    json_decref(j);
    char *path = _kpath(rt, id, "state.json");
    bool ok = _write_file(path, text, strlen(text));
    free(path);
    free(text);
    return ok;
}

static bool _state_load(runtime *rt, const char *id, kstate *s)
{
    memset(s, 0, sizeof(*s));
    char *path = _kpath(rt, id, "state.json");
    json_t *j = json_load_file(path, 0, NULL);
    free(path);
    if (!j) return false;
    ts_strlcpy(s->phase, json_string_value(json_object_get(j, "phase")) ?: "", sizeof(s->phase));
    ts_strlcpy(s->ip, json_string_value(json_object_get(j, "ip")) ?: "", sizeof(s->ip));
    size_t i;
    json_t *v;
    json_array_foreach(json_object_get(j, "ports"), i, v)
    {
        if (s->n_ports >= MAX_PORTS) break;
        s->ports[s->n_ports].container_port =
            (int)json_integer_value(json_object_get(v, "container"));
        s->ports[s->n_ports].host_port = (int)json_integer_value(json_object_get(v, "host"));
        s->n_ports++;
    }
    json_t *cr = json_object_get(j, "cni_result");
    if (cr) s->cni_result = json_dumps(cr, JSON_COMPACT);
    /* no key: written by an agent from before agent.cni_portmap, which ran
     * Debian's portmap */
    ts_strlcpy(s->portmap,
               json_string_value(json_object_get(j, "cni_portmap")) ?: rt->cni_portmap_legacy,
               sizeof(s->portmap));
    /* no key: written before agent.cni_bridge, by an agent that ran Debian's */
    ts_strlcpy(s->bridge,
               json_string_value(json_object_get(j, "cni_bridge")) ?: rt->cni_bridge_legacy,
               sizeof(s->bridge));
    s->init_pid = (pid_t)json_integer_value(json_object_get(j, "init_pid"));
    s->sup_pid = (pid_t)json_integer_value(json_object_get(j, "supervisor_pid"));
    s->sup_start = (unsigned long long)json_integer_value(json_object_get(j, "supervisor_start"));
    s->batch = json_is_true(json_object_get(j, "batch"));
    s->keepalive = json_is_true(json_object_get(j, "keepalive"));
    json_decref(j);
    return true;
}

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
    rt->cni = (cni_conf){.bin_dir = rt->cni_bin,
                         .network = rt->cni_net,
                         .subnet = rt->cni_subnet,
                         .data_dir = rt->cni_data,
                         .portmap = rt->cni_portmap,
                         .bridge = rt->cni_bridge};
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
    free(rt->sup_path);
    free(rt);
}

/* ---- runc helpers ------------------------------------------------------------- */

/* The last error runc logged (--log-format json), or "". */
static void _runc_log_error(const char *log_path, char *buf, size_t size)
{
    buf[0] = '\0';
    char *text = _read_file(log_path, 1 << 16);
    if (!text) return;
    for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n")) {
        json_t *j = json_loads(line, 0, NULL);
        const char *lvl = json_string_value(json_object_get(j, "level"));
        const char *msg = json_string_value(json_object_get(j, "msg"));
        if (lvl && msg && (strcmp(lvl, "error") == 0 || strcmp(lvl, "fatal") == 0))
            ts_strlcpy(buf, msg, size);
        json_decref(j);
    }
    free(text);
}

static bool _runc(runtime *rt, const char *const *args, exec_result *r, ts_err *err)
{
    const char *argv[32];
    int n = 0;
    argv[n++] = rt->runc;
    for (; *args && n < 31; args++)
        argv[n++] = *args;
    argv[n] = NULL;
    proc_opts o = {.argv = argv, .timeout_ms = RUNC_TIMEOUT_MS, .cap_bytes = 1 << 16};
    return proc_run(&o, r, err);
}

/* ---- the supervisor ------------------------------------------------------------ */

/* Start tessera-sup (services/agent/sup/main.c) for the kernel and wait for it
 * to report: posix_spawn (no copy of the agent's address space); the process
 * started forks the supervisor, hands its pid over on a pipe and exits, and
 * is reaped here at once. */
static bool _spawn_supervisor(runtime *rt, const char *id, pid_t *init_pid, pid_t *sup_pid,
                              ts_err *err)
{
    char *kdir = _kdir(rt, id);
    char pid_file[600], log_file[600], bundle[600], oom_file[600], cap[32];
    snprintf(pid_file, sizeof(pid_file), "%s/init.pid", kdir);
    snprintf(log_file, sizeof(log_file), "%s/runc.log", kdir);
    snprintf(bundle, sizeof(bundle), "%s/bundle", kdir);
    snprintf(cap, sizeof(cap), "%lld", (long long)rt->log_cap);
    char rel[128];
    _cg_rel(id, rel, sizeof(rel));
    if (!cg_path("memory", rel, "memory.oom_control", oom_file, sizeof(oom_file)))
        oom_file[0] = '\0';
    const char *argv[] = {rt->sup_path, kdir,           cap,      oom_file, rt->runc,   "--log",
                          log_file,     "--log-format", "json",   "run",    "--detach", "--bundle",
                          bundle,       "--pid-file",   pid_file, id,       NULL};
    int rp[2], sp[2];
    if (pipe2(rp, O_CLOEXEC) < 0) {
        ts_err_set(err, "pipe: %s", strerror(errno));
        free(kdir);
        return false;
    }
    if (pipe2(sp, O_CLOEXEC) < 0) {
        ts_err_set(err, "pipe: %s", strerror(errno));
        close(rp[0]);
        close(rp[1]);
        free(kdir);
        return false;
    }
    /* the child's fds 0-4 are set in order below: keep the pipe ends above them */
    int *ends[] = {&rp[1], &sp[1]};
    for (size_t i = 0; i < TS_ARRAY_LEN(ends); i++) {
        if (*ends[i] >= 5) continue;
        int moved = fcntl(*ends[i], F_DUPFD_CLOEXEC, 5);
        if (moved >= 0) {
            close(*ends[i]);
            *ends[i] = moved;
        }
    }
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDWR, 0);
    posix_spawn_file_actions_adddup2(&fa, 0, 1);
    posix_spawn_file_actions_adddup2(&fa, 0, 2);
    posix_spawn_file_actions_adddup2(&fa, rp[1], 3);
    posix_spawn_file_actions_adddup2(&fa, sp[1], 4);
    posix_spawn_file_actions_addclosefrom_np(&fa, 5);
    posix_spawnattr_t at;
    proc_spawnattr_init(&at, false);
    pid_t mid = 0;
    int rc = posix_spawn(&mid, rt->sup_path, &fa, &at, (char *const *)argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    posix_spawnattr_destroy(&at);
    free(kdir);
    close(rp[1]);
    close(sp[1]);
    if (rc != 0) {
        ts_err_set(err, "start %s: %s", rt->sup_path, strerror(rc));
        close(rp[0]);
        close(sp[0]);
        return false;
    }
    int st;
    while (waitpid(mid, &st, 0) < 0 && errno == EINTR) {
    }
    int32_t pid32 = 0;
    if (read(sp[0], &pid32, sizeof(pid32)) != sizeof(pid32)) pid32 = 0;
    close(sp[0]);
    *sup_pid = pid32;
    char msg[512];
    size_t len = 0;
    int64_t deadline = ts_now_mono_ms() + START_TIMEOUT_MS;
    while (len < sizeof(msg) - 1) {
        struct pollfd p = {.fd = rp[0], .events = POLLIN};
        int64_t left = deadline - ts_now_mono_ms();
        if (left <= 0) break;
        int k = poll(&p, 1, (int)left);
        if (k < 0 && errno == EINTR) continue;
        if (k <= 0) break;
        ssize_t n = read(rp[0], msg + len, sizeof(msg) - 1 - len);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;
        len += (size_t)n;
        if (memchr(msg, '\n', len)) break;
    }
    close(rp[0]);
    msg[len] = '\0';
    if (strncmp(msg, "OK ", 3) == 0) {
        *init_pid = (pid_t)atoi(msg + 3);
        return true;
    }
    char why[400];
    _runc_log_error(log_file, why, sizeof(why));
    if (why[0])
        ts_err_set(err, "runc run: %s", why);
    else if (strncmp(msg, "ERR ", 4) == 0)
        ts_err_set(err, "%.*s", (int)strcspn(msg + 4, "\n"), msg + 4);
    else if (pid32 <= 0)
        ts_err_set(err, "%s did not start (exit status %d)", rt->sup_path,
                   WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st));
    else
        ts_err_set(err, "container did not start within %d s", START_TIMEOUT_MS / 1000);
    return false;
}

/* ---- the kernel's files and its user ------------------------------------------ */

/* With a user namespace: the way to what runc mounts is open to the
 * containers' root (kernel dir, bundle, etc: root:<base> 0710), and the
 * overlay's upper dir, which is the root directory of the container's /,
 * belongs to it. */
static bool _share_kernel_dirs(runtime *rt, const char *kdir, ts_err *err)
{
    if (!rt->userns) return true;
    static const char *const shared[] = {"", "/bundle", "/etc"};
    char path[700];
    for (size_t i = 0; i < TS_ARRAY_LEN(shared); i++) {
        snprintf(path, sizeof(path), "%s%s", kdir, shared[i]);
        if (!userns_share_dir(rt->userns, path, err)) return false;
    }
    snprintf(path, sizeof(path), "%s/upper", kdir);
    return userns_own(rt->userns, path, 0, 0, 0755, err);
}

/* /etc/hosts, hostname and resolv.conf belong to the container's root (it
 * may edit them, as in Docker). */
static bool _own_etc(runtime *rt, const char *etc, ts_err *err)
{
    if (!rt->userns) return true;
    static const char *const files[] = {"hosts", "hostname", "resolv.conf"};
    char path[700];
    for (size_t i = 0; i < TS_ARRAY_LEN(files); i++) {
        snprintf(path, sizeof(path), "%s/%s", etc, files[i]);
        if (!userns_own(rt->userns, path, 0, 0, 0644, err)) return false;
    }
    return true;
}

/* A vfolder whose host path the containers' root cannot reach (a parent
 * directory closed to it) is bind-mounted at <kdir>/binds/<n> first and
 * given to runc from there (userns_stage_bind); *out is spec with those
 * paths, *paths what to free. */
static bool _stage_mounts(runtime *rt, const char *kdir, const kernel_spec *spec, kernel_spec *out,
                          bind_mount **mounts, char ***paths, ts_err *err)
{
    *out = *spec;
    *mounts = NULL;
    *paths = NULL;
    if (!rt->userns || spec->n_mounts <= 0) return true;
    *mounts = ts_calloc((size_t)spec->n_mounts, sizeof(**mounts));
    *paths = ts_calloc((size_t)spec->n_mounts + 1, sizeof(char *));
    memcpy(*mounts, spec->mounts, (size_t)spec->n_mounts * sizeof(**mounts));
    out->mounts = *mounts;
    char *dir = ts_asprintf("%s/binds", kdir);
    bool ok = true, made = false;
    for (int i = 0; ok && i < spec->n_mounts; i++) {
        const char *src = spec->mounts[i].host_path;
        char why[600];
        if (!src || src[0] != '/' || userns_reachable(rt->userns, src, why, sizeof(why))) continue;
        if (!made) {
            if (mkdir(dir, 0700) != 0 && errno != EEXIST) {
                ts_err_set(err, "mkdir %s: %s", dir, strerror(errno));
                ok = false;
                break;
            }
            ok = made = userns_share_dir(rt->userns, dir, err);
            if (!ok) break;
        }
        char *stage = ts_asprintf("%s/%d", dir, i);
        (*paths)[i] = stage;
        ok = userns_stage_bind(src, stage, err);
        if (ok) {
            (*mounts)[i].host_path = stage;
            TLOG_DEBUG("vfolder staged for the user namespace", "source=%s stage=%s reason=\"%s\"",
                       src, stage, why);
        }
    }
    free(dir);
    if (!ok) ts_err_prefix(err, "vfolder mount");
    return ok;
}

static void _free_paths(char **paths, int n)
{
    for (int i = 0; paths && i < n; i++)
        free(paths[i]);
    free(paths);
}

/* ---- start -------------------------------------------------------------------- */

/* /etc/hosts of the container. Rewritten in place once the address is known:
 * the container's bind mount holds this inode. */
static bool _write_hosts(const char *dir, const char *hostname, const char *ip, ts_err *err)
{
    char buf[1024];
    int n = snprintf(buf, sizeof(buf),
                     "127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n");
    if (ip && *ip) n += snprintf(buf + n, sizeof(buf) - (size_t)n, "%s\t%s\n", ip, hostname);
    char *path = ts_asprintf("%s/hosts", dir);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    bool ok = fd >= 0 && write(fd, buf, (size_t)n) == n;
    if (fd >= 0) close(fd);
    if (!ok) ts_err_set(err, "write %s: %s", path, strerror(errno));
    free(path);
    return ok;
}

/* /etc/hosts (no address yet), /etc/hostname, /etc/resolv.conf. The host's
 * resolver minus loopback name servers (unreachable from the container's
 * netns); none left: public ones, as Docker does. */
static bool _write_etc(const char *dir, const char *hostname, ts_err *err)
{
    if (!_write_hosts(dir, hostname, NULL, err)) return false;
    char buf[4096];
    char *path = ts_asprintf("%s/hostname", dir);
    snprintf(buf, sizeof(buf), "%s\n", hostname);
    bool ok = _write_file(path, buf, strlen(buf));
    free(path);
    char *host = _read_file("/etc/resolv.conf", 16384);
    size_t len = 0;
    bool ns = false;
    buf[0] = '\0';
    if (host) {
        for (char *line = strtok(host, "\n"); line; line = strtok(NULL, "\n")) {
            if (strncmp(line, "nameserver", 10) == 0) {
                const char *a = line + 10;
                while (*a == ' ' || *a == '\t')
                    a++;
                if (strncmp(a, "127.", 4) == 0 || strcmp(a, "::1") == 0) continue;
                ns = true;
            }
            int n = snprintf(buf + len, sizeof(buf) - len, "%s\n", line);
            if (n < 0 || (size_t)n >= sizeof(buf) - len) break;
            len += (size_t)n;
        }
        free(host);
    }
    if (!ns) snprintf(buf + len, sizeof(buf) - len, "nameserver 8.8.8.8\nnameserver 8.8.4.4\n");
    path = ts_asprintf("%s/resolv.conf", dir);
    ok = ok && _write_file(path, buf, strlen(buf));
    free(path);
    if (!ok) ts_err_set(err, "write %s/{hostname,resolv.conf}: %s", dir, strerror(errno));
    return ok;
}

/* CNI ADD in a thread of its own during start. */
typedef struct cni_job {
    pthread_t thread;
    runtime *rt;
    const char *id, *session, *netns;
    const kernel_ports *ports;
    int n_ports;
    bool ok;
    char *result;
    char ip[64];
    ts_err err;
} cni_job;

static void *_cni_job_run(void *arg)
{
    cni_job *j = arg;
    j->ok = cni_add(&j->rt->cni, j->id, j->session, j->netns, j->ports, j->n_ports, &j->result,
                    j->ip, sizeof(j->ip), &j->err);
    return NULL;
}

static bool _teardown(runtime *rt, const char *id, int grace_ms, ts_err *err);

bool runtime_start(runtime *rt, const kernel_spec *spec, kernel_status *out, ts_err *err)
{
    memset(out, 0, sizeof(*out));
    const char *id = spec->kernel_id;
    if (!_valid_id(id)) {
        ts_err_set(err, "kernel id '%s' is not valid here", id ? id : "(null)");
        return false;
    }
    if (!spec->image) {
        ts_err_set(err, "kernel %s: no image", id);
        return false;
    }
    if (spec->n_service_ports < 0 || spec->n_service_ports > MAX_PORTS) {
        ts_err_set(err, "kernel %s: at most %d service ports", id, MAX_PORTS);
        return false;
    }
    for (int i = 0; i < spec->n_service_ports; i++) {
        if (spec->service_ports[i] <= 0 || spec->service_ports[i] > 65535) {
            ts_err_set(err, "kernel %s: service port %d is not a port", id, spec->service_ports[i]);
            return false;
        }
    }
    char *kdir = _kdir(rt, id);
    if (mkdir(kdir, 0750) < 0) {
        if (errno == EEXIST)
            ts_err_set(err, "kernel %s already exists on this agent", id);
        else
            ts_err_set(err, "mkdir %s: %s", kdir, strerror(errno));
        free(kdir);
        return false;
    }
    int64_t t0 = ts_now_mono_us();
    kstate st;
    memset(&st, 0, sizeof(st));
    strcpy(st.phase, "creating");
    st.batch = spec->batch;
    st.keepalive = bundle_uses_keepalive(spec);
    ts_strlcpy(st.portmap, rt->cni_portmap, sizeof(st.portmap));
    ts_strlcpy(st.bridge, rt->cni_bridge, sizeof(st.bridge));
    bool ok = true;
    char rel[128], netns[256], path[1024];
    _cg_rel(id, rel, sizeof(rel));
    cni_netns_path(id, netns, sizeof(netns));
    static const char *const sub[] = {"bundle", "bundle/rootfs", "upper", "work",
                                      "home",   "etc",           "logs",  "empty"};
    for (size_t i = 0; ok && i < TS_ARRAY_LEN(sub); i++) {
        snprintf(path, sizeof(path), "%s/%s", kdir, sub[i]);
        if (mkdir(path, i == 2 || i == 4 ? 0755 : 0750) < 0) {
            ts_err_set(err, "mkdir %s: %s", path, strerror(errno));
            ok = false;
        }
    }
    if (ok) ok = _share_kernel_dirs(rt, kdir, err);
    int hp[16];
    if (ok && spec->n_service_ports > 0) {
        ok = ports_alloc(rt->ports, id, spec->n_service_ports, hp, err);
        for (int i = 0; ok && i < spec->n_service_ports; i++) {
            st.ports[i].container_port = spec->service_ports[i];
            st.ports[i].host_port = hp[i];
        }
        if (ok) st.n_ports = spec->n_service_ports;
    }
    /* recorded before anything outside the kernel dir exists, so that a crash
     * from here on leaves something destroy can find */
    if (ok && !_state_save(rt, id, spec, &st)) {
        ts_err_set(err, "write state.json: %s", strerror(errno));
        ok = false;
    }
    /* The network (CNI ADD) is set up in a thread while the rootfs is
     * mounted and the bundle written; `runc run --detach` runs once both are
     * done, so the process never sees a network that is not there yet. (One
     * runc run instead of `runc create` beside CNI and then `runc start`: a
     * Go program fewer per kernel, and CNI no longer competes with runc for
     * the CPU.) */
    int64_t t_net = ts_now_mono_us();
    char *userns_path = _kpath(rt, id, "userns");
    if (ok)
        ok = rt->userns ? userns_ns_create(rt->userns, userns_path, netns, err)
                        : cni_netns_create(netns, err);
    cni_job job = {.rt = rt,
                   .id = id,
                   /* only a session of several kernels has peers to reach */
                   .session = spec->cluster_size > 1 ? spec->session_id : NULL,
                   .netns = netns,
                   .ports = st.ports,
                   .n_ports = st.n_ports};
    bool job_started = false;
    if (ok) {
        int rc = pthread_create(&job.thread, NULL, _cni_job_run, &job);
        if (rc != 0) {
            ts_err_set(err, "pthread_create: %s", strerror(rc));
            ok = false;
        } else {
            job_started = true;
        }
    }
    int64_t t_fs = ts_now_mono_us();
    char rootfs[600], upper[600], work[600], empty[600], etc[600], home[600], bundle[600];
    snprintf(rootfs, sizeof(rootfs), "%s/bundle/rootfs", kdir);
    snprintf(upper, sizeof(upper), "%s/upper", kdir);
    snprintf(work, sizeof(work), "%s/work", kdir);
    snprintf(empty, sizeof(empty), "%s/empty", kdir);
    snprintf(etc, sizeof(etc), "%s/etc", kdir);
    snprintf(home, sizeof(home), "%s/home", kdir);
    snprintf(bundle, sizeof(bundle), "%s/bundle", kdir);
    if (ok)
        ok = overlay_mount(rootfs, spec->image->layer_dirs, spec->image->n_layers, upper, work,
                           empty, err);
    const char *hostname = spec->hostname && *spec->hostname ? spec->hostname : id;
    if (ok) ok = _write_etc(etc, hostname, err) && _own_etc(rt, etc, err);
    /* /home/work belongs to the user the kernel runs as */
    uid_t uid = 0;
    gid_t gid = 0;
    if (ok) ok = bundle_process_user(rootfs, spec->image, rt->userns, &uid, &gid, err);
    if (ok) ok = userns_own(rt->userns, home, uid, gid, 0755, err);
    kernel_spec staged;
    bind_mount *staged_mounts = NULL;
    char **stage_paths = NULL;
    if (ok) ok = _stage_mounts(rt, kdir, spec, &staged, &staged_mounts, &stage_paths, err);
    if (ok) {
        char cgp[160];
        snprintf(cgp, sizeof(cgp), "/%s", rel);
        bundle_params bp = {.spec = &staged,
                            .rootfs = rootfs,
                            .netns_path = netns,
                            .cgroups_path = cgp,
                            .home_dir = home,
                            .etc_dir = etc,
                            .userns = rt->userns,
                            .userns_path = userns_path};
        ok = bundle_write(bundle, &bp, err);
    }
    free(staged_mounts);
    int64_t t_run = ts_now_mono_us();
    if (job_started) {
        pthread_join(job.thread, NULL);
        st.cni_result = job.result;
        ts_strlcpy(st.ip, job.ip, sizeof(st.ip));
        if (ok && !job.ok) {
            *err = job.err;
            ok = false;
        }
    }
    /* what the kernel now holds, before anything else can fail */
    if (!_state_save(rt, id, spec, &st) && ok) {
        ts_err_set(err, "write state.json: %s", strerror(errno));
        ok = false;
    }
    if (ok) ok = _write_hosts(etc, hostname, st.ip, err);
    int64_t t_created = ts_now_mono_us();
    if (ok) {
        ok = _spawn_supervisor(rt, id, &st.init_pid, &st.sup_pid, err);
        if (st.sup_pid > 0) st.sup_start = _proc_starttime(st.sup_pid);
    }
    /* the container holds its own copies of staged mounts: the host's go */
    if (stage_paths) {
        char *binds = ts_asprintf("%s/binds", kdir);
        if (!userns_unstage(binds))
            TLOG_WARN("staged vfolder mounts left until destroy", "kernel=%s", id);
        free(binds);
        _free_paths(stage_paths, spec->n_mounts);
    }
    if (ok) {
        strcpy(st.phase, "running");
        if (!_state_save(rt, id, spec, &st)) {
            ts_err_set(err, "write state.json: %s", strerror(errno));
            ok = false;
        }
    }
    int64_t t_end = ts_now_mono_us();
    free(userns_path);
    if (!ok) {
        ts_err_prefix(err, "start kernel %s", id);
        TLOG_WARN("kernel start failed", "kernel=%s error=\"%s\"", id, err->msg);
        ts_err e2;
        if (!_teardown(rt, id, 0, &e2))
            TLOG_WARN("cleanup after a failed start incomplete", "kernel=%s error=\"%s\"", id,
                      e2.msg);
        free(st.cni_result);
        free(kdir);
        return false;
    }
    TLOG_DEBUG("kernel started",
               "kernel=%s ip=%s prepare_us=%lld netns_us=%lld fs_us=%lld net_wait_us=%lld "
               "run_us=%lld total_us=%lld",
               id, st.ip, (long long)(t_net - t0), (long long)(t_fs - t_net),
               (long long)(t_run - t_fs), (long long)(t_created - t_run),
               (long long)(t_end - t_created), (long long)(t_end - t0));
    free(st.cni_result);
    free(kdir);
    return runtime_status(rt, id, out, err);
}

/* ---- status ------------------------------------------------------------------- */

/* <kernel>/exit: "code signal oom_kills wall_ms" */
static bool _read_exit(runtime *rt, const char *id, int *code, int *sig, long long *ooms)
{
    char *path = _kpath(rt, id, "exit");
    char *text = _read_file(path, 256);
    free(path);
    if (!text) return false;
    bool ok = sscanf(text, "%d %d %lld", code, sig, ooms) == 3;
    free(text);
    return ok;
}

static void _exit_reason(kernel_status *out, int sig, long long ooms, int64_t limit)
{
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
}

bool runtime_status(runtime *rt, const char *id, kernel_status *out, ts_err *err)
{
    memset(out, 0, sizeof(*out));
    if (!_valid_id(id)) {
        ts_err_set(err, "kernel id '%s' is not valid here", id ? id : "(null)");
        return false;
    }
    kstate st;
    if (!_state_load(rt, id, &st)) {
        char *kdir = _kdir(rt, id);
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
    free(st.cni_result);
    char rel[128], hint[160];
    _cg_rel(id, rel, sizeof(rel));
    _cg_hint(id, hint, sizeof(hint));
    int code, sig;
    long long ooms;
    if (_read_exit(rt, id, &code, &sig, &ooms)) {
        out->state = KERNEL_EXITED;
        out->exit_code = code;
        _exit_reason(out, sig, ooms, cg_memory_limit(rel));
        return true;
    }
    if (strcmp(st.phase, "running") != 0) {
        out->state = KERNEL_CREATING;
        return true;
    }
    if (proc_signal_checked(st.init_pid, 0, hint)) {
        out->state = KERNEL_RUNNING;
        int64_t k = cg_oom_kills(rel);
        if (k > 0) {
            out->oom_killed = true;
            snprintf(out->reason, sizeof(out->reason), "running; %lld process(es) OOM killed",
                     (long long)k);
        }
        return true;
    }
    /* init is gone: the supervisor is writing the exit file right now, or it
     * died before it could. */
    for (int i = 0; i < 100 && proc_signal_checked(st.sup_pid, 0, NULL) &&
                    _proc_starttime(st.sup_pid) == st.sup_start;
         i++) {
        if (_read_exit(rt, id, &code, &sig, &ooms)) {
            out->state = KERNEL_EXITED;
            out->exit_code = code;
            _exit_reason(out, sig, ooms, cg_memory_limit(rel));
            return true;
        }
        usleep(10000);
    }
    if (_read_exit(rt, id, &code, &sig, &ooms)) {
        out->state = KERNEL_EXITED;
        out->exit_code = code;
        _exit_reason(out, sig, ooms, cg_memory_limit(rel));
        return true;
    }
    out->state = KERNEL_EXITED;
    out->exit_code = -1;
    int64_t k = cg_oom_kills(rel);
    out->oom_killed = k > 0;
    snprintf(out->reason, sizeof(out->reason), "%sexited while unsupervised: exit code unknown",
             k > 0 ? "OOM killed: " : "");
    return true;
}

/* ---- destroy ------------------------------------------------------------------ */

/* Whether pid handles SIGTERM. The init of a pid namespace without a handler
 * ignores it (even from outside), so waiting a grace period would only wait. */
static bool _catches_sigterm(pid_t pid)
{
    char path[64];
    snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
    char *text = _read_file(path, 8192);
    if (!text) return false;
    char *p = strstr(text, "\nSigCgt:");
    unsigned long long mask = p ? strtoull(p + 8, NULL, 16) : 0;
    free(text);
    return (mask >> (SIGTERM - 1)) & 1;
}

static bool _teardown(runtime *rt, const char *id, int grace_ms, ts_err *err)
{
    kstate st;
    bool have = _state_load(rt, id, &st);
    char rel[128], hint[160], netns[256];
    _cg_rel(id, rel, sizeof(rel));
    _cg_hint(id, hint, sizeof(hint));
    cni_netns_path(id, netns, sizeof(netns));
    bool ok = true;
    char first[512] = "";
#define NOTE(...)                                                                                  \
    do {                                                                                           \
        ok = false;                                                                                \
        if (!first[0]) snprintf(first, sizeof(first), __VA_ARGS__);                                \
    } while (0)

    int64_t t0 = ts_now_mono_us(), t_term, t_del, t_sup, t_net;
    /* 1. the processes: SIGTERM to init and a grace period, then runc kills
     *    what is left and removes the container (and its cgroups) */
    if (have && st.init_pid > 0 && grace_ms > 0 && _catches_sigterm(st.init_pid)) {
        /* Our keep-alive shell can take a SIGTERM that lands between its
         * `sleep &` and `wait` only at its next command, so it gets one
         * again every 50 ms; a user's program gets one, as from Docker. */
        int64_t until = ts_now_mono_ms() + grace_ms;
        while (proc_signal_checked(st.init_pid, SIGTERM, hint)) {
            int64_t left = until - ts_now_mono_ms();
            if (left <= 0) break;
            if (proc_wait_gone(st.init_pid, st.keepalive && left > 50 ? 50 : (int)left)) break;
            if (!st.keepalive) break;
        }
    }
    t_term = ts_now_mono_us();
    exec_result r;
    ts_err e;
    const char *del[] = {"delete", "--force", id, NULL};
    if (_runc(rt, del, &r, &e)) {
        if (r.exit_code != 0 && !strstr(r.err, "does not exist") && !strstr(r.err, "not exist"))
            NOTE("runc delete: %.300s", r.err);
        exec_result_free(&r);
    } else {
        NOTE("%s", e.msg);
    }
    t_del = ts_now_mono_us();
    /* 2. the supervisor sees init end, writes the exit file and leaves */
    if (have && st.sup_pid > 0 && _proc_starttime(st.sup_pid) == st.sup_start && st.sup_start) {
        if (!proc_wait_gone(st.sup_pid, 3000) && _proc_starttime(st.sup_pid) == st.sup_start) {
            /* best effort: a supervisor that outlives this is reaped by its
             * own death signal (it dies with init) */
            TS_IGNORE(proc_signal_checked(st.sup_pid, SIGKILL, NULL));
            TS_IGNORE(proc_wait_gone(st.sup_pid, 1000));
        }
    }
    t_sup = ts_now_mono_us();
    /* 3. network: CNI DEL (veth, lease, iptables rules), then the netns */
    struct stat sb;
    bool netns_exists = stat(netns, &sb) == 0;
    if (have && (st.cni_result || netns_exists)) {
        if (!cni_del(&rt->cni, id, netns, st.ports, st.n_ports, st.cni_result, st.bridge,
                     st.portmap, &e))
            NOTE("%s", e.msg);
    } else if (netns_exists) {
        if (!cni_del(&rt->cni, id, netns, NULL, 0, NULL, NULL, NULL, &e)) NOTE("%s", e.msg);
    }
    if (!cni_netns_delete(netns, &e)) NOTE("%s", e.msg);
    char *userns_path = _kpath(rt, id, "userns");
    if (!userns_ns_delete(userns_path, &e)) NOTE("%s", e.msg);
    free(userns_path);
    t_net = ts_now_mono_us();
    /* 4. vfolder mounts staged for runc, when a failed start left them;
     *    the rootfs */
    char *binds = _kpath(rt, id, "binds");
    if (!userns_unstage(binds)) NOTE("%s: staged mounts remain", binds);
    free(binds);
    char *rootfs = _kpath(rt, id, "bundle/rootfs");
    if (!overlay_unmount(rootfs, &e)) NOTE("%s", e.msg);
    bool still_mounted = overlay_is_mounted(rootfs);
    free(rootfs);
    /* 5. cgroups runc did not remove (runc delete failed, or never ran) */
    if (!cg_remove(rel)) NOTE("cgroup %s: could not remove every hierarchy's directory", rel);
    /* 6. host ports, the kernel dir: never while anything is mounted below
     *    it (a staged vfolder is a bind mount of the same file system, which
     *    nftw's FTW_MOUNT would not stop at) */
    (void)ports_release_kernel(rt->ports, id);
    char *kdir = _kdir(rt, id);
    if (!still_mounted && !_mounted_below(kdir)) {
        _rm_tree(kdir);
        if (stat(kdir, &sb) == 0) NOTE("%s: could not remove", kdir);
    } else if (!still_mounted) {
        NOTE("%s: kept, something is still mounted below it", kdir);
    }
    free(kdir);
    if (have) free(st.cni_result);
    TLOG_DEBUG("kernel torn down",
               "kernel=%s term_us=%lld delete_us=%lld supervisor_us=%lld net_us=%lld rest_us=%lld",
               id, (long long)(t_term - t0), (long long)(t_del - t_term),
               (long long)(t_sup - t_del), (long long)(t_net - t_sup),
               (long long)(ts_now_mono_us() - t_net));
#undef NOTE
    if (!ok) ts_err_set(err, "%s", first);
    return ok;
}

bool runtime_destroy(runtime *rt, const char *id, int grace_ms, ts_err *err)
{
    if (!_valid_id(id)) {
        ts_err_set(err, "kernel id '%s' is not valid here", id ? id : "(null)");
        return false;
    }
    if (!_teardown(rt, id, grace_ms, err)) {
        ts_err_prefix(err, "destroy kernel %s", id);
        return false;
    }
    return true;
}

/* ---- exec, logs, list, usage ---------------------------------------------------- */

bool runtime_exec(runtime *rt, const char *id, const char *const *argv, const char *const *env,
                  int timeout_ms, size_t cap_bytes, exec_result *out, ts_err *err)
{
    memset(out, 0, sizeof(*out));
    if (!_valid_id(id)) {
        ts_err_set(err, "kernel id '%s' is not valid here", id ? id : "(null)");
        return false;
    }
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

char *runtime_logs(runtime *rt, const char *id, size_t max, size_t *len, ts_err *err)
{
    if (!_valid_id(id)) {
        ts_err_set(err, "kernel id '%s' is not valid here", id ? id : "(null)");
        return NULL;
    }
    char *dir = _kpath(rt, id, "logs");
    char *text = logs_tail(dir, max, len, err);
    free(dir);
    if (!text) ts_err_prefix(err, "logs of kernel %s", id);
    return text;
}

int runtime_list(runtime *rt, char ***ids)
{
    *ids = NULL;
    DIR *d = opendir(rt->kernels_dir);
    if (!d) return 0;
    int n = 0, cap = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.' || !_valid_id(e->d_name)) continue;
        if (n == cap) {
            cap = cap ? cap * 2 : 16;
            *ids = ts_realloc(*ids, (size_t)cap * sizeof(char *));
        }
        (*ids)[n++] = ts_strdup(e->d_name);
    }
    closedir(d);
    return n;
}

bool runtime_usage(runtime *rt, const char *id, kernel_usage *out, ts_err *err)
{
    (void)rt;
    if (!_valid_id(id)) {
        ts_err_set(err, "kernel id '%s' is not valid here", id ? id : "(null)");
        return false;
    }
    char rel[128];
    _cg_rel(id, rel, sizeof(rel));
    if (!cg_usage(rel, out, err)) {
        ts_err_prefix(err, "usage of kernel %s", id);
        return false;
    }
    return true;
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
