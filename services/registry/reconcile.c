/* reconcile.c: the database against the agents (see reconcile.h). */
#include "reconcile.h"

#include "context.h"
#include "db_common.h"
#include "kernel_events.h"
#include "libcommon/httpc.h"
#include "libcommon/log.h"
#include "libcommon/metrics.h"
#include "libcommon/pgjson.h"
#include "occupancy_sync.h"
#include "pbutil.h"
#include "repairs.h"
#include "tessera/v1/agent_cmd.pb-c.h"
#include "tessera/v1/kernel.pb-c.h"
#include "transitions.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define AGENT_CALL_TIMEOUT_MS 3000
/* pg_try_advisory_lock key: one reconciling registry at a time. */
#define RECONCILE_LOCK "7400117"

static _Atomic unsigned long passes, agent_failures;

static void _collect(FILE *out, void *ctx)
{
    (void)ctx;
    static const char name[] = "tessera_registry_reconcile_repairs_total";
    metrics_family(out, name, "counter",
                   "Repairs made by the reconcile pass, by kind (docs/operations.md, "
                   "\"Reconciliation\")");
    for (int i = 0; i < RK_COUNT; i++) {
        char label[64];
        snprintf(label, sizeof(label), "kind=\"%s\"", repairs_kind_name((repair_kind)i));
        metrics_sample_u64(out, name, label, repairs_count((repair_kind)i));
    }
    metrics_counter(out, "tessera_registry_reconcile_passes_total",
                    "Reconcile passes run (registry.kernel_reconcile_interval)",
                    atomic_load(&passes));
    metrics_family(
        out, "tessera_registry_reconcile_agent_failures_total", "counter",
        "ALIVE agents whose kernel list could not be read in a pass (left for the next)");
    metrics_sample_u64(out, "tessera_registry_reconcile_agent_failures_total", NULL,
                       atomic_load(&agent_failures));
}

void reconcile_register_metrics(svc *s)
{
    metrics_add(svc_metrics(s), _collect, NULL);
}

static bool confirmed(const char *what, const char *id)
{
    char key[200];
    snprintf(key, sizeof(key), "%s:%s", what, id);
    return repairs_suspect(key);
}

/* ---- what the agent says -------------------------------------------------------------------- */

typedef struct agent_view {
    json_t *doc;     /* the answer */
    json_t *kernels; /* its "kernels" array (borrowed) */
    const char *kernel_host;
} agent_view;

static json_t *view_find(const agent_view *v, const char *kernel_id)
{
    size_t i;
    json_t *k;
    json_array_foreach(v->kernels, i, k)
    {
        const char *id = json_string_value(json_object_get(k, "kernel_id"));
        if (id && strcasecmp(id, kernel_id) == 0) return k;
    }
    return NULL;
}

static int jint(json_t *o, const char *name, int dflt)
{
    json_t *v = json_object_get(o, name);
    return json_is_integer(v) ? (int)json_integer_value(v) : dflt;
}

static bool agent_url(const char *addr, const char *path, char *out, size_t size)
{
    if (!addr || !*addr) return false;
    /* AgentStarted.addr is "http://host:port" (older agents: "host:port"). */
    bool scheme = strncmp(addr, "http://", 7) == 0 || strncmp(addr, "https://", 8) == 0;
    snprintf(out, size, "%s%s%s", scheme ? "" : "http://", addr, path);
    return true;
}

static bool read_agent(httpc *c, const char *agent_id, const char *addr, agent_view *out)
{
    memset(out, 0, sizeof(*out));
    char url[512];
    if (!agent_url(addr, "/v1/kernels", url, sizeof(url))) return false;
    ts_err err = {{0}};
    long status = 0;
    json_t *doc = NULL;
    if (!httpc_json(c, "GET", url, NULL, NULL, &status, &doc, &err) || status != 200 ||
        !json_is_array(json_object_get(doc, "kernels"))) {
        TLOG_WARN("reconcile: the agent's kernels could not be read",
                  "agent=%s url=%s status=%ld "
                  "error=\"%s\"",
                  agent_id, url, status, err.msg);
        json_decref(doc);
        atomic_fetch_add(&agent_failures, 1);
        return false;
    }
    out->doc = doc;
    out->kernels = json_object_get(doc, "kernels");
    out->kernel_host = json_string_value(json_object_get(doc, "kernel_host"));
    return true;
}

/* ---- repairs -------------------------------------------------------------------------------- */

typedef struct krow {
    const char *id, *session_id, *status;
    int generation;
    int64_t age_ms;
} krow;

static void apply(const char *type, ProtobufCMessage *m, const char *kernel_id)
{
    ts_err err = {{0}};
    kbus_result r = kernel_events_apply(type, m, &err);
    if (r != KBUS_DONE)
        TLOG_WARN("reconcile: applying a kernel event failed", "kernel=%s type=%s error=\"%s\"",
                  kernel_id, type, err.msg);
}

static void send_terminated(const krow *k, const char *agent_id, json_t *v, const char *why,
                            repair_kind kind)
{
    char reason[400];
    const char *agent_reason = v ? pgjson_str(v, "reason") : "";
    snprintf(reason, sizeof(reason), "reconcile: %s%s%s", why, *agent_reason ? ": " : "",
             agent_reason);
    Tessera__V1__KernelTerminated m = TESSERA__V1__KERNEL_TERMINATED__INIT;
    m.session_id = (char *)k->session_id;
    m.kernel_id = (char *)k->id;
    m.agent_id = (char *)agent_id;
    m.exit_code = v ? jint(v, "exit_code", -1) : -1;
    m.reason = reason;
    m.generation = k->generation;
    repairs_record(kind, k->session_id, k->id, agent_id, reason);
    apply("tessera.v1.KernelTerminated", &m.base, k->id);
}

static void send_exited(const krow *k, const char *agent_id, json_t *v)
{
    Tessera__V1__KernelExited m = TESSERA__V1__KERNEL_EXITED__INIT;
    m.session_id = (char *)k->session_id;
    m.kernel_id = (char *)k->id;
    m.agent_id = (char *)agent_id;
    m.exit_code = jint(v, "exit_code", -1);
    m.reason = (char *)pgjson_str(v, "reason");
    m.generation = jint(v, "generation", k->generation);
    repairs_record(RK_KERNEL_EXITED, k->session_id, k->id, agent_id,
                   "the agent reports the kernel exited; its KernelExited was not applied");
    apply("tessera.v1.KernelExited", &m.base, k->id);
}

static void send_started(const krow *k, const char *agent_id, const agent_view *av, json_t *v)
{
    arena a = {0};
    Tessera__V1__KernelStarted m = TESSERA__V1__KERNEL_STARTED__INIT;
    m.session_id = (char *)k->session_id;
    m.kernel_id = (char *)k->id;
    m.agent_id = (char *)agent_id;
    m.container_id = (char *)k->id; /* the agent names containers by kernel id */
    m.kernel_host = (char *)(av->kernel_host ? av->kernel_host : "");
    m.service_ports = pb_ports(&a, json_object_get(v, "service_ports"), &m.n_service_ports);
    m.generation = jint(v, "generation", k->generation);
    repairs_record(RK_KERNEL_STARTED, k->session_id, k->id, agent_id,
                   "the agent runs the kernel; its KernelStarted was not applied");
    apply("tessera.v1.KernelStarted", &m.base, k->id);
    ar_free(&a);
}

/* The command again (lost on the way, or never produced), under the
 * session's lock; the kernel's status_changed_at moves, so the next one
 * comes a registry.stuck_timeout later at the earliest. */
static void resend(const krow *k, const char *agent_id, bool create)
{
    ts_err err = {{0}};
    PGconn *conn = reg_pg_get(&err);
    if (!conn) return;
    outbox ob;
    ob_init(&ob, "");
    sess s;
    bool found = false, sent = false;
    const char *p[] = {k->id, k->status, agent_id,
                       create ? "reconcile: CreateKernel sent again"
                              : "reconcile: DestroyKernel sent again"};
    PGresult *r = NULL;
    bool ok = pg_begin(conn, &err) && tr_lock(conn, k->session_id, &s, &found, &err);
    if (ok && found && !reg_status_final(s.status)) {
        /* still as the pass saw it? */
        r = reg_exec(conn,
                     "UPDATE registry.kernels SET status_changed_at = now(), status_info = $4"
                     " WHERE id = $1::uuid AND status = $2 AND agent_id = $3 RETURNING generation",
                     4, p, &err);
        ok = r != NULL;
        if (ok && PQntuples(r) == 1) {
            if (create) {
                ok = tr_create_kernels(conn, &ob, &s, k->status, NULL, &err);
            } else {
                Tessera__V1__DestroyKernel m = TESSERA__V1__DESTROY_KERNEL__INIT;
                m.session_id = (char *)k->session_id;
                m.kernel_id = (char *)k->id;
                m.reason = "reconcile: destroy again";
                m.force = true;
                m.restart = strcmp(k->status, "RESTARTING") == 0; /* keeps /home/work */
                m.generation = atoi(PQgetvalue(r, 0, 0));
                ob_agent_cmd(&ob, agent_id, k->id, &m.base);
            }
            sent = ok;
        }
    }
    if (r) PQclear(r);
    if (ok && pg_commit(conn, &err)) {
        ob_flush(&ob);
        if (sent)
            repairs_record(create ? RK_CREATE_RESENT : RK_DESTROY_RESENT, k->session_id, k->id,
                           agent_id,
                           create ? "the agent has never had this generation of the kernel"
                                  : "the agent still has the kernel");
    } else {
        pg_rollback(conn);
        ob_discard(&ob);
        TLOG_WARN("reconcile: sending a command again failed", "kernel=%s error=\"%s\"", k->id,
                  err.msg);
    }
    reg_pg_put(conn);
}

static bool starting(const char *st)
{
    return strcmp(st, "SCHEDULED") == 0 || strcmp(st, "PREPARING") == 0 ||
           strcmp(st, "PULLING") == 0 || strcmp(st, "CREATING") == 0 ||
           strcmp(st, "RESTARTING") == 0;
}

/* One live kernel of the database against the agent's record of it (v, or
 * NULL when the agent has none). */
static void check_kernel(const krow *k, const char *agent_id, const agent_view *av, json_t *v)
{
    const char *vst = v ? pgjson_str(v, "status") : "";
    int vgen = v ? jint(v, "generation", 0) : -1;
    /* the agent's record is of this generation (or a newer one) */
    bool current = v && vgen >= k->generation;
    bool gone = !v || (current && strcmp(vst, "terminated") == 0);
    bool stuck = k->age_ms >= reg_settings.stuck_timeout_ms;
    if (strcmp(k->status, "RUNNING") == 0) {
        if (gone && confirmed("lost", k->id))
            send_terminated(k, agent_id, v, "the agent has no container for the RUNNING kernel",
                            RK_KERNEL_LOST);
        else if (current && strcmp(vst, "exited") == 0 && confirmed("exited", k->id))
            send_exited(k, agent_id, v);
    } else if (starting(k->status) && stuck) {
        if (current && strcmp(vst, "running") == 0) {
            send_started(k, agent_id, av, v);
        } else if (current && strcmp(vst, "exited") == 0) {
            send_started(k, agent_id, av, v);
            send_exited(k, agent_id, v);
        } else if (current && strcmp(vst, "terminated") == 0) {
            send_terminated(k, agent_id, v, "the agent ended the kernel", RK_KERNEL_LOST);
        } else if (!current) {
            resend(k, agent_id, true);
        } /* pulling, creating, terminating: the agent is at it */
    } else if (strcmp(k->status, "TERMINATING") == 0 && stuck) {
        if (gone)
            send_terminated(k, agent_id, v, "the agent has no container for the kernel",
                            RK_TERMINATION_FINISHED);
        else if (strcmp(vst, "terminating") != 0)
            resend(k, agent_id, false);
    }
}

/* The agent's kernels that no live kernel of the database accounts for. */
static void check_orphans(const char *agent_id, const agent_view *av, PGresult *live)
{
    size_t n = json_array_size(av->kernels), no = 0;
    const char **ids = ts_calloc(n + 1, sizeof(*ids));
    json_t **vs = ts_calloc(n + 1, sizeof(*vs));
    size_t i;
    json_t *v;
    json_array_foreach(av->kernels, i, v)
    {
        const char *id = pgjson_str(v, "kernel_id"), *st = pgjson_str(v, "status");
        if (strcmp(st, "terminated") == 0 || strcmp(st, "terminating") == 0) continue;
        /* Only a registry's session ids are UUIDs: a kernel of any other
         * session (made by hand through the agent's command topic) is not
         * one the registry ended or lost, and not its to reclaim. */
        if (!ts_uuid_valid(pgjson_str(v, "session_id"))) continue;
        bool known = false;
        for (int r = 0; r < PQntuples(live) && !known; r++)
            known = strcasecmp(PQgetvalue(live, r, 0), id) == 0;
        if (known) continue;
        vs[no] = v;
        ids[no++] = id;
    }
    if (no == 0) {
        free(ids);
        free(vs);
        return;
    }
    /* Read again now (after the agent's answer): a kernel placed since the
     * first read is live here. */
    const char **uuids = ts_calloc(no + 1, sizeof(*uuids));
    size_t nu = 0;
    for (size_t x = 0; x < no; x++)
        if (ts_uuid_valid(ids[x])) uuids[nu++] = ids[x];
    PGresult *r = NULL;
    ts_err err = {{0}};
    PGconn *conn = reg_pg_get(&err);
    if (conn) {
        char *arr = reg_uuid_array(uuids, nu);
        const char *p[] = {arr, agent_id};
        r = reg_exec(conn,
                     "SELECT k.id::text FROM registry.kernels k"
                     " JOIN registry.sessions s ON s.id = k.session_id"
                     " WHERE k.id = ANY($1::uuid[]) AND k.agent_id = $2"
                     " AND k.status NOT IN " SQL_FINAL " AND s.status NOT IN " SQL_FINAL,
                     2, p, &err);
        free(arr);
    }
    reg_pg_put(conn);
    if (!r) {
        TLOG_WARN("reconcile: orphan check failed", "agent=%s error=\"%s\"", agent_id, err.msg);
    } else {
        outbox ob;
        ob_init(&ob, "");
        for (size_t x = 0; x < no; x++) {
            bool live_now = false;
            for (int row = 0; row < PQntuples(r) && !live_now; row++)
                live_now = strcasecmp(PQgetvalue(r, row, 0), ids[x]) == 0;
            if (live_now || !confirmed("orphan", ids[x])) continue;
            Tessera__V1__DestroyKernel m = TESSERA__V1__DESTROY_KERNEL__INIT;
            m.session_id = (char *)pgjson_str(vs[x], "session_id");
            m.kernel_id = (char *)ids[x];
            m.reason = "reconcile: no live kernel in the registry";
            m.force = true;
            m.generation = jint(vs[x], "generation", 0);
            ob_agent_cmd(&ob, agent_id, ids[x], &m.base);
            repairs_record(RK_ORPHAN_DESTROYED, m.session_id, ids[x], agent_id,
                           "the agent runs a kernel the registry has ended or does not know");
        }
        ob_flush(&ob);
        PQclear(r);
    }
    free(uuids);
    free(ids);
    free(vs);
}

static const char live_sql[] =
    "SELECT k.id::text, k.session_id::text, k.status, k.generation,"
    " (extract(epoch FROM now() - k.status_changed_at) * 1000)::bigint"
    " FROM registry.kernels k WHERE k.agent_id = $1 AND k.status NOT IN " SQL_FINAL
    " ORDER BY k.session_id, k.cluster_idx";

static void reconcile_agent(httpc *c, const char *agent_id, const char *addr)
{
    ts_err err = {{0}};
    /* the database first: what it says was true before the agent answers */
    PGconn *conn = reg_pg_get(&err);
    const char *p[] = {agent_id};
    PGresult *live = conn ? reg_exec(conn, live_sql, 1, p, &err) : NULL;
    reg_pg_put(conn);
    agent_view av;
    if (!live) {
        TLOG_WARN("reconcile: database unreachable", "agent=%s error=\"%s\"", agent_id, err.msg);
    } else if (read_agent(c, agent_id, addr, &av)) {
        for (int i = 0; i < PQntuples(live); i++) {
            krow k = {.id = PQgetvalue(live, i, 0),
                      .session_id = PQgetvalue(live, i, 1),
                      .status = PQgetvalue(live, i, 2),
                      .generation = atoi(PQgetvalue(live, i, 3)),
                      .age_ms = strtoll(PQgetvalue(live, i, 4), NULL, 10)};
            check_kernel(&k, agent_id, &av, view_find(&av, k.id));
        }
        check_orphans(agent_id, &av, live);
        json_decref(av.doc);
    }
    if (live) PQclear(live);
}

/* ---- sessions ------------------------------------------------------------------------------- */

static const char stuck_sessions_sql[] =
    "SELECT s.id::text FROM registry.sessions s"
    " WHERE s.status IN ('SCHEDULED', 'PREPARING', 'PULLING', 'RESTARTING', 'TERMINATING')"
    " AND s.status_changed_at < now() - $1::bigint * interval '1 ms'"
    " AND (NOT EXISTS (SELECT 1 FROM registry.kernels k WHERE k.session_id = s.id"
    "        AND k.agent_id IS NOT NULL AND k.status NOT IN " SQL_FINAL ")"
    "   OR (s.status <> 'TERMINATING' AND NOT EXISTS (SELECT 1 FROM registry.kernels k"
    "        WHERE k.session_id = s.id AND k.status <> 'RUNNING')))"
    " ORDER BY s.status_changed_at LIMIT 200";

static void reconcile_session(PGconn *conn, const char *sid)
{
    ts_err err = {{0}};
    outbox ob;
    ob_init(&ob, "");
    sess s;
    bool found = false;
    repair_kind kind = RK_COUNT;
    char why[200] = "";
    tlog_ctx_session(sid); /* the status changes' lines */
    bool ok = pg_begin(conn, &err) && tr_lock(conn, sid, &s, &found, &err);
    int live = 0, running = 0, total = 0;
    if (ok && found) {
        const char *p[] = {sid};
        PGresult *r = reg_exec(conn,
                               "SELECT count(*) FILTER (WHERE agent_id IS NOT NULL AND status"
                               "   NOT IN " SQL_FINAL "),"
                               " count(*) FILTER (WHERE status = 'RUNNING'), count(*)"
                               " FROM registry.kernels WHERE session_id = $1::uuid",
                               1, p, &err);
        ok = r != NULL;
        if (ok) {
            live = atoi(PQgetvalue(r, 0, 0));
            running = atoi(PQgetvalue(r, 0, 1));
            total = atoi(PQgetvalue(r, 0, 2));
            PQclear(r);
        }
    }
    bool is_starting = found && starting(s.status);
    if (ok && found && strcmp(s.status, ST_TERMINATING) == 0 && live == 0) {
        snprintf(why, sizeof(why), "TERMINATING without a live kernel: finished");
        ok = tr_finish(conn, &ob, &s, &err);
        kind = RK_SESSION_ENDED;
    } else if (ok && is_starting && total > 0 && running == total) {
        bool moved = false;
        snprintf(why, sizeof(why), "%s while every kernel is RUNNING: now RUNNING", s.status);
        ok = tr_running_if_all_up(conn, &ob, &s, &moved, &err);
        if (moved) kind = RK_SESSION_RUNNING;
    } else if (ok && is_starting && live == 0) {
        snprintf(why, sizeof(why), "%s without a live kernel", s.status);
        char reason[300];
        snprintf(reason, sizeof(reason), "reconcile: %s", why);
        ok = tr_end(conn, &ob, &s, ST_ERROR, reason, "reconcile", NULL, NULL, NULL, &err);
        kind = RK_SESSION_ENDED;
    }
    if (ok && pg_commit(conn, &err)) {
        ob_flush(&ob);
        tlog_ctx_session(NULL); /* the repair's line names it */
        if (kind != RK_COUNT) repairs_record(kind, sid, NULL, NULL, why);
    } else {
        pg_rollback(conn);
        ob_discard(&ob);
        TLOG_WARN("reconcile: session repair failed", "error=\"%s\"", err.msg);
    }
    tlog_ctx_session(NULL);
}

static void reconcile_sessions(void)
{
    ts_err err = {{0}};
    PGconn *conn = reg_pg_get(&err);
    if (!conn) return;
    char ms[24];
    snprintf(ms, sizeof(ms), "%lld", (long long)reg_settings.stuck_timeout_ms);
    const char *p[] = {ms};
    PGresult *r = reg_exec(conn, stuck_sessions_sql, 1, p, &err);
    if (!r) {
        TLOG_WARN("reconcile: stuck sessions could not be read", "error=\"%s\"", err.msg);
    } else {
        for (int i = 0; i < PQntuples(r); i++)
            reconcile_session(conn, PQgetvalue(r, i, 0));
        PQclear(r);
    }
    reg_pg_put(conn);
}

/* ---- the pass ------------------------------------------------------------------------------- */

void reconcile_pass(void)
{
    static __thread httpc *c;
    if (!c) c = httpc_new_internal(AGENT_CALL_TIMEOUT_MS);
    ts_err err = {{0}};
    /* One registry instance at a time: a session-level advisory lock on a
     * connection held for the pass. */
    PGconn *lock = reg_pg_get(&err);
    if (!lock) {
        TLOG_WARN("reconcile: database unreachable", "error=\"%s\"", err.msg);
        return;
    }
    PGresult *r = reg_exec(lock, "SELECT pg_try_advisory_lock(" RECONCILE_LOCK ")", 0, NULL, &err);
    bool mine = r && PQgetvalue(r, 0, 0)[0] == 't';
    if (r) PQclear(r);
    if (!mine) {
        reg_pg_put(lock);
        return;
    }
    atomic_fetch_add(&passes, 1);
    PGresult *agents = reg_exec(lock,
                                "SELECT id, addr FROM registry.agents WHERE status = 'ALIVE'"
                                " AND addr <> '' AND addr NOT LIKE '%:0' ORDER BY id",
                                0, NULL, &err);
    for (int i = 0; agents && i < PQntuples(agents); i++)
        reconcile_agent(c, PQgetvalue(agents, i, 0), PQgetvalue(agents, i, 1));
    if (agents) PQclear(agents);
    reconcile_sessions();
    occupancy_verify();
    repairs_rotate();
    r = reg_exec(lock, "SELECT pg_advisory_unlock(" RECONCILE_LOCK ")", 0, NULL, &err);
    if (r) PQclear(r);
    reg_pg_put(lock);
}
