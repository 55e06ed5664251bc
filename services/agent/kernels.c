/* kernels.c: the kernels of this agent: set-up, command handlers, views (kernels.h). */
#include "services/agent/kernels.h"

#include <stdlib.h>
#include <string.h>

#include "libcommon/log.h"
#include "services/agent/runtime_destroy.h"
#include "services/agent/kernel_create.h"
#include "services/agent/kernel_destroy.h"
#include "services/agent/kernel_watch.h"

/* ---- life ------------------------------------------------------------------------- */

kernels *kernels_new(const kernels_opts *o, ts_err *err)
{
    return ktab_new(o, err);
}

void kernels_free(kernels *ks)
{
    if (!ks) return;
    ktab_stop(ks);
    kernel_watch_join(ks);
    ktab_free(ks);
}

static void _run_task(kernels *ks, krec *k, const ktask *t)
{
    switch (t->kind) {
    case KTASK_CREATE:
        kernel_destroy_promote(ks, k);
        kernel_create_run(ks, k);
        break;
    case KTASK_DESTROY:
        kernel_destroy_run(ks, k, t);
        break;
    case KTASK_REPORT_LOST:
        kernel_report_lost_run(ks, k, t);
        break;
    }
}

bool kernels_start(kernels *ks, ts_err *err)
{
    if (!ktab_start_workers(ks, ks->o.max_parallel_pulls + 4, _run_task, err)) return false;
    if (kernel_watch_start(ks, err)) return true;
    ktab_stop(ks); /* kernels_free joins the workers */
    return false;
}

/* ---- commands ------------------------------------------------------------------- */

bool kernels_valid_id(const char *id)
{
    if (!id || !*id || strlen(id) >= 64) return false;
    for (const char *p = id; *p; p++)
        if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
              *p == '-' || *p == '_' || *p == '.'))
            return false;
    return id[0] != '.';
}

/* The command handlers' log context (the consumer clears it after each record). */
static void _log_ctx(const char *kernel_id, const char *session_id)
{
    tlog_ctx_kernel(kernel_id);
    tlog_ctx_session(session_id);
}

/* KernelTerminated for a kernel this agent has no record of. */
static void _answer_terminated(kernels *ks, const char *session_id, const char *kernel_id,
                               const char *correlation_id, int generation, const char *why)
{
    kev_ctx c = {.bus = ks->o.bus,
                 .agent_id = ks->o.agent_id,
                 .session_id = session_id,
                 .kernel_id = kernel_id,
                 .correlation_id = correlation_id,
                 .generation = generation};
    kev_terminated(&c, -1, why);
}

static uint8_t *_pack(const Tessera__V1__CreateKernel *cmd, size_t *len)
{
    *len = protobuf_c_message_get_packed_size(&cmd->base);
    uint8_t *b = ts_malloc(*len + 1);
    protobuf_c_message_pack(&cmd->base, b);
    return b;
}

/* Queue k's creation, then let go of the lock. */
static void _queue_create_unlock(kernels *ks, krec *k)
{
    ktab_enqueue(ks, k, KTASK_CREATE, NULL, 0);
    pthread_mutex_unlock(&ks->mu);
}

/* A CreateKernel of a newer generation for a known kernel (a restart): what
 * is left of the current one is destroyed, then it is created again. Caller
 * holds the lock; it is released. */
static kbus_result _create_again(kernels *ks, krec *k, const Tessera__V1__CreateKernel *cmd,
                                 ts_err *reason)
{
    size_t len;
    uint8_t *b = _pack(cmd, &len);
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
    if (!krec_save(ks->meta_dir, k)) {
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
    if (destroy) ktab_enqueue(ks, k, KTASK_DESTROY, "restarting", ks->o.destroy_grace_ms);
    _queue_create_unlock(ks, k);
    TLOG_INFO("CreateKernel of a new generation accepted", "generation=%d", cmd->generation);
    return KBUS_DONE;
}

kbus_result kernels_create(kernels *ks, const Tessera__V1__CreateKernel *cmd,
                           const char *correlation_id, ts_err *reason)
{
    _log_ctx(cmd->kernel_id, cmd->session_id);
    if (!kernels_valid_id(cmd->kernel_id)) {
        ts_err_set(reason, "CreateKernel: kernel id '%.80s' is not valid", cmd->kernel_id);
        _answer_terminated(ks, cmd->session_id, cmd->kernel_id, NULL, 0, reason->msg);
        return KBUS_DONE;
    }
    pthread_mutex_lock(&ks->mu);
    krec *k = ktab_find(ks, cmd->kernel_id);
    if (k && cmd->generation <= krec_latest_generation(k)) {
        pthread_mutex_unlock(&ks->mu);
        TLOG_INFO("duplicate CreateKernel ignored", "status=%s generation=%d have=%d", k->status,
                  cmd->generation, krec_latest_generation(k));
        return KBUS_DONE;
    }
    if (k) return _create_again(ks, k, cmd, reason);
    k = ts_calloc(1, sizeof(*k));
    ts_strlcpy(k->id, cmd->kernel_id, sizeof(k->id));
    ts_strlcpy(k->session_id, cmd->session_id, sizeof(k->session_id));
    ts_strlcpy(k->access_key, cmd->access_key, sizeof(k->access_key));
    ts_strlcpy(k->correlation_id, correlation_id ? correlation_id : "", sizeof(k->correlation_id));
    ts_strlcpy(k->status, "pulling", sizeof(k->status));
    k->generation = cmd->generation;
    k->cmd_bytes = _pack(cmd, &k->cmd_len);
    if (!krec_save(ks->meta_dir, k)) {
        pthread_mutex_unlock(&ks->mu);
        krec_free(k);
        ts_err_set(reason, "cannot record kernel %s in the state dir", cmd->kernel_id);
        return KBUS_RETRY;
    }
    k->next = ks->all;
    ks->all = k;
    _queue_create_unlock(ks, k);
    TLOG_INFO("CreateKernel accepted", "image=%s", cmd->image);
    return KBUS_DONE;
}

kbus_result kernels_destroy(kernels *ks, const Tessera__V1__DestroyKernel *cmd,
                            const char *correlation_id, ts_err *reason)
{
    (void)reason; /* every DestroyKernel is answered: never retried nor rejected */
    _log_ctx(cmd->kernel_id, cmd->session_id);
    const char *why = cmd->reason && *cmd->reason ? cmd->reason : "user-requested";
    int grace = cmd->force ? 0 : cmd->grace_ms > 0 ? cmd->grace_ms : ks->o.destroy_grace_ms;
    pthread_mutex_lock(&ks->mu);
    krec *k = kernels_valid_id(cmd->kernel_id) ? ktab_find(ks, cmd->kernel_id) : NULL;
    if (!k) {
        pthread_mutex_unlock(&ks->mu);
        /* unknown here: a leftover in the runtime is still removed; either way
         * the registry gets its answer */
        if (kernels_valid_id(cmd->kernel_id)) {
            ts_err e = {{0}};
            if (!runtime_destroy(ks->o.rt, cmd->kernel_id, grace, &e))
                TLOG_WARN("destroy of an unknown kernel failed", "error=\"%s\"", e.msg);
        }
        TLOG_INFO("DestroyKernel for an unknown kernel: answered terminated", "");
        _answer_terminated(ks, cmd->session_id, cmd->kernel_id, correlation_id, cmd->generation,
                           why);
        return KBUS_DONE;
    }
    if (cmd->generation < krec_latest_generation(k)) {
        /* a destroy from before a restart: the kernel it meant is gone already */
        int have = krec_latest_generation(k);
        pthread_mutex_unlock(&ks->mu);
        TLOG_INFO("stale DestroyKernel: answered terminated", "generation=%d have=%d",
                  cmd->generation, have);
        _answer_terminated(ks, cmd->session_id, cmd->kernel_id, correlation_id, cmd->generation,
                           why);
        return KBUS_DONE;
    }
    bool persist = k->restarting != cmd->restart;
    k->restarting = cmd->restart; /* a restart's: /home/work is kept for the next generation */
    if (strcmp(k->status, "terminated") != 0 && strcmp(k->status, "terminating") != 0) {
        ts_strlcpy(k->status, "terminating", sizeof(k->status));
        persist = true;
    }
    if (persist) ktab_persist(ks, k);
    ktab_enqueue(ks, k, KTASK_DESTROY, why, grace);
    pthread_mutex_unlock(&ks->mu);
    TLOG_INFO("DestroyKernel accepted", "reason=\"%s\" grace_ms=%d restart=%s", why, grace,
              cmd->restart ? "true" : "false");
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
    Tessera__V1__CreateKernel *cmd = krec_cmd(k);
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
    krec *k = ktab_find(ks, kernel_id);
    if (k) _view(k, out);
    pthread_mutex_unlock(&ks->mu);
    return k != NULL;
}

void kernel_views_free(kernel_view *v)
{
    free(v);
}

void kernel_view_usage(const kernel_view *v, usage_kernel *out)
{
    memset(out, 0, sizeof(*out));
    out->kernel_id = v->kernel_id;
    out->session_id = v->session_id;
    out->access_key = v->access_key;
    out->generation = v->generation;
    out->running = strcmp(v->status, "running") == 0;
    for (int i = 0; i < v->n_devices && out->n_gpu < (int)TS_ARRAY_LEN(out->gpu_devices); i++)
        out->gpu_devices[out->n_gpu++] = v->devices[i].device_id;
}
