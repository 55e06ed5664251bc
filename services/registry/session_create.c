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
#include "sql_row.h"
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

/* agentList: superadmins only, and agents alive in the session's resource
 * group (the scheduler places every kernel there, or each kernel on its
 * own, docs/sessions.md). */
static bool check_designated(PGconn *conn, const ts_caller *c, const create_req *cr,
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

/* One create's state, from the parsed body to the answer: each step below
 * reads it and fills in its part; create_free releases it. */
typedef struct create {
    svc *s;
    http_req *req;
    http_resp *resp;
    create_req cr;
    ts_caller c;
    json_t *owner;            /* the owner's context (tessera-auth) */
    const char *owner_ak;     /* in owner */
    const char *owner_domain; /* in owner */
    PGconn *conn;
    image_info im;
    json_t *resolved; /* the mounts as stored */
    slots_t total;    /* per kernel x cluster size */
    char starts[24];  /* starts_at in Unix ms, when has_starts */
    bool has_starts;
    char sid[TS_UUID_STRLEN];
    cluster_new cl;
} create;

static void create_free(create *x)
{
    session_cluster_new_free(&x->cl);
    image_info_free(&x->im);
    json_decref(x->resolved);
    json_decref(x->owner);
    caller_free(&x->c);
    create_req_free(&x->cr);
    pgjson_put(x->s, x->conn);
}

/* owner_access_key: an administrator creating for another keypair of its
 * domain (a superadmin: any, but for no superadmin unless one itself). */
static bool owner_of_other(create *x)
{
    const create_req *cr = &x->cr;
    http_resp *resp = x->resp;
    if (!caller_is_admin(&x->c)) {
        http_problem(resp, 403, "forbidden", NULL,
                     "only administrators may create sessions for another keypair");
        return false;
    }
    if (!context_get(x->req, resp, cr->owner_access_key, cr->group, &x->owner)) {
        if (http_resp_status(resp) == 404)
            http_problem(resp, 400, "invalid-api-params", NULL, "unknown owner_access_key %s",
                         cr->owner_access_key);
        return false;
    }
    const char *od = pgjson_str(json_object_get(x->owner, "user"), "domain_name");
    if (!caller_is_superadmin(&x->c) && strcmp(od, x->c.domain_name) != 0) {
        http_problem(resp, 403, "forbidden", NULL,
                     "a domain administrator may create sessions only for its domain");
        return false;
    }
    if (!caller_is_superadmin(&x->c) && context_is_superadmin(x->owner)) {
        http_problem(resp, 403, "forbidden", NULL,
                     "a domain administrator may not create sessions for a superadmin");
        return false;
    }
    if (!json_is_true(json_object_get(x->owner, "is_active"))) {
        http_problem(resp, 400, "invalid-api-params", NULL, "owner_access_key is not active");
        return false;
    }
    return true;
}

/* Step 1: the caller and the session's owner (the caller, or the keypair of
 * owner_access_key), with the owner's bootstrap script and domain. */
static bool resolve_owner(create *x)
{
    create_req *cr = &x->cr;
    const char *me = http_header(x->req, "X-Tessera-Caller-Access-Key");
    bool other = cr->owner_access_key && strcmp(cr->owner_access_key, me ? me : "") != 0;
    if (!caller_get(x->req, x->resp, other ? NULL : cr->group, &x->c)) return false;
    if (other) {
        if (!owner_of_other(x)) return false;
    } else {
        x->owner = json_incref(x->c.ctx);
    }
    x->owner_ak = pgjson_str(x->owner, "access_key");
    x->owner_domain = pgjson_str(json_object_get(x->owner, "user"), "domain_name");
    /* A session without a script of its own runs its owner keypair's
     * (Backend.AI's user-config bootstrap script, from the context). */
    const char *own_script = pgjson_str(x->owner, "bootstrap_script");
    if (!*cr->bootstrap_script && own_script) cr->bootstrap_script = own_script;
    if (cr->domain && strcmp(cr->domain, x->owner_domain) != 0) {
        http_problem(x->resp, 400, "invalid-api-params", NULL,
                     "domain %s is not the owner's domain (%s)", cr->domain, x->owner_domain);
        return false;
    }
    return true;
}

/* Step 2: the image, registered; the vfolder mounts resolved for the owner
 * (what is stored is what the kernels get, CreateKernel, at the first start
 * and every restart). */
static bool resolve_image_and_mounts(create *x)
{
    create_req *cr = &x->cr;
    bool found = false;
    ts_err err = {{0}};
    if (!images_find(x->conn, cr->image, &x->im, &found, &err)) {
        TLOG_ERROR("image lookup failed", "error=\"%s\"", err.msg);
        http_problem(x->resp, 500, "internal-server-error", NULL, "image lookup failed");
        return false;
    }
    if (!found) {
        http_problem(x->resp, 400, "invalid-api-params", NULL,
                     "unknown image %s: register it first", cr->image);
        return false;
    }
    if (json_array_size(cr->mounts) == 0) {
        x->resolved = json_array();
        return true;
    }
    return mounts_resolve(x->owner_ak, cr->mounts, cr->mount_map, x->req->request_id, &x->resolved,
                          x->resp);
}

/* Step 3: the resources (the image's bounds, the totals, the policies and
 * limits, the largest agent) and starts_at. */
static bool check_resources(create *x)
{
    create_req *cr = &x->cr;
    ts_err err = {{0}};
    if (!apply_minimums(cr, x->im.min_slots, x->im.max_slots, x->resp)) return false;
    slots_clear(&x->total);
    for (int i = 0; i < cr->cluster_size; i++)
        if (!slots_add(&x->total, &cr->slots, &err)) {
            http_problem(x->resp, 400, "invalid-api-params", NULL, "config.resources: %s", err.msg);
            return false;
        }
    if (!check_policy(x->owner, cr, &x->total, x->resp)) return false;
    bool single = strcmp(cr->cluster_mode, "single-node") == 0;
    return check_agents(x->conn, cr, single ? &x->total : &cr->slots, x->resp) &&
           starts_at_ms(x->conn, cr, x->starts, sizeof(x->starts), &x->has_starts, x->resp);
}

/* Step 4: no live session of the owner has the name (reuseIfExists: that
 * one is the answer). */
static bool check_name(create *x)
{
    const char *np[] = {x->owner_ak, x->cr.name};
    PGresult *r = pgjson_query(x->conn, x->resp, "check session name",
                               "SELECT 1 FROM registry.sessions WHERE access_key = $1 AND name = $2"
                               " AND status NOT IN " SQL_FINAL,
                               2, np);
    if (!r) return false;
    bool exists = PQntuples(r) > 0;
    PQclear(r);
    if (!exists) return true;
    if (x->cr.reuse)
        reply_existing(x->resp, x->conn, x->owner_ak, x->cr.name);
    else
        http_problem(x->resp, 409, "already-exists", NULL,
                     "a live session named %s already exists (reuseIfExists to reuse it)",
                     x->cr.name);
    return false;
}

/* The text of the session row's values that the create's state does not
 * hold as text; session_text_free releases it. */
typedef struct session_text {
    char *kernel_slots, *total_slots, *resource_opts, *mounts, *environ, *limits, *preopen_ports,
        *home_files;
    char *idle_inputs; /* idle_scopes_inputs */
    char priority[16], cluster_size[16], max_lifetime[24], rootfs_size[24];
} session_text;

/* j as compact JSON text (malloc'd); j is released. */
static char *dump_json(json_t *j)
{
    char *t = json_dumps(j, JSON_COMPACT);
    json_decref(j);
    return t;
}

/* The keypair policy's integer key; below zero counts as zero when clamp. */
static void policy_int(json_t *policy, const char *key, bool clamp, char *buf, size_t size)
{
    json_int_t v = json_integer_value(json_object_get(policy, key));
    snprintf(buf, size, "%lld", (long long)(clamp && v < 0 ? 0 : v));
}

static void session_text_fill(const create *x, session_text *t)
{
    const create_req *cr = &x->cr;
    json_t *policy = json_object_get(x->owner, "keypair_policy");
    json_t *ropts = json_object();
    if (cr->shmem >= 0) {
        char b[SLOT_FMT_MAX];
        json_object_set_new(ropts, "shmem",
                            json_string(slot_format(SLOT_MEM, cr->shmem, b, sizeof(b))));
    }
    json_t *home = home_files_from_context(x->owner);
    home_files_add_cluster(home, x->cl.ssh_public);
    t->kernel_slots = dump_json(slots_to_json(&cr->slots));
    t->total_slots = dump_json(slots_to_json(&x->total));
    t->resource_opts = dump_json(ropts);
    t->mounts = json_dumps(x->resolved, JSON_COMPACT);
    t->environ = json_dumps(cr->environ, JSON_COMPACT);
    t->limits = dump_json(
        build_limits(x->owner, x->owner_ak, pgjson_str(json_object_get(x->owner, "user"), "id")));
    t->preopen_ports = json_dumps(cr->preopen_ports, JSON_COMPACT);
    t->home_files = dump_json(home);
    snprintf(t->priority, sizeof(t->priority), "%d", cr->priority);
    snprintf(t->cluster_size, sizeof(t->cluster_size), "%d", cr->cluster_size);
    t->idle_inputs = idle_scopes_inputs(x->owner);
    policy_int(policy, "max_session_lifetime", true, t->max_lifetime, sizeof(t->max_lifetime));
    /* the kernels' disk size (CreateKernel.rootfs_size; 0: the agent's own) */
    policy_int(policy, "max_rootfs_size", true, t->rootfs_size, sizeof(t->rootfs_size));
}

static void session_text_free(session_text *t)
{
    free(t->kernel_slots);
    free(t->total_slots);
    free(t->resource_opts);
    free(t->mounts);
    free(t->environ);
    free(t->limits);
    free(t->preopen_ports);
    free(t->home_files);
    free(t->idle_inputs);
}

/* The registry.sessions row of the create, column by column (sql_row.h). */
static void session_row(const create *x, const session_text *t, sql_row *r)
{
    const create_req *cr = &x->cr;
    json_t *user = json_object_get(x->owner, "user");
    json_t *project = json_object_get(x->owner, "project");
    bool has_project = json_is_object(project);
    sql_row_set(r, "id", "?::uuid", x->sid);
    sql_row_set(r, "name", NULL, cr->name);
    sql_row_set(r, "access_key", NULL, x->owner_ak);
    sql_row_set(r, "user_id", "?::uuid", pgjson_str(user, "id"));
    sql_row_set(r, "project_id", "?::uuid", has_project ? pgjson_str(project, "id") : NULL);
    sql_row_set(r, "group_name", NULL, has_project ? pgjson_str(project, "name") : cr->group);
    sql_row_set(r, "domain_name", NULL, x->owner_domain);
    sql_row_set(r, "type", NULL, cr->type);
    sql_row_set(r, "image", NULL, cr->image);
    sql_row_set(r, "architecture", NULL, x->im.architecture);
    sql_row_set(r, "resource_group", NULL, cr->resource_group);
    sql_row_set(r, "status", NULL, "PENDING");
    sql_row_set(r, "status_info", NULL, "waiting to be scheduled");
    sql_row_set(r, "starts_at", "to_timestamp(?::bigint / 1000.0)",
                x->has_starts ? x->starts : NULL);
    sql_row_set(r, "priority", "?::int", t->priority);
    sql_row_set(r, "cluster_size", "?::int", t->cluster_size);
    sql_row_set(r, "cluster_mode", NULL, cr->cluster_mode);
    sql_row_set(r, "requested_slots", "?::jsonb", t->total_slots);
    sql_row_set(r, "resource_opts", "?::jsonb", t->resource_opts);
    sql_row_set(r, "mounts", "?::jsonb", t->mounts);
    sql_row_set(r, "environ", "?::jsonb", t->environ);
    sql_row_set(r, "startup_command", NULL, cr->startup_command);
    sql_row_set(r, "bootstrap_script", NULL, cr->bootstrap_script);
    sql_row_set(r, "idle_inputs", "?::jsonb", t->idle_inputs);
    sql_row_set(r, "limits", "?::jsonb", t->limits);
    sql_row_set(r, "preopen_ports", "?::jsonb", t->preopen_ports);
    sql_row_set(r, "home_files", "?::jsonb", t->home_files);
    sql_row_set(r, "max_lifetime", "?::int", t->max_lifetime);
    sql_row_set(r, "rootfs_size", "?::bigint", t->rootfs_size);
    sql_row_set(r, "designated_agent", NULL, cr->agent);
    sql_row_set(r, "cluster_vni", "?::int", x->cl.ssh_public ? x->cl.vni : NULL);
    sql_row_set(r, "cluster_ssh_public", NULL, x->cl.ssh_public);
    sql_row_set(r, "cluster_ssh_private", NULL, x->cl.ssh_private);
}

/* The session row in the open transaction; false after a problem answer
 * (or the existing session's, reuseIfExists), the transaction rolled back
 * where the insert broke it. */
static bool insert_session_row(create *x, const session_text *t)
{
    sql_row row = {0};
    session_row(x, t, &row);
    const char *params[SQL_ROW_MAX];
    char *sql = sql_row_insert(&row, "registry.sessions", params);
    PGresult *ir = pg_exec_cached(x->conn, sql, row.n, params);
    free(sql);
    bool ok = PQresultStatus(ir) == PGRES_COMMAND_OK;
    const char *constraint = ok ? NULL : PQresultErrorField(ir, PG_DIAG_CONSTRAINT_NAME);
    if (!ok && strcmp(pgjson_sqlstate(ir), "23505") == 0) {
        pg_rollback(x->conn);
        if (constraint && strcmp(constraint, "sessions_live_cluster_vni") == 0)
            http_problem(x->resp, 503, "service-unavailable", NULL,
                         "the session's cluster network id was taken meanwhile; try again");
        else if (x->cr.reuse)
            reply_existing(x->resp, x->conn, x->owner_ak, x->cr.name);
        else
            http_problem(x->resp, 409, "already-exists", NULL,
                         "a live session named %s already exists", x->cr.name);
    } else if (!ok) {
        pgjson_problem(x->resp, ir, "create session");
        pg_rollback(x->conn);
    }
    PQclear(ir);
    return ok;
}

/* The session's kernels (PENDING, the first one main) and its first
 * history row, in the open transaction. */
static bool insert_kernels_and_history(create *x, const char *kernel_slots)
{
    const create_req *cr = &x->cr;
    for (int i = 0; i < cr->cluster_size; i++) {
        char kid[TS_UUID_STRLEN], idx[16];
        ts_uuid4(kid);
        snprintf(idx, sizeof(idx), "%d", i);
        const char *kp[] = {kid, x->sid,       i == 0 ? "main" : "sub",
                            idx, kernel_slots, cr->n_agents ? cr->agents[i] : NULL};
        PGresult *kr = pgjson_query(x->conn, x->resp, "create kernel",
                                    "INSERT INTO registry.kernels (id, session_id, cluster_role,"
                                    " cluster_idx, status, slots, designated_agent) VALUES"
                                    " ($1::uuid, $2::uuid, $3, $4::int, 'PENDING', $5::jsonb, $6)",
                                    6, kp);
        if (!kr) return false;
        PQclear(kr);
    }
    const char *hp[] = {x->sid};
    PGresult *hr = pgjson_query(x->conn, x->resp, "history",
                                "INSERT INTO registry.session_status_history (session_id,"
                                " status, reason) VALUES ($1::uuid, 'PENDING', 'enqueued')",
                                1, hp);
    if (hr) PQclear(hr);
    return hr != NULL;
}

/* Step 5: the session PENDING with its cluster, its kernels and a history
 * row, in one transaction. */
static bool insert_session(create *x)
{
    ts_uuid4(x->sid);
    tlog_ctx_session(x->sid);
    if (!session_cluster_new(x->conn, x->cr.cluster_size, x->sid, &x->cl, x->resp)) return false;
    session_text t = {0};
    session_text_fill(x, &t);
    bool ok = false;
    if (!pgjson_begin(x->conn, x->resp))
        pg_rollback(x->conn);
    else if (insert_session_row(x, &t) && !(ok = insert_kernels_and_history(x, t.kernel_slots)))
        pg_rollback(x->conn);
    if (ok) ok = pgjson_commit(x->conn, x->resp);
    session_text_free(&t);
    return ok;
}

/* Step 6: SessionEnqueued published; unless enqueueOnly, RUNNING or an end
 * awaited up to maxWaitSeconds; the session's view is the answer. */
static void enqueue_and_reply(create *x)
{
    const create_req *cr = &x->cr;
    TLOG_INFO("session enqueued",
              "name=%s owner=%s group=%s image=%s agent=%s cluster_size=%d cluster_mode=%s "
              "cluster_vni=%s",
              cr->name, x->owner_ak, cr->resource_group, cr->image,
              cr->agent ? cr->agent : (cr->n_agents ? "per-kernel" : ""), cr->cluster_size,
              cr->cluster_mode, x->cl.ssh_public ? x->cl.vni : "");
    /* wait registration before the scheduler can see it */
    waiter *w = NULL;
    if (!cr->enqueue_only && cr->max_wait_ms > 0)
        w = waiters_add(x->sid, (int)reg_settings.max_waiting_creates);
    ts_err err = {{0}};
    if (!session_enqueued_publish(x->conn, x->sid, x->req->request_id, &err))
        TLOG_WARN("SessionEnqueued not published yet (retried by the housekeeping)", "error=\"%s\"",
                  err.msg);
    if (w) {
        char reached[16] = "";
        /* Do not hold a connection while waiting. */
        pgjson_put(x->s, x->conn);
        x->conn = NULL;
        waiters_wait(w, ts_now_mono_ms() + cr->max_wait_ms, reached, sizeof(reached));
        if (!(x->conn = pgjson_get(x->s, x->resp))) return;
    }
    const char *vp[] = {x->sid};
    json_t *v = session_view_one(x->conn, x->resp, "s.id = $1::uuid", 1, vp);
    if (v) reply_created(x->resp, v, true);
}

void session_create_reply(svc *s, http_req *req, http_resp *resp, json_t *body)
{
    create x = {.s = s, .req = req, .resp = resp};
    if (create_req_parse(body, &x.cr, resp) && resolve_owner(&x) &&
        (x.conn = pgjson_get(s, resp)) != NULL && check_group(x.conn, x.owner, &x.cr, resp) &&
        check_designated(x.conn, &x.c, &x.cr, resp) && resolve_image_and_mounts(&x) &&
        check_resources(&x) && check_name(&x) && insert_session(&x))
        enqueue_and_reply(&x);
    create_free(&x);
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
