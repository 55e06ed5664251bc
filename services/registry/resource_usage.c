/* resource_usage.c: see resource_usage.h. */
#include "resource_usage.h"

#include "libcommon/log.h"
#include "libcommon/pgjson.h"
#include "occupancy_sync.h"
#include "slot_budget.h"

#include <stdlib.h>
#include <string.h>

/* Add a stored slots object (jsonb text) to acc; malformed text is skipped
 * (logged): one bad row does not hide the others. */
static void _add_text(slots_t *acc, const char *text)
{
    json_t *j = json_loads(text, 0, NULL);
    slots_t s;
    ts_err err = {{0}};
    if (!json_is_object(j) || !slots_from_json(&s, j, &err) || !slots_add(acc, &s, &err))
        TLOG_WARN("unreadable slots skipped", "error=\"%s\"", err.msg);
    json_decref(j);
}

static ssize_t _group_index(const json_t *groups, const char *name)
{
    for (size_t i = 0; i < json_array_size(groups); i++)
        if (strcmp(json_string_value(json_array_get(groups, i)), name) == 0) return (ssize_t)i;
    return -1;
}

/* HGETALL <p>usage:<tag><id> into out (slot quanta; "sessions" and unknown
 * fields skipped). */
static bool _redis_scope(occ *o, const char *tag, const char *id, slots_t *out, ts_err *err)
{
    slots_clear(out);
    if (!id || !id[0]) return true;
    char *sub = ts_asprintf("%s%s", tag, id);
    char *key = occ_key(o, OCC_KEY_USAGE, sub);
    free(sub);
    const char *argv[2] = {"HGETALL", key};
    redisReply *rep = rds_command(occ_rds(o), 2, argv, NULL, err);
    free(key);
    if (!rep) return false;
    bool ok = rep->type == REDIS_REPLY_ARRAY;
    if (!ok) ts_err_set(err, "HGETALL answered type %d", rep->type);
    for (size_t i = 0; ok && i + 1 < rep->elements; i += 2) {
        const char *f = rep->element[i]->str, *v = rep->element[i + 1]->str;
        int id_ = f ? slot_find(f) : -1;
        if (id_ >= 0 && v) slots_put(out, id_, strtoll(v, NULL, 10));
    }
    freeReplyObject(rep);
    return ok;
}

static bool _redis_scopes(const char *const ids[OCC_SCOPES], slots_t out[OCC_SCOPES])
{
    ts_err err = {{0}};
    occ *o = occupancy_handle(&err);
    bool marker = false;
    if (!o || !occ_marker_present(o, &marker, &err)) goto fail;
    if (!marker) {
        ts_err_set(&err, "no occupancy marker (a rebuild is due)");
        goto fail;
    }
    for (int sc = 0; sc < OCC_SCOPES; sc++)
        if (!_redis_scope(o, occ_scope_tags[sc], ids[sc], &out[sc], &err)) goto fail;
    return true;
fail:
    TLOG_WARN("usage read from the database", "why=\"%s\"", err.msg);
    return false;
}

bool resource_usage_scopes(PGconn *conn, http_resp *resp, const char *const ids[OCC_SCOPES],
                           slots_t out[OCC_SCOPES], bool *from_redis)
{
    *from_redis = _redis_scopes(ids, out);
    if (*from_redis) return true;
    const char *p[] = {ids[OCC_SCOPE_KEYPAIR], ids[OCC_SCOPE_USER], ids[OCC_SCOPE_PROJECT],
                       ids[OCC_SCOPE_DOMAIN]};
    PGresult *r =
        pgjson_query(conn, resp, "read usage",
                     "SELECT s.access_key = $1, s.user_id = $2::uuid,"
                     " coalesce(s.project_id = $3::uuid, false), s.domain_name = $4, k.slots"
                     " FROM registry.kernels k JOIN registry.sessions s ON s.id = k.session_id"
                     " WHERE k.holds_slots AND (s.access_key = $1 OR s.user_id = $2::uuid"
                     " OR s.project_id = $3::uuid OR s.domain_name = $4)",
                     4, p);
    if (!r) return false;
    for (int sc = 0; sc < OCC_SCOPES; sc++)
        slots_clear(&out[sc]);
    for (int i = 0; i < PQntuples(r); i++)
        for (int sc = 0; sc < OCC_SCOPES; sc++)
            if (PQgetvalue(r, i, sc)[0] == 't') _add_text(&out[sc], PQgetvalue(r, i, 4));
    PQclear(r);
    return true;
}

bool resource_usage_by_group(PGconn *conn, http_resp *resp, const char *user_id,
                             const json_t *groups, slots_t *out)
{
    char *gj = json_dumps(groups, JSON_COMPACT);
    const char *p[] = {user_id, gj};
    PGresult *r =
        pgjson_query(conn, resp, "read usage by resource group",
                     "SELECT s.resource_group, k.slots"
                     " FROM registry.kernels k JOIN registry.sessions s ON s.id = k.session_id"
                     " WHERE k.holds_slots AND s.user_id = $1::uuid"
                     " AND s.resource_group IN (SELECT jsonb_array_elements_text($2::jsonb))",
                     2, p);
    free(gj);
    if (!r) return false;
    for (size_t i = 0; i < json_array_size(groups); i++)
        slots_clear(&out[i]);
    for (int i = 0; i < PQntuples(r); i++) {
        ssize_t g = _group_index(groups, PQgetvalue(r, i, 0));
        if (g >= 0) _add_text(&out[g], PQgetvalue(r, i, 1));
    }
    PQclear(r);
    return true;
}

/* Used slots of agent id from the kernels holding slots there (PostgreSQL). */
static bool _db_used(PGconn *conn, http_resp *resp, const char *id, slots_t *used)
{
    const char *p[] = {id};
    PGresult *r = pgjson_query(conn, resp, "read agent occupancy",
                               "SELECT slots FROM registry.kernels"
                               " WHERE holds_slots AND agent_id = $1",
                               1, p);
    if (!r) return false;
    slots_clear(used);
    for (int i = 0; i < PQntuples(r); i++)
        _add_text(used, PQgetvalue(r, i, 0));
    PQclear(r);
    return true;
}

/* The agent of row i: its capacity minus what is used there. */
static bool _agent_free(PGconn *conn, http_resp *resp, const PGresult *r, int i, occ *o,
                        slots_t *free_)
{
    const char *id = PQgetvalue(r, i, 0);
    json_t *slots = json_loads(PQgetvalue(r, i, 2), 0, NULL);
    json_t *devs = json_loads(PQgetvalue(r, i, 3), 0, NULL);
    int32_t dev_cap[OCC_MAX_DEVICES], dev_used[OCC_MAX_DEVICES];
    int ndev = 0;
    ts_err err = {{0}};
    bool ok = occupancy_agent_capacity(slots, devs, free_, dev_cap, &ndev, &err);
    json_decref(slots);
    json_decref(devs);
    if (!ok) {
        TLOG_WARN("agent capacity unreadable, counted as none", "agent=%s error=\"%s\"", id,
                  err.msg);
        slots_clear(free_);
        return true;
    }
    slots_t used;
    bool present = false;
    if (!o || !occ_read_used(o, id, &used, dev_used, &present, &err) || !present) {
        if (!_db_used(conn, resp, id, &used)) return false;
    }
    slots_sub_floor(free_, &used);
    return true;
}

bool resource_usage_agents(PGconn *conn, http_resp *resp, const json_t *groups, agent_free **out,
                           size_t *n)
{
    *out = NULL;
    *n = 0;
    char *gj = json_dumps(groups, JSON_COMPACT);
    const char *p[] = {gj};
    PGresult *r = pgjson_query(conn, resp, "read agents",
                               "SELECT id, resource_group, slots, devices FROM registry.agents"
                               " WHERE status = 'ALIVE' AND resource_group IN (SELECT "
                               "jsonb_array_elements_text($1::jsonb))"
                               " ORDER BY id",
                               1, p);
    free(gj);
    if (!r) return false;
    ts_err err = {{0}};
    occ *o = occupancy_handle(&err);
    bool marker = false;
    if (o && (!occ_marker_present(o, &marker, &err) || !marker)) o = NULL;
    agent_free *a = ts_calloc((size_t)PQntuples(r) + 1, sizeof(*a));
    size_t k = 0;
    for (int i = 0; i < PQntuples(r); i++) {
        ssize_t g = _group_index(groups, PQgetvalue(r, i, 1));
        if (g < 0) continue;
        a[k].group = (size_t)g;
        if (!_agent_free(conn, resp, r, i, o, &a[k].free)) {
            free(a);
            PQclear(r);
            return false;
        }
        k++;
    }
    PQclear(r);
    *out = a;
    *n = k;
    return true;
}
