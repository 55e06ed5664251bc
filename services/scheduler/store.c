/* store.c: the scheduler's own Redis records (store.h). Reads and writes
 * only: what they mean at start-up and after a Redis loss is recovery.c's. */
#include "services/scheduler/store.h"

#include "libcommon/log.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SCAN_COUNT "1000"
#define CHUNK 512

/* ARGV: alloc keys. Per key: {session, agent, slots, devs, usage} (false when gone). */
static rds_script fetch_allocs = {
    .source = "local out = {}\n"
              "for i = 1, #ARGV do\n"
              "  out[i] = redis.call('HMGET', ARGV[i], 'session', 'agent', 'slots', 'devs', "
              "'usage')\n"
              "end\n"
              "return out\n"};

/* ARGV: keys. 1/0 per key. */
static rds_script exists_many = {.source = "local out = {}\n"
                                           "for i = 1, #ARGV do out[i] = redis.call('EXISTS', "
                                           "ARGV[i]) end\n"
                                           "return out\n"};

char *sched_key(const char *kind, const char *id)
{
    return ts_asprintf("%s%s%s", sched_cfg.key_prefix, kind, id ? id : "");
}

static redisReply *cmd(sched_svc *x, int argc, const char **argv, const size_t *lens, ts_err *err)
{
    redisReply *rep = rds_command(x->r, argc, argv, lens, err);
    if (rep && rep->type == REDIS_REPLY_ERROR) {
        ts_err_set(err, "Redis: %s", rep->str);
        freeReplyObject(rep);
        return NULL;
    }
    return rep;
}

static bool cmd_ok(sched_svc *x, int argc, const char **argv, const size_t *lens, ts_err *err)
{
    redisReply *rep = cmd(x, argc, argv, lens, err);
    if (rep) freeReplyObject(rep);
    return rep != NULL;
}

void sched_store_free_ids(char **ids, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(ids[i]);
    free(ids);
}

/* Every key matching <prefix><pattern> (SCAN), each without its first skip
 * bytes. NULL-terminated, heap; NULL on failure. */
static char **scan_keys(sched_svc *x, const char *pattern, size_t skip, size_t *n, ts_err *err)
{
    char *match = sched_key(pattern, NULL);
    char cursor[32] = "0";
    char **keys = NULL;
    size_t cap = 0;
    *n = 0;
    do {
        const char *argv[] = {"SCAN", cursor, "MATCH", match, "COUNT", SCAN_COUNT};
        redisReply *rep = cmd(x, 6, argv, NULL, err);
        if (!rep || rep->type != REDIS_REPLY_ARRAY || rep->elements != 2) {
            if (rep) freeReplyObject(rep);
            sched_store_free_ids(keys, *n);
            free(match);
            return NULL;
        }
        ts_strlcpy(cursor, rep->element[0]->str, sizeof(cursor));
        redisReply *arr = rep->element[1];
        for (size_t i = 0; i < arr->elements; i++) {
            if (arr->element[i]->len < skip) continue;
            if (*n + 2 > cap) {
                cap = cap ? cap * 2 : 256;
                keys = ts_realloc(keys, sizeof(*keys) * cap);
            }
            keys[(*n)++] = ts_strndup(arr->element[i]->str + skip, arr->element[i]->len - skip);
        }
        freeReplyObject(rep);
    } while (strcmp(cursor, "0") != 0);
    if (!keys) keys = ts_calloc(1, sizeof(*keys));
    keys[*n] = NULL;
    free(match);
    return keys;
}

/* The keys <prefix><kind><ids[i]> (heap). */
static char **keys_of(const char *kind, const char *const *ids, size_t n)
{
    char **keys = ts_calloc(n + 1, sizeof(*keys));
    for (size_t i = 0; i < n; i++)
        keys[i] = sched_key(kind, ids[i]);
    return keys;
}

/* script over keys[0..n) in chunks; fn(ctx, i, answer for key i) per key. False
 * when Redis failed or answered with something that is not one entry per key. */
static bool eval_chunks(sched_svc *x, rds_script *script, char **keys, size_t n,
                        void (*fn)(void *ctx, size_t i, const redisReply *r), void *ctx,
                        ts_err *err)
{
    for (size_t off = 0; off < n; off += CHUNK) {
        size_t m = n - off < CHUNK ? n - off : CHUNK;
        redisReply *rep = rds_eval(x->r, script, 0, (int)m, (const char **)keys + off, NULL, err);
        if (!rep) return false;
        if (rep->type != REDIS_REPLY_ARRAY || rep->elements != m) {
            ts_err_set(err, "Redis: unexpected reply to a script over %zu keys", m);
            freeReplyObject(rep);
            return false;
        }
        for (size_t i = 0; i < m; i++)
            fn(ctx, off + i, rep->element[i]);
        freeReplyObject(rep);
    }
    return true;
}

static void exists_fn(void *ctx, size_t i, const redisReply *r)
{
    ((bool *)ctx)[i] = r->integer == 1;
}

static void del_keys(sched_svc *x, char **keys, size_t n)
{
    for (size_t off = 0; off < n; off += CHUNK) {
        size_t m = n - off < CHUNK ? n - off : CHUNK;
        const char **argv = ts_calloc(m + 1, sizeof(*argv));
        argv[0] = "DEL";
        for (size_t i = 0; i < m; i++)
            argv[i + 1] = keys[off + i];
        ts_err err;
        if (!cmd_ok(x, (int)m + 1, argv, NULL, &err))
            TLOG_WARN("could not delete records", "count=%zu error=\"%s\"", m, err.msg);
        free(argv);
    }
}

bool sched_store_exists(sched_svc *x, const char *kind, const char *id, bool *yes, ts_err *err)
{
    char *key = sched_key(kind, id);
    const char *argv[] = {"EXISTS", key};
    redisReply *rep = cmd(x, 2, argv, NULL, err);
    free(key);
    if (!rep) return false;
    *yes = rep->type == REDIS_REPLY_INTEGER && rep->integer == 1;
    freeReplyObject(rep);
    return true;
}

bool sched_store_set_alive(sched_svc *x, ts_err *err)
{
    char *key = sched_key("sched:alive", NULL);
    const char *argv[] = {"SET", key, "1"};
    bool ok = cmd_ok(x, 3, argv, NULL, err);
    free(key);
    return ok;
}

/* ---- agent info ---------------------------------------------------------------------------- */

bool sched_store_put_agent_info(sched_svc *x, const char *id, const sched_agent_info *ai)
{
    if (x->redis_lost) return false;
    char val[SCHED_ID_MAX * (SCHED_MAX_DEVICES + 3)];
    size_t off = (size_t)snprintf(val, sizeof(val), "%s %s ", ai->group, ai->arch);
    for (int d = 0; d < ai->ndev && off < sizeof(val) - SCHED_ID_MAX - 2; d++) {
        off += (size_t)snprintf(val + off, sizeof(val) - off, "%s", d ? "," : "");
        for (const char *p = ai->dev_id[d]; *p && off < sizeof(val) - 2; p++)
            val[off++] = (*p == ' ' || *p == ',') ? '_' : *p;
        val[off] = '\0';
    }
    char *key = sched_key("sched:agents", NULL);
    const char *argv[] = {"HSET", key, id, val};
    ts_err err;
    bool ok = cmd_ok(x, 4, argv, NULL, &err);
    if (!ok) TLOG_WARN("agent info not written", "error=\"%s\"", err.msg);
    free(key);
    return ok;
}

/* "<group> <arch> <dev,dev,...>" -> ai; false when it is not that. */
static bool parse_agent_info(const char *val, sched_agent_info *ai)
{
    char devs[2048] = "";
    memset(ai, 0, sizeof(*ai));
    if (sscanf(val, "%63s %23s %2047s", ai->group, ai->arch, devs) < 2) return false;
    char *save = NULL;
    for (char *tok = strtok_r(devs, ",", &save); tok && ai->ndev < SCHED_MAX_DEVICES;
         tok = strtok_r(NULL, ",", &save))
        ts_strlcpy(ai->dev_id[ai->ndev++], tok, SCHED_ID_MAX);
    return true;
}

bool sched_store_each_agent_info(sched_svc *x, sched_agent_info_fn fn, void *ctx, ts_err *err)
{
    char *key = sched_key("sched:agents", NULL);
    const char *argv[] = {"HGETALL", key};
    redisReply *rep = cmd(x, 2, argv, NULL, err);
    free(key);
    if (!rep) return false;
    for (size_t i = 0; rep->type == REDIS_REPLY_ARRAY && i + 1 < rep->elements; i += 2) {
        sched_agent_info ai;
        if (parse_agent_info(rep->element[i + 1]->str, &ai)) fn(ctx, rep->element[i]->str, &ai);
    }
    freeReplyObject(rep);
    return true;
}

/* ---- allocations --------------------------------------------------------------------------- */

typedef struct alloc_walk {
    char **kernels;
    sched_alloc_fn fn;
    void *ctx;
} alloc_walk;

static const char *field(const redisReply *f, size_t i)
{
    return f->element[i]->type == REDIS_REPLY_STRING ? f->element[i]->str : "";
}

static void alloc_fn(void *vctx, size_t i, const redisReply *f)
{
    alloc_walk *w = vctx;
    if (f->type != REDIS_REPLY_ARRAY || f->elements != 5 ||
        f->element[0]->type != REDIS_REPLY_STRING || f->element[1]->type != REDIS_REPLY_STRING)
        return;
    sched_alloc_rec a = {w->kernels[i], field(f, 0), field(f, 1),
                         field(f, 2),   field(f, 3), field(f, 4)};
    w->fn(w->ctx, &a);
}

bool sched_store_each_alloc(sched_svc *x, sched_alloc_fn fn, void *ctx, size_t *scanned,
                            ts_err *err)
{
    size_t n, skip = strlen(sched_cfg.key_prefix) + strlen("alloc:");
    char **kernels = scan_keys(x, "alloc:*", skip, &n, err);
    if (!kernels) return false;
    char **keys = keys_of("alloc:", (const char *const *)kernels, n);
    alloc_walk w = {kernels, fn, ctx};
    bool ok = eval_chunks(x, &fetch_allocs, keys, n, alloc_fn, &w, err);
    if (!ok) ts_err_prefix(err, "reading alloc records");
    sched_store_free_ids(keys, n);
    sched_store_free_ids(kernels, n);
    if (scanned) *scanned = n;
    return ok;
}

typedef struct kernels_of {
    const char *session_id;
    char **out;
    int n;
} kernels_of;

static void kernel_fn(void *vctx, const sched_alloc_rec *a)
{
    kernels_of *k = vctx;
    if (strcmp(a->session_id, k->session_id) != 0) return;
    k->out = ts_realloc(k->out, sizeof(*k->out) * (size_t)(k->n + 1));
    k->out[k->n++] = ts_strdup(a->kernel_id);
}

bool sched_store_find_kernels(sched_svc *x, const char *session_id, char ***out, int *n,
                              ts_err *err)
{
    *out = NULL;
    *n = 0;
    bool held;
    if (!sched_store_exists(x, "sess:", session_id, &held, err)) return false;
    if (!held) return true;
    kernels_of k = {session_id, NULL, 0};
    if (!sched_store_each_alloc(x, kernel_fn, &k, NULL, err)) {
        sched_store_free_ids(k.out, (size_t)k.n);
        return false;
    }
    *out = k.out;
    *n = k.n;
    TLOG_INFO("kernels of a session found by scanning", "kernels=%d", k.n);
    return true;
}

/* ---- pending records and tombstones -------------------------------------------------------- */

bool sched_store_ended(sched_svc *x, const char *const *session_ids, size_t n, bool *ended,
                       ts_err *err)
{
    char **keys = keys_of("sched:done:", session_ids, n);
    bool ok = eval_chunks(x, &exists_many, keys, n, exists_fn, ended, err);
    sched_store_free_ids(keys, n);
    return ok;
}

bool sched_store_pending_ids(sched_svc *x, char ***ids, size_t *n, ts_err *err)
{
    *ids = scan_keys(x, "sched:pending:*", strlen(sched_cfg.key_prefix) + strlen("sched:pending:"),
                     n, err);
    return *ids != NULL;
}

bool sched_store_get_pending(sched_svc *x, const char *session_id, Tessera__V1__SessionEnqueued **m,
                             ts_err *err)
{
    *m = NULL;
    char *key = sched_key("sched:pending:", session_id);
    const char *argv[] = {"GET", key};
    redisReply *rep = cmd(x, 2, argv, NULL, err);
    free(key);
    if (!rep) return false;
    if (rep->type == REDIS_REPLY_STRING)
        *m = tessera__v1__session_enqueued__unpack(NULL, rep->len, (const uint8_t *)rep->str);
    freeReplyObject(rep);
    if (*m && strcmp((*m)->session_id, session_id) != 0) {
        tessera__v1__session_enqueued__free_unpacked(*m, NULL);
        *m = NULL;
    }
    return true;
}

bool sched_store_put_pending(sched_svc *x, const Tessera__V1__SessionEnqueued *m, ts_err *err)
{
    size_t len = tessera__v1__session_enqueued__get_packed_size(m);
    uint8_t *buf = ts_malloc(len ? len : 1);
    tessera__v1__session_enqueued__pack(m, buf);
    char *key = sched_key("sched:pending:", m->session_id);
    const char *argv[] = {"SET", key, (const char *)buf};
    size_t lens[] = {3, strlen(key), len};
    bool ok = cmd_ok(x, 3, argv, lens, err);
    free(key);
    free(buf);
    return ok;
}

void sched_store_unpersist_later(sched_svc *x, const char *session_id)
{
    if (x->nunpersist == x->capunpersist) {
        x->capunpersist = x->capunpersist ? x->capunpersist * 2 : 256;
        x->unpersist = ts_realloc(x->unpersist, sizeof(*x->unpersist) * x->capunpersist);
    }
    x->unpersist[x->nunpersist++] = ts_strdup(session_id);
}

void sched_store_unpersist_flush(sched_svc *x)
{
    if (!x->nunpersist || x->redis_lost) return;
    /* Only once what was published is acknowledged: a crash before that finds
     * the pending record and publishes SessionScheduled again. */
    if (!kbus_flush(x->bus, 10000)) {
        TLOG_WARN("bus flush timed out: pending records kept for now", "count=%zu", x->nunpersist);
        return;
    }
    char **keys = keys_of("sched:pending:", (const char *const *)x->unpersist, x->nunpersist);
    del_keys(x, keys, x->nunpersist);
    sched_store_free_ids(keys, x->nunpersist);
    for (size_t i = 0; i < x->nunpersist; i++)
        free(x->unpersist[i]);
    x->nunpersist = 0;
}
