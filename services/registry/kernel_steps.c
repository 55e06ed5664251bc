/* kernel_steps.c: see kernel_steps.h. The guards are those of lifecycle.c's
 * apply_creating and apply_started (kernel_events.c, update_kernel_if): a kernel of the
 * session, held by the event's agent, in a status the event can follow, and
 * for KernelStarted not of a newer generation than the event's. */
#include "kernel_steps.h"

#include "db_common.h"
#include "libcommon/log.h"
#include "pbutil.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* Both statements join the batch's rows to the table: planned at each call
 * (reg_exec_planned, as placements.c). */
static const char creating_sql[] =
    "UPDATE registry.kernels AS k SET status = 'CREATING',"
    " status_info = 'creating the container', image_digest = u.digest, status_changed_at = now()"
    " FROM jsonb_to_recordset($1::jsonb) AS u(kid uuid, sid uuid, agent text, digest text)"
    " WHERE k.id = u.kid AND k.session_id = u.sid AND (u.agent = '' OR k.agent_id = u.agent)"
    " AND k.status IN ('SCHEDULED', 'PREPARING', 'PULLING')"
    " RETURNING k.id::text";

static const char started_sql[] =
    "UPDATE registry.kernels AS k SET status = 'RUNNING', status_info = '',"
    " container_id = u.cid, kernel_host = u.host, service_ports = u.ports,"
    " status_changed_at = now()"
    " FROM jsonb_to_recordset($1::jsonb) AS u(kid uuid, sid uuid, agent text, gen int,"
    "   cid text, host text, ports jsonb)"
    " WHERE k.id = u.kid AND k.session_id = u.sid AND k.agent_id = u.agent"
    " AND k.status IN ('SCHEDULED', 'PREPARING', 'PULLING', 'CREATING', 'RESTARTING')"
    " AND (u.gen < 0 OR k.generation <= u.gen)"
    " RETURNING k.id::text";

/* The sessions whose one kernel now runs: RUNNING, with their history rows. */
/* (clang-format cannot lay out a macro between string literals) */
/* clang-format off */
static const char running_sql[] =
    "WITH u AS (UPDATE registry.sessions SET status = 'RUNNING', status_info = '',"
    "   status_changed_at = now(), " SESSION_DEADLINES_SET("'RUNNING'")
    "   WHERE id = ANY($1::uuid[]) RETURNING id)"
    " INSERT INTO registry.session_status_history (session_id, status, reason)"
    " SELECT id, 'RUNNING', '' FROM u ORDER BY id";
/* clang-format on */

static const char *kernel_of(const kernel_step *st)
{
    return st->creating ? st->creating->kernel_id : st->started->kernel_id;
}

/* Run sql on the steps' rows (rows[i] for steps[i], NULL: not this kind);
 * mark done the steps whose kernel the statement returned. */
static bool run_steps(PGconn *conn, const char *sql, kernel_step *steps, json_t **rows, size_t n,
                      ts_err *err)
{
    json_t *all = json_array();
    for (size_t i = 0; i < n; i++)
        if (rows[i]) json_array_append(all, rows[i]);
    if (json_array_size(all) == 0) {
        json_decref(all);
        return true;
    }
    char *text = json_dumps(all, JSON_COMPACT);
    json_decref(all);
    const char *p[] = {text};
    PGresult *r = reg_exec_planned(conn, sql, 1, p, err);
    free(text);
    if (!r) return false;
    for (size_t i = 0; i < n; i++)
        for (int row = 0; rows[i] && !steps[i].done && row < PQntuples(r); row++)
            steps[i].done = strcasecmp(PQgetvalue(r, row, 0), kernel_of(&steps[i])) == 0;
    PQclear(r);
    return true;
}

/* A step's row for its statement, or NULL: a kernel id that is not a UUID
 * (the uuid column would fail the statement) or a string JSON cannot carry
 * leave the step to the one by one path, which ignores such an event. */
static json_t *creating_row(const kernel_step *st)
{
    const Tessera__V1__KernelCreating *m = st->creating;
    if (!ts_uuid_valid(m->kernel_id)) return NULL;
    return json_pack("{s:s, s:s, s:s, s:s}", "kid", m->kernel_id, "sid", st->s->id, "agent",
                     m->agent_id, "digest", m->image_digest);
}

static json_t *started_row(const kernel_step *st)
{
    const Tessera__V1__KernelStarted *m = st->started;
    if (!ts_uuid_valid(m->kernel_id)) return NULL;
    return json_pack("{s:s, s:s, s:s, s:i, s:s, s:s, s:o}", "kid", m->kernel_id, "sid", st->s->id,
                     "agent", m->agent_id, "gen", m->generation, "cid", m->container_id, "host",
                     m->kernel_host, "ports", pb_ports_json(m->service_ports, m->n_service_ports));
}

/* The session of a started step, RUNNING: what tr_set and apply_started do
 * for it besides the statement. */
static void announce_running(const kernel_step *st)
{
    const Tessera__V1__KernelStarted *m = st->started;
    tlog_ctx_session(st->s->id);
    tr_moved(st->ob, st->s, ST_RUNNING, "");
    char *ids[1] = {m->kernel_id};
    tr_running_event(st->ob, st->s, ids, 1, m->agent_id, m->service_ports, m->n_service_ports);
}

bool kernel_steps_apply(PGconn *conn, kernel_step *steps, size_t n, ts_err *err)
{
    json_t **rows = ts_calloc(n ? n : 1, sizeof(*rows));
    bool ok = true;
    for (int kind = 0; kind < 2 && ok; kind++) { /* every KernelCreating first */
        for (size_t i = 0; i < n; i++) {
            rows[i] = NULL;
            if (kind == 0 && steps[i].creating) rows[i] = creating_row(&steps[i]);
            if (kind == 1 && steps[i].started) rows[i] = started_row(&steps[i]);
        }
        ok = run_steps(conn, kind == 0 ? creating_sql : started_sql, steps, rows, n, err);
        for (size_t i = 0; i < n; i++)
            json_decref(rows[i]);
    }
    free(rows);
    if (!ok) return false;
    /* the sessions of the started kernels: RUNNING */
    const char **ids = ts_calloc(n ? n : 1, sizeof(*ids));
    size_t running = 0;
    for (size_t i = 0; i < n; i++)
        if (steps[i].started && steps[i].done) ids[running++] = steps[i].s->id;
    if (running) {
        char *arr = reg_uuid_array(ids, running);
        const char *p[] = {arr};
        ok = reg_run(conn, running_sql, 1, p, err);
        free(arr);
    }
    free(ids);
    if (!ok) return false;
    for (size_t i = 0; i < n; i++)
        if (steps[i].started && steps[i].done) announce_running(&steps[i]);
    tlog_ctx_session(NULL);
    return true;
}
