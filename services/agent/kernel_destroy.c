/* kernel_destroy.c: the tasks that end a kernel (kernel_destroy.h). */
#include "services/agent/kernel_destroy.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "libcommon/log.h"
#include "services/agent/runtime_destroy.h"
#include "services/agent/usage.h"

#define DESTROY_TRIES 3

void kernel_destroy_run(kernels *ks, krec *k, const ktask *t)
{
    const char *reason = t->reason[0] ? t->reason : "user-requested";
    pthread_mutex_lock(&ks->mu);
    bool done = strcmp(k->status, "terminated") == 0;
    int code = k->exit_code;
    bool exited = strcmp(k->status, "exited") == 0;
    /* a restart (the registry's, or a newer generation waiting): the disk
     * with /home/work stays for the next generation */
    bool keep_home = k->restarting || k->next_cmd;
    if (!done) {
        ts_strlcpy(k->status, "terminating", sizeof(k->status));
        ktab_persist(ks, k);
    }
    pthread_mutex_unlock(&ks->mu);
    if (done) { /* a repeated destroy: answer again so the registry can finish */
        if (!keep_home) runtime_discard_kept(ks->o.rt, k->id); /* no restart follows */
        kev_ctx c = ktab_kev(ks, k);
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
    /* its GPUs: usage.h remembers them from the heartbeats' views */
    usage_kernel uk = {k->id, k->session_id, k->access_key, k->generation, false, {0}, 0};
    usage_track(ks->o.usage, ks->o.rt, &uk);
    for (int i = 0; i < DESTROY_TRIES && !ok; i++) {
        kernel_usage last;
        bool have_last = false;
        destroy_opts o = {.grace_ms = t->grace_ms,
                          .keep_home = keep_home,
                          .last = &last,
                          .have_last = &have_last};
        ok = runtime_destroy_with(ks->o.rt, k->id, &o, &err);
        if (have_last && ks->o.bus &&
            !usage_final(ks->o.usage, ks->o.bus, ks->o.agent_id, &uk, &last))
            TLOG_DEBUG("no final usage sample", "kernel=%s", k->id);
        if (!ok) {
            TLOG_WARN("kernel destroy failed", "try=%d error=\"%s\"", i + 1, err.msg);
            usleep(500 * 1000);
        }
    }
    ktab_gpu_cleanup(ks, k->id);
    char why[256];
    if (ok)
        ts_strlcpy(why, reason, sizeof(why));
    else
        snprintf(why, sizeof(why), "%s (cleanup incomplete: %s)", reason, err.msg);
    TLOG_INFO("kernel terminated", "exit_code=%d reason=\"%s\" home_kept=%s", code, why,
              keep_home && ok ? "true" : "false");
    ktab_terminated(ks, k, code, why);
}

void kernel_report_lost_run(kernels *ks, krec *k, const ktask *t)
{
    ktab_gpu_cleanup(ks, k->id);
    ktab_terminated(ks, k, -1, t->reason);
}

/* The record as a new creation finds it (under the lock). */
static void _start_over(krec *k)
{
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
    k->restarting = false;
    k->exited_at_ms = k->terminated_at_ms = 0;
    bool destroy = false; /* a destroy of the new generation queued behind this create */
    for (ktask *q = k->head; q; q = q->next)
        destroy = destroy || q->kind == KTASK_DESTROY;
    k->destroy_queued = destroy;
    atomic_store(&k->cancel, destroy);
    if (destroy) ts_strlcpy(k->status, "terminating", sizeof(k->status));
}

void kernel_destroy_promote(kernels *ks, krec *k)
{
    pthread_mutex_lock(&ks->mu);
    if (!k->next_cmd) {
        pthread_mutex_unlock(&ks->mu);
        return;
    }
    if (strcmp(k->status, "terminated") != 0) {
        pthread_mutex_unlock(&ks->mu);
        ktask t = {.kind = KTASK_DESTROY, .grace_ms = ks->o.destroy_grace_ms};
        ts_strlcpy(t.reason, "restarting", sizeof(t.reason));
        kernel_destroy_run(ks, k, &t);
        pthread_mutex_lock(&ks->mu);
    }
    _start_over(k);
    ktab_persist(ks, k);
    pthread_mutex_unlock(&ks->mu);
    TLOG_INFO("kernel created again (new generation)", "generation=%d", k->generation);
}
