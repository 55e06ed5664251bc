/* agents_admin.c: the administrators' view of agents (see agents_admin.h):
 * capacity from PostgreSQL, occupancy from Redis. */
#include "agents_admin.h"

#include "caller.h"
#include "libcommon/pgjson.h"
#include "occupancy_sync.h"

#include <stdlib.h>
#include <string.h>

static const char list_sql[] =
    "SELECT id, resource_group, architecture, addr, status, status_info, slots, devices,"
    " last_heartbeat, first_contact, status_changed_at, version, hostname, runtime,"
    " (SELECT count(*) FROM registry.kernels k WHERE k.agent_id = a.id AND k.holds_slots)::int"
    "   AS kernels, count(*) OVER () AS total"
    " FROM registry.agents a WHERE ($1::text IS NULL OR status = $1)"
    " AND ($2::text IS NULL OR resource_group = $2)"
    " AND ($5::text IS NULL OR id = $5)"
    " ORDER BY id LIMIT $3::bigint OFFSET $4::bigint";

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

static bool admin_caller(http_req *req, http_resp *resp, reg_caller *c)
{
    if (!caller_get(req, resp, NULL, c)) return false;
    if (!caller_is_admin(c)) {
        http_problem(resp, 403, "forbidden", NULL, "only administrators may list agents");
        caller_free(c);
        return false;
    }
    return true;
}

static void list_agents(http_req *req, http_resp *resp, svc *s, const char *id)
{
    reg_caller c;
    if (!admin_caller(req, resp, &c)) return;
    pgjson_page pg;
    if (!pgjson_page_parse(req, resp, &pg)) {
        caller_free(&c);
        return;
    }
    PGconn *conn = pgjson_get(s, resp);
    if (!conn) {
        caller_free(&c);
        return;
    }
    const char *p[] = {http_query_arg(req, "status"), http_query_arg(req, "resource_group"),
                       pg.limit_s, pg.offset_s, id};
    PGresult *r = pgjson_query(conn, resp, "list agents", list_sql, 5, p);
    if (r) {
        long long total = PQntuples(r) ? atoll(PQgetvalue(r, 0, PQnfields(r) - 1)) : 0;
        json_t *items = pgjson_rows_json(r);
        size_t i;
        json_t *a;
        json_array_foreach(items, i, a)
        {
            json_object_del(a, "total");
            add_occupancy(a);
        }
        if (id) {
            if (json_array_size(items) == 1)
                http_reply_json(resp, 200, json_incref(json_array_get(items, 0)));
            else
                http_problem(resp, 404, "not-found", NULL, "unknown agent %s", id);
            json_decref(items);
        } else {
            http_reply_json(resp, 200, pgjson_page_json(items, total, &pg));
        }
        PQclear(r);
    }
    pgjson_put(s, conn);
    caller_free(&c);
}

static void h_list(http_req *req, http_resp *resp, void *ctx)
{
    list_agents(req, resp, ctx, NULL);
}

static void h_get(http_req *req, http_resp *resp, void *ctx)
{
    list_agents(req, resp, ctx, http_param(req, "id"));
}

void agents_admin_routes(svc *s)
{
    http_route(svc_router(s), "GET", "/v1/admin/agents", h_list, s);
    http_route(svc_router(s), "GET", "/v1/admin/agents/{id}", h_get, s);
}
