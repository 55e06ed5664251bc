/* session_view.c: see session_view.h. */
#include "session_view.h"

#include "idle_network.h"
#include "libcommon/pgjson.h"
#include "libcommon/service_ports.h"
#include "session_cluster.h"

#include <stdlib.h>
#include <string.h>

const char session_view_sql[] =
    "SELECT s.id::text AS id, s.name, s.status, s.status_info, s.image, s.architecture, s.type,"
    " s.created_at, s.terminated_at, s.status_changed_at, s.starts_at,"
    " (extract(epoch FROM coalesce(s.terminated_at, now()) - s.created_at) * 1000)::bigint AS age,"
    " s.occupied_slots, s.requested_slots, s.domain_name, s.project_id::text AS project_id,"
    " s.group_name, s.user_id::text AS user_id, s.access_key, s.resource_group, s.cluster_size,"
    " s.cluster_mode, s.priority, s.result, s.exit_code, s.idle_timeout, s.idle_level,"
    " (extract(epoch FROM s.idle_deadline) * 1000)::bigint AS idle_deadline_ms,"
    " (extract(epoch FROM now()) * 1000)::bigint AS now_ms, s.max_lifetime,"
    " CASE WHEN s.status = 'RUNNING' AND s.max_lifetime > 0 THEN"
    "  (extract(epoch FROM s.lifetime_deadline) * 1000)::bigint END AS lifetime_end_ms,"
    " (SELECT coalesce(json_agg(json_build_object('id', k.id, 'role', k.cluster_role,"
    "    'idx', k.cluster_idx, 'name', " SESSION_KERNEL_NAME_SQL ", 'agent', k.agent_id,"
    "    'status', k.status,"
    "    'statusInfo', k.status_info, 'containerId', k.container_id,"
    "    'exitCode', k.exit_code, 'host', k.kernel_host, 'servicePorts', k.service_ports)"
    "    ORDER BY k.cluster_idx), '[]'::json)"
    "  FROM registry.kernels k WHERE k.session_id = s.id) AS kernels"
    " FROM registry.sessions s";

static json_t *col(const PGresult *r, int row, const char *name)
{
    int c = PQfnumber(r, name);
    return c < 0 ? json_null() : pgjson_cell_json(r, row, c);
}

static int64_t int_col(const PGresult *r, int row, const char *name)
{
    int c = PQfnumber(r, name);
    return c < 0 || PQgetisnull(r, row, c) ? 0 : strtoll(PQgetvalue(r, row, c), NULL, 10);
}

/* The view's keys in order and their columns; NULL: the computed servicePorts. */
static const struct {
    const char *key, *col;
} view_fields[] = {
    {"sessionId", "name"},
    {"sessionUuid", "id"},
    {"sessionName", "name"},
    {"status", "status"},
    {"statusInfo", "status_info"},
    {"image", "image"},
    {"architecture", "architecture"},
    {"type", "type"},
    {"creationTime", "created_at"},
    {"terminationTime", "terminated_at"},
    {"statusChangedAt", "status_changed_at"},
    {"startsAt", "starts_at"},
    {"age", "age"},
    {"occupiedSlots", "occupied_slots"},
    {"requestedSlots", "requested_slots"},
    {"servicePorts", NULL},
    {"domainName", "domain_name"},
    {"groupId", "project_id"},
    {"groupName", "group_name"},
    {"userId", "user_id"},
    {"accessKey", "access_key"},
    {"scalingGroup", "resource_group"},
    {"resourceGroup", "resource_group"},
    {"clusterSize", "cluster_size"},
    {"clusterMode", "cluster_mode"},
    {"priority", "priority"},
    {"result", "result"},
    {"exitCode", "exit_code"},
};

json_t *session_view_json(const PGresult *r, int row)
{
    json_t *kernels = col(r, row, "kernels");
    json_t *main = json_array_get(kernels, 0);
    json_t *o = json_object();
    for (size_t i = 0; i < TS_ARRAY_LEN(view_fields); i++)
        json_object_set_new(
            o, view_fields[i].key,
            view_fields[i].col
                ? col(r, row, view_fields[i].col)
                : service_ports_view(json_object_get(main, "servicePorts"),
                                     json_string_value(json_object_get(main, "host"))));
    json_object_set_new(o, "kernels", kernels);
    /* the stored deadline; a single session's view adds its last use */
    idle_inputs in = {.now_ms = int_col(r, row, "now_ms"),
                      .deadline_ms = int_col(r, row, "idle_deadline_ms"),
                      .timeout_s = (int)int_col(r, row, "idle_timeout"),
                      .level = PQgetisnull(r, row, PQfnumber(r, "idle_level"))
                                   ? NULL
                                   : PQgetvalue(r, row, PQfnumber(r, "idle_level")),
                      .lifetime_end_ms = int_col(r, row, "lifetime_end_ms"),
                      .max_lifetime_s = (int)int_col(r, row, "max_lifetime")};
    json_object_set_new(o, "idleChecks", idle_checks_json(&in));
    return o;
}

json_t *session_view_one(PGconn *conn, http_resp *resp, const char *where, int n,
                         const char *const *params)
{
    char *sql = ts_asprintf("%s WHERE %s", session_view_sql, where);
    PGresult *r = pgjson_query(conn, resp, "read session", sql, n, params);
    free(sql);
    if (!r) return NULL;
    json_t *v = PQntuples(r) == 1 ? session_view_json(r, 0) : NULL;
    PQclear(r);
    return v;
}
