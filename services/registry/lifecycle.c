/* lifecycle.c: the registry's consumers of tessera.session.v1 (the
 * scheduler's SessionScheduled / SessionUnschedulable) and tessera.kernel.v1
 * (the agents' kernel events). See docs/sessions.md for the flow.
 *
 * Each event is applied on its session row (locked): read the current status,
 * apply the change only when the event still makes sense in it (a duplicated
 * or reordered event finds the status already past it and changes nothing),
 * COMMIT, then publish what the change decided. The offset is stored only
 * after that (kbus: KBUS_DONE), so a crash replays the event and the guards
 * make the replay harmless.
 *
 * Both consumers run in kbus's batch mode: the events of a batch are applied
 * in one transaction that first locks all their sessions in one statement,
 * in id order, so two batches cannot deadlock. A pass then applies what it
 * can for many sessions at once (placements.c, kernel_steps.c); the other
 * events follow one by one in session id order (a session's own events keep
 * their order). One COMMIT then covers them all; their outboxes are
 * published after it. When any event of a batch fails, the transaction
 * is rolled back and kbus hands each event again alone (n = 1: the same
 * code, one event per transaction). */
#include "lifecycle.h"

#include "event_consumers.h"
#include "libcommon/log.h"
#include "pbutil.h"
#include "kernel_steps.h"
#include "placements.h"
#include "tessera/v1/kernel.pb-c.h"
#include "tessera/v1/session.pb-c.h"
#include "transitions.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static reg_consumers session_consumers, kernel_consumers;

/* ---- one transaction per batch of events ---------------------------------------------------- */

typedef kbus_result (*apply_fn)(PGconn *conn, outbox *ob, sess *s, const void *m, ts_err *err);

/* One event of a batch for its session. */
typedef struct tx_item {
    const kbus_msg *msg;
    const char *session_id;
    const char *kernel_id; /* log context, or NULL */
    apply_fn apply;
    apply_fn not_found; /* an unknown session: NULL ignores the event */
    ProtobufCMessage *m;
    size_t order; /* position in the batch */
} tx_item;

static int by_session(const void *a, const void *b)
{
    const tx_item *x = a, *y = b;
    int c = strcasecmp(x->session_id, y->session_id); /* a UUID in either case */
    if (c) return c;
    return x->order < y->order ? -1 : x->order > y->order;
}

/* Apply the item on its session, locked by the caller (found false: none). */
static kbus_result apply_item(PGconn *conn, outbox *ob, const tx_item *it, sess *s, bool found,
                              ts_err *reason)
{
    if (found) return it->apply(conn, ob, s, it->m, reason);
    if (!it->not_found) {
        TLOG_WARN("event for an unknown session ignored", "type=%s", it->msg->env->type);
        return KBUS_DONE;
    }
    sess none;
    memset(&none, 0, sizeof(none));
    ts_strlcpy(none.id, it->session_id, sizeof(none.id));
    return it->not_found(conn, ob, &none, it->m, reason);
}

/* A pass over the whole batch before the items one by one: it applies what
 * it can in fewer statements and sets done[i] for the items it applied. */
typedef kbus_result (*batch_pass_fn)(PGconn *conn, tx_item *items, size_t n, sess *ss,
                                     const bool *found, const size_t *group, outbox *obs,
                                     bool *done, ts_err *reason);

/* Apply the items in one transaction: lock all their sessions in one
 * statement, run pass (if any), then apply the ones it left the items in session id order (a
 * session's own in the order they came), each on its session as the items before it left it;
 * COMMIT, then publish every item's outbox. Any failure rolls everything
 * back. */
static kbus_result in_batch_tx(tx_item *items, size_t n, batch_pass_fn pass, ts_err *reason)
{
    if (n == 0) return KBUS_DONE;
    for (size_t i = 0; i < n; i++)
        if (!ts_uuid_valid(items[i].session_id)) {
            ts_err_set(reason, "%s: session id '%.60s' is not a UUID", items[i].msg->env->type,
                       items[i].session_id);
            return KBUS_REJECT;
        }
    qsort(items, n, sizeof(*items), by_session);
    /* the distinct sessions: group[i] is item i's */
    const char **ids = ts_calloc(n, sizeof(*ids));
    size_t *group = ts_calloc(n, sizeof(*group)), ng = 0;
    for (size_t i = 0; i < n; i++) {
        if (ng == 0 || strcasecmp(ids[ng - 1], items[i].session_id) != 0)
            ids[ng++] = items[i].session_id;
        group[i] = ng - 1;
    }
    sess *ss = ts_calloc(ng, sizeof(*ss));
    bool *found = ts_calloc(ng, sizeof(*found));
    outbox *obs = ts_calloc(n, sizeof(*obs));
    bool *done = ts_calloc(n, sizeof(*done));
    for (size_t i = 0; i < n; i++)
        ob_init(&obs[i], items[i].msg->env->correlation_id);
    kbus_result res = KBUS_RETRY;
    PGconn *conn = reg_pg_get(reason);
    if (conn) {
        if (pg_begin(conn, reason) && tr_lock_many(conn, ids, ng, ss, found, reason))
            res = KBUS_DONE;
        if (res == KBUS_DONE && pass)
            res = pass(conn, items, n, ss, found, group, obs, done, reason);
        for (size_t i = 0; i < n && res == KBUS_DONE; i++) {
            if (done[i]) continue;
            tlog_ctx_session(items[i].session_id);
            tlog_ctx_kernel(items[i].kernel_id);
            res = apply_item(conn, &obs[i], &items[i], &ss[group[i]], found[group[i]], reason);
        }
        tlog_ctx_session(NULL);
        tlog_ctx_kernel(NULL);
        if (res == KBUS_DONE && !pg_commit(conn, reason)) res = KBUS_RETRY;
        if (res != KBUS_DONE) pg_rollback(conn);
        reg_pg_put(conn);
    }
    for (size_t i = 0; i < n; i++) {
        if (res == KBUS_DONE)
            ob_flush(&obs[i]);
        else
            ob_discard(&obs[i]);
    }
    free(obs);
    free(done);
    free(found);
    free(ss);
    free(group);
    free(ids);
    return res;
}

static void free_items(tx_item *items, size_t n)
{
    for (size_t i = 0; i < n; i++)
        protobuf_c_message_free_unpacked(items[i].m, NULL);
    free(items);
}

static kbus_result db_failed(void)
{
    return KBUS_RETRY;
}

/* ---- tessera.session.v1 --------------------------------------------------------------------- */

/* The scheduler reserved slots for a session we do not know or that already
 * ended (cancelled while it was being placed): give them back. */
static kbus_result release_unplaced(PGconn *conn, outbox *ob, sess *s, const void *m, ts_err *err)
{
    (void)conn;
    (void)m;
    (void)err;
    Tessera__V1__SessionTerminated t = TESSERA__V1__SESSION_TERMINATED__INIT;
    t.session_id = s->id;
    t.reason = s->status[0] ? "ended before its placement arrived" : "unknown session";
    ob_session_event(ob, s->id, &t.base);
    TLOG_INFO("placement of an ended or unknown session released", "session=%s status=%s", s->id,
              s->status[0] ? s->status : "unknown");
    return KBUS_DONE;
}

static kbus_result apply_scheduled(PGconn *conn, outbox *ob, sess *s, const void *msg, ts_err *err)
{
    const Tessera__V1__SessionScheduled *m = msg;
    if (reg_status_final(s->status)) return release_unplaced(conn, ob, s, msg, err);
    if (strcmp(s->status, ST_PENDING) == 0) {
        placement p;
        if (!placement_prepare(&p, s, m, ob, err)) return KBUS_REJECT;
        kbus_result res = placements_apply(conn, &p, 1, err);
        placement_free(&p);
        return res;
    } else if (strcmp(s->status, ST_SCHEDULED) == 0) {
        /* a session left SCHEDULED by an earlier version: create its kernels */
        if (!tr_create_kernels(conn, ob, s, "SCHEDULED", "PREPARING", err) ||
            !tr_set(conn, ob, s, ST_PREPARING, "creating kernels", err))
            return db_failed();
        placement_preparing_event(ob, s);
    }
    /* PREPARING and later: a duplicate; nothing to do. */
    return KBUS_DONE;
}

/* The batch's placements of PENDING sessions (the first event of each such
 * session, when it checks out) in placements.c's three statements. The
 * others (duplicates, ended or unknown sessions, placements that do not
 * check out) are left to apply_scheduled, one by one, after them. */
static kbus_result place_pending(PGconn *conn, tx_item *items, size_t n, sess *ss,
                                 const bool *found, const size_t *group, outbox *obs, bool *done,
                                 ts_err *reason)
{
    placement *ps = ts_calloc(n, sizeof(*ps));
    size_t np = 0;
    for (size_t i = 0; i < n; i++) {
        size_t g = group[i];
        bool first = i == 0 || group[i - 1] != g;
        if (!first || !found[g] || items[i].apply != apply_scheduled ||
            strcmp(ss[g].status, ST_PENDING) != 0)
            continue;
        ts_err ignored = {{0}};
        if (!placement_prepare(&ps[np], &ss[g], (const Tessera__V1__SessionScheduled *)items[i].m,
                               &obs[i], &ignored))
            continue; /* apply_scheduled says why */
        done[i] = true;
        np++;
    }
    kbus_result res = placements_apply(conn, ps, np, reason);
    for (size_t i = 0; i < np; i++)
        placement_free(&ps[i]);
    free(ps);
    return res;
}

static kbus_result on_unschedulable(const Tessera__V1__SessionUnschedulable *m, ts_err *reason)
{
    if (!ts_uuid_valid(m->session_id)) {
        ts_err_set(reason, "SessionUnschedulable: session id is not a UUID");
        return KBUS_REJECT;
    }
    PGconn *conn = reg_pg_get(reason);
    if (!conn) return KBUS_WAIT; /* the database is down or busy: never a dead letter */
    kbus_result res = KBUS_RETRY;
    const char *p[] = {m->session_id, m->reason};
    /* Only the reason changes (still PENDING); a history row when it changed.
     * "IS NOT DISTINCT FROM": a status test PostgreSQL cannot answer from the
     * index of live sessions by status, so the plan (made once, perhaps while
     * the table was small) always finds the row by its id, never by reading
     * every PENDING session (see session_enqueued_publish). */
    PGresult *r =
        reg_exec(conn,
                 "WITH u AS (UPDATE registry.sessions SET status_info = $2"
                 "   WHERE id = $1::uuid AND status IS NOT DISTINCT FROM 'PENDING'"
                 "   AND status_info <> $2"
                 "   RETURNING id)"
                 " INSERT INTO registry.session_status_history (session_id, status, reason)"
                 " SELECT id, 'PENDING', $2 FROM u",
                 2, p, reason);
    if (r) {
        PQclear(r);
        res = KBUS_DONE;
    }
    reg_pg_put(conn);
    return res;
}

/* A batch of tessera.session.v1: SessionScheduled in one transaction;
 * SessionUnschedulable (only a PENDING session's reason) each on its own,
 * first; everything else is not for us. */
static kbus_result on_session_batch(const kbus_msg *msgs, size_t n, void *ctx, ts_err *reason)
{
    (void)ctx;
    tx_item *items = ts_calloc(n, sizeof(*items));
    size_t k = 0;
    kbus_result res = KBUS_DONE;
    for (size_t i = 0; i < n && res == KBUS_DONE; i++) {
        const char *type = msgs[i].env->type;
        if (strcmp(type, "tessera.v1.SessionScheduled") == 0) {
            ProtobufCMessage *m =
                envelope_payload(msgs[i].env, &tessera__v1__session_scheduled__descriptor, reason);
            if (!m) {
                res = KBUS_REJECT;
                break;
            }
            items[k] = (tx_item){.msg = &msgs[i],
                                 .session_id = ((Tessera__V1__SessionScheduled *)m)->session_id,
                                 .apply = apply_scheduled,
                                 .not_found = release_unplaced,
                                 .m = m,
                                 .order = k};
            k++;
        } else if (strcmp(type, "tessera.v1.SessionUnschedulable") == 0) {
            ProtobufCMessage *m = envelope_payload(
                msgs[i].env, &tessera__v1__session_unschedulable__descriptor, reason);
            if (!m) {
                res = KBUS_REJECT;
                break;
            }
            res = on_unschedulable((Tessera__V1__SessionUnschedulable *)m, reason);
            protobuf_c_message_free_unpacked(m, NULL);
        }
    }
    if (res == KBUS_DONE) res = in_batch_tx(items, k, place_pending, reason);
    free_items(items, k);
    return res;
}

/* ---- tessera.kernel.v1 ---------------------------------------------------------------------- */

typedef struct kernel_row {
    char status[16];
    char agent_id[136];
    int cluster_idx;
    int generation;
    bool found;
} kernel_row;

/* The event's kernel, locked; false on a database error. found false when it
 * is not a kernel of the session or another agent holds it (stale event). */
static bool lock_kernel(PGconn *conn, const sess *s, const char *kernel_id, const char *agent_id,
                        kernel_row *k, ts_err *err)
{
    memset(k, 0, sizeof(*k));
    if (!ts_uuid_valid(kernel_id)) return true;
    const char *p[] = {kernel_id, s->id};
    PGresult *r = reg_exec(
        conn,
        "SELECT status, coalesce(agent_id, ''), cluster_idx, generation FROM registry.kernels"
        " WHERE id = $1::uuid AND session_id = $2::uuid FOR UPDATE",
        2, p, err);
    if (!r) return false;
    if (PQntuples(r) == 1) {
        ts_strlcpy(k->status, PQgetvalue(r, 0, 0), sizeof(k->status));
        ts_strlcpy(k->agent_id, PQgetvalue(r, 0, 1), sizeof(k->agent_id));
        k->cluster_idx = atoi(PQgetvalue(r, 0, 2));
        k->generation = atoi(PQgetvalue(r, 0, 3));
        k->found = !agent_id || !agent_id[0] || strcmp(k->agent_id, agent_id) == 0;
        if (!k->found)
            TLOG_WARN("kernel event from another agent ignored", "kernel=%s agent=%s holder=%s",
                      kernel_id, agent_id, k->agent_id);
    } else {
        TLOG_WARN("event for an unknown kernel ignored", "kernel=%s", kernel_id);
    }
    PQclear(r);
    return true;
}

static bool in(const char *status, const char *const *set)
{
    for (; *set; set++)
        if (strcmp(status, *set) == 0) return true;
    return false;
}

/* An event about an older generation of the kernel (before a restart). */
static bool stale(const kernel_row *k, int generation)
{
    if (generation >= k->generation) return false;
    TLOG_INFO("kernel event of an older generation ignored", "generation=%d current=%d", generation,
              k->generation);
    return true;
}

/* The event's kernel updated in one statement (SET set_sql, its parameters
 * from $6 on: extra) when it is a kernel of the session held by the event's
 * agent, in one of the statuses from, and (generation >= 0) not of a newer
 * generation than the event's: 1 when it was, 0 when the event is
 * duplicated, reordered or stale (then logged as lock_kernel and stale do),
 * -1 on a database error. Saves lock_kernel's round trip on the start path. */
static int update_kernel_if(PGconn *conn, const sess *s, const char *kernel_id,
                            const char *agent_id, int generation, const char *const *from,
                            const char *set_sql, int nextra, const char *const *extra, ts_err *err)
{
    if (!ts_uuid_valid(kernel_id)) return 0;
    char states[160], gen[16]; /* a text[] literal: {A,B,...} */
    size_t len = 0;
    states[len++] = '{';
    for (const char *const *f = from; *f; f++) {
        size_t n = strlen(*f);
        if (len + n + 3 > sizeof(states)) break; /* the callers' sets are a few words */
        if (f != from) states[len++] = ',';
        memcpy(states + len, *f, n);
        len += n;
    }
    states[len++] = '}';
    states[len] = '\0';
    snprintf(gen, sizeof(gen), "%d", generation);
    const char *p[12] = {kernel_id, s->id, agent_id ? agent_id : "", states, gen};
    for (int i = 0; i < nextra && i < 7; i++)
        p[5 + i] = extra[i];
    char *sql = ts_asprintf("UPDATE registry.kernels SET %s WHERE id = $1::uuid"
                            " AND session_id = $2::uuid AND ($3 = '' OR agent_id = $3)"
                            " AND status = ANY($4::text[])"
                            " AND ($5::int < 0 OR generation <= $5::int)",
                            set_sql);
    PGresult *r = reg_exec(conn, sql, 5 + nextra, p, err);
    free(sql);
    if (!r) return -1;
    int n = atoi(PQcmdTuples(r));
    PQclear(r);
    if (n == 1) return 1;
    kernel_row k; /* why not: for the log */
    if (!lock_kernel(conn, s, kernel_id, agent_id, &k, err)) return -1;
    if (k.found && generation >= 0) (void)stale(&k, generation);
    return 0;
}

static bool kernel_final(const char *st)
{
    return reg_status_final(st);
}

static bool set_kernel(PGconn *conn, const char *kernel_id, const char *status, const char *info,
                       ts_err *err)
{
    const char *p[] = {kernel_id, status, info ? info : ""};
    return reg_run(conn,
                   "UPDATE registry.kernels SET status = $2, status_info = $3,"
                   " status_changed_at = now() WHERE id = $1::uuid",
                   3, p, err);
}

/* Kernels of the session on an agent that have not ended. */
static bool live_kernels(PGconn *conn, const sess *s, int *n, ts_err *err)
{
    const char *p[] = {s->id};
    PGresult *r = reg_exec(conn,
                           "SELECT count(*) FROM registry.kernels WHERE session_id = $1::uuid"
                           " AND agent_id IS NOT NULL"
                           " AND status NOT IN ('TERMINATED', 'CANCELLED', 'ERROR')",
                           1, p, err);
    if (!r) return false;
    *n = atoi(PQgetvalue(r, 0, 0));
    PQclear(r);
    return true;
}

static const char *const STARTING[] = {ST_SCHEDULED, ST_PREPARING, ST_PULLING, NULL};
static const char *const ACTIVE[] = {ST_SCHEDULED, ST_PREPARING,  ST_PULLING,
                                     ST_RUNNING,   ST_RESTARTING, NULL};

static void human_bytes(char *buf, size_t size, int64_t b)
{
    snprintf(buf, size, "%.1f MiB", (double)b / (1024.0 * 1024.0));
}

static kbus_result apply_pulling(PGconn *conn, outbox *ob, sess *s, const void *msg, ts_err *err)
{
    const Tessera__V1__KernelPulling *m = msg;
    kernel_row k;
    if (!lock_kernel(conn, s, m->kernel_id, m->agent_id, &k, err)) return db_failed();
    if (!k.found || !in(k.status, STARTING)) return KBUS_DONE;
    char done[32], total[32], info[160], layers[48] = "";
    human_bytes(done, sizeof(done), m->bytes_done);
    human_bytes(total, sizeof(total), m->bytes_total);
    if (m->layers_total > 0 && m->layers_done >= 0 && m->layers_done <= m->layers_total)
        snprintf(layers, sizeof(layers), ", %d of %d layers ready", m->layers_done,
                 m->layers_total);
    if (m->bytes_total > 0)
        snprintf(info, sizeof(info), "pulling %s / %s%s", done, total, layers);
    else
        snprintf(info, sizeof(info), "pulling %s%s", done, layers);
    if (!set_kernel(conn, m->kernel_id, "PULLING", info, err)) return db_failed();
    if (strcmp(s->status, ST_SCHEDULED) == 0 || strcmp(s->status, ST_PREPARING) == 0) {
        if (!tr_set(conn, ob, s, ST_PULLING, info, err)) return db_failed();
    } else if (strcmp(s->status, ST_PULLING) == 0) {
        const char *p[] = {s->id, info};
        if (!reg_run(conn, "UPDATE registry.sessions SET status_info = $2 WHERE id = $1::uuid", 2,
                     p, err))
            return db_failed();
        ts_strlcpy(s->info, info, sizeof(s->info));
    } else {
        return KBUS_DONE;
    }
    Tessera__V1__SessionPulling e = TESSERA__V1__SESSION_PULLING__INIT;
    e.session_id = s->id;
    e.image = m->image;
    e.bytes_done = m->bytes_done;
    e.bytes_total = m->bytes_total;
    ob_session_event(ob, s->id, &e.base);
    return KBUS_DONE;
}

static kbus_result apply_creating(PGconn *conn, outbox *ob, sess *s, const void *msg, ts_err *err)
{
    const Tessera__V1__KernelCreating *m = msg;
    const char *x[] = {m->image_digest};
    int u = update_kernel_if(conn, s, m->kernel_id, m->agent_id, -1, STARTING,
                             "status = 'CREATING', status_info = 'creating the container',"
                             " image_digest = $6, status_changed_at = now()",
                             1, x, err);
    if (u < 0) return db_failed();
    if (u == 0) return KBUS_DONE;
    if (strcmp(s->status, ST_PULLING) == 0 &&
        !tr_set(conn, ob, s, ST_PREPARING, "image ready; creating containers", err))
        return db_failed();
    return KBUS_DONE;
}

static kbus_result apply_started(PGconn *conn, outbox *ob, sess *s, const void *msg, ts_err *err)
{
    const Tessera__V1__KernelStarted *m = msg;
    static const char *const from[] = {"SCHEDULED", "PREPARING",  "PULLING",
                                       "CREATING",  "RESTARTING", NULL};
    json_t *pj = pb_ports_json(m->service_ports, m->n_service_ports);
    char *pt = json_dumps(pj, JSON_COMPACT);
    const char *x[] = {m->container_id, m->kernel_host, pt};
    int u = update_kernel_if(conn, s, m->kernel_id, m->agent_id, m->generation, from,
                             "status = 'RUNNING', status_info = '', container_id = $6,"
                             " kernel_host = $7, service_ports = $8::jsonb,"
                             " status_changed_at = now()",
                             3, x, err);
    free(pt);
    if (u <= 0) {
        json_decref(pj);
        return u < 0 ? db_failed() : KBUS_DONE;
    }
    if (strcmp(s->status, ST_TERMINATING) == 0 || reg_status_final(s->status)) {
        json_decref(pj);
        /* Destroy requested meanwhile: make sure this container goes too. */
        sess copy = *s;
        return tr_destroy_kernels(conn, ob, &copy, "session ended", false, NULL, err) ? KBUS_DONE
                                                                                      : db_failed();
    }
    if (!in(s->status, ACTIVE) || strcmp(s->status, ST_RUNNING) == 0) {
        json_decref(pj);
        return KBUS_DONE;
    }
    if (s->cluster_size == 1 && m->agent_id && m->agent_id[0]) {
        /* the session's one kernel, held by this agent, now runs: no need to
         * read the session's kernels back */
        kbus_result res = KBUS_DONE;
        if (tr_set(conn, ob, s, ST_RUNNING, "", err)) {
            arena a = {0};
            Tessera__V1__SessionRunning e = TESSERA__V1__SESSION_RUNNING__INIT;
            e.session_id = s->id;
            e.n_kernel_ids = 1;
            e.kernel_ids = ar_alloc(&a, sizeof(char *));
            e.kernel_ids[0] = m->kernel_id;
            e.main_agent_id = m->agent_id;
            e.service_ports = pb_ports(&a, pj, &e.n_service_ports);
            ob_session_event(ob, s->id, &e.base);
            ar_free(&a);
        } else {
            res = db_failed();
        }
        json_decref(pj);
        return res;
    }
    json_decref(pj);
    bool moved;
    return lifecycle_running_if_all_up(conn, ob, s, &moved, err) ? KBUS_DONE : db_failed();
}

bool lifecycle_running_if_all_up(PGconn *conn, outbox *ob, sess *s, bool *moved, ts_err *err)
{
    *moved = false;
    const char *sp[] = {s->id};
    PGresult *r =
        reg_exec(conn,
                 "SELECT id::text, coalesce(agent_id, ''), status, service_ports::text"
                 " FROM registry.kernels WHERE session_id = $1::uuid ORDER BY cluster_idx",
                 1, sp, err);
    if (!r) return false;
    int n = PQntuples(r), running = 0;
    for (int i = 0; i < n; i++)
        running += strcmp(PQgetvalue(r, i, 2), "RUNNING") == 0;
    if (n > 0 && running == n) {
        if (!tr_set(conn, ob, s, ST_RUNNING, "", err)) {
            PQclear(r);
            return false;
        }
        arena a = {0};
        Tessera__V1__SessionRunning e = TESSERA__V1__SESSION_RUNNING__INIT;
        e.session_id = s->id;
        e.n_kernel_ids = (size_t)n;
        e.kernel_ids = ar_alloc(&a, (size_t)n * sizeof(char *));
        for (int i = 0; i < n; i++)
            e.kernel_ids[i] = PQgetvalue(r, i, 0);
        e.main_agent_id = PQgetvalue(r, 0, 1);
        json_t *ports = json_loads(PQgetvalue(r, 0, 3), 0, NULL);
        e.service_ports = pb_ports(&a, ports, &e.n_service_ports);
        ob_session_event(ob, s->id, &e.base);
        json_decref(ports);
        ar_free(&a);
        *moved = true;
    }
    PQclear(r);
    return true;
}

/* The session starts terminating because of what its kernel did. */
static bool begin_termination(PGconn *conn, outbox *ob, sess *s, const char *event_reason,
                              const char *info, ts_err *err)
{
    if (!tr_set(conn, ob, s, ST_TERMINATING, info, err)) return false;
    Tessera__V1__SessionTerminating t = TESSERA__V1__SESSION_TERMINATING__INIT;
    t.session_id = s->id;
    t.reason = (char *)event_reason;
    t.requested_by = "system";
    ob_session_event(ob, s->id, &t.base);
    return tr_destroy_kernels(conn, ob, s, event_reason, false, "TERMINATING", err);
}

static kbus_result apply_exited(PGconn *conn, outbox *ob, sess *s, const void *msg, ts_err *err)
{
    const Tessera__V1__KernelExited *m = msg;
    kernel_row k;
    if (!lock_kernel(conn, s, m->kernel_id, m->agent_id, &k, err)) return db_failed();
    if (!k.found || kernel_final(k.status) || stale(&k, m->generation)) return KBUS_DONE;
    char info[300], code[16];
    snprintf(code, sizeof(code), "%d", m->exit_code);
    snprintf(info, sizeof(info), "exited with code %d%s%s", m->exit_code, m->reason[0] ? ": " : "",
             m->reason);
    const char *p[] = {m->kernel_id, code, info};
    if (!reg_run(conn,
                 "UPDATE registry.kernels SET exit_code = $2::int, status_info = $3"
                 " WHERE id = $1::uuid",
                 3, p, err))
        return db_failed();
    bool batch = strcmp(s->type, "batch") == 0, main_kernel = k.cluster_idx == 0;
    const char *result = m->exit_code == 0 ? "SUCCESS" : "FAILURE";
    if (in(s->status, ACTIVE)) {
        if (batch && main_kernel) {
            char why[128];
            snprintf(why, sizeof(why), "batch finished with exit code %d", m->exit_code);
            if (!tr_set_result(conn, s, result, m->exit_code, err) ||
                !begin_termination(conn, ob, s, "batch-finished", why, err))
                return db_failed();
        } else if (!batch) {
            char why[400];
            snprintf(why, sizeof(why), "kernel %s %s", m->kernel_id, info);
            if ((m->exit_code != 0 && !tr_set_result(conn, s, "FAILURE", m->exit_code, err)) ||
                !begin_termination(conn, ob, s, "kernel-exited", why, err))
                return db_failed();
        }
    } else if (strcmp(s->status, ST_TERMINATING) == 0 && batch && main_kernel &&
               !s->has_exit_code) {
        if (!tr_set_result(conn, s, result, m->exit_code, err)) return db_failed();
    }
    return KBUS_DONE;
}

static const char *error_code_of(const char *reason)
{
    if (strncmp(reason, "pull", 4) == 0 || strstr(reason, "image")) return "image_pull";
    if (strncmp(reason, "create", 6) == 0) return "kernel_create";
    return "kernel_terminated";
}

/* Every kernel has ended: the session's final status. */
static bool finish(PGconn *conn, outbox *ob, sess *s, ts_err *err)
{
    return lifecycle_finish(conn, ob, s, err);
}

bool lifecycle_finish(PGconn *conn, outbox *ob, sess *s, ts_err *err)
{
    bool batch = strcmp(s->type, "batch") == 0;
    char reason[512];
    ts_strlcpy(reason, s->info[0] ? s->info : "terminated", sizeof(reason));
    if (!batch && strcmp(s->result, "FAILURE") == 0)
        return tr_end(conn, ob, s, ST_ERROR, reason, "kernel_exited", NULL, NULL, NULL, err);
    return tr_end(conn, ob, s, ST_TERMINATED, reason, NULL, NULL, NULL, NULL, err);
}

static kbus_result apply_terminated(PGconn *conn, outbox *ob, sess *s, const void *msg, ts_err *err)
{
    const Tessera__V1__KernelTerminated *m = msg;
    kernel_row k;
    if (!lock_kernel(conn, s, m->kernel_id, m->agent_id, &k, err)) return db_failed();
    if (!k.found || kernel_final(k.status)) return KBUS_DONE;
    if (strcmp(k.status, "RESTARTING") == 0 && m->generation < k.generation) {
        /* The old container of a restart is gone; the new generation follows. */
        return set_kernel(conn, m->kernel_id, "PREPARING", "restarting", err) ? KBUS_DONE
                                                                              : db_failed();
    }
    if (stale(&k, m->generation)) return KBUS_DONE;
    char code[16], info[400];
    snprintf(code, sizeof(code), "%d", m->exit_code);
    snprintf(info, sizeof(info), "%s", m->reason[0] ? m->reason : "terminated");
    const char *p[] = {m->kernel_id, code, info};
    if (!reg_run(conn,
                 "UPDATE registry.kernels SET status = 'TERMINATED', status_info = $3,"
                 " exit_code = coalesce(exit_code, nullif($2::int, -1)),"
                 " status_changed_at = now() WHERE id = $1::uuid",
                 3, p, err))
        return db_failed();
    if (reg_status_final(s->status)) return KBUS_DONE;
    int live = 0;
    if (!live_kernels(conn, s, &live, err)) return db_failed();
    bool batch = strcmp(s->type, "batch") == 0;
    if (strcmp(s->status, ST_TERMINATING) == 0) {
        if (batch && k.cluster_idx == 0 && !s->has_exit_code && m->exit_code >= 0 &&
            !tr_set_result(conn, s, m->exit_code == 0 ? "SUCCESS" : "FAILURE", m->exit_code, err))
            return db_failed();
        if (live == 0 && !finish(conn, ob, s, err)) return db_failed();
        return KBUS_DONE;
    }
    if (!in(s->status, ACTIVE)) return KBUS_DONE;
    bool failed_start = strncmp(info, "create", 6) == 0 || strncmp(info, "pull", 4) == 0;
    if (batch && k.cluster_idx == 0 && strcmp(s->status, ST_RUNNING) == 0 && m->exit_code >= 0 &&
        !failed_start) {
        /* The batch ended and the agent cleaned up at once (no KernelExited). */
        char why[128];
        snprintf(why, sizeof(why), "batch finished with exit code %d", m->exit_code);
        if (!tr_set_result(conn, s, m->exit_code == 0 ? "SUCCESS" : "FAILURE", m->exit_code, err))
            return db_failed();
        if (live > 0)
            return begin_termination(conn, ob, s, "batch-finished", why, err) ? KBUS_DONE
                                                                              : db_failed();
        if (!tr_set(conn, ob, s, ST_TERMINATING, why, err) || !finish(conn, ob, s, err))
            return db_failed();
        return KBUS_DONE;
    }
    /* A kernel ended on its own while the session was starting or running. */
    char why[512];
    snprintf(why, sizeof(why), "kernel %s terminated: %s", m->kernel_id, info);
    if (!tr_destroy_kernels(conn, ob, s, "a kernel of the session failed", true, "TERMINATING",
                            err) ||
        !tr_end(conn, ob, s, ST_ERROR, why, error_code_of(info), m->kernel_id, m->agent_id, NULL,
                err))
        return db_failed();
    return KBUS_DONE;
}

typedef struct kernel_type {
    const char *type;
    const ProtobufCMessageDescriptor *desc;
    apply_fn apply;
} kernel_type;

static const kernel_type kernel_types[] = {
    {"tessera.v1.KernelPulling", &tessera__v1__kernel_pulling__descriptor, apply_pulling},
    {"tessera.v1.KernelCreating", &tessera__v1__kernel_creating__descriptor, apply_creating},
    {"tessera.v1.KernelStarted", &tessera__v1__kernel_started__descriptor, apply_started},
    {"tessera.v1.KernelExited", &tessera__v1__kernel_exited__descriptor, apply_exited},
    {"tessera.v1.KernelTerminated", &tessera__v1__kernel_terminated__descriptor, apply_terminated},
};

/* The start path's events (kernel_steps.c) of the sessions whose events in
 * the batch are one KernelCreating, one KernelStarted, or one of each in that
 * order, on a one-kernel session that is SCHEDULED or PREPARING. A step that
 * does not apply, and every other event, follows one by one; that order
 * keeps the outcome: a step left over changes nothing after the others. */
static kbus_result advance_kernels(PGconn *conn, tx_item *items, size_t n, sess *ss,
                                   const bool *found, const size_t *group, outbox *obs, bool *done,
                                   ts_err *reason)
{
    kernel_step *steps = ts_calloc(n, sizeof(*steps));
    size_t *at = ts_calloc(n, sizeof(*at)), ns = 0;
    for (size_t i = 0, end; i < n; i = end) {
        size_t g = group[i];
        for (end = i; end < n && group[end] == g; end++)
            ;
        bool creating = items[i].apply == apply_creating;
        bool ok =
            found[g] && ss[g].cluster_size == 1 &&
            (strcmp(ss[g].status, ST_PREPARING) == 0 || strcmp(ss[g].status, ST_SCHEDULED) == 0) &&
            (creating || items[i].apply == apply_started) &&
            (end - i == 1 || (end - i == 2 && creating && items[i + 1].apply == apply_started));
        for (size_t j = i; ok && j < end; j++) {
            steps[ns] = (kernel_step){.s = &ss[g], .ob = &obs[j]};
            if (items[j].apply == apply_started)
                steps[ns].started = (const Tessera__V1__KernelStarted *)items[j].m;
            else
                steps[ns].creating = (const Tessera__V1__KernelCreating *)items[j].m;
            at[ns++] = j;
        }
    }
    kbus_result res = KBUS_DONE;
    if (ns > 0 && !kernel_steps_apply(conn, steps, ns, reason)) res = KBUS_RETRY;
    for (size_t k = 0; k < ns && res == KBUS_DONE; k++)
        done[at[k]] = steps[k].done;
    free(steps);
    free(at);
    return res;
}

/* A batch of tessera.kernel.v1, in one transaction. */
static kbus_result on_kernel_batch(const kbus_msg *msgs, size_t n, void *ctx, ts_err *reason)
{
    (void)ctx;
    tx_item *items = ts_calloc(n, sizeof(*items));
    size_t k = 0;
    kbus_result res = KBUS_DONE;
    for (size_t i = 0; i < n && res == KBUS_DONE; i++) {
        for (size_t j = 0; j < TS_ARRAY_LEN(kernel_types); j++) {
            const kernel_type *t = &kernel_types[j];
            if (strcmp(msgs[i].env->type, t->type) != 0) continue;
            ProtobufCMessage *m = envelope_payload(msgs[i].env, t->desc, reason);
            if (!m) {
                res = KBUS_REJECT;
                break;
            }
            /* Every kernel message starts with session_id = 1, kernel_id = 2. */
            const Tessera__V1__KernelPulling *km = (const Tessera__V1__KernelPulling *)m;
            items[k] = (tx_item){.msg = &msgs[i],
                                 .session_id = km->session_id,
                                 .kernel_id = km->kernel_id,
                                 .apply = t->apply,
                                 .m = m,
                                 .order = k};
            k++;
            break;
        }
    }
    if (res == KBUS_DONE) res = in_batch_tx(items, k, advance_kernels, reason);
    free_items(items, k);
    return res;
}

kbus_result lifecycle_apply_kernel_event(const char *type, ProtobufCMessage *m, ts_err *err)
{
    for (size_t j = 0; j < TS_ARRAY_LEN(kernel_types); j++) {
        const kernel_type *t = &kernel_types[j];
        if (strcmp(type, t->type) != 0) continue;
        Tessera__V1__Envelope env = TESSERA__V1__ENVELOPE__INIT;
        env.type = (char *)type;
        env.correlation_id = "";
        kbus_msg msg = {.topic = TOPIC_KERNEL, .env = &env};
        const Tessera__V1__KernelPulling *km = (const Tessera__V1__KernelPulling *)m;
        tx_item item = {.msg = &msg,
                        .session_id = km->session_id,
                        .kernel_id = km->kernel_id,
                        .apply = t->apply,
                        .m = m};
        return in_batch_tx(&item, 1, NULL, err);
    }
    ts_err_set(err, "not a kernel event: %s", type);
    return KBUS_REJECT;
}

bool lifecycle_start(svc *s, ts_err *err)
{
    static const char *const session_topics[] = {TOPIC_SESSION, NULL};
    static const char *const kernel_topics[] = {TOPIC_KERNEL, NULL};
    /* No added wait: a batch is what has already arrived, at most 256
     * events. Placements cost three statements per batch whatever its size,
     * so larger batches save round trips (bench-scheduler through the API:
     * the registry recorded 3,300-3,950 placements/s with 64, 4,700-4,900
     * with 256, no more with 512); a batch's row locks are held for its one
     * transaction. A create waits on both groups: they are on the control
     * path (kafka.control_fetch_wait). */
    kbus_batch_opts opts = {.max_messages = 256, .max_wait_ms = 0, .control = true};
    if (!reg_consumers_start_batch(&session_consumers, s, "tessera-registry.sessions",
                                   session_topics, &opts, on_session_batch, err))
        return false;
    if (reg_consumers_start_batch(&kernel_consumers, s, "tessera-registry.kernels", kernel_topics,
                                  &opts, on_kernel_batch, err)) {
        svc_add_check(s, "session-events", reg_consumers_check, &session_consumers);
        svc_add_check(s, "kernel-events", reg_consumers_check, &kernel_consumers);
        return true;
    }
    reg_consumers_stop(&session_consumers);
    return false;
}

void lifecycle_stop(void)
{
    reg_consumers_stop(&session_consumers);
    reg_consumers_stop(&kernel_consumers);
}
