/* session_enqueued.c: SessionEnqueued (see session_enqueued.h). */
#include "session_enqueued.h"

#include "context.h"
#include "db_common.h"
#include "libcommon/log.h"
#include "libcommon/pgjson.h"
#include "pbutil.h"
#include "tessera/v1/session.pb-c.h"

#include <stdlib.h>
#include <string.h>

static const char enqueue_sql[] =
    "SELECT s.id::text, s.name, s.type, s.access_key, s.user_id::text,"
    " coalesce(s.project_id::text, ''), s.domain_name, s.resource_group, s.image, s.architecture,"
    " s.priority, s.cluster_size, s.cluster_mode,"
    " coalesce((extract(epoch FROM s.starts_at) * 1000)::bigint, 0),"
    " (extract(epoch FROM s.created_at) * 1000)::bigint, s.limits::text,"
    " (SELECT json_agg(json_build_object('id', k.id, 'role', k.cluster_role, 'idx', k.cluster_idx,"
    "   'slots', k.slots, 'agent', k.designated_agent) ORDER BY k.cluster_idx)::text"
    "   FROM registry.kernels k"
    "   WHERE k.session_id = s.id), s.status, coalesce(s.designated_agent, '')"
    " FROM registry.sessions s WHERE s.id = $1::uuid";

bool session_enqueued_publish(PGconn *conn, const char *session_id, const char *correlation_id,
                              ts_err *err)
{
    const char *p[] = {session_id};
    PGresult *r = reg_exec(conn, enqueue_sql, 1, p, err);
    if (!r) return false;
    /* The status is checked here, not in the WHERE clause: with the status
     * there, PostgreSQL may plan the statement (prepared, planned once while
     * the tables are small) through the index of live sessions by status,
     * and then reads every PENDING session on each call. */
    if (PQntuples(r) != 1 || strcmp(PQgetvalue(r, 0, 17), ST_PENDING) != 0) {
        /* gone or no longer pending: nothing to announce */
        PQclear(r);
        return reg_run(conn,
                       "UPDATE registry.sessions SET enqueue_published = true WHERE id = $1::uuid",
                       1, p, err);
    }
    arena a = {0};
    Tessera__V1__SessionEnqueued m = TESSERA__V1__SESSION_ENQUEUED__INIT;
    m.session_id = PQgetvalue(r, 0, 0);
    m.session_name = PQgetvalue(r, 0, 1);
    m.session_type = pb_session_type(PQgetvalue(r, 0, 2));
    m.access_key = PQgetvalue(r, 0, 3);
    m.user_id = PQgetvalue(r, 0, 4);
    m.project_id = PQgetvalue(r, 0, 5);
    m.domain_name = PQgetvalue(r, 0, 6);
    m.resource_group = PQgetvalue(r, 0, 7);
    m.image = PQgetvalue(r, 0, 8);
    m.architecture = PQgetvalue(r, 0, 9);
    m.priority = atoi(PQgetvalue(r, 0, 10));
    m.cluster_size = atoi(PQgetvalue(r, 0, 11));
    m.cluster_mode = PQgetvalue(r, 0, 12);
    m.multi_node = strcmp(m.cluster_mode, "multi-node") == 0;
    m.starts_at_ms = atoll(PQgetvalue(r, 0, 13));
    m.designated_agent = PQgetvalue(r, 0, 18);
    m.enqueued_at_ms = atoll(PQgetvalue(r, 0, 14));
    json_t *limits = json_loads(PQgetvalue(r, 0, 15), 0, NULL);
    json_t *kernels = json_loads(PQgetvalue(r, 0, 16), 0, NULL);
    m.n_kernels = json_array_size(kernels);
    m.kernels = ar_alloc(&a, (m.n_kernels + 1) * sizeof(*m.kernels));
    for (size_t i = 0; i < m.n_kernels; i++) {
        json_t *k = json_array_get(kernels, i);
        Tessera__V1__SessionEnqueued__KernelRequest *kr = ar_alloc(&a, sizeof(*kr));
        tessera__v1__session_enqueued__kernel_request__init(kr);
        kr->kernel_id = ar_str(&a, pgjson_str(k, "id"));
        kr->cluster_role = ar_str(&a, pgjson_str(k, "role"));
        kr->cluster_idx = (int32_t)json_integer_value(json_object_get(k, "idx"));
        kr->slots = pb_slots(&a, json_object_get(k, "slots"), &kr->n_slots);
        kr->designated_agent = ar_str(&a, pgjson_str(k, "agent"));
        m.kernels[i] = kr;
    }
    m.n_limits = json_array_size(limits);
    m.limits = ar_alloc(&a, (m.n_limits + 1) * sizeof(*m.limits));
    for (size_t i = 0; i < m.n_limits; i++) {
        json_t *l = json_array_get(limits, i);
        Tessera__V1__ScopeLimits *sl = ar_alloc(&a, sizeof(*sl));
        tessera__v1__scope_limits__init(sl);
        sl->scope = ar_str(&a, pgjson_str(l, "scope"));
        sl->id = ar_str(&a, pgjson_str(l, "id"));
        sl->max_concurrent_sessions =
            (int32_t)json_integer_value(json_object_get(l, "max_concurrent_sessions"));
        sl->max_pending_sessions =
            (int32_t)json_integer_value(json_object_get(l, "max_pending_sessions"));
        sl->max_slots = pb_slots(&a, json_object_get(l, "max_slots"), &sl->n_max_slots);
        m.limits[i] = sl;
    }
    bool ok = kbus_publish(svc_bus(reg_service()), "tessera.session.v1", m.session_id, &m.base,
                           correlation_id, m.session_id, err);
    json_decref(limits);
    json_decref(kernels);
    ar_free(&a);
    PQclear(r);
    if (!ok) return false;
    return reg_run(conn,
                   "UPDATE registry.sessions SET enqueue_published = true WHERE id = $1::uuid", 1,
                   p, err);
}

void session_enqueued_republish(void)
{
    ts_err err = {{0}};
    PGconn *conn = reg_pg_get(&err);
    if (!conn) return;
    PGresult *r = reg_exec(conn,
                           "SELECT id::text FROM registry.sessions WHERE status = 'PENDING'"
                           " AND NOT enqueue_published AND created_at < now() - interval '2 s'"
                           " LIMIT 100",
                           0, NULL, &err);
    for (int i = 0; r && i < PQntuples(r); i++)
        if (!session_enqueued_publish(conn, PQgetvalue(r, i, 0), "", &err))
            TLOG_WARN("SessionEnqueued not published", "session=%s error=\"%s\"",
                      PQgetvalue(r, i, 0), err.msg);
    if (r) PQclear(r);
    reg_pg_put(conn);
}
