/* store.c: the scheduler's own Redis records (service.h), start-up recovery
 * and Redis loss.
 *
 * Start-up: agents from <p>sched:agents + agent:<id> capacity; allocations from
 * alloc:* adopted into the engine (a tombstoned session's are released now);
 * occupancy resynced from agent:<id>; then every <p>sched:pending:<id> is queued
 * again, or, when the session already holds slots (the scheduler died between
 * the reservation and the bus acknowledging SessionScheduled), SessionScheduled
 * is published again (consumers apply it idempotently).
 *
 * Redis loss (<p>sched:alive missing, checked by the sweep): no passes; wait for
 * the registry's rebuild (agent:* back and no <p>rebuild lock), or after
 * scheduler.rebuild_after rebuild occupancy from this instance's own model;
 * then pending records and agent info are written again and the model resynced. */
#include "libcommon/log.h"
#include "services/scheduler/service.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SCAN_COUNT "1000"
#define DEL_CHUNK 512

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

/* Every key matching <prefix><pattern> (SCAN). NULL-terminated, heap; NULL on failure. */
static char **scan_keys(sched_svc *x, const char *pattern, size_t *n, ts_err *err)
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
            for (size_t i = 0; i < *n; i++)
                free(keys[i]);
            free(keys);
            free(match);
            return NULL;
        }
        ts_strlcpy(cursor, rep->element[0]->str, sizeof(cursor));
        redisReply *arr = rep->element[1];
        for (size_t i = 0; i < arr->elements; i++) {
            if (*n + 2 > cap) {
                cap = cap ? cap * 2 : 256;
                keys = ts_realloc(keys, sizeof(*keys) * cap);
            }
            keys[(*n)++] = ts_strndup(arr->element[i]->str, arr->element[i]->len);
        }
        freeReplyObject(rep);
    } while (strcmp(cursor, "0") != 0);
    if (!keys) keys = ts_calloc(1, sizeof(*keys));
    keys[*n] = NULL;
    free(match);
    return keys;
}

static void free_keys(char **keys, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(keys[i]);
    free(keys);
}

/* flags[i] = key i exists. */
static bool keys_exist(sched_svc *x, char **keys, size_t n, bool *flags, ts_err *err)
{
    for (size_t off = 0; off < n; off += DEL_CHUNK) {
        size_t m = n - off < DEL_CHUNK ? n - off : DEL_CHUNK;
        redisReply *rep =
            rds_eval(x->r, &exists_many, 0, (int)m, (const char **)keys + off, NULL, err);
        if (!rep) return false;
        if (rep->type != REDIS_REPLY_ARRAY || rep->elements != m) {
            ts_err_set(err, "Redis: unexpected reply to EXISTS");
            freeReplyObject(rep);
            return false;
        }
        for (size_t i = 0; i < m; i++)
            flags[off + i] = rep->element[i]->integer == 1;
        freeReplyObject(rep);
    }
    return true;
}

static void del_keys(sched_svc *x, char **keys, size_t n)
{
    for (size_t off = 0; off < n; off += DEL_CHUNK) {
        size_t m = n - off < DEL_CHUNK ? n - off : DEL_CHUNK;
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
    if (!ok) TLOG_WARN("agent info not written", "agent=%s error=\"%s\"", id, err.msg);
    free(key);
    return ok;
}

/* ---- start-up ----------------------------------------------------------------------------------
 */

static bool load_agents(sched_svc *x, ts_err *err)
{
    char *key = sched_key("sched:agents", NULL);
    const char *argv[] = {"HGETALL", key};
    redisReply *rep = cmd(x, 2, argv, NULL, err);
    free(key);
    if (!rep) return false;
    int n = 0;
    for (size_t i = 0; rep->type == REDIS_REPLY_ARRAY && i + 1 < rep->elements; i += 2) {
        const char *id = rep->element[i]->str, *val = rep->element[i + 1]->str;
        sched_agent_msg m;
        memset(&m, 0, sizeof(m));
        char group[SCHED_ID_MAX] = "", arch[SCHED_ARCH_MAX] = "", devs[2048] = "";
        if (sscanf(val, "%63s %23s %2047s", group, arch, devs) < 2) continue;
        slots_t total, used;
        int32_t dc[32], du[32];
        int ndev;
        ts_err e2;
        if (!resv_read_agent(x->v, id, &total, &used, &ndev, dc, du, &e2)) continue;
        ts_strlcpy(m.id, id, sizeof(m.id));
        ts_strlcpy(m.group, group, sizeof(m.group));
        ts_strlcpy(m.arch, arch, sizeof(m.arch));
        slots_clear(&m.total);
        for (int s = 0; s < SLOTS_MAX; s++)
            if (((total.mask >> s) & 1u) && s != SLOT_CUDA_DEVICE && s != SLOT_CUDA_SHARES &&
                strncmp(slot_name(s), "cuda.", 5) != 0)
                slots_put(&m.total, s, total.v[s]);
        m.ndev = ndev > SCHED_MAX_DEVICES ? SCHED_MAX_DEVICES : ndev;
        memcpy(m.dev_cap, dc, sizeof(int32_t) * (size_t)m.ndev);
        m.has_devices = true;
        char *save = NULL, *tok = strtok_r(devs, ",", &save);
        for (int d = 0; d < m.ndev; d++) {
            if (tok) {
                ts_strlcpy(m.dev_id[d], tok, SCHED_ID_MAX);
                tok = strtok_r(NULL, ",", &save);
            } else {
                snprintf(m.dev_id[d], SCHED_ID_MAX, "%d", d);
            }
        }
        sched_on_agent_up(x, &m);
        n++;
    }
    freeReplyObject(rep);
    TLOG_INFO("agents loaded from Redis", "count=%d", n);
    return true;
}

static void parse_enc(const char *enc, slots_t *slots, resv_dev *devs, int *ndev)
{
    if (slots) slots_clear(slots);
    if (ndev) *ndev = 0;
    const char *p = enc ? enc : "";
    while (*p) {
        while (*p == ' ')
            p++;
        const char *eq = strchr(p, '=');
        if (!eq) break;
        char name[SLOT_NAME_MAX];
        size_t len = (size_t)(eq - p) < sizeof(name) - 1 ? (size_t)(eq - p) : sizeof(name) - 1;
        memcpy(name, p, len);
        name[len] = '\0';
        char *end;
        long long v = strtoll(eq + 1, &end, 10);
        if (slots) {
            int id;
            if (slot_intern(name, &id, NULL)) slots_put(slots, id, v);
        } else if (*ndev < SCHED_MAX_DEVICES) {
            devs[*ndev] = (resv_dev){atoi(name), (int32_t)v};
            (*ndev)++;
        }
        p = end;
    }
}

static void parse_usage(const char *usage, sched_rec *rec)
{
    static const char *const tags[RESV_SCOPES] = {"kp:", "user:", "project:", "domain:"};
    char buf[SCHED_ID_MAX * 5];
    ts_strlcpy(buf, usage ? usage : "", sizeof(buf));
    char *save = NULL;
    for (char *tok = strtok_r(buf, " ", &save); tok; tok = strtok_r(NULL, " ", &save))
        for (int sc = 0; sc < RESV_SCOPES; sc++)
            if (strncmp(tok, tags[sc], strlen(tags[sc])) == 0)
                ts_strlcpy(rec->scope[sc], tok + strlen(tags[sc]), SCHED_ID_MAX);
}

static void adopt_rec(sched_svc *x, sched_rec *rec)
{
    sched_agent_info *ai = rec->nk ? strmap_get(x->agents, rec->k[0].agent_id) : NULL;
    if (ai) ts_strlcpy(rec->group, ai->group, sizeof(rec->group));
    sched_group *g = ai ? sched_engine_group(x->e, ai->group) : NULL;
    if (!g) return;
    sched_session *s = sched_session_new(rec->id, rec->nk);
    ts_strlcpy(s->access_key, rec->scope[RESV_SCOPE_KEYPAIR], sizeof(s->access_key));
    ts_strlcpy(s->user_id, rec->scope[RESV_SCOPE_USER], sizeof(s->user_id));
    ts_strlcpy(s->project_id, rec->scope[RESV_SCOPE_PROJECT], sizeof(s->project_id));
    ts_strlcpy(s->domain, rec->scope[RESV_SCOPE_DOMAIN], sizeof(s->domain));
    sched_kplace *k = ts_calloc((size_t)rec->nk, sizeof(*k));
    bool ok = true;
    /* what Redis recorded must fit the model's capacity (commit asserts it) */
    for (int i = 0; i < rec->nk && ok; i++) {
        sched_agent *a = sched_group_agent(g, rec->k[i].agent_id);
        if (!a) {
            ok = false;
            break;
        }
        slots_t sum = a->used;
        int32_t dev[SCHED_MAX_DEVICES];
        memcpy(dev, a->dev_used, sizeof(dev));
        for (int j = 0; j <= i && ok; j++) {
            if (strcmp(rec->k[j].agent_id, a->id) != 0) continue;
            ts_err e2;
            ok = slots_add(&sum, &rec->k[j].slots, &e2);
            for (int d = 0; ok && d < rec->k[j].ndev; d++) {
                int dv = rec->k[j].dev[d].dev;
                ok = dv >= 0 && dv < a->ndev;
                if (ok) dev[dv] += rec->k[j].dev[d].shares;
                ok = ok && dev[dv] <= a->dev_cap[dv];
            }
        }
        ok = ok && slots_le(&sum, &a->total);
    }
    for (int i = 0; i < rec->nk && ok; i++) {
        ts_strlcpy(s->kernels[i].kernel_id, rec->k[i].kernel_id, SCHED_ID_MAX);
        s->kernels[i].slots = rec->k[i].slots;
        k[i].kernel = &s->kernels[i];
        k[i].pick.agent = sched_group_agent(g, rec->k[i].agent_id);
        ok = k[i].pick.agent != NULL;
        k[i].pick.ndev = rec->k[i].ndev;
        for (int d = 0; ok && d < rec->k[i].ndev; d++)
            k[i].pick.dev[d] = (sched_devalloc){(uint8_t)rec->k[i].dev[d].dev, rec->k[i].whole[d],
                                                rec->k[i].dev[d].shares};
    }
    ts_err err;
    if (!ok || !sched_session_finish(s, &err) ||
        !sched_engine_adopt(x->e, rec->group, s, k, rec->nk, &err))
        TLOG_WARN("allocation not adopted into the model", "session=%s", rec->id);
    free(k);
    sched_session_free(s);
}

static bool load_allocs(sched_svc *x, ts_err *err)
{
    size_t n;
    char **keys = scan_keys(x, "alloc:*", &n, err);
    if (!keys) return false;
    for (size_t off = 0; off < n; off += DEL_CHUNK) {
        size_t m = n - off < DEL_CHUNK ? n - off : DEL_CHUNK;
        redisReply *rep =
            rds_eval(x->r, &fetch_allocs, 0, (int)m, (const char **)keys + off, NULL, err);
        if (!rep || rep->type != REDIS_REPLY_ARRAY || rep->elements != m) {
            if (rep) freeReplyObject(rep);
            free_keys(keys, n);
            ts_err_set(err, "Redis: reading alloc records failed");
            return false;
        }
        size_t plen = strlen(sched_cfg.key_prefix) + strlen("alloc:");
        for (size_t i = 0; i < m; i++) {
            redisReply *f = rep->element[i];
            if (f->type != REDIS_REPLY_ARRAY || f->elements != 5 ||
                f->element[0]->type != REDIS_REPLY_STRING ||
                f->element[1]->type != REDIS_REPLY_STRING)
                continue;
            const char *kid = keys[off + i] + plen;
            sched_rec *rec = sched_rec_get_or_new(x, f->element[0]->str, "");
            if (rec->state != REC_HELD) atomic_fetch_add(&x->st.held_sessions, 1);
            rec->state = REC_HELD;
            rec->k = ts_realloc(rec->k, sizeof(*rec->k) * (size_t)(rec->nk + 1));
            sched_held *h = &rec->k[rec->nk++];
            memset(h, 0, sizeof(*h));
            ts_strlcpy(h->kernel_id, kid, sizeof(h->kernel_id));
            ts_strlcpy(h->agent_id, f->element[1]->str, sizeof(h->agent_id));
            parse_enc(f->element[2]->type == REDIS_REPLY_STRING ? f->element[2]->str : "",
                      &h->slots, NULL, NULL);
            parse_enc(f->element[3]->type == REDIS_REPLY_STRING ? f->element[3]->str : "", NULL,
                      h->dev, &h->ndev);
            for (int d = 0; d < h->ndev; d++)
                h->whole[d] = slots_get(&h->slots, SLOT_CUDA_DEVICE) > 0 &&
                              h->dev[d].shares == SLOT_SHARES_PER_DEVICE;
            ts_strlcpy(h->role, rec->nk == 1 ? "main" : "sub", sizeof(h->role));
            h->idx = rec->nk - 1;
            parse_usage(f->element[4]->type == REDIS_REPLY_STRING ? f->element[4]->str : "", rec);
        }
        freeReplyObject(rep);
    }
    free_keys(keys, n);

    /* adopt, or release what ended while nobody was listening */
    size_t nrec = strmap_len(x->recs), i = 0, pos = 0;
    sched_rec **recs = ts_calloc(nrec + 1, sizeof(*recs));
    char **tomb = ts_calloc(nrec + 1, sizeof(*tomb));
    const char *id;
    void *v;
    while (strmap_next(x->recs, &pos, &id, &v)) {
        recs[i] = v;
        tomb[i] = sched_key("sched:done:", id);
        i++;
    }
    bool *dead = ts_calloc(nrec + 1, sizeof(*dead));
    bool ok = keys_exist(x, tomb, nrec, dead, err);
    int released = 0;
    for (i = 0; ok && i < nrec; i++) {
        adopt_rec(x, recs[i]);
        if (dead[i]) {
            sched_release_rec(x, recs[i]);
            released++;
        }
    }
    free_keys(tomb, nrec);
    free(recs);
    free(dead);
    TLOG_INFO("allocations loaded from Redis", "kernels=%zu sessions=%zu released_ended=%d", n,
              nrec, released);
    return ok;
}

static bool load_pending(sched_svc *x, ts_err *err)
{
    size_t n;
    char **keys = scan_keys(x, "sched:pending:*", &n, err);
    if (!keys) return false;
    size_t plen = strlen(sched_cfg.key_prefix) + strlen("sched:pending:");
    char **tomb = ts_calloc(n + 1, sizeof(*tomb));
    for (size_t i = 0; i < n; i++)
        tomb[i] = sched_key("sched:done:", keys[i] + plen);
    bool *dead = ts_calloc(n + 1, sizeof(*dead));
    bool ok = keys_exist(x, tomb, n, dead, err);
    int queued = 0, republished = 0, dropped = 0;
    for (size_t i = 0; ok && i < n; i++) {
        const char *sid = keys[i] + plen;
        if (dead[i]) {
            sched_unpersist_later(x, sid);
            dropped++;
            continue;
        }
        const char *argv[] = {"GET", keys[i]};
        redisReply *rep = cmd(x, 2, argv, NULL, err);
        if (!rep) {
            ok = false;
            break;
        }
        Tessera__V1__SessionEnqueued *m =
            rep->type == REDIS_REPLY_STRING
                ? tessera__v1__session_enqueued__unpack(NULL, rep->len, (const uint8_t *)rep->str)
                : NULL;
        freeReplyObject(rep);
        if (!m || strcmp(m->session_id, sid) != 0) {
            TLOG_WARN("pending record undecodable: dropped", "session=%s", sid);
            if (m) tessera__v1__session_enqueued__free_unpacked(m, NULL);
            sched_unpersist_later(x, sid);
            dropped++;
            continue;
        }
        sched_rec *rec = strmap_get(x->recs, sid);
        if (rec && rec->state == REC_HELD) {
            /* reserved, but SessionScheduled may not have reached the bus */
            for (int k = 0; k < rec->nk; k++)
                for (size_t j = 0; j < m->n_kernels; j++)
                    if (strcmp(m->kernels[j]->kernel_id, rec->k[k].kernel_id) == 0) {
                        ts_strlcpy(rec->k[k].role,
                                   m->kernels[j]->cluster_role[0] ? m->kernels[j]->cluster_role
                                                                  : "main",
                                   sizeof(rec->k[k].role));
                        rec->k[k].idx = m->kernels[j]->cluster_idx;
                    }
            if (rec->enq) tessera__v1__session_enqueued__free_unpacked(rec->enq, NULL);
            rec->enq = m;
            if (!rec->group[0]) ts_strlcpy(rec->group, m->resource_group, sizeof(rec->group));
            sched_publish_scheduled(x, rec);
            sched_unpersist_later(x, sid);
            republished++;
            continue;
        }
        sched_on_enqueued(x, m, ts_now_mono_us());
        queued++;
    }
    free_keys(tomb, n);
    free(dead);
    free_keys(keys, n);
    TLOG_INFO("pending sessions loaded from Redis", "queued=%d republished_scheduled=%d dropped=%d",
              queued, republished, dropped);
    return ok;
}

static bool set_alive(sched_svc *x, ts_err *err)
{
    char *key = sched_key("sched:alive", NULL);
    const char *argv[] = {"SET", key, "1"};
    bool ok = cmd_ok(x, 3, argv, NULL, err);
    free(key);
    return ok;
}

bool sched_store_load(sched_svc *x, ts_err *err)
{
    if (!set_alive(x, err) || !load_agents(x, err) || !load_allocs(x, err)) return false;
    /* adoption added what agent:* already counts: take Redis's occupancy as it is */
    sched_resync_all(x);
    if (!load_pending(x, err)) return false;
    sched_store_unpersist_flush(x);
    return true;
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
    char **keys = ts_calloc(x->nunpersist, sizeof(*keys));
    for (size_t i = 0; i < x->nunpersist; i++) {
        keys[i] = sched_key("sched:pending:", x->unpersist[i]);
        free(x->unpersist[i]);
    }
    del_keys(x, keys, x->nunpersist);
    free_keys(keys, x->nunpersist);
    x->nunpersist = 0;
}

int sched_store_find_kernels(sched_svc *x, const char *session_id, char ***out)
{
    *out = NULL;
    char *skey = sched_key("sess:", session_id);
    const char *argv[] = {"EXISTS", skey};
    ts_err err;
    redisReply *rep = cmd(x, 2, argv, NULL, &err);
    free(skey);
    bool held = rep && rep->type == REDIS_REPLY_INTEGER && rep->integer == 1;
    if (rep) freeReplyObject(rep);
    if (!held) return 0;
    size_t n;
    char **keys = scan_keys(x, "alloc:*", &n, &err);
    if (!keys) return -1;
    size_t plen = strlen(sched_cfg.key_prefix) + strlen("alloc:");
    int found = 0;
    for (size_t off = 0; off < n; off += DEL_CHUNK) {
        size_t m = n - off < DEL_CHUNK ? n - off : DEL_CHUNK;
        redisReply *r =
            rds_eval(x->r, &fetch_allocs, 0, (int)m, (const char **)keys + off, NULL, &err);
        for (size_t i = 0; r && r->type == REDIS_REPLY_ARRAY && i < r->elements; i++) {
            redisReply *f = r->element[i];
            if (f->type == REDIS_REPLY_ARRAY && f->elements >= 1 &&
                f->element[0]->type == REDIS_REPLY_STRING &&
                strcmp(f->element[0]->str, session_id) == 0) {
                *out = ts_realloc(*out, sizeof(**out) * (size_t)(found + 1));
                (*out)[found++] = ts_strdup(keys[off + i] + plen);
            }
        }
        if (r) freeReplyObject(r);
    }
    free_keys(keys, n);
    TLOG_INFO("kernels of a session found by scanning", "session=%s kernels=%d", session_id, found);
    return found;
}

/* ---- Redis loss --------------------------------------------------------------------------------
 */

static bool key_exists(sched_svc *x, const char *key, ts_err *err, bool *yes)
{
    const char *argv[] = {"EXISTS", key};
    redisReply *rep = cmd(x, 2, argv, NULL, err);
    if (!rep) return false;
    *yes = rep->type == REDIS_REPLY_INTEGER && rep->integer == 1;
    freeReplyObject(rep);
    return true;
}

static void recover(sched_svc *x)
{
    ts_err err;
    x->redis_lost = false;
    if (!set_alive(x, &err)) {
        x->redis_lost = true;
        return;
    }
    int pending = 0;
    size_t pos = 0;
    const char *id;
    void *v;
    while (strmap_next(x->recs, &pos, &id, &v)) {
        sched_rec *rec = v;
        if (rec->state != REC_PENDING || !rec->enq) continue;
        size_t len = tessera__v1__session_enqueued__get_packed_size(rec->enq);
        uint8_t *buf = ts_malloc(len ? len : 1);
        tessera__v1__session_enqueued__pack(rec->enq, buf);
        char *key = sched_key("sched:pending:", rec->id);
        const char *argv[] = {"SET", key, (const char *)buf};
        size_t lens[] = {3, strlen(key), len};
        if (cmd_ok(x, 3, argv, lens, &err)) pending++;
        free(key);
        free(buf);
    }
    sched_rewrite_agents(x);
    sched_resync_all(x);
    pos = 0;
    while (strmap_next(x->agents, &pos, &id, &v))
        sched_mark_dirty(x, ((sched_agent_info *)v)->group);
    TLOG_INFO("Redis data back: scheduling resumes", "pending_records_rewritten=%d", pending);
}

static void self_rebuild(sched_svc *x)
{
    size_t na = strmap_len(x->agents), nr = strmap_len(x->recs);
    resv_agent *ra = ts_calloc(na + 1, sizeof(*ra));
    resv_session *rs = ts_calloc(nr + 1, sizeof(*rs));
    resv_kernel **rk = ts_calloc(nr + 1, sizeof(*rk));
    int ia = 0, is = 0;
    size_t pos = 0;
    const char *id;
    void *v;
    while (strmap_next(x->agents, &pos, &id, &v)) {
        sched_agent_info *ai = v;
        sched_group *g = sched_engine_group(x->e, ai->group);
        sched_agent *a = g ? sched_group_agent(g, id) : NULL;
        if (a) ra[ia++] = (resv_agent){a->id, &a->total, a->ndev, a->dev_cap, a->schedulable};
    }
    pos = 0;
    while (strmap_next(x->recs, &pos, &id, &v)) {
        sched_rec *rec = v;
        if (rec->state != REC_HELD || rec->nk == 0) continue;
        rk[is] = ts_calloc((size_t)rec->nk, sizeof(resv_kernel));
        for (int k = 0; k < rec->nk; k++)
            rk[is][k] = (resv_kernel){rec->k[k].kernel_id, rec->k[k].agent_id, &rec->k[k].slots,
                                      rec->k[k].ndev, rec->k[k].dev};
        rs[is] = (resv_session){
            rec->id, {rec->scope[0], rec->scope[1], rec->scope[2], rec->scope[3]}, rec->nk, rk[is]};
        is++;
    }
    ts_err err;
    if (resv_rebuild(x->v, ra, ia, rs, is, &err)) {
        atomic_fetch_add(&x->st.rebuilds, 1);
        TLOG_WARN("occupancy rebuilt from this scheduler's model", "agents=%d sessions=%d", ia, is);
    } else {
        TLOG_ERROR("occupancy rebuild failed", "error=\"%s\"", err.msg);
    }
    for (int i = 0; i < is; i++)
        free(rk[i]);
    free(rk);
    free(rs);
    free(ra);
}

void sched_store_check_loss(sched_svc *x)
{
    ts_err err;
    bool alive;
    char *key = sched_key("sched:alive", NULL);
    bool asked = key_exists(x, key, &err, &alive);
    free(key);
    if (!asked) return; /* Redis down: nothing to decide now */
    if (alive && !x->redis_lost) return;
    if (!x->redis_lost) {
        x->redis_lost = true;
        x->lost_since_ms = ts_now_mono_ms();
        atomic_fetch_add(&x->st.redis_losses, 1);
        TLOG_WARN("Redis lost the scheduler's data: waiting for the occupancy rebuild",
                  "rebuild_after_ms=%lld", (long long)sched_cfg.rebuild_after_ms);
    }
    bool locked = false;
    key = sched_key("rebuild", NULL);
    asked = key_exists(x, key, &err, &locked);
    free(key);
    if (!asked || locked) return;
    /* rebuilt by the registry when a known agent is back */
    bool back = strmap_len(x->agents) == 0;
    size_t pos = 0;
    const char *id;
    void *v;
    if (!back && strmap_next(x->agents, &pos, &id, &v)) {
        key = sched_key("agent:", id);
        asked = key_exists(x, key, &err, &back);
        free(key);
        if (!asked) return;
    }
    if (!back && sched_cfg.rebuild_after_ms > 0 &&
        ts_now_mono_ms() - x->lost_since_ms >= sched_cfg.rebuild_after_ms) {
        self_rebuild(x);
        back = true;
    }
    if (back) recover(x);
}
