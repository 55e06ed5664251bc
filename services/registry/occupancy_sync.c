/* occupancy_sync.c: agent capacity and the rebuild (see occupancy_sync.h). */
#include "occupancy_sync.h"

#include "caller.h"
#include "context.h"
#include "db_common.h"
#include "libcommon/log.h"
#include "repairs.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#define REBUILD_LOCK_MS 60000  /* the lock's expiry: a registry that dies holding it */
#define REBUILD_SETTLE_MS 2000 /* automatic rebuilds wait this long for placements */
#define SETTLE_POLL_MS 100

static __thread occ *t_occ;
static __thread rds *t_rds;
static atomic_ulong rebuilds;

occ *occupancy_handle(ts_err *err)
{
    rds *r = reg_redis(err);
    if (!r) return NULL;
    if (!t_occ || t_rds != r) {
        occ_free(t_occ);
        t_occ = occ_new(r, reg_settings.redis_prefix);
        t_rds = r;
    }
    return t_occ;
}

bool occupancy_agent_capacity(json_t *slots, json_t *devices, slots_t *total, int32_t *dev_cap,
                              int *ndev, ts_err *err)
{
    if (!slots_from_json(total, json_is_object(slots) ? slots : NULL, err)) return false;
    *ndev = 0;
    int64_t shares = 0;
    for (size_t i = 0; json_is_array(devices) && i < json_array_size(devices); i++) {
        json_t *d = json_array_get(devices, i);
        const char *slot = json_string_value(json_object_get(d, "slot_name"));
        if (!slot || strcmp(slot, "cuda.device") != 0) continue;
        if (*ndev >= OCC_MAX_DEVICES) break;
        const char *cap = json_string_value(json_object_get(d, "shares_capacity"));
        int64_t c = SLOT_SHARES_PER_DEVICE;
        if (cap && cap[0] && !slot_parse(SLOT_CUDA_SHARES, cap, &c, err)) return false;
        dev_cap[(*ndev)++] = (int32_t)c;
        shares += c;
    }
    /* The totals the layout expects: device count and the sum of shares. */
    if (*ndev > 0) {
        if (!((total->mask >> SLOT_CUDA_DEVICE) & 1u)) slots_put(total, SLOT_CUDA_DEVICE, *ndev);
        if (!((total->mask >> SLOT_CUDA_SHARES) & 1u)) slots_put(total, SLOT_CUDA_SHARES, shares);
    }
    return true;
}

bool occupancy_write_agent(const char *id, json_t *slots, json_t *devices, bool alive, bool drained,
                           ts_err *err)
{
    slots_t total;
    int32_t cap[OCC_MAX_DEVICES];
    int ndev = 0;
    if (!occupancy_agent_capacity(slots, devices, &total, cap, &ndev, err)) return false;
    occ *o = occupancy_handle(err);
    if (!o) return false;
    occ_agent a = {.id = id,
                   .total = &total,
                   .ndev = ndev,
                   .dev_cap = cap,
                   .schedulable = alive && !drained,
                   .drain = drained ? OCC_DRAIN_ON : OCC_DRAIN_OFF};
    return occ_set_agent(o, &a, err);
}

/* ---- rebuild --------------------------------------------------------------------------------- */

typedef struct agent_buf {
    char *id;
    slots_t total;
    int32_t cap[OCC_MAX_DEVICES];
    int ndev;
    json_t *devices;
} agent_buf;

static int gpu_index(const agent_buf *a, const char *device_id)
{
    int idx = 0;
    for (size_t i = 0; json_is_array(a->devices) && i < json_array_size(a->devices); i++) {
        json_t *d = json_array_get(a->devices, i);
        const char *slot = json_string_value(json_object_get(d, "slot_name"));
        if (!slot || strcmp(slot, "cuda.device") != 0) continue;
        const char *id = json_string_value(json_object_get(d, "device_id"));
        if (id && strcmp(id, device_id) == 0) return idx;
        idx++;
    }
    char *end;
    long n = strtol(device_id, &end, 10);
    return (*device_id && !*end && n >= 0 && n < OCC_MAX_DEVICES) ? (int)n : -1;
}

static const char agents_sql[] =
    "SELECT id, slots::text, devices::text, status = 'ALIVE', NOT schedulable FROM registry.agents"
    " WHERE status = 'ALIVE' OR id IN (SELECT agent_id FROM registry.kernels"
    "   WHERE holds_slots AND agent_id IS NOT NULL) ORDER BY id";

static const char kernels_sql[] =
    "SELECT k.session_id::text, s.access_key, s.user_id::text, coalesce(s.project_id::text, ''),"
    " s.domain_name, k.id::text, k.agent_id, k.slots::text, k.devices::text"
    " FROM registry.kernels k JOIN registry.sessions s ON s.id = k.session_id"
    " WHERE k.holds_slots AND k.agent_id IS NOT NULL ORDER BY k.session_id, k.cluster_idx";

/* The kernel ids of Redis' reservations as a PostgreSQL uuid[] literal
 * (heap); ids that are not UUIDs are left out. */
static char *_alloc_kernels(const occ_alloc *al, size_t na)
{
    const char **ids = ts_calloc(na + 1, sizeof(*ids));
    size_t nu = 0;
    for (size_t i = 0; i < na; i++)
        if (ts_uuid_valid(al[i].kernel_id)) ids[nu++] = al[i].kernel_id;
    char *arr = reg_uuid_array(ids, nu);
    free(ids);
    return arr;
}

/* How many of Redis' reservations are the scheduler's in flight: their
 * kernels neither hold slots in the database yet nor ended. -1 on an error. */
static int _in_flight(occ *o, ts_err *err)
{
    occ_alloc *al = NULL;
    size_t na = 0;
    if (!occ_list_allocs(o, &al, &na, err)) return -1;
    if (na == 0) {
        free(al);
        return 0;
    }
    char *arr = _alloc_kernels(al, na);
    const char *p[] = {arr};
    PGconn *conn = reg_pg_get(err);
    PGresult *r =
        conn ? reg_exec(conn,
                        "SELECT count(*) FROM registry.kernels k"
                        " JOIN registry.sessions s ON s.id = k.session_id"
                        " WHERE k.id = ANY($1::uuid[]) AND NOT k.holds_slots"
                        " AND k.status NOT IN " SQL_FINAL " AND s.status NOT IN " SQL_FINAL,
                        1, p, err)
             : NULL;
    reg_pg_put(conn);
    free(arr);
    free(al);
    if (!r) return -1;
    int n = atoi(PQgetvalue(r, 0, 0));
    PQclear(r);
    return n;
}

/* Take the rebuild lock (reservations are refused from now on), then wait
 * up to settle_ms for the reservations in flight to be recorded in the
 * database (the registry applies the scheduler's SessionScheduled), so that
 * the snapshot holds them. *left: how many are still in flight. false on a
 * failure (the lock is removed again). */
static bool _lock_settled(occ *o, int settle_ms, int *left, ts_err *err)
{
    if (!occ_lock(o, REBUILD_LOCK_MS, err)) return false;
    int64_t deadline = ts_now_mono_ms() + settle_ms;
    for (;;) {
        *left = _in_flight(o, err);
        if (*left < 0) break;
        if (*left == 0 || ts_now_mono_ms() >= deadline) return true;
        usleep(SETTLE_POLL_MS * 1000);
    }
    ts_err e2;
    if (!occ_unlock(o, &e2)) TLOG_WARN("rebuild lock not removed", "error=\"%s\"", e2.msg);
    return false;
}

/* The rebuild itself, under the lock (occ_rebuild removes it).
 * Long: one snapshot of both tables, then Redis rewritten from it in one pass, the lock removed on
 * every way out. */
static bool _rebuild_locked(occ *o, occupancy_counts *counts, ts_err *err)
{
    PGconn *conn = reg_pg_get(err);
    if (!conn) {
        ts_err e2;
        if (!occ_unlock(o, &e2)) TLOG_WARN("rebuild lock not removed", "error=\"%s\"", e2.msg);
        return false;
    }
    /* One snapshot of both tables. */
    PGresult *ar = NULL, *kr = NULL;
    bool ok = pg_exec(conn, "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY", err) &&
              (ar = reg_exec(conn, agents_sql, 0, NULL, err)) != NULL &&
              (kr = reg_exec(conn, kernels_sql, 0, NULL, err)) != NULL;
    pg_rollback(conn);
    reg_pg_put(conn);
    if (!ok) {
        if (ar) PQclear(ar);
        ts_err e2;
        if (!occ_unlock(o, &e2)) TLOG_WARN("rebuild lock not removed", "error=\"%s\"", e2.msg);
        return false;
    }
    int na = PQntuples(ar), nk = PQntuples(kr);
    agent_buf *ab = ts_calloc((size_t)na + 1, sizeof(*ab));
    occ_agent *agents = ts_calloc((size_t)na + 1, sizeof(*agents));
    for (int i = 0; i < na; i++) {
        ab[i].id = PQgetvalue(ar, i, 0);
        json_t *sj = json_loads(PQgetvalue(ar, i, 1), 0, NULL);
        ab[i].devices = json_loads(PQgetvalue(ar, i, 2), 0, NULL);
        ts_err e;
        if (!occupancy_agent_capacity(sj, ab[i].devices, &ab[i].total, ab[i].cap, &ab[i].ndev,
                                      &e)) {
            TLOG_WARN("agent capacity unreadable; written as empty", "agent=%s error=\"%s\"",
                      ab[i].id, e.msg);
            slots_clear(&ab[i].total);
            ab[i].ndev = 0;
        }
        json_decref(sj);
        bool drained = PQgetvalue(ar, i, 4)[0] == 't';
        agents[i] = (occ_agent){ab[i].id,
                                &ab[i].total,
                                ab[i].ndev,
                                ab[i].cap,
                                PQgetvalue(ar, i, 3)[0] == 't' && !drained,
                                drained ? OCC_DRAIN_ON : OCC_DRAIN_OFF};
    }
    occ_kernel *ks = ts_calloc((size_t)nk + 1, sizeof(*ks));
    slots_t *kslots = ts_calloc((size_t)nk + 1, sizeof(*kslots));
    occ_dev *kdev = ts_calloc(((size_t)nk + 1) * OCC_MAX_DEVICES, sizeof(*kdev));
    occ_session *ss = ts_calloc((size_t)nk + 1, sizeof(*ss));
    int ns = 0;
    for (int i = 0; i < nk; i++) {
        const char *sid = PQgetvalue(kr, i, 0), *agent = PQgetvalue(kr, i, 6);
        json_t *sj = json_loads(PQgetvalue(kr, i, 7), 0, NULL);
        ts_err e;
        if (!slots_from_json(&kslots[i], sj, &e)) slots_clear(&kslots[i]);
        json_decref(sj);
        const agent_buf *a = NULL;
        for (int j = 0; j < na; j++)
            if (strcmp(ab[j].id, agent) == 0) a = &ab[j];
        json_t *dj = json_loads(PQgetvalue(kr, i, 8), 0, NULL);
        occ_dev *d = kdev + (size_t)i * OCC_MAX_DEVICES;
        int nd = 0;
        for (size_t x = 0;
             a && json_is_array(dj) && x < json_array_size(dj) && nd < OCC_MAX_DEVICES; x++) {
            json_t *o1 = json_array_get(dj, x);
            const char *dev = json_string_value(json_object_get(o1, "device_id"));
            const char *slot = json_string_value(json_object_get(o1, "slot_name"));
            const char *amt = json_string_value(json_object_get(o1, "amount"));
            int idx = dev ? gpu_index(a, dev) : -1;
            if (idx < 0 || !slot || !amt) continue;
            int64_t sh = 0;
            if (strcmp(slot, "cuda.device") == 0)
                sh = idx < a->ndev ? a->cap[idx] : SLOT_SHARES_PER_DEVICE;
            else if (!slot_parse(SLOT_CUDA_SHARES, amt, &sh, &e))
                continue;
            d[nd++] = (occ_dev){idx, (int32_t)sh};
        }
        json_decref(dj);
        ks[i] = (occ_kernel){PQgetvalue(kr, i, 5), agent, &kslots[i], nd, d};
        if (ns == 0 || strcmp(ss[ns - 1].session_id, sid) != 0) {
            occ_session *s = &ss[ns++];
            s->session_id = sid;
            s->scope[OCC_SCOPE_KEYPAIR] = PQgetvalue(kr, i, 1);
            s->scope[OCC_SCOPE_USER] = PQgetvalue(kr, i, 2);
            s->scope[OCC_SCOPE_PROJECT] = PQgetvalue(kr, i, 3);
            s->scope[OCC_SCOPE_DOMAIN] = PQgetvalue(kr, i, 4);
            s->k = &ks[i];
        }
        ss[ns - 1].nk++;
    }
    ok = occ_rebuild(o, agents, na, ss, ns, err);
    if (ok) {
        atomic_fetch_add(&rebuilds, 1);
        TLOG_INFO("occupancy rebuilt in Redis", "agents=%d sessions=%d kernels=%d", na, ns, nk);
        if (counts) *counts = (occupancy_counts){na, ns, nk};
    }
    for (int i = 0; i < na; i++)
        json_decref(ab[i].devices);
    free(ab);
    free(agents);
    free(ks);
    free(kslots);
    free(kdev);
    free(ss);
    PQclear(ar);
    PQclear(kr);
    return ok;
}

bool occupancy_rebuild(ts_err *err)
{
    occ *o = occupancy_handle(err);
    int left = 0;
    if (!o || !_lock_settled(o, REBUILD_SETTLE_MS, &left, err)) return false;
    if (left > 0)
        TLOG_WARN("occupancy rebuild with reservations in flight: the reconcile pass restores them",
                  "in_flight=%d", left);
    return _rebuild_locked(o, NULL, err);
}

bool occupancy_recalculate(int settle_ms, occupancy_counts *counts, bool *busy, ts_err *err)
{
    *busy = false;
    occ *o = occupancy_handle(err);
    int left = 0;
    if (!o || !_lock_settled(o, settle_ms, &left, err)) return false;
    if (left > 0) {
        ts_err e2;
        if (!occ_unlock(o, &e2)) TLOG_WARN("rebuild lock not removed", "error=\"%s\"", e2.msg);
        ts_err_set(err, "%d placement%s of the scheduler %s still being recorded; try again", left,
                   left == 1 ? "" : "s", left == 1 ? "is" : "are");
        *busy = true;
        return false;
    }
    return _rebuild_locked(o, counts, err);
}

bool occupancy_check(void)
{
    ts_err err = {{0}};
    occ *o = occupancy_handle(&err);
    bool present = false;
    if (!o || !occ_marker_present(o, &present, &err)) {
        TLOG_WARN("occupancy check: Redis unreachable", "error=\"%s\"", err.msg);
        return false;
    }
    const char *why = present ? NULL : "the occupancy marker is missing";
    char missing[200] = "";
    if (present) {
        PGconn *conn = reg_pg_get(&err);
        PGresult *r = conn ? reg_exec(conn, "SELECT id FROM registry.agents WHERE status = 'ALIVE'",
                                      0, NULL, &err)
                           : NULL;
        reg_pg_put(conn);
        if (!r) {
            TLOG_WARN("occupancy check: database unreachable", "error=\"%s\"", err.msg);
            return false;
        }
        for (int i = 0; i < PQntuples(r) && !why; i++) {
            bool has = true;
            if (occ_agent_present(o, PQgetvalue(r, i, 0), &has, &err) && !has) {
                snprintf(missing, sizeof(missing), "agent %s has no capacity in Redis",
                         PQgetvalue(r, i, 0));
                why = missing;
            }
        }
        PQclear(r);
    }
    if (!why) return true;
    TLOG_WARN("Redis lost occupancy; rebuilding", "why=\"%s\"", why);
    if (!occupancy_rebuild(&err)) {
        TLOG_ERROR("occupancy rebuild failed", "error=\"%s\"", err.msg);
        return false;
    }
    return true;
}

unsigned long occupancy_rebuilds(void)
{
    return atomic_load(&rebuilds);
}

/* ---- reservations against live kernels ------------------------------------------------------ */

/* Release the reservations of stale (kernels of al without a live kernel,
 * suspected twice) and record each one released. */
static void _release_stale(occ *o, const occ_alloc *al, size_t na, const char **stale, int ns)
{
    ts_err err = {{0}};
    bool *released = ts_calloc((size_t)ns, sizeof(*released));
    if (!occ_release(o, stale, ns, released, NULL, &err)) {
        TLOG_WARN("occupancy verify: release failed", "error=\"%s\"", err.msg);
    } else {
        for (int i = 0; i < ns; i++) {
            if (!released[i]) continue;
            const occ_alloc *a = NULL;
            for (size_t j = 0; j < na && !a; j++)
                if (al[j].kernel_id == stale[i]) a = &al[j];
            repairs_record(RK_RESERVATION_STALE, a ? a->session_id : NULL, stale[i],
                           a ? a->agent_id : NULL,
                           "a reservation in Redis without a live kernel: released");
        }
    }
    free(released);
}

void occupancy_verify(void)
{
    ts_err err = {{0}};
    occ *o = occupancy_handle(&err);
    if (!o) return;
    char why[300];
    bool holds;
    if (!occ_check(o, &holds, why, sizeof(why), &err)) {
        TLOG_WARN("occupancy verify: Redis unreachable", "error=\"%s\"", err.msg);
        return;
    }
    if (!holds) {
        repairs_record(RK_OCCUPANCY_DRIFT, NULL, NULL, NULL, why);
        if (!occupancy_rebuild(&err))
            TLOG_ERROR("occupancy rebuild failed", "error=\"%s\"", err.msg);
        return;
    }
    /* Redis first, then the database: a kernel that holds slots at the second
     * read held them (and had its allocation) at the first. */
    occ_alloc *al = NULL;
    size_t na = 0;
    if (!occ_list_allocs(o, &al, &na, &err)) {
        TLOG_WARN("occupancy verify: Redis unreachable", "error=\"%s\"", err.msg);
        return;
    }
    char *arr = _alloc_kernels(al, na);
    const char *p[] = {arr};
    PGconn *conn = reg_pg_get(&err);
    /* the allocations' kernels that may hold slots (holding them, or not yet
     * placed: the scheduler's reservation in flight) */
    PGresult *held =
        conn ? reg_exec(conn,
                        "SELECT k.id::text FROM registry.kernels k"
                        " JOIN registry.sessions s ON s.id = k.session_id"
                        " WHERE k.id = ANY($1::uuid[]) AND (k.holds_slots OR"
                        " (k.status NOT IN " SQL_FINAL " AND s.status NOT IN " SQL_FINAL "))",
                        1, p, &err)
             : NULL;
    PGresult *holders =
        held ? reg_exec(conn,
                        "SELECT id::text, session_id::text, agent_id FROM registry.kernels"
                        " WHERE holds_slots AND agent_id IS NOT NULL",
                        0, NULL, &err)
             : NULL;
    reg_pg_put(conn);
    free(arr);
    if (!held || !holders) {
        TLOG_WARN("occupancy verify: database unreachable", "error=\"%s\"", err.msg);
        if (held) PQclear(held);
        free(al);
        return;
    }
    const char **stale = ts_calloc(na + 1, sizeof(*stale));
    int ns = 0;
    for (size_t i = 0; i < na; i++) {
        bool live = false;
        for (int r = 0; r < PQntuples(held) && !live; r++)
            live = strcasecmp(PQgetvalue(held, r, 0), al[i].kernel_id) == 0;
        char key[120];
        snprintf(key, sizeof(key), "stale-alloc:%s", al[i].kernel_id);
        if (!live && repairs_suspect(key)) stale[ns++] = al[i].kernel_id;
    }
    bool lost = false;
    char lost_why[300] = "";
    for (int r = 0; r < PQntuples(holders); r++) {
        const char *kid = PQgetvalue(holders, r, 0);
        bool has = false;
        for (size_t i = 0; i < na && !has; i++)
            has = strcasecmp(al[i].kernel_id, kid) == 0;
        char key[120];
        snprintf(key, sizeof(key), "lost-alloc:%s", kid);
        if (!has && repairs_suspect(key) && !lost) {
            lost = true;
            snprintf(lost_why, sizeof(lost_why),
                     "kernel %s holds slots but Redis has no reservation", kid);
            repairs_record(RK_RESERVATION_LOST, PQgetvalue(holders, r, 1), kid,
                           PQgetvalue(holders, r, 2), lost_why);
        }
    }
    if (ns > 0) _release_stale(o, al, na, stale, ns);
    if (lost && !occupancy_rebuild(&err))
        TLOG_ERROR("occupancy rebuild failed", "error=\"%s\"", err.msg);
    free(stale);
    PQclear(held);
    PQclear(holders);
    free(al);
}

/* ---- on request --------------------------------------------------------------------------------
 */

#define RECALC_SETTLE_MS 5000

/* POST /v1/admin/occupancy/recalculate (Backend.AI's POST
 * /resource/recalculate-usage): superadmins. 200 {"agents", "sessions",
 * "kernels"} written; 503 while placements stay in flight. */
static void h_recalculate(http_req *req, http_resp *resp, void *ctx)
{
    reg_req x;
    bool super = reg_req_begin(&x, ctx, req, resp, REQ_SUPERADMIN,
                               "only superadmins may recalculate the resource occupancy");
    reg_req_end(&x);
    if (!super) return;
    occupancy_counts n = {0};
    bool busy = false;
    ts_err err = {{0}};
    if (!occupancy_recalculate(RECALC_SETTLE_MS, &n, &busy, &err)) {
        TLOG_WARN("occupancy recalculation failed", "busy=%d error=\"%s\"", busy, err.msg);
        http_problem(resp, 503, busy ? "busy" : "service-unavailable", NULL,
                     busy ? "%s" : "the occupancy could not be rebuilt: %s", err.msg);
        return;
    }
    TLOG_INFO("occupancy recalculated on request", "agents=%d sessions=%d kernels=%d", n.agents,
              n.sessions, n.kernels);
    http_reply_json(resp, 200,
                    json_pack("{s:i, s:i, s:i}", "agents", n.agents, "sessions", n.sessions,
                              "kernels", n.kernels));
}

void occupancy_routes(svc *s)
{
    http_route(svc_router(s), "POST", "/v1/admin/occupancy/recalculate", h_recalculate, s);
}
