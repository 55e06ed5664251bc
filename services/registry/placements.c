/* placements.c: see placements.h. */
#include "placements.h"

#include "db_common.h"
#include "libcommon/log.h"
#include "pbutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

bool placement_prepare(placement *p, sess *s, const Tessera__V1__SessionScheduled *m, outbox *ob,
                       ts_err *err)
{
    memset(p, 0, sizeof(*p));
    p->s = s;
    p->m = m;
    p->ob = ob;
    if ((int)m->n_kernels != s->cluster_size) {
        ts_err_set(err, "SessionScheduled for %s places %zu kernels, the session has %d", s->id,
                   m->n_kernels, s->cluster_size);
        return false;
    }
    slots_t total;
    slots_clear(&total);
    p->kernels = json_array();
    char agents[256] = "";
    for (size_t i = 0; i < m->n_kernels; i++) {
        const Tessera__V1__KernelPlacement *k = m->kernels[i];
        slots_t ks;
        json_t *sj = NULL;
        if (!k->agent_id[0] || !ts_uuid_valid(k->kernel_id) ||
            !pb_slots_vec(k->slots, k->n_slots, &ks, err) ||
            !pb_slots_json(k->slots, k->n_slots, &sj, err) || !slots_add(&total, &ks, err)) {
            if (!k->agent_id[0] || !ts_uuid_valid(k->kernel_id))
                ts_err_set(err, "no agent or a kernel id that is not a UUID");
            ts_err_prefix(err, "SessionScheduled kernel %zu", i);
            json_decref(sj);
            placement_free(p);
            return false;
        }
        json_t *agent = json_string(k->agent_id); /* NULL: not UTF-8 */
        if (!agent) {
            ts_err_set(err, "SessionScheduled kernel %zu: the agent id is not UTF-8", i);
            json_decref(sj);
            placement_free(p);
            return false;
        }
        json_t *kj = json_object();
        json_object_set_new(kj, "kid", json_string(k->kernel_id));
        json_object_set_new(kj, "sid", json_string(s->id));
        json_object_set_new(kj, "agent", agent);
        json_object_set_new(kj, "slots", sj);
        json_object_set_new(kj, "devices", pb_devs_json(k->devices, k->n_devices));
        json_array_append_new(p->kernels, kj);
        if (!strstr(agents, k->agent_id) && strlen(agents) + strlen(k->agent_id) + 3 < 200)
            snprintf(agents + strlen(agents), sizeof(agents) - strlen(agents), "%s%s",
                     agents[0] ? ", " : "", k->agent_id);
    }
    json_t *tj = slots_to_json(&total);
    p->occupied = json_dumps(tj, JSON_COMPACT);
    json_decref(tj);
    snprintf(p->why, sizeof(p->why), "scheduled on %s", agents);
    return true;
}

void placement_free(placement *p)
{
    json_decref(p->kernels);
    free(p->occupied);
    p->kernels = NULL;
    p->occupied = NULL;
}

/* The placed kernels, PENDING -> PREPARING on their agents. This and
 * sessions_sql join the batch's rows to the table: reg_exec_planned. */
static const char kernels_sql[] =
    "UPDATE registry.kernels AS k SET agent_id = u.agent, slots = u.slots, devices = u.devices,"
    " status = 'PREPARING', status_info = '', holds_slots = true, status_changed_at = now()"
    " FROM jsonb_to_recordset($1::jsonb) AS u(kid uuid, sid uuid, agent text, slots jsonb,"
    "   devices jsonb)"
    " WHERE k.id = u.kid AND k.session_id = u.sid AND k.status = 'PENDING'"
    " RETURNING k.id::text";

/* The sessions SCHEDULED and at once PREPARING, both history rows of each in
 * that order. */
static const char sessions_sql[] =
    "WITH v AS (SELECT * FROM jsonb_to_recordset($1::jsonb) AS v(id uuid, occ jsonb, why text)),"
    " u AS (UPDATE registry.sessions AS s SET occupied_slots = v.occ, status = 'PREPARING',"
    "   status_info = $2, status_changed_at = now() FROM v WHERE s.id = v.id"
    "   RETURNING s.id, v.why)"
    " INSERT INTO registry.session_status_history (session_id, status, reason)"
    " SELECT u.id, x.status, CASE x.o WHEN 1 THEN u.why ELSE $2 END"
    " FROM u, (VALUES (1, 'SCHEDULED'), (2, 'PREPARING')) AS x(o, status) ORDER BY u.id, x.o";

static const char preparing_why[] = "creating kernels";

/* The first kernel of the placements that the UPDATE did not place. */
static void name_unplaced(placement *p, size_t n, PGresult *r, ts_err *err)
{
    for (size_t i = 0; i < n; i++)
        for (size_t k = 0; k < p[i].m->n_kernels; k++) {
            const char *kid = p[i].m->kernels[k]->kernel_id;
            bool placed = false;
            for (int row = 0; row < PQntuples(r) && !placed; row++)
                placed = strcasecmp(PQgetvalue(r, row, 0), kid) == 0;
            if (!placed) {
                ts_err_set(err, "SessionScheduled: kernel %s is not a pending kernel of session %s",
                           kid, p[i].s->id);
                return;
            }
        }
    ts_err_set(err, "SessionScheduled: a kernel was placed twice");
}

void placement_preparing_event(outbox *ob, const sess *s)
{
    Tessera__V1__SessionPreparing e = TESSERA__V1__SESSION_PREPARING__INIT;
    e.session_id = (char *)s->id;
    char *ids[1] = {NULL};
    e.kernel_ids = ids;
    e.n_kernel_ids = 0;
    ob_session_event(ob, s->id, &e.base);
}

kbus_result placements_apply(PGconn *conn, placement *p, size_t n, ts_err *err)
{
    if (n == 0) return KBUS_DONE;
    json_t *kernels = json_array(), *sessions = json_array();
    size_t n_kernels = 0;
    for (size_t i = 0; i < n; i++) {
        json_array_extend(kernels, p[i].kernels);
        n_kernels += json_array_size(p[i].kernels);
        json_t *v = json_object();
        json_object_set_new(v, "id", json_string(p[i].s->id));
        json_object_set_new(v, "occ", json_loads(p[i].occupied, 0, NULL));
        json_object_set_new(v, "why", json_string(p[i].why));
        json_array_append_new(sessions, v);
    }
    char *kt = json_dumps(kernels, JSON_COMPACT), *st = json_dumps(sessions, JSON_COMPACT);
    json_decref(kernels);
    json_decref(sessions);
    kbus_result res = KBUS_RETRY;
    const char *kp[] = {kt}, *sp[] = {st, preparing_why};
    PGresult *r = reg_exec_planned(conn, kernels_sql, 1, kp, err);
    if (!r) goto out;
    if ((size_t)PQntuples(r) != n_kernels) {
        name_unplaced(p, n, r, err);
        PQclear(r);
        res = KBUS_REJECT;
        goto out;
    }
    PQclear(r);
    r = reg_exec_planned(conn, sessions_sql, 2, sp, err);
    if (!r) goto out;
    PQclear(r);
    const char **ids = ts_calloc(n, sizeof(*ids));
    outbox **obs = ts_calloc(n, sizeof(*obs));
    for (size_t i = 0; i < n; i++) {
        sess *s = p[i].s;
        tlog_ctx_session(s->id);
        tr_moved(p[i].ob, s, ST_SCHEDULED, p[i].why);
        tr_moved(p[i].ob, s, ST_PREPARING, preparing_why);
        ids[i] = s->id;
        obs[i] = p[i].ob;
    }
    tlog_ctx_session(NULL);
    bool ok = tr_create_kernels_many(conn, ids, obs, n, err);
    free(ids);
    free(obs);
    if (ok) {
        for (size_t i = 0; i < n; i++)
            placement_preparing_event(p[i].ob, p[i].s);
        res = KBUS_DONE;
    }
out:
    free(kt);
    free(st);
    return res;
}
