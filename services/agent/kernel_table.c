/* kernel_table.c: the table of kernels, its task queues and workers (kernel_table.h). */
#include "services/agent/kernel_table.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "libcommon/log.h"

kernels *ktab_new(const kernels_opts *o, ts_err *err)
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

static void _join_workers(kernels *ks)
{
    for (int i = 0; i < ks->n_workers; i++)
        pthread_join(ks->workers[i], NULL);
    ks->n_workers = 0;
}

void ktab_free(kernels *ks)
{
    if (!ks) return;
    ktab_stop(ks);
    _join_workers(ks);
    free(ks->workers);
    while (ks->all) {
        krec *k = ks->all;
        ks->all = k->next;
        krec_free(k);
    }
    pthread_cond_destroy(&ks->cv);
    pthread_mutex_destroy(&ks->mu);
    free(ks->meta_dir);
    free(ks);
}

void ktab_stop(kernels *ks)
{
    pthread_mutex_lock(&ks->mu);
    ks->stop = true;
    pthread_cond_broadcast(&ks->cv);
    pthread_mutex_unlock(&ks->mu);
}

bool ktab_stopping(kernels *ks)
{
    pthread_mutex_lock(&ks->mu);
    bool stop = ks->stop;
    pthread_mutex_unlock(&ks->mu);
    return stop;
}

krec *ktab_find(kernels *ks, const char *id)
{
    for (krec *k = ks->all; k; k = k->next)
        if (strcmp(k->id, id) == 0) return k;
    return NULL;
}

/* Put k at the end of the ready queue unless it runs a task or waits there. */
static void _make_ready(kernels *ks, krec *k)
{
    if (k->busy || k->in_ready) return;
    k->in_ready = true;
    k->next_ready = NULL;
    if (ks->ready_tail)
        ks->ready_tail->next_ready = k;
    else
        ks->ready_head = k;
    ks->ready_tail = k;
    pthread_cond_broadcast(&ks->cv);
}

void ktab_enqueue(kernels *ks, krec *k, ktask_kind kind, const char *reason, int grace_ms)
{
    ktask *t = ts_calloc(1, sizeof(*t));
    t->kind = kind;
    ts_strlcpy(t->reason, reason ? reason : "", sizeof(t->reason));
    t->grace_ms = grace_ms;
    if (k->tail)
        k->tail->next = t;
    else
        k->head = t;
    k->tail = t;
    if (kind == KTASK_DESTROY) {
        atomic_store(&k->cancel, true);
        k->destroy_queued = true;
    }
    _make_ready(ks, k);
}

void ktab_persist(kernels *ks, const krec *k)
{
    /* best effort: krec_save logs a failure; the record in memory stays
     * right and the next save writes it whole */
    TS_IGNORE(krec_save(ks->meta_dir, k));
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
        ktask *t = k->head;
        if (!t) continue;
        k->head = t->next;
        if (!k->head) k->tail = NULL;
        k->busy = true;
        pthread_mutex_unlock(&ks->mu);

        tlog_ctx_kernel(k->id);
        tlog_ctx_session(k->session_id);
        ks->run(ks, k, t);
        tlog_ctx_clear();
        free(t);

        pthread_mutex_lock(&ks->mu);
        k->busy = false;
        if (k->head) _make_ready(ks, k);
    }
    pthread_mutex_unlock(&ks->mu);
    return NULL;
}

bool ktab_start_workers(kernels *ks, int n, ktab_run_fn run, ts_err *err)
{
    ks->run = run;
    ks->workers = ts_calloc((size_t)n, sizeof(pthread_t));
    for (int i = 0; i < n; i++) {
        int rc = pthread_create(&ks->workers[i], NULL, _worker, ks);
        if (rc != 0) {
            ts_err_set(err, "worker thread: %s", strerror(rc));
            return false;
        }
        ks->n_workers = i + 1;
    }
    return true;
}

kev_ctx ktab_kev(kernels *ks, const krec *k)
{
    return (kev_ctx){.bus = ks->o.bus,
                     .agent_id = ks->o.agent_id,
                     .session_id = k->session_id,
                     .kernel_id = k->id,
                     .correlation_id = k->correlation_id[0] ? k->correlation_id : NULL,
                     .generation = k->generation};
}

void ktab_set_status(kernels *ks, krec *k, const char *status)
{
    pthread_mutex_lock(&ks->mu);
    krec_progress_status(k, status);
    ktab_persist(ks, k);
    pthread_mutex_unlock(&ks->mu);
}

void ktab_terminated(kernels *ks, krec *k, int exit_code, const char *reason)
{
    pthread_mutex_lock(&ks->mu);
    krec_terminate(k, exit_code, reason);
    ktab_persist(ks, k);
    pthread_mutex_unlock(&ks->mu);
    kev_ctx c = ktab_kev(ks, k);
    kev_terminated(&c, exit_code, reason);
}

void ktab_gpu_cleanup(kernels *ks, const char *id)
{
    if (!ks->o.gpu_conf_dir) return;
    char *dir = ts_asprintf("%s/%s", ks->o.gpu_conf_dir, id);
    gpu_kernel_cleanup(dir);
    free(dir);
}
