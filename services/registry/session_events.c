/* session_events.c: the scheduler's events on tessera.session.v1 (see
 * session_events.h), applied through batch_tx.h. */
#include "session_events.h"

#include "batch_tx.h"
#include "db_common.h"
#include "libcommon/log.h"
#include "placements.h"
#include "tessera/v1/session.pb-c.h"

#include <stdlib.h>
#include <string.h>

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
    TLOG_INFO("placement of an ended or unknown session released", "status=%s",
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
            return KBUS_RETRY;
        placement_preparing_event(ob, s);
    }
    /* PREPARING and later: a duplicate; nothing to do. */
    return KBUS_DONE;
}

/* The batch's placements of PENDING sessions (the first event of each such
 * session, when it checks out) in placements.c's three statements. The
 * others (duplicates, ended or unknown sessions, placements that do not
 * check out) are left to apply_scheduled, one by one, after them. */
static kbus_result place_pending(PGconn *conn, tx_batch *b, ts_err *reason)
{
    placement *ps = ts_calloc(b->n, sizeof(*ps));
    size_t np = 0;
    for (size_t i = 0; i < b->n; i++) {
        size_t g = b->group[i];
        bool first = i == 0 || b->group[i - 1] != g;
        if (!first || !b->found[g] || b->items[i].apply != apply_scheduled ||
            strcmp(b->ss[g].status, ST_PENDING) != 0)
            continue;
        ts_err ignored = {{0}};
        if (!placement_prepare(&ps[np], &b->ss[g],
                               (const Tessera__V1__SessionScheduled *)b->items[i].m, &b->obs[i],
                               &ignored))
            continue; /* apply_scheduled says why */
        b->done[i] = true;
        np++;
    }
    kbus_result res = placements_apply(conn, ps, np, reason);
    for (size_t i = 0; i < np; i++)
        placement_free(&ps[i]);
    free(ps);
    return res;
}

static kbus_result on_unschedulable(const ProtobufCMessage *msg, ts_err *reason)
{
    const Tessera__V1__SessionUnschedulable *m = (const Tessera__V1__SessionUnschedulable *)msg;
    if (!ts_uuid_valid(m->session_id)) {
        ts_err_set(reason, "SessionUnschedulable: session id is not a UUID");
        return KBUS_REJECT;
    }
    PGconn *conn = reg_pg_get(reason);
    if (!conn) return KBUS_WAIT; /* the database is down or busy: never a dead letter */
    tlog_ctx_session(m->session_id);
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
    tlog_ctx_session(NULL);
    return res;
}

static const tx_type session_types[] = {
    {"tessera.v1.SessionScheduled", &tessera__v1__session_scheduled__descriptor, apply_scheduled,
     release_unplaced, NULL},
    {"tessera.v1.SessionUnschedulable", &tessera__v1__session_unschedulable__descriptor, NULL, NULL,
     on_unschedulable},
};

kbus_result session_events_batch(const kbus_msg *msgs, size_t n, void *ctx, ts_err *reason)
{
    (void)ctx;
    return batch_tx_consume(msgs, n, session_types, TS_ARRAY_LEN(session_types), place_pending,
                            reason);
}
