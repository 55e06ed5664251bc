/* kernels.c: the kernels of this agent, their tasks and their watcher (kernels.h). */
#include "services/agent/kernels.h"

#include <dirent.h>
#include <errno.h>
#include <jansson.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "libcommon/log.h"
#include "services/agent/kernel_events.h"
#include "services/agent/registry_client.h"
#include "services/agent/term_app.h"

#define WATCH_INTERVAL_MS 500
#define PROGRESS_INTERVAL_MS 500
#define TOMBSTONE_TTL_MS (3600 * 1000LL)
#define BOOTSTRAP_TIMEOUT_MS 60000
#define DESTROY_TRIES 3

enum task_kind { TASK_CREATE, TASK_DESTROY, TASK_REPORT_LOST };

typedef struct task {
    enum task_kind kind;
    char reason[256];
    int grace_ms;
    struct task *next;
} task;

typedef struct krec {
    char id[80], session_id[80], access_key[64], correlation_id[80];
    char status[16];
    uint8_t *cmd_bytes; /* the packed CreateKernel (NULL when adopted without meta) */
    size_t cmd_len;
    int generation; /* CreateKernel.generation of cmd_bytes */
    /* A CreateKernel of a higher generation (a restart), waiting for what is
     * left of the current one to be destroyed: it replaces cmd_bytes when its
     * create task runs (_promote). */
    uint8_t *next_cmd;
    size_t next_len;
    int next_generation;
    char runtime_path[256];
    kernel_service_port ports[KERNEL_MAX_PORTS];
    int n_ports;
    int exit_code;
    char reason[256];
    bool exit_reported;
    bool resume; /* creation interrupted by an agent restart: clean up first */
    bool destroy_queued;
    int64_t exited_at_ms, terminated_at_ms;
    atomic_bool cancel; /* a destroy is queued: creation stops at the next step */
    /* scheduling, under ks->mu */
    task *head, *tail;
    bool busy, in_ready;
    struct krec *next_ready;
    struct krec *next;
} krec;

struct kernels {
    kernels_opts o;
    char *meta_dir;
    pthread_mutex_t mu;
    pthread_cond_t cv; /* work queued, pull slot freed, stop */
    krec *all;
    krec *ready_head, *ready_tail;
    int active_pulls;
    bool stop;
    pthread_t *workers;
    int n_workers;
    pthread_t watcher;
    bool started;
};

/* ---- small helpers -------------------------------------------------------------- */

static krec *_find(kernels *ks, const char *id)
{
    for (krec *k = ks->all; k; k = k->next)
        if (strcmp(k->id, id) == 0) return k;
    return NULL;
}

static kev_ctx _kev(kernels *ks, const krec *k)
{
    return (kev_ctx){.bus = ks->o.bus,
                     .agent_id = ks->o.agent_id,
                     .session_id = k->session_id,
                     .kernel_id = k->id,
                     .correlation_id = k->correlation_id[0] ? k->correlation_id : NULL,
                     .generation = k->generation};
}

/* The generation a command is compared with: the pending one when there is one. */
static int _latest_generation(const krec *k)
{
    return k->next_cmd ? k->next_generation : k->generation;
}

static char *_hex(const uint8_t *b, size_t n)
{
    static const char d[] = "0123456789abcdef";
    char *s = ts_malloc(n * 2 + 1);
    for (size_t i = 0; i < n; i++) {
        s[2 * i] = d[b[i] >> 4];
        s[2 * i + 1] = d[b[i] & 15];
    }
    s[2 * n] = '\0';
    return s;
}

static uint8_t *_unhex(const char *s, size_t *n)
{
    size_t len = strlen(s);
    if (len % 2) return NULL;
    uint8_t *b = ts_malloc(len / 2 + 1);
    for (size_t i = 0; i < len / 2; i++) {
        unsigned v;
        if (sscanf(s + 2 * i, "%2x", &v) != 1) {
            free(b);
            return NULL;
        }
        b[i] = (uint8_t)v;
    }
    *n = len / 2;
    return b;
}

static Tessera__V1__CreateKernel *_cmd(const krec *k)
{
    if (!k->cmd_bytes) return NULL;
    return tessera__v1__create_kernel__unpack(NULL, k->cmd_len, k->cmd_bytes);
}

/* ---- meta files ----------------------------------------------------------------- */

/* Write meta/<id>.json (tmp + rename). Caller holds ks->mu. */
static bool _save(kernels *ks, const krec *k)
{
    json_t *ports = json_array();
    for (int i = 0; i < k->n_ports; i++)
        json_array_append_new(ports, json_pack("{s:s, s:s, s:i, s:i, s:s}", "name",
                                               k->ports[i].name, "protocol", k->ports[i].protocol,
                                               "container", k->ports[i].container_port, "host",
                                               k->ports[i].host_port, "start", k->ports[i].start));
    json_t *j =
        json_pack("{s:s, s:s, s:s, s:s, s:s, s:s, s:o, s:i, s:s, s:b, s:I, s:I, s:I}", "kernel_id",
                  k->id, "session_id", k->session_id, "access_key", k->access_key, "correlation_id",
                  k->correlation_id, "status", k->status, "runtime_path", k->runtime_path, "ports",
                  ports, "exit_code", k->exit_code, "reason", k->reason, "exit_reported",
                  k->exit_reported, "exited_at_ms", (json_int_t)k->exited_at_ms, "terminated_at_ms",
                  (json_int_t)k->terminated_at_ms, "updated_at_ms", (json_int_t)ts_now_wall_ms());
    json_object_set_new(j, "generation", json_integer(k->generation));
    if (k->cmd_bytes) {
        char *hex = _hex(k->cmd_bytes, k->cmd_len);
        json_object_set_new(j, "create_kernel", json_string(hex));
        free(hex);
    }
    if (k->next_cmd) {
        char *hex = _hex(k->next_cmd, k->next_len);
        json_object_set_new(j, "next_create_kernel", json_string(hex));
        json_object_set_new(j, "next_generation", json_integer(k->next_generation));
        free(hex);
    }
    char *path = ts_asprintf("%s/%s.json", ks->meta_dir, k->id);
    char *tmp = ts_asprintf("%s.tmp", path);
    bool ok = json_dump_file(j, tmp, JSON_COMPACT) == 0 && rename(tmp, path) == 0;
    if (!ok) {
        TLOG_ERROR("kernel meta not saved", "kernel=%s path=%s error=\"%s\"", k->id, path,
                   strerror(errno));
        unlink(tmp);
    }
    json_decref(j);
    free(tmp);
    free(path);
    return ok;
}

static krec *_load(kernels *ks, const char *file)
{
    char *path = ts_asprintf("%s/%s", ks->meta_dir, file);
    json_t *j = json_load_file(path, 0, NULL);
    if (!j) {
        TLOG_WARN("unreadable kernel meta file ignored", "path=%s", path);
        free(path);
        return NULL;
    }
    free(path);
    krec *k = ts_calloc(1, sizeof(*k));
#define S(field, key)                                                                              \
    ts_strlcpy(k->field, json_string_value(json_object_get(j, key)) ?: "", sizeof(k->field))
    S(id, "kernel_id");
    S(session_id, "session_id");
    S(access_key, "access_key");
    S(correlation_id, "correlation_id");
    S(status, "status");
    S(runtime_path, "runtime_path");
    S(reason, "reason");
#undef S
    k->exit_code = (int)json_integer_value(json_object_get(j, "exit_code"));
    k->exit_reported = json_is_true(json_object_get(j, "exit_reported"));
    k->exited_at_ms = json_integer_value(json_object_get(j, "exited_at_ms"));
    k->terminated_at_ms = json_integer_value(json_object_get(j, "terminated_at_ms"));
    size_t i;
    json_t *v;
    json_array_foreach(json_object_get(j, "ports"), i, v)
    {
        if (k->n_ports >= KERNEL_MAX_PORTS) break;
        kernel_service_port *p = &k->ports[k->n_ports++];
        ts_strlcpy(p->name, json_string_value(json_object_get(v, "name")) ?: "", sizeof(p->name));
        ts_strlcpy(p->protocol, json_string_value(json_object_get(v, "protocol")) ?: "",
                   sizeof(p->protocol));
        p->container_port = (int)json_integer_value(json_object_get(v, "container"));
        p->host_port = (int)json_integer_value(json_object_get(v, "host"));
        ts_strlcpy(p->start, json_string_value(json_object_get(v, "start")) ?: "",
                   sizeof(p->start));
    }
    const char *hex = json_string_value(json_object_get(j, "create_kernel"));
    if (hex) k->cmd_bytes = _unhex(hex, &k->cmd_len);
    k->generation = (int)json_integer_value(json_object_get(j, "generation"));
    hex = json_string_value(json_object_get(j, "next_create_kernel"));
    if (hex) k->next_cmd = _unhex(hex, &k->next_len);
    k->next_generation = (int)json_integer_value(json_object_get(j, "next_generation"));
    json_decref(j);
    if (!k->id[0]) {
        free(k->cmd_bytes);
        free(k->next_cmd);
        free(k);
        return NULL;
    }
    return k;
}

static void _unlink_meta(kernels *ks, const char *id)
{
    char *path = ts_asprintf("%s/%s.json", ks->meta_dir, id);
    unlink(path);
    free(path);
}

/* ---- scheduling ------------------------------------------------------------------- */

/* Queue a task for k. Caller holds ks->mu. */
static void _enqueue(kernels *ks, krec *k, enum task_kind kind, const char *reason, int grace_ms)
{
    task *t = ts_calloc(1, sizeof(*t));
    t->kind = kind;
    ts_strlcpy(t->reason, reason ? reason : "", sizeof(t->reason));
    t->grace_ms = grace_ms;
    if (k->tail)
        k->tail->next = t;
    else
        k->head = t;
    k->tail = t;
    if (kind == TASK_DESTROY) {
        atomic_store(&k->cancel, true);
        k->destroy_queued = true;
    }
    if (!k->busy && !k->in_ready) {
        k->in_ready = true;
        k->next_ready = NULL;
        if (ks->ready_tail)
            ks->ready_tail->next_ready = k;
        else
            ks->ready_head = k;
        ks->ready_tail = k;
        pthread_cond_broadcast(&ks->cv);
    }
}

/* A queued destroy's "terminating" is never overwritten by the creation's
 * progress: it is what a restarted agent must find. Caller holds ks->mu. */
static void _progress_status(krec *k, const char *status)
{
    if (atomic_load(&k->cancel) && strcmp(k->status, "terminating") == 0) return;
    ts_strlcpy(k->status, status, sizeof(k->status));
}

static void _set_status(kernels *ks, krec *k, const char *status)
{
    pthread_mutex_lock(&ks->mu);
    _progress_status(k, status);
    (void)_save(ks, k);
    pthread_mutex_unlock(&ks->mu);
}

/* Creation failed: nothing is left (runtime_start cleans up after itself). */
static void _fail(kernels *ks, krec *k, const char *why)
{
    TLOG_WARN("kernel creation failed", "reason=\"%s\"", why);
    pthread_mutex_lock(&ks->mu);
    ts_strlcpy(k->status, "terminated", sizeof(k->status));
    ts_strlcpy(k->reason, why, sizeof(k->reason));
    k->exit_code = -1;
    k->terminated_at_ms = ts_now_wall_ms();
    (void)_save(ks, k);
    pthread_mutex_unlock(&ks->mu);
    kev_ctx c = _kev(ks, k);
    kev_terminated(&c, -1, why);
}

/* ---- create ---------------------------------------------------------------------- */

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
        kev_ctx c = _kev(p->ks, p->k);
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

static void _env_add(char ***env, int *n, const char *fmt, ...) TS_PRINTF(3, 4);
static void _env_add(char ***env, int *n, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *s = NULL;
    if (vasprintf(&s, fmt, ap) < 0) ts_panic("out of memory");
    va_end(ap);
    *env = ts_realloc(*env, sizeof(char *) * (size_t)(*n + 2));
    (*env)[(*n)++] = s;
    (*env)[*n] = NULL;
}

/* The per-device GPU allocation: env for the container, the cuda-shim config
 * (mem_limit per device as the container numbers them, compute share, the
 * devices' UUIDs in that order) and
 * what gpu_mounts.c mounts (*gpu set; NULL for a kernel without GPUs). */
static bool _gpu_setup(kernels *ks, const krec *k, const Tessera__V1__CreateKernel *cmd,
                       char ***env, int *n, kernel_gpu *out, const kernel_gpu **gpu, ts_err *err)
{
    *gpu = NULL;
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
    _env_add(env, n, "TESSERA_CUDA_DEVICES=%s", ids);
    _env_add(env, n, "TESSERA_CUDA_ALLOCATION=%s", shares);
    _env_add(env, n, "CUDA_VISIBLE_DEVICES=%s", ids);
    if (!ks->o.gpu_conf_dir) return true;
    char *dir = ts_asprintf("%s/%s", ks->o.gpu_conf_dir, k->id);
    mkdir(ks->o.gpu_conf_dir, 0755);
    mkdir(dir, 0755);
    char *path = ts_asprintf("%s/cuda-shim.conf", dir);
    conf.compute_share = share;
    bool ok = gpu_shim_conf_write(path, &conf, err);
    if (ok && ks->o.gpu) {
        ok = gpu_kernel_prepare(ks->o.gpu, dir, dev_ids, used, out, err);
        if (ok) *gpu = out;
    }
    free(path);
    free(dir);
    return ok;
}

static void _gpu_cleanup(kernels *ks, const char *id)
{
    if (!ks->o.gpu_conf_dir) return;
    char *dir = ts_asprintf("%s/%s", ks->o.gpu_conf_dir, id);
    gpu_kernel_cleanup(dir);
    free(dir);
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

static void _task_create(kernels *ks, krec *k)
{
    Tessera__V1__CreateKernel *cmd = _cmd(k);
    if (!cmd) {
        _fail(ks, k, "internal error: the CreateKernel command could not be read back");
        return;
    }
    if (atomic_load(&k->cancel)) goto out;
    if (k->resume) {
        /* a creation an agent restart interrupted: remove what it left, start over */
        ts_err e = {{0}};
        if (!runtime_destroy(ks->o.rt, k->id, 0, &e))
            TLOG_WARN("cleanup of an interrupted creation failed", "kernel=%s error=\"%s\"", k->id,
                      e.msg);
        k->resume = false;
    }
    _set_status(ks, k, "pulling");
    char *ref = (cmd->image_digest && *cmd->image_digest && !strchr(cmd->image, '@'))
                    ? ts_asprintf("%s@%s", cmd->image, cmd->image_digest)
                    : ts_strdup(cmd->image);
    kev_ctx c = _kev(ks, k);
    ts_err err = {{0}};
    image_store *store = ks->o.store_for(ref, ks->o.store_ctx);
    /* An image pinned by digest and already in the cache needs no network and
     * no pull slot, and reports no KernelPulling: the session goes straight
     * from PREPARING to creating (two registry transitions fewer on the way
     * to RUNNING). A tag is always asked for, as it may have moved. */
    image_info *info = NULL;
    if (store && strchr(ref, '@')) {
        ts_err lerr = {{0}};
        info = image_lookup(store, ref, &lerr);
    }
    if (!info) {
        image_progress none = {0};
        kev_pulling(&c, cmd->image, &none);
        if (!_pull_slot(ks, k)) {
            free(ref);
            goto out;
        }
        pull_progress pp = {
            .ks = ks, .k = k, .image = cmd->image, .last_ms = ts_now_mono_ms(), .last_layers = -1};
        pthread_mutex_init(&pp.mu, NULL);
        info = store ? image_pull(store, ref, _on_progress, &pp, &err) : NULL;
        if (!store) ts_err_set(&err, "no image store for '%s'", ref);
        _pull_slot_release(ks);
        pthread_mutex_destroy(&pp.mu);
    }
    free(ref);
    if (!info) {
        ts_err_prefix(&err, "pull failed");
        _fail(ks, k, err.msg);
        goto out;
    }
    bool stopping;
    pthread_mutex_lock(&ks->mu);
    stopping = ks->stop;
    pthread_mutex_unlock(&ks->mu);
    if (atomic_load(&k->cancel) || stopping) { /* stopping: resumed at the next start */
        image_info_free(info);
        goto out;
    }

    _set_status(ks, k, "creating");
    kev_creating(&c, info->digest);

    /* slots -> limits */
    slots_t sl;
    slots_clear(&sl);
    for (size_t i = 0; i < cmd->n_slots; i++) {
        if (!slots_set(&sl, cmd->slots[i]->name, cmd->slots[i]->amount, &err)) {
            ts_err_prefix(&err, "invalid slots");
            ts_err_prefix(&err, "create failed");
            _fail(ks, k, err.msg);
            image_info_free(info);
            goto out;
        }
    }
    if (!_mounts_valid(cmd, &err)) {
        ts_err_prefix(&err, "create failed");
        _fail(ks, k, err.msg);
        image_info_free(info);
        goto out;
    }
    /* service ports and the runtime */
    char *label = image_label(info->labels_json, "ai.backend.service-ports");
    kernel_service_port ports[KERNEL_MAX_PORTS];
    int n_ports = service_ports_parse(label, cmd->preopen_ports, cmd->n_preopen_ports, ports, &err);
    free(label);
    if (n_ports >= 0 && !service_ports_start_commands(info->labels_json, ports, n_ports, &err))
        n_ports = -1;
    if (n_ports >= 0 && ks->o.term_path) n_ports = term_app_add_port(ports, n_ports);
    if (n_ports < 0) {
        ts_err_prefix(&err, "create failed");
        _fail(ks, k, err.msg);
        image_info_free(info);
        goto out;
    }
    char *rpath = image_label(info->labels_json, "ai.backend.runtime-path");
    pthread_mutex_lock(&ks->mu);
    ts_strlcpy(k->runtime_path, rpath ? rpath : "", sizeof(k->runtime_path));
    pthread_mutex_unlock(&ks->mu);
    free(rpath);

    /* environment */
    char **env = NULL;
    int n_env = 0;
    const char *role = cmd->cluster_role && *cmd->cluster_role ? cmd->cluster_role : "main";
    int size = cmd->cluster_size > 0 ? cmd->cluster_size : 1;
    _env_add(&env, &n_env, "BACKENDAI_SESSION_ID=%s", cmd->session_id);
    _env_add(&env, &n_env, "BACKENDAI_KERNEL_ID=%s", cmd->kernel_id);
    _env_add(&env, &n_env, "BACKENDAI_ACCESS_KEY=%s", cmd->access_key);
    _env_add(&env, &n_env, "BACKENDAI_KERNEL_IMAGE=%s", cmd->image);
    _env_add(&env, &n_env, "BACKENDAI_CLUSTER_ROLE=%s", role);
    _env_add(&env, &n_env, "BACKENDAI_CLUSTER_IDX=%d", cmd->cluster_idx);
    _env_add(&env, &n_env, "BACKENDAI_CLUSTER_SIZE=%d", size);
    _env_add(&env, &n_env, "BACKENDAI_CLUSTER_HOST=%s%d", role, cmd->cluster_idx + 1);
    _env_add(&env, &n_env, "TESSERA_AGENT_ID=%s", ks->o.agent_id);
    _env_add(&env, &n_env, "TESSERA_CLUSTER_ROLE=%s", role);
    _env_add(&env, &n_env, "TESSERA_CLUSTER_IDX=%d", cmd->cluster_idx);
    _env_add(&env, &n_env, "TESSERA_CLUSTER_SIZE=%d", size);
    kernel_gpu kgpu;
    const kernel_gpu *gpu = NULL;
    if (!_gpu_setup(ks, k, cmd, &env, &n_env, &kgpu, &gpu, &err)) {
        for (int i = 0; i < n_env; i++)
            free(env[i]);
        free(env);
        _gpu_cleanup(ks, k->id);
        ts_err_prefix(&err, "create failed");
        _fail(ks, k, err.msg);
        image_info_free(info);
        goto out;
    }
    for (size_t i = 0; i < cmd->n_environ; i++)
        _env_add(&env, &n_env, "%s=%s", cmd->environ[i]->key, cmd->environ[i]->value);

    bind_mount *mounts = ts_calloc(cmd->n_mounts + 1, sizeof(*mounts));
    char **mpaths = ts_calloc(cmd->n_mounts + 1, sizeof(char *));
    for (size_t i = 0; i < cmd->n_mounts; i++) {
        const Tessera__V1__VfolderMount *m = cmd->mounts[i];
        mpaths[i] = m->mount_path && *m->mount_path ? ts_strdup(m->mount_path)
                                                    : ts_asprintf("/home/work/%s", m->name);
        mounts[i] = (bind_mount){.host_path = m->host_path,
                                 .container_path = mpaths[i],
                                 .read_only = m->permission && strcmp(m->permission, "ro") == 0};
    }
    bool batch = cmd->session_type == TESSERA__V1__SESSION_TYPE__SESSION_TYPE_BATCH;
    /* A Backend.AI kernel image's entrypoint/cmd is for `docker run` (often a
     * bare shell that ends at once without a terminal): an interactive kernel
     * of such an image runs the runtime's keep-alive, as Backend.AI runs its
     * kernel runner instead. Other images run what they declare. */
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
    int cports[KERNEL_MAX_PORTS];
    for (int i = 0; i < n_ports; i++)
        cports[i] = ports[i].container_port;
    const char *argv[] = {"/bin/sh", "-c", cmd->startup_command, NULL};
    char hostname[64];
    snprintf(hostname, sizeof(hostname), "%s%d", role, cmd->cluster_idx + 1);
    kernel_spec spec = {
        .kernel_id = k->id,
        .session_id = k->session_id,
        .cluster_size = size,
        .hostname = hostname,
        .image = info,
        .cpu_cores = slots_get(&sl, SLOT_CPU) / 1000.0,
        .mem_bytes = slots_get(&sl, SLOT_MEM),
        .shm_bytes = ks->o.shm_bytes,
        .env = (const char *const *)env,
        .argv = cmd->startup_command && *cmd->startup_command ? argv : NULL,
        .mounts = mounts,
        .n_mounts = (int)cmd->n_mounts,
        .service_ports = cports,
        .n_service_ports = n_ports,
        .batch = batch,
        .gpu = gpu,
        .term_path = ks->o.term_path,
    };
    kernel_status st;
    bool ok = runtime_start(ks->o.rt, &spec, &st, &err);
    for (int i = 0; i < n_env; i++)
        free(env[i]);
    free(env);
    for (size_t i = 0; i < cmd->n_mounts; i++)
        free(mpaths[i]);
    free(mpaths);
    free(mounts);
    image_info_free(info);
    if (!ok) {
        _gpu_cleanup(ks, k->id);
        ts_err_prefix(&err, "create failed");
        _fail(ks, k, err.msg);
        goto out;
    }
    for (int i = 0; i < n_ports; i++)
        for (int j = 0; j < st.n_ports; j++)
            if (st.ports[j].container_port == ports[i].container_port)
                ports[i].host_port = st.ports[j].host_port;
    pthread_mutex_lock(&ks->mu);
    memcpy(k->ports, ports, sizeof(ports[0]) * (size_t)n_ports);
    k->n_ports = n_ports;
    _progress_status(k, "running");
    (void)_save(ks, k);
    pthread_mutex_unlock(&ks->mu);
    TLOG_INFO("kernel started", "ip=%s ports=%d", st.ip, n_ports);
    kev_started(&c, ks->o.kernel_host, ports, n_ports);

    if (cmd->bootstrap_script && *cmd->bootstrap_script && !batch) {
        const char *bargv[] = {"/bin/sh", "-c", cmd->bootstrap_script, NULL};
        exec_result r;
        if (!runtime_exec(ks->o.rt, k->id, bargv, NULL, BOOTSTRAP_TIMEOUT_MS, 65536, &r, &err))
            TLOG_WARN("bootstrap script failed", "kernel=%s error=\"%s\"", k->id, err.msg);
        else {
            if (r.exit_code != 0)
                TLOG_WARN("bootstrap script failed", "kernel=%s exit_code=%d", k->id, r.exit_code);
            exec_result_free(&r);
        }
    }
out:
    tessera__v1__create_kernel__free_unpacked(cmd, NULL);
}

/* ---- destroy --------------------------------------------------------------------- */

static void _task_destroy(kernels *ks, krec *k, const task *t)
{
    const char *reason = t->reason[0] ? t->reason : "user-requested";
    pthread_mutex_lock(&ks->mu);
    bool done = strcmp(k->status, "terminated") == 0;
    int code = k->exit_code;
    bool exited = strcmp(k->status, "exited") == 0;
    if (!done) {
        ts_strlcpy(k->status, "terminating", sizeof(k->status));
        (void)_save(ks, k);
    }
    pthread_mutex_unlock(&ks->mu);
    kev_ctx c = _kev(ks, k);
    if (done) { /* a repeated destroy: answer again so the registry can finish */
        kev_terminated(&c, code, k->reason[0] ? k->reason : reason);
        return;
    }
    kernel_status st;
    ts_err err = {{0}};
    if (!exited && runtime_status(ks->o.rt, k->id, &st, &err) && st.state == KERNEL_EXITED) {
        exited = true;
        code = st.exit_code;
    }
    if (!exited) code = -1;
    bool ok = false;
    for (int i = 0; i < DESTROY_TRIES && !ok; i++) {
        ok = runtime_destroy(ks->o.rt, k->id, t->grace_ms, &err);
        if (!ok) {
            TLOG_WARN("kernel destroy failed", "kernel=%s try=%d error=\"%s\"", k->id, i + 1,
                      err.msg);
            usleep(500 * 1000);
        }
    }
    _gpu_cleanup(ks, k->id);
    char why[256];
    if (ok)
        ts_strlcpy(why, reason, sizeof(why));
    else
        snprintf(why, sizeof(why), "%s (cleanup incomplete: %s)", reason, err.msg);
    pthread_mutex_lock(&ks->mu);
    ts_strlcpy(k->status, "terminated", sizeof(k->status));
    ts_strlcpy(k->reason, why, sizeof(k->reason));
    k->exit_code = code;
    k->terminated_at_ms = ts_now_wall_ms();
    (void)_save(ks, k);
    pthread_mutex_unlock(&ks->mu);
    TLOG_INFO("kernel terminated", "exit_code=%d reason=\"%s\"", code, why);
    kev_terminated(&c, code, why);
}

static void _task_report_lost(kernels *ks, krec *k, const task *t)
{
    pthread_mutex_lock(&ks->mu);
    ts_strlcpy(k->status, "terminated", sizeof(k->status));
    ts_strlcpy(k->reason, t->reason, sizeof(k->reason));
    k->exit_code = -1;
    k->terminated_at_ms = ts_now_wall_ms();
    (void)_save(ks, k);
    pthread_mutex_unlock(&ks->mu);
    _gpu_cleanup(ks, k->id);
    kev_ctx c = _kev(ks, k);
    kev_terminated(&c, -1, t->reason);
}

/* A create task of a newer generation: what is left of the current one is
 * destroyed first (normally a destroy task before this one already did), then
 * the record starts over with the pending CreateKernel. */
static void _promote(kernels *ks, krec *k)
{
    pthread_mutex_lock(&ks->mu);
    if (!k->next_cmd) {
        pthread_mutex_unlock(&ks->mu);
        return;
    }
    if (strcmp(k->status, "terminated") != 0) {
        pthread_mutex_unlock(&ks->mu);
        task t = {.kind = TASK_DESTROY, .grace_ms = ks->o.destroy_grace_ms};
        ts_strlcpy(t.reason, "restarting", sizeof(t.reason));
        _task_destroy(ks, k, &t);
        pthread_mutex_lock(&ks->mu);
    }
    free(k->cmd_bytes);
    k->cmd_bytes = k->next_cmd;
    k->cmd_len = k->next_len;
    k->generation = k->next_generation;
    k->next_cmd = NULL;
    k->next_len = 0;
    k->next_generation = 0;
    ts_strlcpy(k->status, "pulling", sizeof(k->status));
    k->runtime_path[0] = '\0';
    k->n_ports = 0;
    k->exit_code = 0;
    k->reason[0] = '\0';
    k->exit_reported = false;
    k->resume = false;
    k->exited_at_ms = k->terminated_at_ms = 0;
    bool destroy = false; /* a destroy of the new generation queued behind this create */
    for (task *q = k->head; q; q = q->next)
        destroy = destroy || q->kind == TASK_DESTROY;
    k->destroy_queued = destroy;
    atomic_store(&k->cancel, destroy);
    if (destroy) ts_strlcpy(k->status, "terminating", sizeof(k->status));
    (void)_save(ks, k);
    pthread_mutex_unlock(&ks->mu);
    TLOG_INFO("kernel created again (new generation)", "kernel=%s generation=%d", k->id,
              k->generation);
}

static void *_worker(void *arg)
{
    kernels *ks = arg;
    pthread_mutex_lock(&ks->mu);
    for (;;) {
        while (!ks->stop && !ks->ready_head)
            pthread_cond_wait(&ks->cv, &ks->mu);
        if (ks->stop) break;
        krec *k = ks->ready_head;
        ks->ready_head = k->next_ready;
        if (!ks->ready_head) ks->ready_tail = NULL;
        k->in_ready = false;
        task *t = k->head;
        if (!t) continue;
        k->head = t->next;
        if (!k->head) k->tail = NULL;
        k->busy = true;
        pthread_mutex_unlock(&ks->mu);

        tlog_ctx_kernel(k->id);
        tlog_ctx_session(k->session_id);
        if (t->kind == TASK_CREATE) {
            _promote(ks, k);
            _task_create(ks, k);
        } else if (t->kind == TASK_DESTROY)
            _task_destroy(ks, k, t);
        else
            _task_report_lost(ks, k, t);
        tlog_ctx_clear();
        free(t);

        pthread_mutex_lock(&ks->mu);
        k->busy = false;
        if (k->head && !k->in_ready) {
            k->in_ready = true;
            k->next_ready = NULL;
            if (ks->ready_tail)
                ks->ready_tail->next_ready = k;
            else
                ks->ready_head = k;
            ks->ready_tail = k;
            pthread_cond_broadcast(&ks->cv);
        }
    }
    pthread_mutex_unlock(&ks->mu);
    return NULL;
}

/* ---- the watcher ------------------------------------------------------------------- */

static void _watch_once(kernels *ks)
{
    /* ids to look at, copied under the lock (records may go away meanwhile) */
    char(*ids)[80] = NULL;
    int n = 0, cap = 0;
    int64_t now = ts_now_wall_ms();
    pthread_mutex_lock(&ks->mu);
    for (krec **pp = &ks->all; *pp;) {
        krec *k = *pp;
        bool idle = !k->busy && !k->in_ready && !k->head;
        if (idle && strcmp(k->status, "terminated") == 0 &&
            now - k->terminated_at_ms > TOMBSTONE_TTL_MS) {
            *pp = k->next;
            _unlink_meta(ks, k->id);
            free(k->cmd_bytes);
            free(k->next_cmd);
            free(k);
            continue;
        }
        if (idle && strcmp(k->status, "exited") == 0 && !k->destroy_queued &&
            ks->o.exited_retention_ms > 0 && now - k->exited_at_ms > ks->o.exited_retention_ms) {
            TLOG_INFO("exited kernel not destroyed in time: destroying it", "kernel=%s", k->id);
            _enqueue(ks, k, TASK_DESTROY, "exited", ks->o.destroy_grace_ms);
        }
        if (idle && (strcmp(k->status, "running") == 0 ||
                     (strcmp(k->status, "exited") == 0 && !k->exit_reported))) {
            if (n == cap) {
                cap = cap ? cap * 2 : 16;
                ids = ts_realloc(ids, sizeof(*ids) * (size_t)cap);
            }
            ts_strlcpy(ids[n++], k->id, sizeof(ids[0]));
        }
        pp = &k->next;
    }
    pthread_mutex_unlock(&ks->mu);

    for (int i = 0; i < n; i++) {
        kernel_status st;
        ts_err err = {{0}};
        if (!runtime_status(ks->o.rt, ids[i], &st, &err)) continue;
        if (st.state != KERNEL_EXITED && st.state != KERNEL_GONE) continue;
        pthread_mutex_lock(&ks->mu);
        krec *k = _find(ks, ids[i]);
        bool report = k && !k->busy && !k->head &&
                      (strcmp(k->status, "running") == 0 ||
                       (strcmp(k->status, "exited") == 0 && !k->exit_reported));
        if (report && st.state == KERNEL_EXITED) {
            if (strcmp(k->status, "running") == 0) k->exited_at_ms = ts_now_wall_ms();
            ts_strlcpy(k->status, "exited", sizeof(k->status));
            k->exit_code = st.exit_code;
            ts_strlcpy(k->reason, st.reason, sizeof(k->reason));
            k->exit_reported = true;
            (void)_save(ks, k);
        } else if (report) { /* the container vanished under us */
            _enqueue(ks, k, TASK_REPORT_LOST, "the container disappeared", 0);
            report = false;
        }
        kev_ctx c = report ? _kev(ks, k) : (kev_ctx){0};
        pthread_mutex_unlock(&ks->mu);
        if (report) {
            TLOG_INFO("kernel exited", "kernel=%s exit_code=%d reason=\"%s\"", ids[i], st.exit_code,
                      st.reason);
            kev_exited(&c, st.exit_code, st.reason);
        }
    }
    free(ids);
}

static void *_watcher(void *arg)
{
    kernels *ks = arg;
    pthread_mutex_lock(&ks->mu);
    while (!ks->stop) {
        pthread_mutex_unlock(&ks->mu);
        _watch_once(ks);
        pthread_mutex_lock(&ks->mu);
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_nsec += WATCH_INTERVAL_MS * 1000000L;
        ts.tv_sec += ts.tv_nsec / 1000000000L;
        ts.tv_nsec %= 1000000000L;
        while (!ks->stop && pthread_cond_timedwait(&ks->cv, &ks->mu, &ts) == 0) {
        }
    }
    pthread_mutex_unlock(&ks->mu);
    return NULL;
}

/* ---- life ------------------------------------------------------------------------- */

kernels *kernels_new(const kernels_opts *o, ts_err *err)
{
    kernels *ks = ts_calloc(1, sizeof(*ks));
    ks->o = *o;
    if (ks->o.max_parallel_pulls < 1) ks->o.max_parallel_pulls = 1;
    ks->meta_dir = ts_asprintf("%s/meta", o->state_dir);
    if (mkdir(ks->meta_dir, 0750) < 0 && errno != EEXIST) {
        ts_err_set(err, "mkdir %s: %s", ks->meta_dir, strerror(errno));
        free(ks->meta_dir);
        free(ks);
        return NULL;
    }
    pthread_mutex_init(&ks->mu, NULL);
    pthread_cond_init(&ks->cv, NULL);
    return ks;
}

void kernels_free(kernels *ks)
{
    if (!ks) return;
    pthread_mutex_lock(&ks->mu);
    ks->stop = true;
    pthread_cond_broadcast(&ks->cv);
    pthread_mutex_unlock(&ks->mu);
    if (ks->started) {
        pthread_join(ks->watcher, NULL);
        for (int i = 0; i < ks->n_workers; i++)
            pthread_join(ks->workers[i], NULL);
    }
    free(ks->workers);
    while (ks->all) {
        krec *k = ks->all;
        ks->all = k->next;
        while (k->head) {
            task *t = k->head;
            k->head = t->next;
            free(t);
        }
        free(k->cmd_bytes);
        free(k->next_cmd);
        free(k);
    }
    pthread_cond_destroy(&ks->cv);
    pthread_mutex_destroy(&ks->mu);
    free(ks->meta_dir);
    free(ks);
}

bool kernels_start(kernels *ks, ts_err *err)
{
    ks->n_workers = ks->o.max_parallel_pulls + 4;
    ks->workers = ts_calloc((size_t)ks->n_workers, sizeof(pthread_t));
    for (int i = 0; i < ks->n_workers; i++) {
        int rc = pthread_create(&ks->workers[i], NULL, _worker, ks);
        if (rc != 0) {
            ts_err_set(err, "worker thread: %s", strerror(rc));
            ks->n_workers = i;
            ks->started = true;
            return false;
        }
    }
    int rc = pthread_create(&ks->watcher, NULL, _watcher, ks);
    if (rc != 0) {
        ts_err_set(err, "watcher thread: %s", strerror(rc));
        pthread_mutex_lock(&ks->mu);
        ks->stop = true;
        pthread_cond_broadcast(&ks->cv);
        pthread_mutex_unlock(&ks->mu);
        for (int i = 0; i < ks->n_workers; i++)
            pthread_join(ks->workers[i], NULL);
        ks->n_workers = 0;
        return false;
    }
    ks->started = true;
    return true;
}

/* The session id a runtime kernel dir recorded (state.json), for kernels
 * without a meta file. */
static void _runtime_session(kernels *ks, const char *id, char *out, size_t size)
{
    char *path = ts_asprintf("%s/kernels/%s/state.json", ks->o.state_dir, id);
    json_t *j = json_load_file(path, 0, NULL);
    free(path);
    ts_strlcpy(out, json_string_value(json_object_get(j, "session_id")) ?: "", size);
    json_decref(j);
}

int kernels_adopt(kernels *ks, char ***adopted)
{
    *adopted = NULL;
    int n_adopted = 0;
    pthread_mutex_lock(&ks->mu);
    DIR *d = opendir(ks->meta_dir);
    struct dirent *e;
    while (d && (e = readdir(d))) {
        size_t l = strlen(e->d_name);
        if (l < 6 || strcmp(e->d_name + l - 5, ".json") != 0) continue;
        krec *k = _load(ks, e->d_name);
        if (!k) continue;
        if (_find(ks, k->id)) {
            free(k->cmd_bytes);
            free(k->next_cmd);
            free(k);
            continue;
        }
        k->next = ks->all;
        ks->all = k;
    }
    if (d) closedir(d);

    /* what the runtime has */
    char **ids = NULL;
    int n = runtime_list(ks->o.rt, &ids);
    for (int i = 0; i < n; i++) {
        krec *k = _find(ks, ids[i]);
        if (!k) {
            k = ts_calloc(1, sizeof(*k));
            ts_strlcpy(k->id, ids[i], sizeof(k->id));
            _runtime_session(ks, ids[i], k->session_id, sizeof(k->session_id));
            ts_strlcpy(k->status, "running", sizeof(k->status));
            k->next = ks->all;
            ks->all = k;
            TLOG_WARN("kernel without agent meta found: adopting it", "kernel=%s", k->id);
        }
    }
    for (krec *k = ks->all; k; k = k->next) {
        kernel_status st;
        ts_err err = {{0}};
        bool in_rt = false;
        for (int i = 0; i < n; i++)
            in_rt = in_rt || strcmp(ids[i], k->id) == 0;
        if (!in_rt) {
            st.state = KERNEL_GONE;
        } else if (!runtime_status(ks->o.rt, k->id, &st, &err)) {
            TLOG_WARN("kernel status unreadable at start", "kernel=%s error=\"%s\"", k->id,
                      err.msg);
            st.state = KERNEL_CREATING;
        }
        const char *s = k->status;
        bool creating = strcmp(s, "pulling") == 0 || strcmp(s, "creating") == 0;
        if (strcmp(s, "terminated") == 0) {
            if (st.state != KERNEL_GONE) { /* destroyed but not quite: finish it */
                ts_strlcpy(k->status, "terminating", sizeof(k->status));
                _enqueue(ks, k, TASK_DESTROY, k->reason, 0);
            }
            continue;
        }
        if (strcmp(s, "terminating") == 0) {
            _enqueue(ks, k, TASK_DESTROY, "", ks->o.destroy_grace_ms);
            continue;
        }
        if (creating) {
            if (k->cmd_bytes) {
                TLOG_INFO("resuming an interrupted kernel creation", "kernel=%s", k->id);
                k->resume = st.state != KERNEL_GONE;
                _enqueue(ks, k, TASK_CREATE, NULL, 0);
            } else {
                _enqueue(ks, k, TASK_DESTROY, "creation interrupted by an agent restart", 0);
            }
            continue;
        }
        switch (st.state) {
        case KERNEL_RUNNING:
            ts_strlcpy(k->status, "running", sizeof(k->status));
            break;
        case KERNEL_EXITED:
            /* reported (again) by the watcher: an event produced just before a
             * crash may not have left the process */
            if (strcmp(k->status, "exited") != 0) k->exited_at_ms = ts_now_wall_ms();
            ts_strlcpy(k->status, "exited", sizeof(k->status));
            k->exit_reported = false;
            break;
        case KERNEL_CREATING: /* a runtime dir that never got running */
            _enqueue(ks, k, TASK_DESTROY, "creation interrupted by an agent restart", 0);
            continue;
        case KERNEL_GONE:
            _enqueue(ks, k, TASK_REPORT_LOST, "the container was lost while the agent was down", 0);
            continue;
        }
        (void)_save(ks, k);
        *adopted = ts_realloc(*adopted, sizeof(char *) * (size_t)(n_adopted + 1));
        (*adopted)[n_adopted++] = ts_strdup(k->id);
        TLOG_INFO("kernel adopted", "kernel=%s session=%s status=%s", k->id, k->session_id,
                  k->status);
    }
    /* a restart's CreateKernel accepted before the agent went down: after
     * whatever the pass above queued (the destroy of the older generation) */
    for (krec *k = ks->all; k; k = k->next)
        if (k->next_cmd) _enqueue(ks, k, TASK_CREATE, NULL, 0);
    pthread_mutex_unlock(&ks->mu);
    for (int i = 0; i < n; i++)
        free(ids[i]);
    free(ids);
    return n_adopted;
}

/* ---- commands ------------------------------------------------------------------- */

static bool _valid_id(const char *id)
{
    if (!id || !*id || strlen(id) >= 64) return false;
    for (const char *p = id; *p; p++)
        if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
              *p == '-' || *p == '_' || *p == '.'))
            return false;
    return id[0] != '.';
}

kbus_result kernels_create(kernels *ks, const Tessera__V1__CreateKernel *cmd,
                           const char *correlation_id, ts_err *reason)
{
    if (!_valid_id(cmd->kernel_id)) {
        ts_err_set(reason, "CreateKernel: kernel id '%.80s' is not valid", cmd->kernel_id);
        kev_ctx c = {.bus = ks->o.bus,
                     .agent_id = ks->o.agent_id,
                     .session_id = cmd->session_id,
                     .kernel_id = cmd->kernel_id};
        kev_terminated(&c, -1, reason->msg);
        return KBUS_DONE;
    }
    pthread_mutex_lock(&ks->mu);
    krec *k = _find(ks, cmd->kernel_id);
    if (k && cmd->generation <= _latest_generation(k)) {
        pthread_mutex_unlock(&ks->mu);
        TLOG_INFO("duplicate CreateKernel ignored", "kernel=%s status=%s generation=%d have=%d",
                  cmd->kernel_id, k->status, cmd->generation, _latest_generation(k));
        return KBUS_DONE;
    }
    if (k) { /* a restart: the same id again, a newer generation */
        size_t len = protobuf_c_message_get_packed_size(&cmd->base);
        uint8_t *b = ts_malloc(len + 1);
        protobuf_c_message_pack(&cmd->base, b);
        uint8_t *old_next = k->next_cmd;
        size_t old_len = k->next_len;
        int old_gen = k->next_generation;
        char old_status[sizeof(k->status)];
        ts_strlcpy(old_status, k->status, sizeof(old_status));
        bool destroy = strcmp(k->status, "terminated") != 0 && !k->destroy_queued;
        k->next_cmd = b;
        k->next_len = len;
        k->next_generation = cmd->generation;
        if (strcmp(k->status, "terminated") != 0)
            ts_strlcpy(k->status, "terminating", sizeof(k->status));
        if (!_save(ks, k)) {
            k->next_cmd = old_next;
            k->next_len = old_len;
            k->next_generation = old_gen;
            ts_strlcpy(k->status, old_status, sizeof(k->status));
            pthread_mutex_unlock(&ks->mu);
            free(b);
            ts_err_set(reason, "cannot record kernel %s in the state dir", cmd->kernel_id);
            return KBUS_RETRY;
        }
        free(old_next);
        if (destroy) _enqueue(ks, k, TASK_DESTROY, "restarting", ks->o.destroy_grace_ms);
        _enqueue(ks, k, TASK_CREATE, NULL, 0);
        pthread_mutex_unlock(&ks->mu);
        TLOG_INFO("CreateKernel of a new generation accepted", "kernel=%s session=%s generation=%d",
                  cmd->kernel_id, cmd->session_id, cmd->generation);
        return KBUS_DONE;
    }
    k = ts_calloc(1, sizeof(*k));
    ts_strlcpy(k->id, cmd->kernel_id, sizeof(k->id));
    ts_strlcpy(k->session_id, cmd->session_id, sizeof(k->session_id));
    ts_strlcpy(k->access_key, cmd->access_key, sizeof(k->access_key));
    ts_strlcpy(k->correlation_id, correlation_id ? correlation_id : "", sizeof(k->correlation_id));
    ts_strlcpy(k->status, "pulling", sizeof(k->status));
    k->generation = cmd->generation;
    k->cmd_len = protobuf_c_message_get_packed_size(&cmd->base);
    k->cmd_bytes = ts_malloc(k->cmd_len + 1);
    protobuf_c_message_pack(&cmd->base, k->cmd_bytes);
    if (!_save(ks, k)) {
        pthread_mutex_unlock(&ks->mu);
        free(k->cmd_bytes);
        free(k);
        ts_err_set(reason, "cannot record kernel %s in the state dir", cmd->kernel_id);
        return KBUS_RETRY;
    }
    k->next = ks->all;
    ks->all = k;
    _enqueue(ks, k, TASK_CREATE, NULL, 0);
    pthread_mutex_unlock(&ks->mu);
    TLOG_INFO("CreateKernel accepted", "kernel=%s session=%s image=%s", cmd->kernel_id,
              cmd->session_id, cmd->image);
    return KBUS_DONE;
}

kbus_result kernels_destroy(kernels *ks, const Tessera__V1__DestroyKernel *cmd,
                            const char *correlation_id, ts_err *reason)
{
    const char *why = cmd->reason && *cmd->reason ? cmd->reason : "user-requested";
    int grace = cmd->force ? 0 : cmd->grace_ms > 0 ? cmd->grace_ms : ks->o.destroy_grace_ms;
    pthread_mutex_lock(&ks->mu);
    krec *k = _valid_id(cmd->kernel_id) ? _find(ks, cmd->kernel_id) : NULL;
    if (!k) {
        pthread_mutex_unlock(&ks->mu);
        /* unknown here: a leftover in the runtime is still removed; either way
         * the registry gets its answer */
        if (_valid_id(cmd->kernel_id)) {
            ts_err e = {{0}};
            if (!runtime_destroy(ks->o.rt, cmd->kernel_id, grace, &e))
                TLOG_WARN("destroy of an unknown kernel failed", "kernel=%s error=\"%s\"",
                          cmd->kernel_id, e.msg);
        }
        TLOG_INFO("DestroyKernel for an unknown kernel: answered terminated", "kernel=%s",
                  cmd->kernel_id);
        kev_ctx c = {.bus = ks->o.bus,
                     .agent_id = ks->o.agent_id,
                     .session_id = cmd->session_id,
                     .kernel_id = cmd->kernel_id,
                     .correlation_id = correlation_id,
                     .generation = cmd->generation};
        kev_terminated(&c, -1, why);
        (void)reason;
        return KBUS_DONE;
    }
    if (cmd->generation < _latest_generation(k)) {
        /* a destroy from before a restart: the kernel it meant is gone already */
        int have = _latest_generation(k);
        pthread_mutex_unlock(&ks->mu);
        TLOG_INFO("stale DestroyKernel: answered terminated", "kernel=%s generation=%d have=%d",
                  cmd->kernel_id, cmd->generation, have);
        kev_ctx c = {.bus = ks->o.bus,
                     .agent_id = ks->o.agent_id,
                     .session_id = cmd->session_id,
                     .kernel_id = cmd->kernel_id,
                     .correlation_id = correlation_id,
                     .generation = cmd->generation};
        kev_terminated(&c, -1, why);
        return KBUS_DONE;
    }
    if (strcmp(k->status, "terminated") != 0) {
        if (strcmp(k->status, "terminating") != 0) {
            ts_strlcpy(k->status, "terminating", sizeof(k->status));
            (void)_save(ks, k);
        }
    }
    _enqueue(ks, k, TASK_DESTROY, why, grace);
    pthread_mutex_unlock(&ks->mu);
    TLOG_INFO("DestroyKernel accepted", "kernel=%s reason=\"%s\" grace_ms=%d", cmd->kernel_id, why,
              grace);
    return KBUS_DONE;
}

/* ---- views ------------------------------------------------------------------------ */

static void _view(const krec *k, kernel_view *v)
{
    memset(v, 0, sizeof(*v));
    ts_strlcpy(v->kernel_id, k->id, sizeof(v->kernel_id));
    ts_strlcpy(v->session_id, k->session_id, sizeof(v->session_id));
    ts_strlcpy(v->access_key, k->access_key, sizeof(v->access_key));
    ts_strlcpy(v->status, k->status, sizeof(v->status));
    ts_strlcpy(v->runtime_path, k->runtime_path, sizeof(v->runtime_path));
    ts_strlcpy(v->reason, k->reason, sizeof(v->reason));
    v->exit_code = k->exit_code;
    v->generation = k->generation;
    memcpy(v->ports, k->ports, sizeof(k->ports[0]) * (size_t)k->n_ports);
    v->n_ports = k->n_ports;
    slots_clear(&v->slots);
    Tessera__V1__CreateKernel *cmd = _cmd(k);
    if (!cmd) return;
    for (size_t i = 0; i < cmd->n_slots; i++) {
        ts_err e;
        if (!slots_set(&v->slots, cmd->slots[i]->name, cmd->slots[i]->amount, &e)) continue;
    }
    for (size_t i = 0; i < cmd->n_devices && v->n_devices < KERNEL_MAX_DEVICES; i++) {
        kernel_device *d = &v->devices[v->n_devices++];
        ts_strlcpy(d->device_id, cmd->devices[i]->device_id, sizeof(d->device_id));
        ts_strlcpy(d->slot_name, cmd->devices[i]->slot_name, sizeof(d->slot_name));
        ts_strlcpy(d->amount, cmd->devices[i]->amount, sizeof(d->amount));
    }
    tessera__v1__create_kernel__free_unpacked(cmd, NULL);
}

int kernels_snapshot(kernels *ks, bool with_terminated, kernel_view **out)
{
    pthread_mutex_lock(&ks->mu);
    int n = 0;
    for (krec *k = ks->all; k; k = k->next)
        n++;
    *out = ts_calloc((size_t)n + 1, sizeof(kernel_view));
    int i = 0;
    for (krec *k = ks->all; k; k = k->next) {
        if (!with_terminated && strcmp(k->status, "terminated") == 0) continue;
        _view(k, &(*out)[i++]);
    }
    pthread_mutex_unlock(&ks->mu);
    return i;
}

bool kernels_get(kernels *ks, const char *kernel_id, kernel_view *out)
{
    pthread_mutex_lock(&ks->mu);
    krec *k = _find(ks, kernel_id);
    if (k) _view(k, out);
    pthread_mutex_unlock(&ks->mu);
    return k != NULL;
}

void kernel_views_free(kernel_view *v)
{
    free(v);
}
