/* session_view.c: see session_view.h. */
#include "session_view.h"

#include "libcommon/pgjson.h"

#include <string.h>

const char session_view_sql[] =
    "SELECT s.id::text AS id, s.name, s.status, s.status_info, s.image, s.architecture, s.type,"
    " s.created_at, s.terminated_at, s.status_changed_at, s.starts_at,"
    " (extract(epoch FROM coalesce(s.terminated_at, now()) - s.created_at) * 1000)::bigint AS age,"
    " s.occupied_slots, s.requested_slots, s.domain_name, s.project_id::text AS project_id,"
    " s.group_name, s.user_id::text AS user_id, s.access_key, s.resource_group, s.cluster_size,"
    " s.cluster_mode, s.priority, s.result, s.exit_code,"
    " (SELECT coalesce(json_agg(json_build_object('id', k.id, 'role', k.cluster_role,"
    "    'idx', k.cluster_idx, 'agent', k.agent_id, 'status', k.status,"
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

json_t *session_view_ports(json_t *stored, const char *host)
{
    json_t *out = json_array();
    size_t i;
    json_t *p;
    json_array_foreach(stored, i, p)
    {
        json_t *hp = json_array();
        json_int_t h = json_integer_value(json_object_get(p, "host_port"));
        if (h > 0) json_array_append_new(hp, json_integer(h));
        json_array_append_new(out, json_pack("{s:O, s:O, s:[O], s:o, s:s}", "name",
                                             json_object_get(p, "name"), "protocol",
                                             json_object_get(p, "protocol"), "container_ports",
                                             json_object_get(p, "container_port"), "host_ports", hp,
                                             "host", host ? host : ""));
    }
    return out;
}

json_t *session_view_json(const PGresult *r, int row)
{
    json_t *kernels = col(r, row, "kernels");
    json_t *main = json_array_get(kernels, 0);
    json_t *ports = session_view_ports(json_object_get(main, "servicePorts"),
                                       json_string_value(json_object_get(main, "host")));
    json_t *o = json_object();
    json_object_set_new(o, "sessionId", col(r, row, "name"));
    json_object_set_new(o, "sessionUuid", col(r, row, "id"));
    json_object_set_new(o, "sessionName", col(r, row, "name"));
    json_object_set_new(o, "status", col(r, row, "status"));
    json_object_set_new(o, "statusInfo", col(r, row, "status_info"));
    json_object_set_new(o, "image", col(r, row, "image"));
    json_object_set_new(o, "architecture", col(r, row, "architecture"));
    json_object_set_new(o, "type", col(r, row, "type"));
    json_object_set_new(o, "creationTime", col(r, row, "created_at"));
    json_object_set_new(o, "terminationTime", col(r, row, "terminated_at"));
    json_object_set_new(o, "statusChangedAt", col(r, row, "status_changed_at"));
    json_object_set_new(o, "startsAt", col(r, row, "starts_at"));
    json_object_set_new(o, "age", col(r, row, "age"));
    json_object_set_new(o, "occupiedSlots", col(r, row, "occupied_slots"));
    json_object_set_new(o, "requestedSlots", col(r, row, "requested_slots"));
    json_object_set_new(o, "servicePorts", ports);
    json_object_set_new(o, "domainName", col(r, row, "domain_name"));
    json_object_set_new(o, "groupId", col(r, row, "project_id"));
    json_object_set_new(o, "groupName", col(r, row, "group_name"));
    json_object_set_new(o, "userId", col(r, row, "user_id"));
    json_object_set_new(o, "accessKey", col(r, row, "access_key"));
    json_object_set_new(o, "scalingGroup", col(r, row, "resource_group"));
    json_object_set_new(o, "resourceGroup", col(r, row, "resource_group"));
    json_object_set_new(o, "clusterSize", col(r, row, "cluster_size"));
    json_object_set_new(o, "clusterMode", col(r, row, "cluster_mode"));
    json_object_set_new(o, "priority", col(r, row, "priority"));
    json_object_set_new(o, "result", col(r, row, "result"));
    json_object_set_new(o, "exitCode", col(r, row, "exit_code"));
    json_object_set_new(o, "kernels", kernels);
    return o;
}
