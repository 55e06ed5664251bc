/* session_create.c: POST /v1/sessions (see session_create.h). Validate, insert
 * the session PENDING with its kernels and a history row in one transaction,
 * commit, publish SessionEnqueued, then (unless enqueueOnly) wait for RUNNING
 * or an end, up to maxWaitSeconds. */
#include "session_create.h"

#include "caller.h"
#include "context.h"
#include "db_common.h"
#include "home_files.h"
#include "idle_scopes.h"
#include "images.h"
#include "largest_agent.h"
#include "libcommon/log.h"
#include "libcommon/pg.h"
#include "libcommon/pgjson.h"
#include "mounts.h"
#include "session_cluster.h"
#include "session_enqueued.h"
#include "session_view.h"
#include "validation.h"
#include "waiters.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void fmt_slot(int id, int64_t v, char *buf, size_t size)
{
    slot_format(id, v, buf, size);
}

/* ---- validation against the owner's context and the registry's data -------------------------- */

/* Slots of a JSON limit object; absent or unreadable: empty. */
static void limit_slots(json_t *obj, slots_t *out)
{
    ts_err e;
    if (!json_is_object(obj) || !slots_from_json(out, obj, &e)) slots_clear(out);
}

/* The first slot of need above limit (only the slots limit names). */
static int over_limit(const slots_t *need, const slots_t *limit)
{
    for (int i = 0; i < SLOTS_MAX; i++)
        if ((limit->mask >> i) & 1u && slots_get(need, i) > limit->v[i]) return i;
    return -1;
}

static bool check_policy(json_t *ctx, const create_req *cr, const slots_t *total, http_resp *resp)
{
    json_t *policy = json_object_get(ctx, "keypair_policy");
    json_int_t max_c = json_integer_value(json_object_get(policy, "max_containers_per_session"));
    if (max_c > 0 && cr->cluster_size > max_c) {
        http_problem(resp, 412, "quota-exceeded", NULL,
                     "cluster_size %d exceeds the keypair resource policy's "
                     "max_containers_per_session (%lld)",
                     cr->cluster_size, (long long)max_c);
        return false;
    }
    struct {
        const char *what;
        json_t *slots;
    } scopes[] = {
        {"the keypair resource policy's", json_object_get(policy, "total_resource_slots")},
        {"the project's", json_object_get(json_object_get(ctx, "project"), "total_resource_slots")},
        {"the domain's", json_object_get(json_object_get(ctx, "domain"), "total_resource_slots")},
    };
    for (size_t i = 0; i < TS_ARRAY_LEN(scopes); i++) {
        slots_t lim;
        limit_slots(scopes[i].slots, &lim);
        int s = over_limit(total, &lim);
        if (s >= 0) {
            char a[SLOT_FMT_MAX], b[SLOT_FMT_MAX];
            fmt_slot(s, slots_get(total, s), a, sizeof(a));
            fmt_slot(s, lim.v[s], b, sizeof(b));
            http_problem(resp, 412, "quota-exceeded", NULL,
                         "requested %s %s exceeds %s total %s limit (%s)", slot_name(s), a,
                         scopes[i].what, slot_name(s), b);
            return false;
        }
    }
    return true;
}

/* The resource group exists, is active, allows the type and the owner. */
static bool check_group(PGconn *conn, json_t *ctx, const create_req *cr, http_resp *resp)
{
    const char *p2[] = {cr->resource_group, cr->type};
    PGresult *r = pgjson_query(conn, resp, "read resource group",
                               "SELECT is_active, $2 = ANY(allowed_session_types)"
                               " FROM registry.resource_groups WHERE name = $1",
                               2, p2);
    if (!r) return false;
    bool ok = false;
    if (PQntuples(r) != 1) {
        http_problem(resp, 400, "invalid-api-params", NULL, "unknown resource group %s",
                     cr->resource_group);
    } else if (PQgetvalue(r, 0, 0)[0] != 't') {
        http_problem(resp, 400, "invalid-api-params", NULL, "resource group %s is not active",
                     cr->resource_group);
    } else if (PQgetvalue(r, 0, 1)[0] != 't') {
        http_problem(resp, 400, "invalid-api-params", NULL,
                     "resource group %s does not allow %s sessions", cr->resource_group, cr->type);
    } else {
        json_t *allowed = json_object_get(ctx, "allowed_resource_groups");
        size_t i;
        json_t *g;
        json_array_foreach(allowed, i, g) if (strcmp(json_string_value(g), cr->resource_group) == 0)
            ok = true;
        if (!ok) {
            char list[400] = "";
            json_array_foreach(allowed, i, g)
            {
                if (strlen(list) + strlen(json_string_value(g)) + 3 >= sizeof(list)) break;
                if (list[0]) strcat(list, ", ");
                strcat(list, json_string_value(g));
            }
            http_problem(resp, 403, "forbidden", NULL,
                         "resource group %s is not allowed for this keypair, its project or "
                         "domain (allowed: %s)",
                         cr->resource_group, list[0] ? list : "none");
        }
    }
    PQclear(r);
    return ok;
}

/* The slot of need above the largest ALIVE agent of the group, or -1. */
static int above_largest(const slots_t *need, const slots_t *max)
{
    for (int id = 0; id < SLOTS_MAX; id++)
        if (slots_get(need, id) > slots_get(max, id)) return id;
    return -1;
}

/* Fits on the largest ALIVE agent of the group (per slot). No agent: the
 * scheduler will say so while the session waits. A cached answer may let a
 * request through; only a fresh one refuses it (largest_agent.h). */
static bool check_agents(PGconn *conn, const create_req *cr, const slots_t *need, http_resp *resp)
{
    slots_t max;
    int agents, id;
    if (!largest_agent(conn, resp, cr->resource_group, false, &max, &agents)) return false;
    if (agents == 0 || above_largest(need, &max) < 0) return true;
    if (!largest_agent(conn, resp, cr->resource_group, true, &max, &agents)) return false;
    if (agents == 0 || (id = above_largest(need, &max)) < 0) return true;
    char a[SLOT_FMT_MAX], b[SLOT_FMT_MAX];
    fmt_slot(id, slots_get(need, id), a, sizeof(a));
    fmt_slot(id, slots_get(&max, id), b, sizeof(b));
    http_problem(resp, 400, "invalid-api-params", NULL,
                 "requested %s %s exceeds the largest agent in group %s (%s)", slot_name(id), a,
                 cr->resource_group, b);
    return false;
}

/* Defaults, then the image's minimums and maximums (image_config.h): a
 * requested amount outside them is refused, a default is raised or lowered to
 * them. */
static bool apply_minimums(create_req *cr, json_t *min, json_t *maxj, http_resp *resp)
{
    slots_t def;
    ts_err err = {{0}};
    if (!slots_parse_text(&def, reg_settings.default_slots, &err)) slots_clear(&def);
    for (int id = 0; id < SLOTS_MAX; id++)
        if ((def.mask >> id) & 1u && !((cr->slots.mask >> id) & 1u))
            slots_put(&cr->slots, id, def.v[id]);
    slots_t m;
    limit_slots(min, &m);
    for (int id = 0; id < SLOTS_MAX; id++) {
        if (!((m.mask >> id) & 1u) || slots_get(&cr->slots, id) >= m.v[id]) continue;
        if ((cr->explicit_slots >> id) & 1u) {
            char a[SLOT_FMT_MAX], b[SLOT_FMT_MAX];
            fmt_slot(id, slots_get(&cr->slots, id), a, sizeof(a));
            fmt_slot(id, m.v[id], b, sizeof(b));
            http_problem(resp, 400, "invalid-api-params", NULL,
                         "requested %s %s is below the image's minimum (%s)", slot_name(id), a, b);
            return false;
        }
        slots_put(&cr->slots, id, m.v[id]);
    }
    slots_t mx;
    limit_slots(maxj, &mx);
    for (int id = 0; id < SLOTS_MAX; id++) {
        if (!((mx.mask >> id) & 1u) || slots_get(&cr->slots, id) <= mx.v[id]) continue;
        if ((cr->explicit_slots >> id) & 1u || ((m.mask >> id) & 1u && m.v[id] > mx.v[id])) {
            char a[SLOT_FMT_MAX], b[SLOT_FMT_MAX];
            fmt_slot(id, slots_get(&cr->slots, id), a, sizeof(a));
            fmt_slot(id, mx.v[id], b, sizeof(b));
            http_problem(resp, 400, "invalid-api-params", NULL,
                         "requested %s %s is above the image's maximum (%s)", slot_name(id), a, b);
            return false;
        }
        slots_put(&cr->slots, id, mx.v[id]);
    }
    if (cr->shmem >= 0 && cr->shmem > slots_get(&cr->slots, SLOT_MEM)) {
        http_problem(resp, 400, "invalid-api-params", NULL,
                     "config.resource_opts.shmem is larger than the requested mem");
        return false;
    }
    return true;
}

static json_t *build_limits(json_t *ctx, const char *ak, const char *user_id)
{
    json_t *policy = json_object_get(ctx, "keypair_policy");
    json_t *project = json_object_get(ctx, "project");
    json_t *domain = json_object_get(ctx, "domain");
    json_t *kp_slots = json_object_get(policy, "total_resource_slots");
    json_t *pj = json_object_get(project, "total_resource_slots");
    json_t *dj = json_object_get(domain, "total_resource_slots");
    slots_t a, b, c;
    limit_slots(kp_slots, &a);
    limit_slots(pj, &b);
    limit_slots(dj, &c);
    json_t *l = json_array();
    json_array_append_new(
        l, json_pack("{s:s, s:s, s:I, s:I, s:o}", "scope", "keypair", "id", ak,
                     "max_concurrent_sessions",
                     json_integer_value(json_object_get(policy, "max_concurrent_sessions")),
                     "max_pending_sessions",
                     json_integer_value(json_object_get(policy, "max_pending_session_count")),
                     "max_slots", slots_to_json(&a)));
    json_array_append_new(l, json_pack("{s:s, s:s, s:o}", "scope", "user", "id", user_id,
                                       "max_slots", json_object()));
    if (json_is_object(project))
        json_array_append_new(l,
                              json_pack("{s:s, s:s, s:o}", "scope", "project", "id",
                                        pgjson_str(project, "id"), "max_slots", slots_to_json(&b)));
    json_array_append_new(l, json_pack("{s:s, s:s, s:o}", "scope", "domain", "id",
                                       pgjson_str(domain, "name"), "max_slots", slots_to_json(&c)));
    return l;
}

/* ---- the handler --------------------------------------------------------------------------------
 */

/* The create's answer from a session's view: created (201) or reused (200). */
static void reply_created(http_resp *resp, json_t *v, bool created)
{
    /* sessionId is the UUID, as Backend.AI answers since API v5 (its
     * Python client parses it as one); the name is sessionName. */
    json_t *out = json_pack(
        "{s:O, s:O, s:O, s:O, s:O, s:O, s:b}", "sessionId", json_object_get(v, "sessionUuid"),
        "sessionUuid", json_object_get(v, "sessionUuid"), "sessionName",
        json_object_get(v, "sessionName"), "status", json_object_get(v, "status"), "statusInfo",
        json_object_get(v, "statusInfo"), "servicePorts", json_object_get(v, "servicePorts"),
        "created", created);
    json_decref(v);
    http_reply_json(resp, created ? 201 : 200, out);
}

/* reuseIfExists: the live session of that name. */
static void reply_existing(http_resp *resp, PGconn *conn, const char *ak, const char *name)
{
    const char *p[] = {ak, name};
    json_t *v = session_view_one(
        conn, resp, "s.access_key = $1 AND s.name = $2 AND s.status NOT IN " SQL_FINAL, 2, p);
    if (v)
        reply_created(resp, v, false);
    else if (http_resp_status(resp) == 0)
        http_problem(resp, 409, "already-exists", NULL, "session %s ended meanwhile; try again",
                     name);
}

static const char insert_sql[] =
    "INSERT INTO registry.sessions (id, name, access_key, user_id, project_id, group_name,"
    " domain_name, type, image, architecture, resource_group, status, status_info, starts_at,"
    " priority, cluster_size, cluster_mode, requested_slots, resource_opts, mounts, environ,"
    " startup_command, bootstrap_script, idle_inputs, limits, preopen_ports, home_files,"
    " max_lifetime, rootfs_size, designated_agent, cluster_vni, cluster_ssh_public,"
    " cluster_ssh_private)"
    " VALUES ($1::uuid, $2, $3, $4::uuid, $5::uuid, $6, $7, $8, $9, $10, $11, 'PENDING',"
    " 'waiting to be scheduled', to_timestamp($12::bigint / 1000.0), $13::int, $14::int, $15,"
    " $16::jsonb, $17::jsonb, $18::jsonb, $19::jsonb, $20, $21, $22::jsonb, $23::jsonb, $24::jsonb,"
    " $25::jsonb, $26::int, $27::bigint, $28, $29::int, $30, $31)";

/* agentList: superadmins only, and agents alive in the session's resource
 * group (the scheduler places every kernel there, or each kernel on its
 * own, docs/sessions.md). */
static bool check_designated(PGconn *conn, const reg_caller *c, const create_req *cr,
                             http_resp *resp)
{
    if (!cr->agent && cr->n_agents == 0) return true;
    if (!caller_is_superadmin(c)) {
        http_problem(resp, 403, "forbidden", NULL,
                     "only superadmins may designate the agent of a session (agentList)");
        return false;
    }
    int n = cr->n_agents ? cr->n_agents : 1;
    for (int i = 0; i < n; i++) {
        const char *agent = cr->n_agents ? cr->agents[i] : cr->agent;
        const char *p[] = {agent, cr->resource_group};
        PGresult *r =
            pgjson_query(conn, resp, "designated agent",
                         "SELECT 1 FROM registry.agents WHERE id = $1 AND resource_group = $2"
                         " AND status = 'ALIVE'",
                         2, p);
        if (!r) return false;
        bool found = PQntuples(r) == 1;
        PQclear(r);
        if (!found) {
            http_problem(resp, 400, "invalid-api-params", NULL,
                         "agentList: %s is no alive agent of resource group %s", agent,
                         cr->resource_group);
            return false;
        }
    }
    return true;
}

/* starts_at -> Unix ms (NULL text when none): ISO-8601 (through PostgreSQL) or a delay. */
static bool starts_at_ms(PGconn *conn, const create_req *cr, char *out, size_t size, bool *given,
                         http_resp *resp)
{
    *given = false;
    if (!cr->starts_at) return true;
    if (strcmp(cr->type, "batch") != 0) {
        http_problem(resp, 400, "invalid-api-params", NULL,
                     "\"starts_at\" is only for batch sessions");
        return false;
    }
    int64_t d;
    if (cfg_parse_duration_ms(cr->starts_at, &d) && d >= 0) {
        snprintf(out, size, "%lld", (long long)(ts_now_wall_ms() + d));
        *given = true;
        return true;
    }
    const char *p[] = {cr->starts_at};
    PGresult *r = PQexecParams(conn, "SELECT (extract(epoch FROM $1::timestamptz) * 1000)::bigint",
                               1, NULL, p, NULL, NULL, 0);
    bool ok = PQresultStatus(r) == PGRES_TUPLES_OK && PQntuples(r) == 1;
    if (ok) {
        ts_strlcpy(out, PQgetvalue(r, 0, 0), size);
        *given = true;
    } else {
        http_problem(resp, 400, "invalid-api-params", NULL,
                     "\"starts_at\" must be an ISO-8601 time or a delay such as \"10m\"");
    }
    PQclear(r);
    return ok;
}

/* Long: to be split by step (parse, validate, insert, enqueue, wait); session_create.c is being
 * changed on another branch (issue 33). */
void session_create_reply(svc *s, http_req *req, http_resp *resp, json_t *body)
{
    create_req cr;
    reg_caller c = {0};
    json_t *owner = NULL;
    PGconn *conn = NULL;
    image_info im = {0};
    waiter *w = NULL;
    json_t *resolved = NULL;
    cluster_new cl = {{0}};
    if (!create_req_parse(body, &cr, resp)) goto out;
    bool other = cr.owner_access_key &&
                 strcmp(cr.owner_access_key, http_header(req, "X-Tessera-Caller-Access-Key")
                                                 ? http_header(req, "X-Tessera-Caller-Access-Key")
                                                 : "") != 0;
    if (!caller_get(req, resp, other ? NULL : cr.group, &c)) goto out;
    if (other) {
        if (!caller_is_admin(&c)) {
            http_problem(resp, 403, "forbidden", NULL,
                         "only administrators may create sessions for another keypair");
            goto out;
        }
        if (!context_get(req, resp, cr.owner_access_key, cr.group, &owner)) {
            if (http_resp_status(resp) == 404)
                http_problem(resp, 400, "invalid-api-params", NULL, "unknown owner_access_key %s",
                             cr.owner_access_key);
            goto out;
        }
        const char *od = pgjson_str(json_object_get(owner, "user"), "domain_name");
        if (!caller_is_superadmin(&c) && strcmp(od, c.domain) != 0) {
            http_problem(resp, 403, "forbidden", NULL,
                         "a domain administrator may create sessions only for its domain");
            goto out;
        }
        if (!caller_is_superadmin(&c) && context_is_superadmin(owner)) {
            http_problem(resp, 403, "forbidden", NULL,
                         "a domain administrator may not create sessions for a superadmin");
            goto out;
        }
        if (!json_is_true(json_object_get(owner, "is_active"))) {
            http_problem(resp, 400, "invalid-api-params", NULL, "owner_access_key is not active");
            goto out;
        }
    } else {
        owner = json_incref(c.ctx);
    }
    json_t *ouser = json_object_get(owner, "user");
    const char *owner_ak = pgjson_str(owner, "access_key");
    const char *owner_domain = pgjson_str(ouser, "domain_name");
    /* A session without a script of its own runs its owner keypair's
     * (Backend.AI's user-config bootstrap script, from the context). */
    const char *own_script = pgjson_str(owner, "bootstrap_script");
    if (!*cr.bootstrap_script && own_script) cr.bootstrap_script = own_script;
    if (cr.domain && strcmp(cr.domain, owner_domain) != 0) {
        http_problem(resp, 400, "invalid-api-params", NULL,
                     "domain %s is not the owner's domain (%s)", cr.domain, owner_domain);
        goto out;
    }
    if (!(conn = pgjson_get(s, resp))) goto out;
    if (!check_group(conn, owner, &cr, resp) || !check_designated(conn, &c, &cr, resp)) goto out;
    /* the image */
    bool found = false;
    ts_err err = {{0}};
    if (!images_find(conn, cr.image, &im, &found, &err)) {
        TLOG_ERROR("image lookup failed", "error=\"%s\"", err.msg);
        http_problem(resp, 500, "internal-server-error", NULL, "image lookup failed");
        goto out;
    }
    if (!found) {
        http_problem(resp, 400, "invalid-api-params", NULL, "unknown image %s: register it first",
                     cr.image);
        goto out;
    }
    /* vfolder mounts, resolved for the owner; what is stored is what the
     * kernels get (CreateKernel), at the first start and every restart */
    if (json_array_size(cr.mounts) > 0) {
        if (!mounts_resolve(owner_ak, cr.mounts, cr.mount_map, req->request_id, &resolved, resp))
            goto out;
    } else {
        resolved = json_array();
    }
    if (!apply_minimums(&cr, im.min_slots, im.max_slots, resp)) goto out;
    /* totals: per kernel x cluster size */
    slots_t total;
    slots_clear(&total);
    for (int i = 0; i < cr.cluster_size; i++)
        if (!slots_add(&total, &cr.slots, &err)) {
            http_problem(resp, 400, "invalid-api-params", NULL, "config.resources: %s", err.msg);
            goto out;
        }
    if (!check_policy(owner, &cr, &total, resp)) goto out;
    bool single = strcmp(cr.cluster_mode, "single-node") == 0;
    if (!check_agents(conn, &cr, single ? &total : &cr.slots, resp)) goto out;
    char starts[24];
    bool has_starts = false;
    if (!starts_at_ms(conn, &cr, starts, sizeof(starts), &has_starts, resp)) goto out;
    /* name in use? */
    const char *np[] = {owner_ak, cr.name};
    PGresult *r = pgjson_query(conn, resp, "check session name",
                               "SELECT 1 FROM registry.sessions WHERE access_key = $1 AND name = $2"
                               " AND status NOT IN " SQL_FINAL,
                               2, np);
    if (!r) goto out;
    bool exists = PQntuples(r) > 0;
    PQclear(r);
    if (exists) {
        if (cr.reuse)
            reply_existing(resp, conn, owner_ak, cr.name);
        else
            http_problem(resp, 409, "already-exists", NULL,
                         "a live session named %s already exists (reuseIfExists to reuse it)",
                         cr.name);
        goto out;
    }
    /* insert */
    char sid[TS_UUID_STRLEN];
    ts_uuid4(sid);
    tlog_ctx_session(sid);
    json_t *kslots = slots_to_json(&cr.slots), *tslots = slots_to_json(&total);
    json_t *ropts = json_object();
    if (cr.shmem >= 0) {
        char b[SLOT_FMT_MAX];
        json_object_set_new(ropts, "shmem",
                            json_string(slot_format(SLOT_MEM, cr.shmem, b, sizeof(b))));
    }
    json_t *limits = build_limits(owner, owner_ak, pgjson_str(ouser, "id"));
    if (!session_cluster_new(conn, cr.cluster_size, sid, &cl, resp)) goto out;
    json_t *home = home_files_from_context(owner);
    home_files_add_cluster(home, cl.ssh_public);
    char *ks = json_dumps(kslots, JSON_COMPACT), *ts = json_dumps(tslots, JSON_COMPACT),
         *ro = json_dumps(ropts, JSON_COMPACT), *mt = json_dumps(resolved, JSON_COMPACT),
         *et = json_dumps(cr.environ, JSON_COMPACT), *lt = json_dumps(limits, JSON_COMPACT),
         *pt = json_dumps(cr.preopen_ports, JSON_COMPACT), *hf = json_dumps(home, JSON_COMPACT);
    json_decref(home);
    json_decref(kslots);
    json_decref(tslots);
    json_decref(ropts);
    json_decref(limits);
    json_t *project = json_object_get(owner, "project");
    char prio[16], size[16], lifetime[16], rootfs[24], *idle = idle_scopes_inputs(owner);
    snprintf(prio, sizeof(prio), "%d", cr.priority);
    snprintf(size, sizeof(size), "%d", cr.cluster_size);
    json_int_t max_life = json_integer_value(
        json_object_get(json_object_get(owner, "keypair_policy"), "max_session_lifetime"));
    snprintf(lifetime, sizeof(lifetime), "%lld", (long long)(max_life > 0 ? max_life : 0));
    /* the kernels' disk size (CreateKernel.rootfs_size; 0: the agent's own) */
    json_int_t max_rootfs = json_integer_value(
        json_object_get(json_object_get(owner, "keypair_policy"), "max_rootfs_size"));
    snprintf(rootfs, sizeof(rootfs), "%lld", (long long)(max_rootfs > 0 ? max_rootfs : 0));
    const char *ip[] = {sid,
                        cr.name,
                        owner_ak,
                        pgjson_str(ouser, "id"),
                        json_is_object(project) ? pgjson_str(project, "id") : NULL,
                        json_is_object(project) ? pgjson_str(project, "name") : cr.group,
                        owner_domain,
                        cr.type,
                        cr.image,
                        im.architecture,
                        cr.resource_group,
                        has_starts ? starts : NULL,
                        prio,
                        size,
                        cr.cluster_mode,
                        ts,
                        ro,
                        mt,
                        et,
                        cr.startup_command,
                        cr.bootstrap_script,
                        idle,
                        lt,
                        pt,
                        hf,
                        lifetime,
                        rootfs,
                        cr.agent,
                        NULL,
                        NULL,
                        NULL};
    bool ok = pgjson_begin(conn, resp);
    ip[28] = cl.ssh_public ? cl.vni : NULL;
    ip[29] = cl.ssh_public;
    ip[30] = cl.ssh_private;
    if (ok) {
        PGresult *ir = pg_exec_cached(conn, insert_sql, 31, ip);
        ok = PQresultStatus(ir) == PGRES_COMMAND_OK;
        const char *constraint = ok ? NULL : PQresultErrorField(ir, PG_DIAG_CONSTRAINT_NAME);
        if (!ok && strcmp(pgjson_sqlstate(ir), "23505") == 0 && constraint &&
            strcmp(constraint, "sessions_live_cluster_vni") == 0) {
            pg_rollback(conn);
            http_problem(resp, 503, "service-unavailable", NULL,
                         "the session's cluster network id was taken meanwhile; try again");
            PQclear(ir);
            goto free_text;
        }
        if (!ok && strcmp(pgjson_sqlstate(ir), "23505") == 0) {
            pg_rollback(conn);
            if (cr.reuse)
                reply_existing(resp, conn, owner_ak, cr.name);
            else
                http_problem(resp, 409, "already-exists", NULL,
                             "a live session named %s already exists", cr.name);
            PQclear(ir);
            goto free_text;
        }
        if (!ok) pgjson_problem(resp, ir, "create session");
        PQclear(ir);
    }
    for (int i = 0; ok && i < cr.cluster_size; i++) {
        char kid[TS_UUID_STRLEN], idx[16];
        ts_uuid4(kid);
        snprintf(idx, sizeof(idx), "%d", i);
        const char *kp[] = {kid, sid, i == 0 ? "main" : "sub",
                            idx, ks,  cr.n_agents ? cr.agents[i] : NULL};
        PGresult *kr = pgjson_query(conn, resp, "create kernel",
                                    "INSERT INTO registry.kernels (id, session_id, cluster_role,"
                                    " cluster_idx, status, slots, designated_agent) VALUES"
                                    " ($1::uuid, $2::uuid, $3, $4::int, 'PENDING', $5::jsonb, $6)",
                                    6, kp);
        ok = kr != NULL;
        if (kr) PQclear(kr);
    }
    if (ok) {
        const char *hp[] = {sid};
        PGresult *hr = pgjson_query(conn, resp, "history",
                                    "INSERT INTO registry.session_status_history (session_id,"
                                    " status, reason) VALUES ($1::uuid, 'PENDING', 'enqueued')",
                                    1, hp);
        ok = hr != NULL;
        if (hr) PQclear(hr);
    }
    if (ok)
        ok = pgjson_commit(conn, resp);
    else
        pg_rollback(conn);
    if (!ok) goto free_text;
    TLOG_INFO("session enqueued",
              "name=%s owner=%s group=%s image=%s agent=%s cluster_size=%d cluster_mode=%s "
              "cluster_vni=%s",
              cr.name, owner_ak, cr.resource_group, cr.image,
              cr.agent ? cr.agent : (cr.n_agents ? "per-kernel" : ""), cr.cluster_size,
              cr.cluster_mode, cl.ssh_public ? cl.vni : "");
    /* wait registration before the scheduler can see it */
    if (!cr.enqueue_only && cr.max_wait_ms > 0)
        w = waiters_add(sid, (int)reg_settings.max_waiting_creates);
    if (!session_enqueued_publish(conn, sid, req->request_id, &err))
        TLOG_WARN("SessionEnqueued not published yet (retried by the housekeeping)", "error=\"%s\"",
                  err.msg);
    char reached[16] = "";
    if (w) {
        /* Do not hold a connection while waiting. */
        pgjson_put(s, conn);
        conn = NULL;
        waiters_wait(w, ts_now_mono_ms() + cr.max_wait_ms, reached, sizeof(reached));
        w = NULL;
        if (!(conn = pgjson_get(s, resp))) goto free_text;
    }
    const char *vp[] = {sid};
    json_t *v = session_view_one(conn, resp, "s.id = $1::uuid", 1, vp);
    if (v) reply_created(resp, v, true);
free_text:
    free(ks);
    free(ts);
    free(ro);
    free(mt);
    free(et);
    free(lt);
    free(pt);
    free(hf);
    free(idle);
out:
    session_cluster_new_free(&cl);
    image_info_free(&im);
    json_decref(resolved);
    json_decref(owner);
    caller_free(&c);
    create_req_free(&cr);
    pgjson_put(s, conn);
}

static void h_create(http_req *req, http_resp *resp, void *ctx)
{
    json_t *body = http_json_body(req, resp);
    if (!body) return;
    session_create_reply(ctx, req, resp, body);
    json_decref(body);
}

void session_create_routes(svc *s)
{
    http_route(svc_router(s), "POST", "/v1/sessions", h_create, s);
}
