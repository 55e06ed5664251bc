/* agents.c: agents' life as the registry sees it (see agents.h). */
#include "agents.h"

#include "context.h"
#include "db_common.h"
#include "event_consumers.h"
#include "libcommon/log.h"
#include "libcommon/metrics.h"
#include "occupancy_sync.h"
#include "pbutil.h"
#include "tessera/v1/agent.pb-c.h"
#include "tessera/v1/agent_cmd.pb-c.h"
#include "transitions.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static reg_consumers consumers;

/* ---- announcements ------------------------------------------------------------------------- */

static json_t *devices_json(Tessera__V1__DeviceInfo **d, size_t n)
{
    json_t *arr = json_array();
    for (size_t i = 0; i < n; i++)
        json_array_append_new(
            arr,
            json_pack("{s:s, s:s, s:s, s:I, s:s, s:s, s:b, s:s, s:i}", "device_id", d[i]->device_id,
                      "slot_name", d[i]->slot_name, "model", d[i]->model, "memory_bytes",
                      (json_int_t)d[i]->memory_bytes, "capacity", d[i]->capacity, "shares_capacity",
                      d[i]->shares_capacity, "mock", (int)d[i]->mock, "bus_id", d[i]->bus_id,
                      "numa_node", (int)d[i]->numa_node));
    return arr;
}

bool agents_plain_id(const char *s)
{
    if (!s || !*s || strlen(s) > 128) return false;
    for (const char *p = s; *p; p++)
        if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
              *p == '-' || *p == '_' || *p == '.' || *p == ':'))
            return false;
    return true;
}

/* A fingerprint of the capacity an AgentStarted or AgentHeartbeat carries:
 * FNV-1a over the packed slot amounts and devices (protobuf-c packs fields in
 * order, so the same capacity gives the same bytes). Stored with the row
 * (capacity_fp) by the full path; a heartbeat with the same fingerprint has
 * nothing new but its time. */
static void fnv_message(uint64_t *h, const ProtobufCMessage *m)
{
    uint8_t small[512];
    size_t len = protobuf_c_message_get_packed_size(m);
    uint8_t *buf = len <= sizeof(small) ? small : ts_malloc(len);
    protobuf_c_message_pack(m, buf);
    *h = ts_fnv1a(*h, buf, len);
    /* A separator, so that two lists cannot shift into each other. */
    *h = ts_fnv1a(*h, "\xff", 1);
    if (buf != small) free(buf);
}

static int64_t capacity_fp(Tessera__V1__SlotAmount **slots, size_t n_slots,
                           Tessera__V1__DeviceInfo **devs, size_t n_devs)
{
    uint64_t h = TS_FNV_OFFSET;
    for (size_t i = 0; i < n_slots; i++)
        fnv_message(&h, &slots[i]->base);
    h = ts_fnv1a(h, "\xfe", 1); /* the end of the slots */
    for (size_t i = 0; i < n_devs; i++)
        fnv_message(&h, &devs[i]->base);
    return (int64_t)(h >> 1); /* a bigint, never negative */
}

static const char upsert_sql[] =
    "INSERT INTO registry.agents AS a (id, resource_group, architecture, addr, slots, devices,"
    " status, status_info, version, hostname, runtime, capacity_fp)"
    " VALUES ($1, $2, $3, $4, $5::jsonb, $6::jsonb, 'ALIVE', $7, $8, $9, $10, $14::bigint)"
    " ON CONFLICT (id) DO UPDATE SET"
    " resource_group = CASE WHEN $11 THEN EXCLUDED.resource_group ELSE a.resource_group END,"
    " architecture = CASE WHEN $11 THEN EXCLUDED.architecture ELSE a.architecture END,"
    " addr = CASE WHEN $11 THEN EXCLUDED.addr ELSE a.addr END,"
    " version = CASE WHEN $11 THEN EXCLUDED.version ELSE a.version END,"
    " hostname = CASE WHEN $11 THEN EXCLUDED.hostname ELSE a.hostname END,"
    " runtime = CASE WHEN $11 THEN EXCLUDED.runtime ELSE a.runtime END,"
    " slots = CASE WHEN $12 THEN EXCLUDED.slots ELSE a.slots END,"
    " devices = CASE WHEN $13 THEN EXCLUDED.devices ELSE a.devices END,"
    " status_info = CASE WHEN $11 OR a.status <> 'ALIVE' THEN EXCLUDED.status_info"
    "   ELSE a.status_info END,"
    " status_changed_at = CASE WHEN a.status <> 'ALIVE' THEN now() ELSE a.status_changed_at END,"
    " status = 'ALIVE', last_heartbeat = now(), capacity_fp = EXCLUDED.capacity_fp"
    " RETURNING slots::text, devices::text, NOT schedulable";

/* Record an agent as ALIVE and write its capacity to Redis. started: the
 * AgentStarted fields are given (others keep their stored values). */
static kbus_result agent_alive(const char *id, const char *group, const char *arch,
                               const char *addr, const char *version, const char *hostname,
                               const char *runtime, Tessera__V1__SlotAmount **slots, size_t n_slots,
                               Tessera__V1__DeviceInfo **devs, size_t n_devs, bool started,
                               ts_err *err)
{
    if (!agents_plain_id(id) || !agents_plain_id(group)) {
        ts_err_set(err, "agent id and resource group must be plain ids");
        return KBUS_REJECT;
    }
    json_t *sj = NULL;
    if (!pb_slots_json(slots, n_slots, &sj, err)) {
        ts_err_prefix(err, "agent %s slots", id);
        return KBUS_REJECT;
    }
    json_t *dj = devices_json(devs, n_devs);
    char *st = json_dumps(sj, JSON_COMPACT), *dt = json_dumps(dj, JSON_COMPACT);
    json_decref(sj);
    json_decref(dj);
    char fp[24];
    snprintf(fp, sizeof(fp), "%lld", (long long)capacity_fp(slots, n_slots, devs, n_devs));
    const char *p[] = {id,
                       group,
                       arch ? arch : "",
                       addr ? addr : "",
                       st,
                       dt,
                       started ? "started" : "heartbeat",
                       version ? version : "",
                       hostname ? hostname : "",
                       runtime ? runtime : "",
                       started ? "true" : "false",
                       started || n_slots ? "true" : "false",
                       started || n_devs ? "true" : "false",
                       fp};
    kbus_result res = KBUS_RETRY;
    PGconn *conn = reg_pg_get(err);
    PGresult *r = conn ? reg_exec(conn, upsert_sql, 14, p, err) : NULL;
    reg_pg_put(conn);
    free(st);
    free(dt);
    if (!r) return KBUS_RETRY;
    json_t *cur_s = json_loads(PQgetvalue(r, 0, 0), 0, NULL);
    json_t *cur_d = json_loads(PQgetvalue(r, 0, 1), 0, NULL);
    bool drained = PQgetvalue(r, 0, 2)[0] == 't';
    PQclear(r);
    if (occupancy_write_agent(id, cur_s, cur_d, true, drained, err))
        res = KBUS_DONE;
    else
        ts_err_prefix(err, "agent %s capacity to Redis", id);
    json_decref(cur_s);
    json_decref(cur_d);
    if (started) TLOG_INFO("agent started", "group=%s arch=%s", group, arch);
    return res;
}

/* ---- lost agents ------------------------------------------------------------------------------
 */

/* DestroyKernel for the session's live kernels on the lost agent: they wait
 * in its command topic, so that an agent that comes back (its node's network
 * returns, its process thaws or restarts and adopts its containers) removes
 * them at once; the reconcile pass's orphan check is the backstop. */
static bool destroy_on_lost(PGconn *conn, outbox *ob, const char *sid, const char *agent_id,
                            const char *reason, ts_err *err)
{
    const char *p[] = {sid, agent_id};
    PGresult *r = reg_exec(conn,
                           "SELECT id::text, generation FROM registry.kernels"
                           " WHERE session_id = $1::uuid AND agent_id = $2"
                           " AND status NOT IN " SQL_FINAL " ORDER BY cluster_idx",
                           2, p, err);
    if (!r) return false;
    for (int i = 0; i < PQntuples(r); i++) {
        Tessera__V1__DestroyKernel m = TESSERA__V1__DESTROY_KERNEL__INIT;
        m.session_id = (char *)sid;
        m.kernel_id = PQgetvalue(r, i, 0);
        m.reason = (char *)reason;
        m.force = true;
        m.generation = atoi(PQgetvalue(r, i, 1));
        ob_agent_cmd(ob, agent_id, m.kernel_id, &m.base);
    }
    PQclear(r);
    return true;
}

/* End every live session with a kernel on the agent. */
static bool fail_sessions_of(const char *agent_id, ts_err *err)
{
    PGconn *conn = reg_pg_get(err);
    if (!conn) return false;
    const char *p[] = {agent_id};
    PGresult *r = reg_exec(conn,
                           "SELECT DISTINCT k.session_id::text FROM registry.kernels k"
                           " JOIN registry.sessions s ON s.id = k.session_id"
                           " WHERE k.agent_id = $1 AND k.status NOT IN " SQL_FINAL
                           " AND s.status NOT IN " SQL_FINAL,
                           1, p, err);
    if (!r) {
        reg_pg_put(conn);
        return false;
    }
    bool ok = true;
    char reason[200];
    snprintf(reason, sizeof(reason), "agent %s lost", agent_id);
    for (int i = 0; i < PQntuples(r) && ok; i++) {
        const char *sid = PQgetvalue(r, i, 0);
        outbox ob;
        ob_init(&ob, "");
        sess s;
        bool found = false;
        const char *kp[] = {sid, agent_id, reason};
        tlog_ctx_session(sid);
        ok = pg_begin(conn, err) && tr_lock(conn, sid, &s, &found, err);
        if (ok && found && !reg_status_final(s.status)) {
            ok = destroy_on_lost(conn, &ob, sid, agent_id, reason, err) &&
                 reg_run(conn,
                         "UPDATE registry.kernels SET status = 'ERROR', status_info = $3,"
                         " status_changed_at = now() WHERE session_id = $1::uuid"
                         " AND agent_id = $2 AND status NOT IN " SQL_FINAL,
                         3, kp, err) &&
                 tr_destroy_kernels(conn, &ob, &s, reason, true, "TERMINATING", err) &&
                 tr_end(conn, &ob, &s, ST_ERROR, reason, "agent_lost", "", agent_id, NULL, err);
        }
        if (ok && pg_commit(conn, err)) {
            ob_flush(&ob);
        } else {
            ok = false;
            pg_rollback(conn);
            ob_discard(&ob);
        }
        tlog_ctx_session(NULL);
    }
    PQclear(r);
    reg_pg_put(conn);
    return ok;
}

/* status := LOST (when it was ALIVE), not schedulable in Redis, its sessions
 * end in ERROR. announce: publish AgentStopped "lost" (the registry declared
 * it; the scheduler drops the agent). */
static bool mark_lost(const char *agent_id, const char *why, bool announce, ts_err *err)
{
    PGconn *conn = reg_pg_get(err);
    if (!conn) return false;
    const char *p[] = {agent_id, why};
    PGresult *r = reg_exec(conn,
                           "UPDATE registry.agents SET status = 'LOST', status_info = $2,"
                           " status_changed_at = now() WHERE id = $1 AND status = 'ALIVE'"
                           " RETURNING slots::text, devices::text, NOT schedulable",
                           2, p, err);
    reg_pg_put(conn);
    if (!r) return false;
    if (PQntuples(r) == 1) {
        TLOG_WARN("agent lost", "why=\"%s\"", why);
        json_t *sj = json_loads(PQgetvalue(r, 0, 0), 0, NULL);
        json_t *dj = json_loads(PQgetvalue(r, 0, 1), 0, NULL);
        ts_err e;
        if (!occupancy_write_agent(agent_id, sj, dj, false, PQgetvalue(r, 0, 2)[0] == 't', &e))
            TLOG_WARN("could not mark the agent unschedulable in Redis", "error=\"%s\"", e.msg);
        json_decref(sj);
        json_decref(dj);
        if (announce) {
            outbox ob;
            ob_init(&ob, "");
            Tessera__V1__AgentStopped m = TESSERA__V1__AGENT_STOPPED__INIT;
            m.agent_id = (char *)agent_id;
            m.reason = "lost";
            m.graceful = false;
            ob_agent_event(&ob, agent_id, &m.base);
            ob_flush(&ob);
        }
    }
    PQclear(r);
    return fail_sessions_of(agent_id, err);
}

void agents_check_lost(void)
{
    ts_err err = {{0}};
    PGconn *conn = reg_pg_get(&err);
    char ms[24];
    snprintf(ms, sizeof(ms), "%lld", (long long)reg_settings.agent_lost_timeout_ms);
    const char *p[] = {ms};
    PGresult *r = conn ? reg_exec(conn,
                                  "SELECT id FROM registry.agents WHERE status = 'ALIVE'"
                                  " AND last_heartbeat < now() - $1::bigint * interval '1 ms'",
                                  1, p, &err)
                       : NULL;
    reg_pg_put(conn);
    if (!r) {
        TLOG_WARN("lost-agent check failed", "error=\"%s\"", err.msg);
        return;
    }
    for (int i = 0; i < PQntuples(r); i++) {
        char why[128];
        snprintf(why, sizeof(why), "no heartbeat for %lld ms",
                 (long long)reg_settings.agent_lost_timeout_ms);
        tlog_ctx_agent(PQgetvalue(r, i, 0));
        if (!mark_lost(PQgetvalue(r, i, 0), why, true, &err))
            TLOG_WARN("marking an agent lost failed", "error=\"%s\"", err.msg);
        tlog_ctx_agent(NULL);
    }
    PQclear(r);
}

/* ---- the consumer ---------------------------------------------------------------------------- */

static kbus_result on_stopped(const Tessera__V1__AgentStopped *m, ts_err *reason)
{
    if (!agents_plain_id(m->agent_id)) {
        ts_err_set(reason, "AgentStopped: bad agent id");
        return KBUS_REJECT;
    }
    if (!m->graceful) {
        char why[300];
        snprintf(why, sizeof(why), "stopped: %s", m->reason[0] ? m->reason : "not graceful");
        return mark_lost(m->agent_id, why, false, reason) ? KBUS_DONE : KBUS_RETRY;
    }
    const char *p[] = {m->agent_id, m->reason};
    PGconn *conn = reg_pg_get(reason);
    PGresult *r = conn ? reg_exec(conn,
                                  "UPDATE registry.agents SET status = 'TERMINATED',"
                                  " status_info = $2, status_changed_at = now()"
                                  " WHERE id = $1 AND status <> 'TERMINATED'"
                                  " RETURNING slots::text, devices::text, NOT schedulable",
                                  2, p, reason)
                       : NULL;
    reg_pg_put(conn);
    if (!r) return KBUS_RETRY;
    kbus_result res = KBUS_DONE;
    if (PQntuples(r) == 1) {
        json_t *sj = json_loads(PQgetvalue(r, 0, 0), 0, NULL);
        json_t *dj = json_loads(PQgetvalue(r, 0, 1), 0, NULL);
        if (!occupancy_write_agent(m->agent_id, sj, dj, false, PQgetvalue(r, 0, 2)[0] == 't',
                                   reason))
            res = KBUS_RETRY;
        json_decref(sj);
        json_decref(dj);
        TLOG_INFO("agent stopped", "reason=\"%s\"", m->reason);
    }
    PQclear(r);
    return res;
}

static kbus_result heartbeat_full(const Tessera__V1__AgentHeartbeat *m, ts_err *reason)
{
    tlog_ctx_agent(m->agent_id);
    kbus_result res = agent_alive(m->agent_id, m->resource_group, NULL, NULL, NULL, NULL, NULL,
                                  m->slots, m->n_slots, m->devices, m->n_devices, false, reason);
    tlog_ctx_agent(NULL);
    return res;
}

/* Heartbeats of a batch gathered for one statement: most carry the capacity
 * the row already has, and then only last_heartbeat moves (no JSON, no Redis
 * write). The ones the statement does not touch (unknown or not ALIVE agent,
 * changed capacity) take the full path, in their order. */
typedef struct touch_list {
    Tessera__V1__AgentHeartbeat **hb; /* owned: freed by touch_flush */
    int64_t *fp;
    size_t n;
} touch_list;

/* Every heartbeat position whose (agent, fingerprint) was touched: an agent
 * may be in the list more than once. */
static const char touch_sql[] =
    "WITH v AS (SELECT id, fp, i FROM unnest($1::text[], $2::bigint[]) WITH ORDINALITY"
    "   AS v(id, fp, i)),"
    " t AS (UPDATE registry.agents AS a SET last_heartbeat = now()"
    "   FROM (SELECT DISTINCT id, fp FROM v) AS u"
    "   WHERE a.id = u.id AND a.capacity_fp = u.fp AND a.status = 'ALIVE'"
    "   RETURNING a.id, u.fp)"
    " SELECT v.i FROM v JOIN t ON t.id = v.id AND t.fp = v.fp";

static _Atomic unsigned long heartbeats_touched, heartbeats_full;

/* The array literals of the touch statement. The ids are plain ids (no quote,
 * backslash, comma or brace), so quoting them is enough. */
static void touch_arrays(const touch_list *t, char **ids, char **fps)
{
    char *a = ts_malloc(t->n * 131 + 3), *b = ts_malloc(t->n * 22 + 3), *pa = a, *pb = b;
    *pa++ = '{';
    *pb++ = '{';
    for (size_t i = 0; i < t->n; i++) {
        if (i) {
            *pa++ = ',';
            *pb++ = ',';
        }
        size_t len = strlen(t->hb[i]->agent_id);
        *pa++ = '"';
        memcpy(pa, t->hb[i]->agent_id, len);
        pa += len;
        *pa++ = '"';
        pb += sprintf(pb, "%lld", (long long)t->fp[i]);
    }
    strcpy(pa, "}");
    strcpy(pb, "}");
    *ids = a;
    *fps = b;
}

static kbus_result touch_flush(touch_list *t, ts_err *reason)
{
    if (t->n == 0) return KBUS_DONE;
    char *ids, *fps;
    touch_arrays(t, &ids, &fps);
    const char *p[] = {ids, fps};
    PGconn *conn = reg_pg_get(reason);
    PGresult *r = conn ? reg_exec(conn, touch_sql, 2, p, reason) : NULL;
    reg_pg_put(conn);
    free(ids);
    free(fps);
    kbus_result res = r ? KBUS_DONE : KBUS_RETRY;
    /* Which were touched (1-based positions). Once an agent took the full
     * path, its later heartbeats in the list take it too: their touch may
     * have matched the capacity from before. */
    bool *done = ts_calloc(t->n, sizeof(*done));
    for (int i = 0; r && i < PQntuples(r); i++) {
        long k = strtol(PQgetvalue(r, i, 0), NULL, 10);
        if (k >= 1 && (size_t)k <= t->n) done[k - 1] = true;
    }
    const char **full = ts_calloc(t->n, sizeof(*full));
    size_t nfull = 0;
    for (size_t i = 0; i < t->n; i++) {
        const char *id = t->hb[i]->agent_id;
        for (size_t j = 0; done[i] && j < nfull; j++)
            if (strcmp(full[j], id) == 0) done[i] = false;
        if (res == KBUS_DONE) {
            if (done[i]) {
                atomic_fetch_add(&heartbeats_touched, 1);
            } else {
                atomic_fetch_add(&heartbeats_full, 1);
                res = heartbeat_full(t->hb[i], reason);
                full[nfull++] = id;
            }
        }
    }
    for (size_t i = 0; i < t->n; i++)
        protobuf_c_message_free_unpacked(&t->hb[i]->base, NULL);
    free(full);
    free(done);
    if (r) PQclear(r);
    t->n = 0;
    return res;
}

/* One message of the batch. Heartbeats join t; anything else first flushes
 * it, so that an agent's events keep their order. */
static kbus_result on_agent_event(const kbus_msg *msg, touch_list *t, ts_err *reason)
{
    const char *type = msg->env->type;
    const ProtobufCMessageDescriptor *d;
    if (strcmp(type, "tessera.v1.AgentHeartbeat") == 0)
        d = &tessera__v1__agent_heartbeat__descriptor;
    else if (strcmp(type, "tessera.v1.AgentStarted") == 0)
        d = &tessera__v1__agent_started__descriptor;
    else if (strcmp(type, "tessera.v1.AgentStopped") == 0)
        d = &tessera__v1__agent_stopped__descriptor;
    else
        return KBUS_DONE;
    ProtobufCMessage *pm = envelope_payload(msg->env, d, reason);
    if (!pm) return KBUS_REJECT;
    if (d == &tessera__v1__agent_heartbeat__descriptor) {
        Tessera__V1__AgentHeartbeat *m = (Tessera__V1__AgentHeartbeat *)pm;
        if (!agents_plain_id(m->agent_id)) { /* the full path says why */
            kbus_result res = heartbeat_full(m, reason);
            protobuf_c_message_free_unpacked(pm, NULL);
            return res;
        }
        t->hb[t->n] = m;
        t->fp[t->n++] = capacity_fp(m->slots, m->n_slots, m->devices, m->n_devices);
        return KBUS_DONE;
    }
    kbus_result res = touch_flush(t, reason);
    if (res == KBUS_DONE && d == &tessera__v1__agent_started__descriptor) {
        Tessera__V1__AgentStarted *m = (Tessera__V1__AgentStarted *)pm;
        tlog_ctx_agent(m->agent_id);
        res = agent_alive(m->agent_id, m->resource_group, m->architecture, m->addr, m->version,
                          m->hostname, m->runtime, m->slots, m->n_slots, m->devices, m->n_devices,
                          true, reason);
    } else if (res == KBUS_DONE) {
        Tessera__V1__AgentStopped *m = (Tessera__V1__AgentStopped *)pm;
        tlog_ctx_agent(m->agent_id);
        res = on_stopped(m, reason);
    }
    tlog_ctx_agent(NULL);
    protobuf_c_message_free_unpacked(pm, NULL);
    return res;
}

/* The batch: in order, heartbeats gathered between the other events. Any
 * failure hands the batch back; kbus then gives each message alone (n = 1),
 * and every step here is idempotent. */
static kbus_result on_agent_batch(const kbus_msg *msgs, size_t n, void *ctx, ts_err *reason)
{
    (void)ctx;
    touch_list t = {.hb = ts_calloc(n, sizeof(*t.hb)), .fp = ts_calloc(n, sizeof(*t.fp))};
    kbus_result res = KBUS_DONE;
    for (size_t i = 0; i < n && res == KBUS_DONE; i++)
        res = on_agent_event(&msgs[i], &t, reason);
    if (res == KBUS_DONE) {
        res = touch_flush(&t, reason);
    } else {
        for (size_t i = 0; i < t.n; i++)
            protobuf_c_message_free_unpacked(&t.hb[i]->base, NULL);
    }
    free(t.hb);
    free(t.fp);
    return res;
}

static void _collect(FILE *out, void *ctx)
{
    (void)ctx;
    static const char name[] = "tessera_registry_heartbeats_total";
    metrics_family(out, name, "counter",
                   "Agent heartbeats handled: path=\"touch\" (capacity unchanged: only the time"
                   " moved, batched), path=\"full\" (row and Redis capacity written)");
    metrics_sample_u64(out, name, "path=\"touch\"", atomic_load(&heartbeats_touched));
    metrics_sample_u64(out, name, "path=\"full\"", atomic_load(&heartbeats_full));
}

bool agents_start(svc *s, ts_err *err)
{
    static const char *const topics[] = {"tessera.agent.v1", NULL};
    kbus_batch_opts opts = {.max_messages = 1000, .max_wait_ms = 100};
    if (!reg_consumers_start_batch(&consumers, s, "tessera-registry.agents", topics, &opts,
                                   on_agent_batch, err))
        return false;
    svc_add_check(s, "agent-events", reg_consumers_check, &consumers);
    metrics_add(svc_metrics(s), _collect, NULL);
    return true;
}

void agents_stop(void)
{
    reg_consumers_stop(&consumers);
}
