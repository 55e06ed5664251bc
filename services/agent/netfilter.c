/* netfilter.c: the agent's iptables rules for a CNI network, on the host (netfilter.h). */
#include "services/agent/netfilter.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "libcommon/ipt.h"
#include "services/agent/netfilter_records.h"

/* ---- on the host ------------------------------------------------------------------ */

/* One thing at a time (_busy): a setup, a removal, or a batch of changes
 * (netfilter.h). */
static pthread_mutex_t _mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t _cv = PTHREAD_COND_INITIALIZER;
static bool _busy;

typedef struct change {
    const netfilter_net *net;
    bool add;
    netfilter_kernel k; /* DEL: the id only */
    bool done, ok;
    ts_err err;
    struct change *next;
} change;
static change *_queue;

static void _exclusive_begin(void)
{
    pthread_mutex_lock(&_mu);
    while (_busy)
        pthread_cond_wait(&_cv, &_mu);
    _busy = true;
    pthread_mutex_unlock(&_mu);
}

static void _exclusive_end(void)
{
    pthread_mutex_lock(&_mu);
    _busy = false;
    pthread_cond_broadcast(&_cv);
    pthread_mutex_unlock(&_mu);
}

static bool _restore(const char *rules, ts_err *err)
{
    const char *args[] = {"--noflush", "--wait=10", NULL};
    return ipt_run("iptables-restore", args, rules, NULL, err);
}

static bool _save(char **out, ts_err *err)
{
    const char *args[] = {NULL};
    return ipt_run("iptables-save", args, NULL, out, err);
}

static bool _net_ok(const netfilter_net *n, ts_err *err)
{
    if (nfrec_name_ok(n->network, 15)) return true;
    ts_err_set(err, "network '%s': want 1 to 15 letters, digits, '_', '.', '-'", n->network);
    return false;
}

/* Exclusive: the records (those of kernels gone from kernels_dir dropped),
 * the tables, one restore. */
static bool _setup_now(const netfilter_net *n, ts_err *err)
{
    int nk = 0;
    netfilter_kernel *ks = nfrec_list(n, &nk);
    for (int i = 0; n->kernels_dir && i < nk;) {
        char *kdir = ts_asprintf("%s/%s", n->kernels_dir, ks[i].id);
        bool there = access(kdir, F_OK) == 0;
        free(kdir);
        if (there) {
            i++;
            continue;
        }
        nfrec_remove(n, &ks[i]);
        ks[i] = ks[--nk];
    }
    char *save = NULL;
    bool ok = _save(&save, err);
    if (ok) {
        char *rules = netfilter_plan_setup(n, ks, nk, save);
        ok = _restore(rules, err);
        free(rules);
    }
    free(save);
    free(ks);
    if (!ok) ts_err_prefix(err, "network %s: rules", n->network);
    return ok;
}

bool netfilter_setup(const netfilter_net *n, ts_err *err)
{
    if (!_net_ok(n, err)) return false;
    _exclusive_begin();
    bool ok = _setup_now(n, err);
    _exclusive_end();
    return ok;
}

/* A plan's lines between "*filter" and "COMMIT" into f; frees the plan. */
static void _body(FILE *f, char *plan)
{
    size_t head = strlen("*filter\n"), n = strlen(plan);
    if (n > head + strlen("COMMIT\n")) fwrite(plan + head, 1, n - head - strlen("COMMIT\n"), f);
    free(plan);
}

/* Exclusive: a batch of one network's changes, in order, in one restore
 * (records first: what a rebuild makes); refused (a chain or rule is not
 * what the records say): rebuild. Sets each change's ok and err. */
static void _apply(change *batch)
{
    const netfilter_net *n = batch->net;
    int nr = 0;
    netfilter_kernel *recs = nfrec_list(n, &nr);
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    if (!f) ts_panic("open_memstream: out of memory");
    fputs("*filter\n", f);
    int changes = 0;
    for (change *c = batch; c; c = c->next) {
        c->ok = true;
        if (c->add) {
            char *plan = netfilter_plan_add(n, &c->k, recs, nr);
            for (int i = 0; i < nr;) {
                if (!netfilter_plan_replaced(&recs[i], &c->k)) {
                    i++;
                    continue;
                }
                nfrec_remove(n, &recs[i]);
                recs[i] = recs[--nr];
            }
            if (!nfrec_write(n, &c->k, &c->err)) {
                c->ok = false;
                free(plan);
                continue;
            }
            _body(f, plan);
            recs = ts_realloc(recs, sizeof(*recs) * (size_t)(nr + 1));
            recs[nr++] = c->k;
        } else {
            int at = -1;
            for (int i = 0; i < nr && at < 0; i++)
                if (strcmp(recs[i].id, c->k.id) == 0) at = i;
            if (at < 0) continue; /* nothing of it: nothing to do */
            _body(f, netfilter_plan_del(n, &recs[at], recs, nr));
            nfrec_remove(n, &recs[at]);
            recs[at] = recs[--nr];
        }
        changes++;
    }
    fputs("COMMIT\n", f);
    fclose(f);
    ts_err quick = {{0}}, err = {{0}};
    if (changes && !_restore(text, &quick) && !_setup_now(n, &err)) {
        for (change *c = batch; c; c = c->next) {
            if (!c->ok) continue;
            c->ok = false;
            c->err = err;
            if (c->add) nfrec_remove(n, &c->k);
        }
    }
    free(text);
    free(recs);
}

/* Queue c and wait until it is applied (by this thread or another). */
static bool _submit(change *c, ts_err *err)
{
    pthread_mutex_lock(&_mu);
    change **tail = &_queue;
    while (*tail)
        tail = &(*tail)->next;
    c->next = NULL;
    *tail = c;
    while (!c->done) {
        if (_busy) {
            pthread_cond_wait(&_cv, &_mu);
            continue;
        }
        _busy = true;
        change *batch = NULL, **bt = &batch;
        const char *net = _queue->net->network;
        for (change **p = &_queue; *p;) {
            change *x = *p;
            if (strcmp(x->net->network, net) != 0) {
                p = &x->next;
                continue;
            }
            *p = x->next;
            x->next = NULL;
            *bt = x;
            bt = &x->next;
        }
        pthread_mutex_unlock(&_mu);
        _apply(batch);
        pthread_mutex_lock(&_mu);
        for (change *x = batch, *next; x; x = next) {
            next = x->next; /* x is its waiter's, gone once it is done */
            x->done = true;
        }
        _busy = false;
        pthread_cond_broadcast(&_cv);
    }
    bool ok = c->ok;
    if (!ok && err) *err = c->err;
    pthread_mutex_unlock(&_mu);
    return ok;
}

bool netfilter_kernel_add(const netfilter_net *n, const netfilter_kernel *k, ts_err *err)
{
    if (!_net_ok(n, err) || !nfrec_kernel_ok(k, err)) return false;
    change c = {.net = n, .add = true, .k = *k};
    return _submit(&c, err);
}

bool netfilter_kernel_record(const netfilter_net *n, const netfilter_kernel *k, ts_err *err)
{
    if (!_net_ok(n, err) || !nfrec_kernel_ok(k, err)) return false;
    _exclusive_begin();
    int nr = 0;
    netfilter_kernel *recs = nfrec_list(n, &nr);
    bool known = false;
    for (int i = 0; i < nr && !known; i++)
        known = strcmp(recs[i].id, k->id) == 0;
    bool ok = known || nfrec_write(n, k, err);
    free(recs);
    _exclusive_end();
    return ok;
}

bool netfilter_kernel_del(const netfilter_net *n, const char *kernel_id, ts_err *err)
{
    if (!_net_ok(n, err)) return false;
    change c = {.net = n, .add = false};
    ts_strlcpy(c.k.id, kernel_id, sizeof(c.k.id));
    return _submit(&c, err);
}

bool netfilter_remove(const char *network, const char *records_dir, ts_err *err)
{
    netfilter_net n = {.network = network, .records_dir = records_dir};
    if (!_net_ok(&n, err)) return false;
    _exclusive_begin();
    char *save = NULL;
    bool ok = _save(&save, err);
    char *rules = ok ? netfilter_plan_remove(network, save) : NULL;
    if (rules) ok = _restore(rules, err);
    free(rules);
    free(save);
    if (ok) nfrec_remove_all(&n);
    _exclusive_end();
    if (!ok) ts_err_prefix(err, "network %s: removing its rules", network);
    return ok;
}
