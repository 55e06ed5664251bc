/* consumers.c: the bus consumers -> the inbox, and the durable part of each
 * session event (consumers.h). */
#include "services/scheduler/consumers.h"

#include "libcommon/log.h"
#include "tessera/v1/agent.pb-c.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The durable part of a batch of session events in one round trip. ARGV:
 * prefix, tombstone ttl ms, then per event "e" (SessionEnqueued) session id
 * payload, or "x" (ended) session id "". In order, so an enqueue and an end
 * of one session in the same batch apply as they came. Per event: 1 =
 * recorded, 0 = ended already, 2 = holds slots (a replay). */
static const char BATCH_LUA[] =
    "local P, ttl = ARGV[1], ARGV[2]\n"
    "local out = {}\n"
    "for i = 3, #ARGV, 3 do\n"
    "  local sid = ARGV[i + 1]\n"
    "  if ARGV[i] == 'e' then\n"
    "    if redis.call('EXISTS', P..'sched:done:'..sid) == 1 then out[#out + 1] = 0\n"
    "    elseif redis.call('EXISTS', P..'sess:'..sid) == 1 then out[#out + 1] = 2\n"
    "    else redis.call('SET', P..'sched:pending:'..sid, ARGV[i + 2]); out[#out + 1] = 1 end\n"
    "  else\n"
    "    redis.call('SET', P..'sched:done:'..sid, '1', 'PX', ttl)\n"
    "    redis.call('DEL', P..'sched:pending:'..sid)\n"
    "    out[#out + 1] = 1\n"
    "  end\n"
    "end\n"
    "return out\n";

/* Session events taken from the bus at once: up to this many, whatever has
 * arrived (no wait for more), so one Redis round trip serves a backlog's
 * worth of enqueues instead of one each. */
#define SESSIONS_BATCH 256

/* Per consumer thread (each has its own Redis connection through svc_redis). */
typedef struct consumer_ctx {
    sched_svc *x;
    rds_script batch;
} consumer_ctx;

static consumer_ctx sessions_ctx, agents_ctx;

void sched_ev_free(sched_ev *ev)
{
    if (!ev) return;
    if (ev->enq) tessera__v1__session_enqueued__free_unpacked(ev->enq, NULL);
    free(ev);
}

/* Append the chain head..tail (linked by next) to the inbox: one lock, one wake-up. */
static void inbox_push_chain(sched_svc *x, sched_ev *head, sched_ev *tail)
{
    tail->next = NULL;
    pthread_mutex_lock(&x->mu);
    if (x->tail)
        x->tail->next = head;
    else
        x->head = head;
    x->tail = tail;
    pthread_cond_signal(&x->cv);
    pthread_mutex_unlock(&x->mu);
}

static bool plain(const char *s)
{
    if (!s || !*s || strlen(s) >= SCHED_ID_MAX) return false;
    for (const char *p = s; *p; p++)
        if (*p <= ' ' || *p == '=' || *p == 0x7f) return false;
    return true;
}

/* One session event, decoded and checked: an event for the inbox (its
 * payload for the pending record when it is an enqueue), or nothing for a
 * session event that is not ours to act on. */
typedef struct sess_op {
    sched_ev *ev;           /* NULL: nothing to do */
    const uint8_t *payload; /* SessionEnqueued: the record to keep */
    size_t payload_len;
} sess_op;

static kbus_result decode_enqueued(const kbus_msg *msg, sess_op *op, ts_err *reason)
{
    ProtobufCMessage *pm =
        envelope_payload(msg->env, &tessera__v1__session_enqueued__descriptor, reason);
    if (!pm) return KBUS_REJECT;
    Tessera__V1__SessionEnqueued *m = (Tessera__V1__SessionEnqueued *)pm;
    if (!plain(m->session_id)) {
        ts_err_set(reason, "SessionEnqueued: session_id '%s' is empty, too long or has blanks",
                   m->session_id);
        protobuf_c_message_free_unpacked(pm, NULL);
        return KBUS_REJECT;
    }
    sched_ev *ev = ts_calloc(1, sizeof(*ev));
    ev->kind = EV_ENQUEUED;
    ts_strlcpy(ev->session_id, m->session_id, sizeof(ev->session_id));
    ev->enq = m;
    op->ev = ev;
    op->payload = msg->env->payload.data;
    op->payload_len = msg->env->payload.len;
    return KBUS_DONE;
}

static kbus_result decode_ended(const kbus_msg *msg, const ProtobufCMessageDescriptor *desc,
                                sess_op *op, ts_err *reason)
{
    ProtobufCMessage *pm = envelope_payload(msg->env, desc, reason);
    if (!pm) return KBUS_REJECT;
    const char *sid = NULL, *why = "";
    if (desc == &tessera__v1__session_cancelled__descriptor) {
        sid = ((Tessera__V1__SessionCancelled *)pm)->session_id;
        why = ((Tessera__V1__SessionCancelled *)pm)->reason;
    } else if (desc == &tessera__v1__session_terminated__descriptor) {
        sid = ((Tessera__V1__SessionTerminated *)pm)->session_id;
        why = ((Tessera__V1__SessionTerminated *)pm)->reason;
    } else {
        sid = ((Tessera__V1__SessionFailed *)pm)->session_id;
        why = ((Tessera__V1__SessionFailed *)pm)->reason;
    }
    if (!plain(sid)) {
        ts_err_set(reason, "%s: session_id '%s' is empty, too long or has blanks", desc->name,
                   sid ? sid : "");
        protobuf_c_message_free_unpacked(pm, NULL);
        return KBUS_REJECT;
    }
    sched_ev *ev = ts_calloc(1, sizeof(*ev));
    ev->kind = EV_ENDED;
    ts_strlcpy(ev->session_id, sid, sizeof(ev->session_id));
    ts_strlcpy(ev->reason, why ? why : "", sizeof(ev->reason));
    op->ev = ev;
    protobuf_c_message_free_unpacked(pm, NULL);
    return KBUS_DONE;
}

static kbus_result decode_session_event(const kbus_msg *msg, sess_op *op, ts_err *reason)
{
    const char *type = msg->env->type ? msg->env->type : "";
    memset(op, 0, sizeof(*op));
    if (strcmp(type, "tessera.v1.SessionEnqueued") == 0) return decode_enqueued(msg, op, reason);
    if (strcmp(type, "tessera.v1.SessionCancelled") == 0)
        return decode_ended(msg, &tessera__v1__session_cancelled__descriptor, op, reason);
    if (strcmp(type, "tessera.v1.SessionTerminated") == 0)
        return decode_ended(msg, &tessera__v1__session_terminated__descriptor, op, reason);
    if (strcmp(type, "tessera.v1.SessionFailed") == 0)
        return decode_ended(msg, &tessera__v1__session_failed__descriptor, op, reason);
    if (strncmp(type, "tessera.v1.Session", 18) == 0) return KBUS_DONE; /* not ours to act on */
    ts_err_set(reason, "unexpected event type '%s' on %s", type, msg->topic);
    return KBUS_REJECT;
}

/* BATCH_LUA over ops[0..n); out[i] its answer for ops that have an event.
 * False with reason set on a Redis failure (nothing may have been applied,
 * or all of it: the script is idempotent either way). */
static bool record_ops(consumer_ctx *c, const sess_op *ops, size_t n, long long *out,
                       ts_err *reason)
{
    rds *r = svc_redis(c->x->s, reason);
    if (!r) return false;
    char ttl[24];
    snprintf(ttl, sizeof(ttl), "%lld", (long long)sched_cfg.tombstone_ttl_ms);
    size_t cap = 2 + 3 * n, argc = 0, want = 0;
    const char **argv = ts_calloc(cap, sizeof(*argv));
    size_t *lens = ts_calloc(cap, sizeof(*lens));
    argv[argc] = sched_cfg.key_prefix;
    lens[argc++] = strlen(sched_cfg.key_prefix);
    argv[argc] = ttl;
    lens[argc++] = strlen(ttl);
    for (size_t i = 0; i < n; i++) {
        if (!ops[i].ev) continue;
        bool enq = ops[i].ev->kind == EV_ENQUEUED;
        argv[argc] = enq ? "e" : "x";
        lens[argc++] = 1;
        argv[argc] = ops[i].ev->session_id;
        lens[argc++] = strlen(ops[i].ev->session_id);
        argv[argc] = enq ? (const char *)ops[i].payload : "";
        lens[argc++] = enq ? ops[i].payload_len : 0;
        want++;
    }
    bool ok = true;
    if (want > 0) {
        redisReply *rep = rds_eval(r, &c->batch, 0, (int)argc, argv, lens, reason);
        ok = rep != NULL;
        if (ok && (rep->type != REDIS_REPLY_ARRAY || rep->elements != want)) {
            ts_err_set(reason, "Redis script: %s",
                       rep->type == REDIS_REPLY_ERROR ? rep->str : "unexpected answer");
            ok = false;
        }
        for (size_t i = 0, k = 0; ok && i < n; i++) {
            if (!ops[i].ev) continue;
            redisReply *e = rep->element[k++];
            if (e->type != REDIS_REPLY_INTEGER) {
                ts_err_set(reason, "Redis script: an answer that is not a number");
                ok = false;
            } else {
                out[i] = e->integer;
            }
        }
        if (rep) freeReplyObject(rep);
    }
    free(lens);
    free(argv);
    return ok;
}

static void free_ops(sess_op *ops, size_t n)
{
    for (size_t i = 0; i < n; i++)
        sched_ev_free(ops[i].ev);
}

/* A batch of session events: all decoded and checked first (one bad event
 * fails the batch before anything is applied, and kbus hands each event
 * again alone, so only the bad one is dead-lettered), then recorded in Redis
 * in one round trip, then handed to the scheduling thread in order. */
static kbus_result on_session_batch(const kbus_msg *msgs, size_t n, void *ctx, ts_err *reason)
{
    consumer_ctx *c = ctx;
    sched_svc *x = c->x;
    sess_op *ops = ts_calloc(n, sizeof(*ops));
    for (size_t i = 0; i < n; i++) {
        kbus_result res = decode_session_event(&msgs[i], &ops[i], reason);
        if (res != KBUS_DONE) {
            free_ops(ops, i);
            free(ops);
            return res;
        }
    }
    long long *rc = ts_calloc(n, sizeof(*rc));
    if (!record_ops(c, ops, n, rc, reason)) {
        free(rc);
        free_ops(ops, n);
        free(ops);
        return KBUS_RETRY;
    }
    int64_t now = ts_now_mono_us();
    sched_ev *head = NULL, *tail = NULL;
    for (size_t i = 0; i < n; i++) {
        sched_ev *ev = ops[i].ev;
        if (!ev) continue;
        if (ev->kind == EV_ENQUEUED && rc[i] != 1) {
            atomic_fetch_add(&x->st.duplicates, 1);
            tlog_ctx_session(ev->session_id);
            TLOG_INFO("SessionEnqueued ignored", "why=\"%s\"",
                      rc[i] == 0 ? "ended already" : "holds slots");
            tlog_ctx_session(NULL);
            sched_ev_free(ev);
            continue;
        }
        ev->at_us = now;
        if (tail)
            tail->next = ev;
        else
            head = ev;
        tail = ev;
    }
    if (head) inbox_push_chain(x, head, tail);
    free(rc);
    free(ops);
    return KBUS_DONE;
}

/* ---- agents ---------------------------------------------------------------------------------- */

static bool parse_slots(Tessera__V1__SlotAmount **slots, size_t n, slots_t *out, ts_err *err)
{
    slots_clear(out);
    for (size_t i = 0; i < n; i++) {
        const char *name = slots[i]->name;
        if (strncmp(name, "cuda.", 5) == 0) continue; /* from the devices */
        int id;
        int64_t v;
        if (!slot_intern(name, &id, err) || !slot_parse(id, slots[i]->amount, &v, err))
            return false;
        slots_put(out, id, v);
    }
    return true;
}

static bool parse_devices(Tessera__V1__DeviceInfo **d, size_t n, sched_agent_msg *m, ts_err *err)
{
    m->ndev = 0;
    m->has_devices = n > 0;
    for (size_t i = 0; i < n; i++) {
        if (strcmp(d[i]->slot_name, "cuda.device") != 0) continue;
        if (m->ndev >= SCHED_MAX_DEVICES) {
            ts_err_set(err, "more than %d GPU devices", SCHED_MAX_DEVICES);
            return false;
        }
        int64_t cap = SLOT_SHARES_PER_DEVICE;
        if (d[i]->shares_capacity && d[i]->shares_capacity[0] &&
            !slot_parse(SLOT_CUDA_SHARES, d[i]->shares_capacity, &cap, err)) {
            ts_err_prefix(err, "device %s", d[i]->device_id);
            return false;
        }
        if (cap <= 0 || cap > 100000) {
            ts_err_set(err, "device %s: shares capacity out of range", d[i]->device_id);
            return false;
        }
        m->dev_cap[m->ndev] = (int32_t)cap;
        ts_strlcpy(m->dev_id[m->ndev], d[i]->device_id[0] ? d[i]->device_id : "?", SCHED_ID_MAX);
        m->ndev++;
    }
    return true;
}

/* The fields AgentStarted and AgentHeartbeat share, decoded into m (false
 * with err when invalid; type names the event in the error). */
static bool agent_msg_decode(const char *type, const char *agent_id, const char *group,
                             Tessera__V1__SlotAmount **slots, size_t n_slots,
                             Tessera__V1__DeviceInfo **devices, size_t n_devices,
                             sched_agent_msg *m, ts_err *err)
{
    memset(m, 0, sizeof(*m));
    if (!plain(agent_id) || !plain(group)) {
        ts_err_set(err, "%s: agent_id and resource_group must be plain ids", type);
        return false;
    }
    ts_strlcpy(m->id, agent_id, sizeof(m->id));
    ts_strlcpy(m->group, group, sizeof(m->group));
    if (!parse_slots(slots, n_slots, &m->total, err) ||
        !parse_devices(devices, n_devices, m, err)) {
        ts_err_prefix(err, "%s %s", type, agent_id);
        return false;
    }
    return true;
}

static bool agent_msg_from_started(const Tessera__V1__AgentStarted *a, sched_agent_msg *m,
                                   ts_err *err)
{
    if (!agent_msg_decode("AgentStarted", a->agent_id, a->resource_group, a->slots, a->n_slots,
                          a->devices, a->n_devices, m, err))
        return false;
    ts_strlcpy(m->arch, a->architecture[0] ? a->architecture : sched_cfg.default_architecture,
               sizeof(m->arch));
    m->has_devices = true;
    return true;
}

/* A heartbeat's arch stays "" (keep what is known); has_devices only when it lists some. */
static bool agent_msg_from_heartbeat(const Tessera__V1__AgentHeartbeat *h, sched_agent_msg *m,
                                     ts_err *err)
{
    return agent_msg_decode("AgentHeartbeat", h->agent_id, h->resource_group, h->slots, h->n_slots,
                            h->devices, h->n_devices, m, err);
}

static kbus_result on_agent_event(const kbus_msg *msg, void *ctx, ts_err *reason)
{
    consumer_ctx *c = ctx;
    const char *type = msg->env->type ? msg->env->type : "";
    sched_ev *ev = ts_calloc(1, sizeof(*ev));
    ev->at_us = ts_now_mono_us();
    kbus_result res = KBUS_DONE;
    ProtobufCMessage *pm = NULL;
    if (strcmp(type, "tessera.v1.AgentStarted") == 0) {
        pm = envelope_payload(msg->env, &tessera__v1__agent_started__descriptor, reason);
        ev->kind = EV_AGENT_UP;
        if (!pm || !agent_msg_from_started((Tessera__V1__AgentStarted *)pm, &ev->agent, reason))
            res = KBUS_REJECT;
    } else if (strcmp(type, "tessera.v1.AgentHeartbeat") == 0) {
        pm = envelope_payload(msg->env, &tessera__v1__agent_heartbeat__descriptor, reason);
        ev->kind = EV_AGENT_UP;
        if (!pm || !agent_msg_from_heartbeat((Tessera__V1__AgentHeartbeat *)pm, &ev->agent, reason))
            res = KBUS_REJECT;
    } else if (strcmp(type, "tessera.v1.AgentStopped") == 0) {
        pm = envelope_payload(msg->env, &tessera__v1__agent_stopped__descriptor, reason);
        ev->kind = EV_AGENT_DOWN;
        Tessera__V1__AgentStopped *st = (Tessera__V1__AgentStopped *)pm;
        if (!pm || !plain(st->agent_id)) {
            if (pm) ts_err_set(reason, "AgentStopped: bad agent_id");
            res = KBUS_REJECT;
        } else {
            ts_strlcpy(ev->agent.id, st->agent_id, sizeof(ev->agent.id));
            ts_strlcpy(ev->reason, st->reason, sizeof(ev->reason));
        }
    } else if (strcmp(type, "tessera.v1.AgentSchedulable") == 0) {
        pm = envelope_payload(msg->env, &tessera__v1__agent_schedulable__descriptor, reason);
        ev->kind = EV_AGENT_SCHEDULABLE;
        Tessera__V1__AgentSchedulable *as = (Tessera__V1__AgentSchedulable *)pm;
        if (!pm || !plain(as->agent_id)) {
            if (pm) ts_err_set(reason, "AgentSchedulable: bad agent_id");
            res = KBUS_REJECT;
        } else {
            ts_strlcpy(ev->agent.id, as->agent_id, sizeof(ev->agent.id));
            ev->schedulable = as->schedulable;
            ts_strlcpy(ev->reason, as->requested_by, sizeof(ev->reason));
        }
    } else {
        ts_err_set(reason, "unexpected event type '%s' on %s", type, msg->topic);
        res = KBUS_REJECT;
    }
    if (pm) protobuf_c_message_free_unpacked(pm, NULL);
    if (res != KBUS_DONE) {
        free(ev);
        return res;
    }
    tlog_ctx_agent(ev->agent.id);
    atomic_fetch_add(&c->x->st.agents_events, 1);
    inbox_push_chain(c->x, ev, ev);
    return KBUS_DONE;
}

bool sched_consumers_start(sched_svc *x, ts_err *err)
{
    sessions_ctx = (consumer_ctx){.x = x, .batch = {.source = BATCH_LUA}};
    agents_ctx = (consumer_ctx){.x = x};
    static const char *const agent_topics[] = {SCHED_TOPIC_AGENT, NULL};
    static const char *const session_topics[] = {SCHED_TOPIC_SESSION, NULL};
    /* Agents first: every instance must see every agent (a group of its own). */
    x->c_agents = kbus_consume_broadcast(x->bus, agent_topics, on_agent_event, &agents_ctx, err);
    if (!x->c_agents) return false;
    kbus_batch_opts bo = {.max_messages = SESSIONS_BATCH, .max_wait_ms = 0, .control = true};
    x->c_sessions = kbus_consume_batch(x->bus, SCHED_SESSIONS_GROUP, session_topics, &bo,
                                       on_session_batch, &sessions_ctx, err);
    if (!x->c_sessions) {
        kbus_consumer_stop(x->c_agents);
        x->c_agents = NULL;
        return false;
    }
    return true;
}

void sched_consumers_stop(sched_svc *x)
{
    kbus_consumer_stop(x->c_sessions);
    kbus_consumer_stop(x->c_agents);
    x->c_sessions = x->c_agents = NULL;
}
