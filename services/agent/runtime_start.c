/* runtime_start.c: creating and starting a kernel's container (runtime_start.h). */
#include "services/agent/runtime_start.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "libcommon/log.h"
#include "services/agent/bundle.h"
#include "services/agent/cni_cluster.h"
#include "services/agent/overlay.h"
#include "services/agent/runtime_destroy.h"
#include "services/agent/runtime_disk.h"
#include "services/agent/runtime_state.h"
#include "services/agent/sup_spawn.h"

/* With a user namespace: the way to what runc mounts is open to the
 * containers' root (kernel dir, bundle, etc: root:<base> 0710), and the
 * overlay's upper dir, which is the root directory of the container's /,
 * belongs to it. */
static bool _share_kernel_dirs(runtime *rt, const char *kdir, ts_err *err)
{
    if (!rt->userns) return true;
    static const char *const shared[] = {"", "/bundle", "/" RDISK_DIR "/etc"};
    char path[700];
    for (size_t i = 0; i < TS_ARRAY_LEN(shared); i++) {
        snprintf(path, sizeof(path), "%s%s", kdir, shared[i]);
        if (!userns_share_dir(rt->userns, path, err)) return false;
    }
    snprintf(path, sizeof(path), "%s/" RDISK_DIR "/upper", kdir);
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

/* /etc/hosts of the container. Rewritten in place once the address is known:
 * the container's bind mount holds this inode. A kernel of a cluster names
 * every kernel of its session (itself too) at its address on the session's
 * network. */
static bool _write_hosts(const char *dir, const char *hostname, const char *ip,
                         const kernel_cluster *cl, ts_err *err)
{
    char buf[8192];
    int n = snprintf(buf, sizeof(buf),
                     "127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n");
    if (ip && *ip && !cl) n += snprintf(buf + n, sizeof(buf) - (size_t)n, "%s\t%s\n", ip, hostname);
    for (int i = 0; cl && i < cl->n_peers && n < (int)sizeof(buf) - 128; i++) {
        const char *a = cl->peers[i].address;
        n += snprintf(buf + n, sizeof(buf) - (size_t)n, "%.*s\t%s\n", (int)strcspn(a, "/"), a,
                      cl->peers[i].hostname);
    }
    char *path = ts_asprintf("%s/hosts", dir);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    bool ok = fd >= 0 && write(fd, buf, (size_t)n) == n;
    if (fd >= 0) close(fd);
    if (!ok) ts_err_set(err, "write %s: %s", path, strerror(errno));
    free(path);
    return ok;
}

void rts_resolv_conf(char *host, char *buf, size_t size)
{
    size_t len = 0;
    bool ns = false;
    buf[0] = '\0';
    char *save = NULL;
    for (char *line = host ? strtok_r(host, "\n", &save) : NULL; line;
         line = strtok_r(NULL, "\n", &save)) {
        if (strncmp(line, "nameserver", 10) == 0) {
            const char *a = line + 10;
            while (*a == ' ' || *a == '\t')
                a++;
            if (strncmp(a, "127.", 4) == 0 || strcmp(a, "::1") == 0) continue;
            ns = true;
        }
        int n = snprintf(buf + len, size - len, "%s\n", line);
        if (n < 0 || (size_t)n >= size - len) break;
        len += (size_t)n;
    }
    if (!ns) snprintf(buf + len, size - len, "nameserver 8.8.8.8\nnameserver 8.8.4.4\n");
}

/* /etc/hosts (no address yet), /etc/hostname, /etc/resolv.conf. */
static bool _write_etc(const char *dir, const char *hostname, const kernel_cluster *cl, ts_err *err)
{
    if (!_write_hosts(dir, hostname, NULL, cl, err)) return false;
    char buf[4096];
    char *path = ts_asprintf("%s/hostname", dir);
    snprintf(buf, sizeof(buf), "%s\n", hostname);
    bool ok = rts_write_file(path, buf, strlen(buf));
    free(path);
    char *host = rts_read_file("/etc/resolv.conf", 16384);
    rts_resolv_conf(host, buf, sizeof(buf));
    free(host);
    path = ts_asprintf("%s/resolv.conf", dir);
    ok = ok && rts_write_file(path, buf, strlen(buf));
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
    const char *cluster_conf; /* NULL: no cluster network */
    bool ok;
    char *result, *cluster_result;
    char ip[64];
    ts_err err;
} cni_job;

/* The kernel's network, then its cluster session's (cni_cluster.h). */
static void *_cni_job_run(void *arg)
{
    cni_job *j = arg;
    j->ok = cni_add(&j->rt->cni, j->id, j->session, j->netns, j->ports, j->n_ports, &j->result,
                    j->ip, sizeof(j->ip), &j->err);
    if (j->ok && j->cluster_conf) {
        j->ok = cni_cluster_add(&j->rt->cni, j->id, j->netns, j->cluster_conf, &j->cluster_result,
                                &j->err);
        if (!j->ok) ts_err_prefix(&j->err, "cluster network");
    }
    return NULL;
}

/* ---- the start ---------------------------------------------------------------------- */

/* One start under way. */
typedef struct start {
    runtime *rt;
    const kernel_spec *spec;
    const char *id;
    const char *hostname;
    char *kdir;
    char *userns_path;
    kstate st;
    char rel[128], netns[256];
    char rootfs[600], etc[600], home[600];
    char config[600]; /* mounted at /home/config (the cluster's SSH keypair); "": none */
    bool kept_disk;   /* the disk (and /home/work) of the previous generation */
    cni_job job;
    bool job_started;
    char **stage_paths; /* vfolders staged for runc (userns), or NULL */
    int64_t t0, t_net, t_fs, t_run, t_created;
} start;

static bool _spec_valid(const kernel_spec *spec, ts_err *err)
{
    const char *id = spec->kernel_id;
    if (!rts_check_id(id, err)) return false;
    if (!spec->image) {
        ts_err_set(err, "kernel %s: no image", id);
        return false;
    }
    if (spec->n_service_ports < 0 || spec->n_service_ports > RTS_MAX_PORTS) {
        ts_err_set(err, "kernel %s: at most %d service ports", id, RTS_MAX_PORTS);
        return false;
    }
    for (int i = 0; i < spec->n_service_ports; i++) {
        if (spec->service_ports[i] <= 0 || spec->service_ports[i] > 65535) {
            ts_err_set(err, "kernel %s: service port %d is not a port", id, spec->service_ports[i]);
            return false;
        }
    }
    return true;
}

static bool _save(start *s, ts_err *err)
{
    if (rts_state_save(s->rt, s->id, s->spec, &s->st)) return true;
    ts_err_set(err, "write state.json: %s", strerror(errno));
    return false;
}

/* The kernel dir's subdirs, the host ports, and state.json: recorded before
 * anything outside the kernel dir exists, so that a crash from here on
 * leaves something destroy can find. */
static bool _prepare(start *s, ts_err *err)
{
    static const char *const sub[] = {"bundle", "bundle/rootfs", "logs", "empty"};
    char path[1024];
    for (size_t i = 0; i < TS_ARRAY_LEN(sub); i++) {
        snprintf(path, sizeof(path), "%s/%s", s->kdir, sub[i]);
        if (mkdir(path, 0750) < 0) {
            ts_err_set(err, "mkdir %s: %s", path, strerror(errno));
            return false;
        }
    }
    int n = s->spec->n_service_ports;
    int hp[16];
    if (n > 0) {
        if (!ports_alloc(s->rt->ports, s->id, n, hp, err)) return false;
        for (int i = 0; i < n; i++) {
            s->st.ports[i].container_port = s->spec->service_ports[i];
            s->st.ports[i].host_port = hp[i];
        }
        s->st.n_ports = n;
    }
    /* the cluster network's configuration before it exists: a failed start's
     * teardown removes what its ADD made */
    if (s->spec->cluster &&
        !cni_cluster_conf(&s->rt->cni, s->spec->cluster, &s->st.cluster_conf, err))
        return false;
    return _save(s, err);
}

/* The netns (in the kernel's user namespace, when there is one), then CNI
 * ADD in a thread of its own. */
static bool _network_begin(start *s, ts_err *err)
{
    const kernel_spec *spec = s->spec;
    bool ok = s->rt->userns ? userns_ns_create(s->rt->userns, s->userns_path, s->netns, err)
                            : cni_netns_create(s->netns, err);
    if (!ok) return false;
    s->job = (cni_job){.rt = s->rt,
                       .id = s->id,
                       /* only a session of several kernels has peers to reach */
                       .session = spec->cluster_size > 1 ? spec->session_id : NULL,
                       .netns = s->netns,
                       .ports = s->st.ports,
                       .n_ports = s->st.n_ports,
                       .cluster_conf = s->st.cluster_conf};
    int rc = pthread_create(&s->job.thread, NULL, _cni_job_run, &s->job);
    if (rc != 0) {
        ts_err_set(err, "pthread_create: %s", strerror(rc));
        return false;
    }
    s->job_started = true;
    return true;
}

/* A cluster session's SSH keypair where Backend.AI's kernels find it,
 * /home/config/ssh/id_cluster and id_cluster.pub (read-only, the user's),
 * from <disk>/config. */
static bool _write_config(start *s, uid_t uid, gid_t gid, ts_err *err)
{
    const kernel_cluster *cl = s->spec->cluster;
    if (!cl || !cl->ssh_private_key || !*cl->ssh_private_key) return true;
    runtime *rt = s->rt;
    char dir[700], ssh[700], path[720];
    snprintf(dir, sizeof(dir), "%s/" RDISK_DIR "/config", s->kdir);
    snprintf(ssh, sizeof(ssh), "%s/ssh", dir);
    if ((mkdir(dir, 0755) != 0 && errno != EEXIST) || (mkdir(ssh, 0700) != 0 && errno != EEXIST)) {
        ts_err_set(err, "mkdir %s: %s", ssh, strerror(errno));
        return false;
    }
    if (!userns_own(rt->userns, dir, 0, 0, 0755, err) ||
        !userns_own(rt->userns, ssh, uid, gid, 0700, err))
        return false;
    const char *keys[][2] = {{"id_cluster", cl->ssh_private_key},
                             {"id_cluster.pub", cl->ssh_public_key ? cl->ssh_public_key : ""}};
    for (size_t i = 0; i < TS_ARRAY_LEN(keys); i++) {
        snprintf(path, sizeof(path), "%s/%s", ssh, keys[i][0]);
        if (!rts_write_file(path, keys[i][1], strlen(keys[i][1]))) {
            ts_err_set(err, "write %s: %s", path, strerror(errno));
            return false;
        }
        if (!userns_own(rt->userns, path, uid, gid, i == 0 ? 0600 : 0644, err)) return false;
    }
    ts_strlcpy(s->config, dir, sizeof(s->config));
    return true;
}

/* The kernel's disk (runtime_disk.h: kept from the previous generation
 * after a restart; with a size, made and mounted while CNI runs), the way
 * to it shared with the containers' root, the rootfs, /etc files,
 * /home/work (it belongs to the user the kernel runs as), staged vfolders
 * and config.json. */
static bool _files(start *s, ts_err *err)
{
    runtime *rt = s->rt;
    const kernel_spec *spec = s->spec;
    if (!rdisk_prepare(rt, s->id, s->kdir, spec->disk_bytes, &s->kept_disk, err) ||
        !_share_kernel_dirs(rt, s->kdir, err))
        return false;
    char bundle[600];
    snprintf(bundle, sizeof(bundle), "%s/bundle", s->kdir);
    overlay_spec ov = {.target = s->rootfs,
                       .base = s->kdir,
                       .layers = spec->image->layer_dirs,
                       .n_layers = spec->image->n_layers,
                       .upper = RDISK_DIR "/upper",
                       .work = RDISK_DIR "/work",
                       .empty = "empty"};
    if (!overlay_mount(&ov, err)) return false;
    if (!_write_etc(s->etc, s->hostname, spec->cluster, err) || !_own_etc(rt, s->etc, err))
        return false;
    uid_t uid = 0;
    gid_t gid = 0;
    if (!bundle_process_user(s->rootfs, spec->image, rt->userns, &uid, &gid, err)) return false;
    if (!userns_own(rt->userns, s->home, uid, gid, 0755, err)) return false;
    if (!_write_config(s, uid, gid, err)) return false;
    int seeded = home_fs_seed(s->home, spec->home_files, spec->n_home_files);
    if (spec->n_home_files) TLOG_INFO("home files", "written=%d of=%d", seeded, spec->n_home_files);
    kernel_spec staged;
    bind_mount *staged_mounts = NULL;
    bool ok = _stage_mounts(rt, s->kdir, spec, &staged, &staged_mounts, &s->stage_paths, err);
    /* on a sized disk, tessera-term is bound from a copy there: the
     * container's mountinfo then shows no host path for it either */
    char *term = NULL;
    if (ok && spec->term_path && rdisk_sized(s->kdir)) {
        term = rdisk_stage_file(s->kdir, spec->term_path, "tessera-term", err);
        ok = term != NULL;
        staged.term_path = term;
    }
    if (ok) {
        char cgp[160];
        snprintf(cgp, sizeof(cgp), "/%s", s->rel);
        bundle_params bp = {.spec = &staged,
                            .rootfs = s->rootfs,
                            .netns_path = s->netns,
                            .cgroups_path = cgp,
                            .home_dir = s->home,
                            .etc_dir = s->etc,
                            .config_dir = s->config[0] ? s->config : NULL,
                            .userns = rt->userns,
                            .userns_path = s->userns_path};
        ok = bundle_write(bundle, &bp, err);
    }
    free(term);
    free(staged_mounts);
    return ok;
}

/* Wait for CNI ADD; record what the kernel now holds, before anything else
 * can fail; the address into /etc/hosts. */
static bool _network_end(start *s, bool ok, ts_err *err)
{
    if (s->job_started) {
        pthread_join(s->job.thread, NULL);
        s->st.cni_result = s->job.result;
        s->st.cluster_result = s->job.cluster_result;
        ts_strlcpy(s->st.ip, s->job.ip, sizeof(s->st.ip));
        if (ok && !s->job.ok) {
            *err = s->job.err;
            ok = false;
        }
    }
    if (!_save(s, ok ? err : &(ts_err){{0}})) ok = false;
    return ok && _write_hosts(s->etc, s->hostname, s->st.ip, s->spec->cluster, err);
}

/* The supervisor runs the container; the host's copies of staged mounts go
 * (the container holds its own). */
static bool _run(start *s, bool ok, ts_err *err)
{
    if (ok) {
        ok = sup_spawn(s->rt, s->id, &s->st.init_pid, &s->st.sup_pid, err);
        if (s->st.sup_pid > 0) s->st.sup_start = rts_proc_starttime(s->st.sup_pid);
    }
    if (s->stage_paths) {
        char *binds = ts_asprintf("%s/binds", s->kdir);
        if (!userns_unstage(binds)) TLOG_WARN("staged vfolder mounts left until destroy", "");
        free(binds);
        _free_paths(s->stage_paths, s->spec->n_mounts);
        s->stage_paths = NULL;
    }
    if (!ok) return false;
    strcpy(s->st.phase, "running");
    return _save(s, err);
}

static bool _start(start *s, ts_err *err)
{
    bool ok = _prepare(s, err);
    s->t_net = ts_now_mono_us();
    ok = ok && _network_begin(s, err);
    s->t_fs = ts_now_mono_us();
    ok = ok && _files(s, err);
    s->t_run = ts_now_mono_us();
    ok = _network_end(s, ok, err);
    s->t_created = ts_now_mono_us();
    return _run(s, ok, err);
}

bool runtime_start(runtime *rt, const kernel_spec *spec, kernel_status *out, ts_err *err)
{
    memset(out, 0, sizeof(*out));
    if (!_spec_valid(spec, err)) return false;
    const char *id = spec->kernel_id;
    start s = {.rt = rt, .spec = spec, .id = id};
    s.kdir = rts_kdir(rt, id);
    if (mkdir(s.kdir, 0750) < 0) {
        if (errno == EEXIST)
            ts_err_set(err, "kernel %s already exists on this agent", id);
        else
            ts_err_set(err, "mkdir %s: %s", s.kdir, strerror(errno));
        free(s.kdir);
        return false;
    }
    s.t0 = ts_now_mono_us();
    strcpy(s.st.phase, "creating");
    s.st.batch = spec->batch;
    s.st.keepalive = bundle_uses_keepalive(spec);
    ts_strlcpy(s.st.portmap, rt->cni_portmap, sizeof(s.st.portmap));
    ts_strlcpy(s.st.bridge, rt->cni_bridge, sizeof(s.st.bridge));
    rts_cg_rel(id, s.rel, sizeof(s.rel));
    cni_netns_path(id, s.netns, sizeof(s.netns));
    s.userns_path = rts_kpath(rt, id, "userns");
    s.hostname = spec->hostname && *spec->hostname ? spec->hostname : id;
    snprintf(s.rootfs, sizeof(s.rootfs), "%s/bundle/rootfs", s.kdir);
    snprintf(s.etc, sizeof(s.etc), "%s/" RDISK_DIR "/etc", s.kdir);
    snprintf(s.home, sizeof(s.home), "%s/" RDISK_DIR "/home", s.kdir);
    bool ok = _start(&s, err);
    int64_t t_end = ts_now_mono_us();
    free(s.userns_path);
    rts_state_free(&s.st);
    free(s.kdir);
    if (!ok) {
        ts_err_prefix(err, "start kernel %s", id);
        TLOG_WARN("kernel start failed", "error=\"%s\"", err->msg);
        ts_err e2;
        if (!runtime_teardown(rt, id, 0, &e2))
            TLOG_WARN("cleanup after a failed start incomplete", "error=\"%s\"", e2.msg);
        return false;
    }
    TLOG_DEBUG("kernel started",
               "kept_disk=%s ip=%s prepare_us=%lld netns_us=%lld fs_us=%lld net_wait_us=%lld "
               "run_us=%lld total_us=%lld",
               s.kept_disk ? "true" : "false", s.st.ip, (long long)(s.t_net - s.t0),
               (long long)(s.t_fs - s.t_net), (long long)(s.t_run - s.t_fs),
               (long long)(s.t_created - s.t_run), (long long)(t_end - s.t_created),
               (long long)(t_end - s.t0));
    return runtime_status(rt, id, out, err);
}
