/* kernel_create.c: the create task of a kernel (kernel_create.h). */
#include "services/agent/kernel_create.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#include "libcommon/cluster_names.h"
#include "libcommon/log.h"
#include "services/agent/image_pull.h"
#include "services/agent/runtime_destroy.h"
#include "services/agent/runtime_start.h"
#include "services/agent/term_app.h"

#define PROGRESS_INTERVAL_MS 500
#define BOOTSTRAP_TIMEOUT_MS 60000

/* Creation failed: nothing is left (runtime_start cleans up after itself). */
static void _fail(kernels *ks, krec *k, const char *why)
{
    TLOG_WARN("kernel creation failed", "reason=\"%s\"", why);
    ktab_terminated(ks, k, -1, why);
}

/* ---- the image ------------------------------------------------------------------ */

typedef struct pull_progress {
    kernels *ks;
    krec *k;
    const char *image;
    pthread_mutex_t mu;
    int64_t last_ms;
    int last_layers;
} pull_progress;

static void _on_progress(const image_progress *pr, void *ctx)
{
    pull_progress *p = ctx;
    pthread_mutex_lock(&p->mu);
    int64_t now = ts_now_mono_ms();
    /* at most every PROGRESS_INTERVAL_MS, and always when a layer is ready */
    bool send = now - p->last_ms >= PROGRESS_INTERVAL_MS || pr->layers_done != p->last_layers;
    if (send) {
        p->last_ms = now;
        p->last_layers = pr->layers_done;
    }
    pthread_mutex_unlock(&p->mu);
    if (send) {
        /* a pull's own thread may call: its lines are the kernel's */
        tlog_ctx_kernel(p->k->id);
        tlog_ctx_session(p->k->session_id);
        kev_ctx c = ktab_kev(p->ks, p->k);
        kev_pulling(&c, p->image, pr);
    }
}

static bool _pull_slot(kernels *ks, krec *k)
{
    pthread_mutex_lock(&ks->mu);
    while (ks->active_pulls >= ks->o.max_parallel_pulls && !ks->stop && !atomic_load(&k->cancel))
        pthread_cond_wait(&ks->cv, &ks->mu);
    bool got = !ks->stop && !atomic_load(&k->cancel);
    if (got) ks->active_pulls++;
    pthread_mutex_unlock(&ks->mu);
    return got;
}

static void _pull_slot_release(kernels *ks)
{
    pthread_mutex_lock(&ks->mu);
    ks->active_pulls--;
    pthread_cond_broadcast(&ks->cv);
    pthread_mutex_unlock(&ks->mu);
}

/* The image of cmd. An image pinned by digest and already in the cache needs
 * no network and no pull slot, and reports no KernelPulling: the session
 * goes straight from PREPARING to creating (two registry transitions fewer on
 * the way to RUNNING). A tag is always asked for, as it may have moved.
 * NULL when the pull failed (err set) or the creation was cancelled while it
 * waited for a pull slot (err empty). */
static image_info *_image(kernels *ks, krec *k, const Tessera__V1__CreateKernel *cmd, ts_err *err)
{
    char *ref = (cmd->image_digest && *cmd->image_digest && !strchr(cmd->image, '@'))
                    ? ts_asprintf("%s@%s", cmd->image, cmd->image_digest)
                    : ts_strdup(cmd->image);
    image_store *store = ks->o.store_for(ref, cmd->image_plain_http, ks->o.store_ctx);
    image_info *info = NULL;
    if (store && strchr(ref, '@')) {
        ts_err lerr = {{0}};
        info = image_lookup(store, ref, &lerr);
    }
    if (!info) {
        kev_ctx c = ktab_kev(ks, k);
        image_progress none = {0};
        kev_pulling(&c, cmd->image, &none);
        if (!_pull_slot(ks, k)) {
            free(ref);
            return NULL;
        }
        pull_progress pp = {
            .ks = ks, .k = k, .image = cmd->image, .last_ms = ts_now_mono_ms(), .last_layers = -1};
        pthread_mutex_init(&pp.mu, NULL);
        info = store ? image_pull(store, ref, _on_progress, &pp, err) : NULL;
        if (!store) ts_err_set(err, "no image store for '%s'", ref);
        _pull_slot_release(ks);
        pthread_mutex_destroy(&pp.mu);
        if (!info) ts_err_prefix(err, "pull failed");
    }
    free(ref);
    return info;
}

/* The labels set for the image in the registry's config store win over the
 * image's own (service ports, runtime path, kernelspec ...). */
static void _label_overrides(image_info *info, const Tessera__V1__CreateKernel *cmd)
{
    if (cmd->n_image_label_overrides == 0) return;
    json_t *labels = info->labels_json ? json_loads(info->labels_json, 0, NULL) : NULL;
    if (!json_is_object(labels)) {
        json_decref(labels);
        labels = json_object();
    }
    for (size_t i = 0; i < cmd->n_image_label_overrides; i++)
        json_object_set_new(labels, cmd->image_label_overrides[i]->key,
                            json_string(cmd->image_label_overrides[i]->value));
    free(info->labels_json);
    info->labels_json = json_dumps(labels, JSON_COMPACT | JSON_SORT_KEYS);
    json_decref(labels);
}

/* ---- what the container gets ------------------------------------------------------ */

/* What runtime_start gets besides the image, built from the command. */
typedef struct create_plan {
    slots_t slots;
    kernel_service_port ports[KERNEL_MAX_PORTS];
    int n_ports;
    char **env; /* NULL-terminated */
    int n_env;
    bind_mount *mounts;
    char **mount_paths;
    int n_mounts;
    kernel_gpu kgpu;
    const kernel_gpu *gpu; /* &kgpu, or NULL: no GPUs */
    bool gpu_tried;        /* a cuda-shim config dir may exist */
} create_plan;

static void _plan_free(create_plan *p)
{
    for (int i = 0; i < p->n_env; i++)
        free(p->env[i]);
    free(p->env);
    for (int i = 0; i < p->n_mounts; i++)
        free(p->mount_paths[i]);
    free(p->mount_paths);
    free(p->mounts);
}

static void _env_add(create_plan *p, const char *fmt, ...) TS_PRINTF(2, 3);
static void _env_add(create_plan *p, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *s = NULL;
    if (vasprintf(&s, fmt, ap) < 0) ts_panic("out of memory");
    va_end(ap);
    p->env = ts_realloc(p->env, sizeof(char *) * (size_t)(p->n_env + 2));
    p->env[p->n_env++] = s;
    p->env[p->n_env] = NULL;
}

/* The per-device GPU allocation: env for the container, the cuda-shim config
 * (mem_limit per device as the container numbers them, compute share, the
 * devices' UUIDs in that order) and what gpu_mounts.c mounts (p->gpu set;
 * NULL for a kernel without GPUs). */
static bool _gpu_setup(kernels *ks, const krec *k, const Tessera__V1__CreateKernel *cmd,
                       create_plan *p, ts_err *err)
{
    p->gpu = NULL;
    if (cmd->n_devices == 0) return true;
    if (cmd->n_devices > NODE_MAX_DEVICES) {
        ts_err_set(err, "%zu GPUs allocated: at most %d", cmd->n_devices, NODE_MAX_DEVICES);
        return false;
    }
    const char *dev_ids[NODE_MAX_DEVICES];
    char ids[256] = "", shares[512] = "", limits[512] = "";
    gpu_shim_conf conf = {.kernel_id = k->id, .mem_limit = limits};
    double share = 1.0;
    int used = 0;
    for (size_t i = 0; i < cmd->n_devices; i++) {
        const Tessera__V1__DeviceAllocation *d = cmd->devices[i];
        size_t l = strlen(ids);
        snprintf(ids + l, sizeof(ids) - l, "%s%s", used ? "," : "", d->device_id);
        l = strlen(shares);
        snprintf(shares + l, sizeof(shares) - l, "%s%s:%s=%s", used ? "," : "", d->device_id,
                 d->slot_name, d->amount);
        dev_ids[used] = d->device_id;
        conf.uuids[conf.n_uuids++] = gpu_host_uuid(ks->o.gpu, d->device_id);
        double frac = strcmp(d->slot_name, "cuda.shares") == 0 ? atof(d->amount) : 1.0;
        if (frac > 1.0) frac = 1.0;
        if (frac < share) share = frac;
        int64_t mem = ks->o.device_memory ? ks->o.device_memory(d->device_id, ks->o.device_ctx) : 0;
        if (mem > 0) {
            l = strlen(limits);
            snprintf(limits + l, sizeof(limits) - l, "%s%d:%lld", used ? "," : "", used,
                     (long long)((double)mem * frac));
        }
        used++;
    }
    _env_add(p, "TESSERA_CUDA_DEVICES=%s", ids);
    _env_add(p, "TESSERA_CUDA_ALLOCATION=%s", shares);
    _env_add(p, "CUDA_VISIBLE_DEVICES=%s", ids);
    if (!ks->o.gpu_conf_dir) return true;
    char *dir = ts_asprintf("%s/%s", ks->o.gpu_conf_dir, k->id);
    mkdir(ks->o.gpu_conf_dir, 0755);
    mkdir(dir, 0755);
    char *path = ts_asprintf("%s/cuda-shim.conf", dir);
    conf.compute_share = share;
    bool ok = gpu_shim_conf_write(path, &conf, err);
    if (ok && ks->o.gpu) {
        ok = gpu_kernel_prepare(ks->o.gpu, dir, dev_ids, used, &p->kgpu, err);
        if (ok) p->gpu = &p->kgpu;
    }
    free(path);
    free(dir);
    return ok;
}

/* vfolder mounts of a CreateKernel: an absolute host path, and a mount path
 * under /home/work/ without empty, "." or ".." segments (the registry and
 * tessera-vfolder check this too; a container must not get a host directory
 * over its /etc). An empty mount path means /home/work/<name>. */
static bool _mounts_valid(const Tessera__V1__CreateKernel *cmd, ts_err *err)
{
    for (size_t i = 0; i < cmd->n_mounts; i++) {
        const Tessera__V1__VfolderMount *m = cmd->mounts[i];
        bool mapped = m->mount_path && *m->mount_path;
        bool under = mapped && strncmp(m->mount_path, "/home/work/", 11) == 0;
        const char *rel = under ? m->mount_path + 11 : mapped ? NULL : m->name;
        bool ok = m->host_path && m->host_path[0] == '/' && rel && *rel;
        for (const char *seg = rel; ok && seg;) {
            const char *end = strchr(seg, '/');
            size_t n = end ? (size_t)(end - seg) : strlen(seg);
            if (n == 0 || (n == 1 && seg[0] == '.') || (n == 2 && seg[0] == '.' && seg[1] == '.'))
                ok = false;
            seg = end ? end + 1 : NULL;
        }
        if (!ok) {
            ts_err_set(err, "vfolder mount %s -> %s: the mount path must be below /home/work/",
                       m->host_path ? m->host_path : "(none)",
                       mapped ? m->mount_path : (m->name ? m->name : "(none)"));
            return false;
        }
    }
    return true;
}

static void _plan_mounts(create_plan *p, const Tessera__V1__CreateKernel *cmd)
{
    p->mounts = ts_calloc(cmd->n_mounts + 1, sizeof(*p->mounts));
    p->mount_paths = ts_calloc(cmd->n_mounts + 1, sizeof(char *));
    for (size_t i = 0; i < cmd->n_mounts; i++) {
        const Tessera__V1__VfolderMount *m = cmd->mounts[i];
        p->mount_paths[i] = m->mount_path && *m->mount_path ? ts_strdup(m->mount_path)
                                                            : ts_asprintf("/home/work/%s", m->name);
        p->mounts[i] = (bind_mount){.host_path = m->host_path,
                                    .container_path = p->mount_paths[i],
                                    .read_only = m->permission && strcmp(m->permission, "ro") == 0};
        p->n_mounts++;
    }
}

static const char *_role(const Tessera__V1__CreateKernel *cmd)
{
    return cmd->cluster_role && *cmd->cluster_role ? cmd->cluster_role : "main";
}

static int _cluster_size(const Tessera__V1__CreateKernel *cmd)
{
    return cmd->cluster_size > 0 ? cmd->cluster_size : 1;
}

/* Backend.AI's cluster variables (the registry sends them too, and its
 * environ wins): the kernel's name and role, its one-based index among the
 * kernels of its role, its session-wide rank, every kernel's name. */
static void _plan_env(kernels *ks, create_plan *p, const Tessera__V1__CreateKernel *cmd)
{
    const char *role = _role(cmd);
    int size = _cluster_size(cmd);
    char host[CLUSTER_NAME_MAX];
    char *hosts = cluster_hosts(size), *replicas = cluster_replicas(size);
    _env_add(p, "BACKENDAI_SESSION_ID=%s", cmd->session_id);
    _env_add(p, "BACKENDAI_KERNEL_ID=%s", cmd->kernel_id);
    _env_add(p, "BACKENDAI_ACCESS_KEY=%s", cmd->access_key);
    _env_add(p, "BACKENDAI_KERNEL_IMAGE=%s", cmd->image);
    _env_add(p, "BACKENDAI_CLUSTER_ROLE=%s", role);
    _env_add(p, "BACKENDAI_CLUSTER_IDX=%d", cluster_role_index(role, cmd->cluster_idx));
    _env_add(p, "BACKENDAI_CLUSTER_LOCAL_RANK=%d", cmd->cluster_idx);
    _env_add(p, "BACKENDAI_CLUSTER_SIZE=%d", size);
    _env_add(p, "BACKENDAI_CLUSTER_HOST=%s",
             cluster_hostname(role, cmd->cluster_idx, host, sizeof(host)));
    _env_add(p, "BACKENDAI_CLUSTER_HOSTS=%s", hosts);
    _env_add(p, "BACKENDAI_CLUSTER_REPLICAS=%s", replicas);
    free(hosts);
    free(replicas);
    _env_add(p, "TESSERA_AGENT_ID=%s", ks->o.agent_id);
    _env_add(p, "TESSERA_CLUSTER_ROLE=%s", role);
    _env_add(p, "TESSERA_CLUSTER_IDX=%d", cmd->cluster_idx);
    _env_add(p, "TESSERA_CLUSTER_SIZE=%d", size);
}

/* Everything but the image: limits, mounts, ports, environment, GPUs. The
 * record gets the image's runtime path. */
static bool _plan(kernels *ks, krec *k, const Tessera__V1__CreateKernel *cmd,
                  const image_info *info, create_plan *p, ts_err *err)
{
    slots_clear(&p->slots);
    for (size_t i = 0; i < cmd->n_slots; i++) {
        if (!slots_set(&p->slots, cmd->slots[i]->name, cmd->slots[i]->amount, err)) {
            ts_err_prefix(err, "invalid slots");
            return false;
        }
    }
    if (!_mounts_valid(cmd, err)) return false;
    char *label = image_label(info->labels_json, "ai.backend.service-ports");
    int n = 0;
    bool ok =
        service_ports_parse(label, cmd->preopen_ports, cmd->n_preopen_ports, p->ports, &n, err) &&
        service_ports_start_commands(info->labels_json, p->ports, n, err);
    free(label);
    if (!ok) return false;
    char *rpath = image_label(info->labels_json, "ai.backend.runtime-path");
    p->n_ports = ks->o.term_path ? term_app_add_port(p->ports, n, rpath) : n;
    pthread_mutex_lock(&ks->mu);
    ts_strlcpy(k->runtime_path, rpath ? rpath : "", sizeof(k->runtime_path));
    pthread_mutex_unlock(&ks->mu);
    free(rpath);
    _plan_env(ks, p, cmd);
    p->gpu_tried = true;
    if (!_gpu_setup(ks, k, cmd, p, err)) return false;
    for (size_t i = 0; i < cmd->n_environ; i++)
        _env_add(p, "%s=%s", cmd->environ[i]->key, cmd->environ[i]->value);
    _plan_mounts(p, cmd);
    return true;
}

/* A Backend.AI kernel image's entrypoint/cmd is for `docker run` (often a
 * bare shell that ends at once without a terminal): an interactive kernel
 * of such an image runs the runtime's keep-alive, as Backend.AI runs its
 * kernel runner instead. Other images run what they declare. */
static void _interactive_entry(image_info *info, bool batch)
{
    char *kspec = image_label(info->labels_json, "ai.backend.kernelspec");
    if (kspec && !batch) {
        char **vs[] = {info->entrypoint, info->cmd};
        for (size_t i = 0; i < TS_ARRAY_LEN(vs); i++) {
            for (char **p = vs[i]; p && *p; p++)
                free(*p);
            free(vs[i]);
        }
        info->entrypoint = info->cmd = NULL;
    }
    free(kspec);
}

/* ---- the task ----------------------------------------------------------------------- */

#define KERNEL_MAX_PEERS 64

/* The kernel's cluster (CreateKernel.cluster) as the runtime takes it: the
 * peers, the other nodes that run some of them, this node's address among
 * theirs (cni_cluster.h). Nothing without one. */
static bool _cluster(kernels *ks, krec *k, const Tessera__V1__CreateKernel *cmd, kernel_cluster *kc,
                     kernel_peer *peers, const char **remotes, ts_err *err)
{
    memset(kc, 0, sizeof(*kc));
    const Tessera__V1__ClusterInfo *ci = cmd->cluster;
    if (!ci) return true;
    if (ci->n_peers < 2 || ci->n_peers > KERNEL_MAX_PEERS) {
        ts_err_set(err, "cluster: %zu kernels (2 to %d)", ci->n_peers, KERNEL_MAX_PEERS);
        return false;
    }
    const char *self_addr = NULL;
    for (size_t i = 0; i < ci->n_peers; i++) {
        const Tessera__V1__ClusterInfo__Peer *pe = ci->peers[i];
        peers[i] = (kernel_peer){.hostname = pe->hostname, .address = pe->address};
        if (strcasecmp(pe->kernel_id, k->id) == 0) {
            kc->address = pe->address;
            kc->local = pe->node_addr;
        }
        if (strcmp(pe->agent_id, ks->o.agent_id) == 0) {
            if (!self_addr || !*self_addr) self_addr = pe->node_addr;
            continue;
        }
        bool seen = !pe->node_addr[0];
        for (int j = 0; j < kc->n_remotes && !seen; j++)
            seen = strcmp(remotes[j], pe->node_addr) == 0;
        if (!pe->node_addr[0]) {
            ts_err_set(err, "cluster: the node of kernel %s (agent %s) is unknown", pe->hostname,
                       pe->agent_id);
            return false;
        }
        if (!seen) remotes[kc->n_remotes++] = pe->node_addr;
    }
    if (!kc->address) {
        ts_err_set(err, "cluster: the kernel is not among its session's kernels");
        return false;
    }
    if (kc->n_remotes > 0 && (!kc->local || !*kc->local)) kc->local = self_addr;
    if (kc->n_remotes > 0 && (!kc->local || !*kc->local)) {
        ts_err_set(err, "cluster: this node's address (the agent's announced addr) is unknown");
        return false;
    }
    kc->vni = ci->vni;
    kc->peers = peers;
    kc->n_peers = (int)ci->n_peers;
    kc->remotes = remotes;
    kc->ssh_private_key = ci->ssh_private_key;
    kc->ssh_public_key = ci->ssh_public_key;
    TLOG_INFO("cluster kernel", "host=%s address=%s vni=%u remotes=%d", ci->hostname, kc->address,
              kc->vni, kc->n_remotes);
    return true;
}

static bool _start(kernels *ks, krec *k, const Tessera__V1__CreateKernel *cmd, image_info *info,
                   create_plan *p, kernel_status *st, ts_err *err)
{
    bool batch = cmd->session_type == TESSERA__V1__SESSION_TYPE__SESSION_TYPE_BATCH;
    _interactive_entry(info, batch);
    int cports[KERNEL_MAX_PORTS];
    for (int i = 0; i < p->n_ports; i++)
        cports[i] = p->ports[i].container_port;
    const char *argv[] = {"/bin/sh", "-c", cmd->startup_command, NULL};
    char hostname[CLUSTER_NAME_MAX];
    cluster_hostname(_role(cmd), cmd->cluster_idx, hostname, sizeof(hostname));
    kernel_cluster kc;
    kernel_peer peers[KERNEL_MAX_PEERS];
    const char *remotes[KERNEL_MAX_PEERS];
    if (!_cluster(ks, k, cmd, &kc, peers, remotes, err)) return false;
    kernel_spec spec = {
        .kernel_id = k->id,
        .session_id = k->session_id,
        .cluster_size = _cluster_size(cmd),
        .cluster = cmd->cluster ? &kc : NULL,
        .hostname = hostname,
        .image = info,
        .cpu_cores = slots_get(&p->slots, SLOT_CPU) / 1000.0,
        .mem_bytes = slots_get(&p->slots, SLOT_MEM),
        .shm_bytes = ks->o.shm_bytes,
        .disk_bytes = cmd->rootfs_size > 0 ? cmd->rootfs_size : ks->o.rootfs_size,
        .env = (const char *const *)p->env,
        .argv = cmd->startup_command && *cmd->startup_command ? argv : NULL,
        .mounts = p->mounts,
        .n_mounts = p->n_mounts,
        .service_ports = cports,
        .n_service_ports = p->n_ports,
        .batch = batch,
        .gpu = p->gpu,
        .term_path = ks->o.term_path,
    };
    /* the owner's dotfiles and SSH public key (CreateKernel.home_files) */
    size_t nf = cmd->n_home_files;
    home_file *files = ts_calloc(nf + 1, sizeof(*files));
    for (size_t i = 0; i < nf; i++) {
        const Tessera__V1__HomeFile *f = cmd->home_files[i];
        files[i] = (home_file){f->path, f->mode, f->data.data, f->data.len};
    }
    spec.home_files = files;
    spec.n_home_files = (int)nf;
    bool ok = runtime_start(ks->o.rt, &spec, st, err);
    free(files);
    return ok;
}

static void _bootstrap(kernels *ks, krec *k, const Tessera__V1__CreateKernel *cmd)
{
    bool batch = cmd->session_type == TESSERA__V1__SESSION_TYPE__SESSION_TYPE_BATCH;
    if (!cmd->bootstrap_script || !*cmd->bootstrap_script || batch) return;
    const char *bargv[] = {"/bin/sh", "-c", cmd->bootstrap_script, NULL};
    exec_result r;
    ts_err err = {{0}};
    if (!runtime_exec(ks->o.rt, k->id, bargv, NULL, BOOTSTRAP_TIMEOUT_MS, 65536, &r, &err)) {
        TLOG_WARN("bootstrap script failed", "error=\"%s\"", err.msg);
        return;
    }
    if (r.exit_code != 0) TLOG_WARN("bootstrap script failed", "exit_code=%d", r.exit_code);
    exec_result_free(&r);
}

/* A cluster kernel's sshd on Backend.AI's port 2200, where the image has
 * one (OpenSSH's /usr/sbin/sshd, else dropbear): a host key of its own in
 * /tmp/.tessera-sshd, key logins only (the session's keypair is in every
 * kernel's authorized_keys, docs/sessions.md "Cluster sessions"),
 * detached. Nothing when the image has none; a failure is logged. */
static const char SSHD_SCRIPT[] =
    "d=/tmp/.tessera-sshd\n"
    "if [ -x /usr/sbin/sshd ]; then\n"
    "  mkdir -p $d && chmod 700 $d || exit 3\n"
    "  [ -f $d/key ] || ssh-keygen -q -t ed25519 -N '' -f $d/key || exit 4\n"
    "  exec /usr/sbin/sshd -p 2200 -h $d/key -o PidFile=$d/pid -o PasswordAuthentication=no "
    "-o KbdInteractiveAuthentication=no -o StrictModes=no -o UsePAM=no </dev/null >$d/log 2>&1\n"
    "fi\n"
    "for b in /usr/sbin/dropbear /usr/bin/dropbear /opt/kernel/dropbear; do\n"
    "  [ -x $b ] || continue\n"
    "  mkdir -p $d && chmod 700 $d || exit 3\n"
    "  k=$(dirname $b)/dropbearkey; [ -x $k ] || k=dropbearkey\n"
    "  [ -f $d/key ] || $k -t ed25519 -f $d/key >/dev/null 2>&1 || exit 4\n"
    "  exec $b -r $d/key -p 2200 -s -P $d/pid </dev/null >$d/log 2>&1\n"
    "done\n"
    "exit 0\n";

static void _sshd(kernels *ks, krec *k, const Tessera__V1__CreateKernel *cmd)
{
    if (!cmd->cluster || cmd->session_type == TESSERA__V1__SESSION_TYPE__SESSION_TYPE_BATCH) return;
    const char *argv[] = {"/bin/sh", "-c", SSHD_SCRIPT, NULL};
    exec_result r;
    ts_err err = {{0}};
    if (!runtime_exec(ks->o.rt, k->id, argv, NULL, BOOTSTRAP_TIMEOUT_MS, 4096, &r, &err)) {
        TLOG_DEBUG("no cluster sshd", "error=\"%s\"", err.msg);
        return;
    }
    if (r.exit_code != 0) TLOG_WARN("cluster sshd did not start", "exit_code=%d", r.exit_code);
    exec_result_free(&r);
}

/* The kernel runs: its host ports recorded, "running" saved, KernelStarted. */
static void _running(kernels *ks, krec *k, create_plan *p, const kernel_status *st)
{
    for (int i = 0; i < p->n_ports; i++)
        for (int j = 0; j < st->n_ports; j++)
            if (st->ports[j].container_port == p->ports[i].container_port)
                p->ports[i].host_port = st->ports[j].host_port;
    pthread_mutex_lock(&ks->mu);
    memcpy(k->ports, p->ports, sizeof(p->ports[0]) * (size_t)p->n_ports);
    k->n_ports = p->n_ports;
    krec_progress_status(k, "running");
    ktab_persist(ks, k);
    pthread_mutex_unlock(&ks->mu);
    TLOG_INFO("kernel started", "ip=%s ports=%d", st->ip, p->n_ports);
    kev_ctx c = ktab_kev(ks, k);
    kev_started(&c, ks->o.kernel_host, p->ports, p->n_ports);
}

static void _create(kernels *ks, krec *k, const Tessera__V1__CreateKernel *cmd)
{
    if (k->resume) {
        /* a creation an agent restart interrupted: remove what it left, start over */
        ts_err e = {{0}};
        /* a restart's creation keeps the home it took over */
        destroy_opts o = {.keep_home = k->generation > 0};
        if (!runtime_destroy_with(ks->o.rt, k->id, &o, &e))
            TLOG_WARN("cleanup of an interrupted creation failed", "error=\"%s\"", e.msg);
        k->resume = false;
    }
    ktab_set_status(ks, k, "pulling");
    ts_err err = {{0}};
    image_info *info = _image(ks, k, cmd, &err);
    if (!info) {
        if (err.msg[0]) _fail(ks, k, err.msg);
        return;
    }
    /* stopping: resumed at the next start */
    if (atomic_load(&k->cancel) || ktab_stopping(ks)) {
        image_info_free(info);
        return;
    }
    ktab_set_status(ks, k, "creating");
    kev_ctx c = ktab_kev(ks, k);
    kev_creating(&c, info->digest);

    _label_overrides(info, cmd);
    create_plan p = {0};
    kernel_status st;
    bool ok = _plan(ks, k, cmd, info, &p, &err) && _start(ks, k, cmd, info, &p, &st, &err);
    image_info_free(info);
    if (!ok) {
        if (p.gpu_tried) ktab_gpu_cleanup(ks, k->id);
        _plan_free(&p);
        ts_err_prefix(&err, "create failed");
        _fail(ks, k, err.msg);
        return;
    }
    _running(ks, k, &p, &st);
    _plan_free(&p);
    _sshd(ks, k, cmd);
    _bootstrap(ks, k, cmd);
}

void kernel_create_run(kernels *ks, krec *k)
{
    Tessera__V1__CreateKernel *cmd = krec_cmd(k);
    if (!cmd) {
        _fail(ks, k, "internal error: the CreateKernel command could not be read back");
        return;
    }
    if (!atomic_load(&k->cancel)) _create(ks, k, cmd);
    tessera__v1__create_kernel__free_unpacked(cmd, NULL);
}
