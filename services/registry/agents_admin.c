/* agents_admin.c: the administrators' view of agents (see agents_admin.h):
 * capacity from PostgreSQL, occupancy from Redis. */
#include "agents_admin.h"

#include "caller.h"
#include "libcommon/log.h"
#include "listing.h"
#include "occupancy_sync.h"

#include <stdio.h>
#include <string.h>

static const char list_sql[] =
    "SELECT id, resource_group, architecture, addr, status, status_info, slots, devices,"
    " last_heartbeat, first_contact, status_changed_at, version, hostname, runtime,"
    " (SELECT count(*) FROM registry.kernels k WHERE k.agent_id = a.id AND k.holds_slots)::int"
    "   AS kernels, count(*) OVER () AS total"
    " FROM registry.agents a WHERE ($1::text IS NULL OR status = $1)"
    " AND ($2::text IS NULL OR resource_group = $2)"
    " AND ($3::text IS NULL OR id = $3)"
    " ORDER BY id LIMIT $4::bigint OFFSET $5::bigint";

/* Occupancy from Redis: "occupied_slots" and per-device "occupied_shares". */
static void add_occupancy(json_t *agent)
{
    ts_err err = {{0}};
    occ *o = occupancy_handle(&err);
    slots_t used;
    int32_t dev_used[OCC_MAX_DEVICES];
    bool present = false;
    const char *id = json_string_value(json_object_get(agent, "id"));
    if (!o || !occ_read_used(o, id, &used, dev_used, &present, &err)) {
        json_object_set_new(agent, "occupied_slots", json_null());
        return;
    }
    json_object_set_new(agent, "occupied_slots", slots_to_json(&used));
    json_object_set_new(agent, "in_redis", json_boolean(present));
    json_t *devs = json_object_get(agent, "devices");
    int idx = 0;
    for (size_t i = 0; json_is_array(devs) && i < json_array_size(devs); i++) {
        json_t *d = json_array_get(devs, i);
        const char *slot = json_string_value(json_object_get(d, "slot_name"));
        if (!slot || strcmp(slot, "cuda.device") != 0 || idx >= OCC_MAX_DEVICES) continue;
        char buf[SLOT_FMT_MAX];
        json_object_set_new(
            d, "occupied_shares",
            json_string(slot_format(SLOT_CUDA_SHARES, dev_used[idx++], buf, sizeof(buf))));
    }
}

/* An agent with its occupancy. */
static json_t *agent_row(const PGresult *r, int row)
{
    json_t *a = listing_row_json(r, row);
    add_occupancy(a);
    return a;
}

/* GET /v1/admin/agents, and /v1/admin/agents/{id}: that agent alone. */
static void h_agents(http_req *req, http_resp *resp, void *ctx)
{
    const char *id = http_param(req, "id");
    reg_caller c;
    if (!caller_get_admin(req, resp, false, "agents", &c)) return;
    if (id) tlog_ctx_agent(id);
    char missing[200];
    snprintf(missing, sizeof(missing), "unknown agent %s", id ? id : "");
    listing l = {
        .what = "list agents",
        .sql = list_sql,
        .params = {http_query_arg(req, "status"), http_query_arg(req, "resource_group"), id},
        .n_params = 3,
        .row = agent_row,
        .missing = id ? missing : NULL};
    listing_reply(ctx, req, resp, &l);
    caller_free(&c);
}

void agents_admin_routes(svc *s)
{
    http_route(svc_router(s), "GET", "/v1/admin/agents", h_agents, s);
    http_route(svc_router(s), "GET", "/v1/admin/agents/{id}", h_agents, s);
}
