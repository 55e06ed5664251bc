/* agents_admin.c: the administrators' view of agents (see agents_admin.h):
 * capacity from PostgreSQL, occupancy from Redis; their drain. */
#include "agents_admin.h"

#include "agents.h"
#include "caller.h"
#include "db_common.h"
#include "libcommon/log.h"
#include "libcommon/pgjson.h"
#include "listing.h"
#include "occupancy_sync.h"
#include "publish.h"
#include "tessera/v1/agent.pb-c.h"

#include <stdio.h>
#include <string.h>

/* The page's rows first (the primary key's order: a page reads its offset +
 * limit entries), their kernels counted for them only; the total counts the
 * filtered agents alone (count(*) OVER () counted every agent's kernels). */
#define AGENTS_WHERE                                                                               \
    " WHERE ($1::text IS NULL OR a.status = $1) AND ($2::text IS NULL OR a.resource_group = $2)"   \
    " AND ($3::text IS NULL OR a.id = $3)"
static const char list_sql[] =
    "SELECT id, resource_group, architecture, addr, status, status_info, schedulable, slots,"
    " devices, last_heartbeat, first_contact, status_changed_at, version, hostname, runtime,"
    " (SELECT count(*) FROM registry.kernels k WHERE k.agent_id = a.id AND k.holds_slots)::int"
    "   AS kernels, (SELECT count(*) FROM registry.agents a" AGENTS_WHERE ") AS total"
    " FROM (SELECT * FROM registry.agents a" AGENTS_WHERE
    " ORDER BY a.id LIMIT $4::bigint OFFSET $5::bigint) a ORDER BY id";
#undef AGENTS_WHERE

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
    ts_caller c;
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

/* ---- drain ----------------------------------------------------------------------------------- */

/* schedulable := on; the Redis record (schedulable when ALIVE and not
 * drained, the drained mark) and AgentSchedulable for the scheduler. Both are
 * written again when nothing changed: a repeated drain mends a Redis record
 * or a scheduler that missed the event. */
static void set_schedulable(svc *s, http_req *req, http_resp *resp, bool on)
{
    const char *id = http_param(req, "id");
    ts_caller c;
    if (!caller_get_admin(req, resp, true, "agents", &c)) return;
    if (!agents_plain_id(id)) {
        http_problem(resp, 400, "invalid-api-params", NULL,
                     "agent id must be 1 to 128 letters, digits, '-', '_', '.' or ':'");
        caller_free(&c);
        return;
    }
    tlog_ctx_agent(id);
    PGconn *conn = pgjson_get(s, resp);
    const char *p[] = {id, on ? "true" : "false"};
    PGresult *r =
        conn ? pgjson_query(conn, resp, "drain agent",
                            "UPDATE registry.agents a SET schedulable = $2::bool"
                            " FROM (SELECT id, schedulable AS was FROM registry.agents"
                            "   WHERE id = $1 FOR UPDATE) o WHERE a.id = o.id"
                            " RETURNING a.slots::text, a.devices::text, a.status = 'ALIVE', o.was",
                            2, p)
             : NULL;
    pgjson_put(s, conn);
    if (!r) goto out;
    if (PQntuples(r) != 1) {
        http_problem(resp, 404, "not-found", NULL, "unknown agent %s", id);
        PQclear(r);
        goto out;
    }
    bool was = PQgetvalue(r, 0, 3)[0] == 't';
    json_t *sj = json_loads(PQgetvalue(r, 0, 0), 0, NULL);
    json_t *dj = json_loads(PQgetvalue(r, 0, 1), 0, NULL);
    ts_err err;
    if (!occupancy_write_agent(id, sj, dj, PQgetvalue(r, 0, 2)[0] == 't', !on, &err))
        TLOG_WARN("drain not written to Redis (the scheduler's model has it; an occupancy "
                  "rebuild writes it)",
                  "error=\"%s\"", err.msg);
    json_decref(sj);
    json_decref(dj);
    PQclear(r);
    outbox ob;
    ob_init(&ob, req->request_id);
    Tessera__V1__AgentSchedulable m = TESSERA__V1__AGENT_SCHEDULABLE__INIT;
    m.agent_id = (char *)id;
    m.schedulable = on;
    m.requested_by = c.access_key;
    ob_agent_event(&ob, id, &m.base);
    ob_flush(&ob);
    if (was != on) TLOG_INFO(on ? "agent undrained" : "agent drained", "by=%s", c.access_key);
    listing l = {.what = "read agent",
                 .sql = list_sql,
                 .params = {NULL, NULL, id},
                 .n_params = 3,
                 .row = agent_row,
                 .missing = "unknown agent"};
    listing_reply(s, req, resp, &l);
out:
    caller_free(&c);
}

/* POST /v1/admin/agents/{id}/drain and /undrain (superadmins). */
static void h_drain(http_req *req, http_resp *resp, void *ctx)
{
    set_schedulable(ctx, req, resp, false);
}

static void h_undrain(http_req *req, http_resp *resp, void *ctx)
{
    set_schedulable(ctx, req, resp, true);
}

void agents_admin_routes(svc *s)
{
    http_route(svc_router(s), "GET", "/v1/admin/agents", h_agents, s);
    http_route(svc_router(s), "GET", "/v1/admin/agents/{id}", h_agents, s);
    http_route(svc_router(s), "POST", "/v1/admin/agents/{id}/drain", h_drain, s);
    http_route(svc_router(s), "POST", "/v1/admin/agents/{id}/undrain", h_undrain, s);
}
