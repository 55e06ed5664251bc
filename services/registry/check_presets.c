/* check_presets.c: see check_presets.h. */
#include "check_presets.h"

#include "caller.h"
#include "libcommon/log.h"
#include "libcommon/pgjson.h"
#include "resource_presets.h"
#include "resource_usage.h"
#include "scaling_groups.h"
#include "slot_budget.h"

#include <stdlib.h>
#include <string.h>

/* One owner scope: its limit, what it uses, what remains. */
typedef struct scope {
    budget_t limit;
    slots_t using;
    budget_t remaining;
} scope;

/* A limit from the context; a malformed one counts as none (logged). */
static void _limit(budget_t *b, const json_t *total, const char *what)
{
    ts_err err = {{0}};
    if (!budget_from_limit(b, total, &err))
        TLOG_WARN("malformed slot limit ignored", "scope=%s error=\"%s\"", what, err.msg);
}

static json_t *_scope_json(const scope *s)
{
    return json_pack("{s:o, s:o, s:o}", "limits", budget_to_json(&s->limit, BUDGET_KNOWN_SLOTS),
                     "using", slots_to_json_known(&s->using, BUDGET_KNOWN_SLOTS), "remaining",
                     budget_to_json(&s->remaining, BUDGET_KNOWN_SLOTS));
}

/* {slot: "NaN"} over the known slots: a value the caller may not see. */
static json_t *_hidden(void)
{
    json_t *o = json_object();
    for (int id = 0; id < SLOT_BUILTIN_COUNT; id++)
        json_object_set_new(o, slot_name(id), json_string("NaN"));
    return o;
}

/* The parsed body: {"group"?, "scaling_group"?}, strings or null. */
static bool _parse(http_req *req, http_resp *resp, json_t **body, const char **group,
                   const char **sgroup)
{
    static const char *const keys[] = {"group", "scaling_group", NULL};
    *body = req->body_len ? http_json_body(req, resp) : json_object();
    return *body && pgjson_only_keys(*body, keys, resp) &&
           pgjson_field_str(*body, "group", false, 1, 256, group, resp) &&
           pgjson_field_str(*body, "scaling_group", false, 1, 64, sgroup, resp);
}

/* The groups considered: every allowed one, or sgroup alone (404 unless allowed). */
static json_t *_groups(json_t *allowed, const char *sgroup, http_resp *resp)
{
    if (!sgroup) return json_incref(allowed);
    size_t i;
    json_t *g;
    json_array_foreach(allowed, i, g) if (strcmp(json_string_value(g), sgroup) ==
                                          0) return json_pack("[s]", sgroup);
    http_problem(resp, 404, "not-found", NULL,
                 "unknown resource group %s (or not active, or not allowed for this keypair, "
                 "its project or domain)",
                 sgroup);
    return NULL;
}

/* The owner scopes: limits from the context, usage, remaining; kp_rem = the
 * minimum of every scope's remaining. */
static bool _scopes(PGconn *conn, http_resp *resp, const ts_caller *c, const json_t *ctx,
                    scope sc[OCC_SCOPES], budget_t *kp_rem, bool *from_redis)
{
    const json_t *project = json_object_get(ctx, "project");
    const json_t *domain = json_object_get(ctx, "domain");
    const char *pid = json_string_value(json_object_get(project, "id"));
    const char *ids[OCC_SCOPES] = {c->access_key, c->user_id, pid, c->domain_name};
    _limit(&sc[OCC_SCOPE_KEYPAIR].limit,
           json_object_get(json_object_get(ctx, "keypair_policy"), "total_resource_slots"),
           "keypair");
    _limit(&sc[OCC_SCOPE_USER].limit, json_object_get(ctx, "user_total_resource_slots"), "user");
    _limit(&sc[OCC_SCOPE_PROJECT].limit, json_object_get(project, "total_resource_slots"),
           "project");
    _limit(&sc[OCC_SCOPE_DOMAIN].limit, json_object_get(domain, "total_resource_slots"), "domain");
    slots_t using[OCC_SCOPES];
    if (!resource_usage_scopes(conn, resp, ids, using, from_redis)) return false;
    budget_unlimited(kp_rem);
    for (int i = 0; i < OCC_SCOPES; i++) {
        sc[i].using = using[i];
        budget_remaining(&sc[i].limit, &using[i], &sc[i].remaining);
        if (i != OCC_SCOPE_PROJECT || pid) budget_min(kp_rem, &sc[i].remaining);
    }
    return true;
}

/* "scaling_groups", "scaling_group_remaining" and the agents' free slots. */
static bool _per_group(PGconn *conn, http_resp *resp, const ts_caller *c, json_t *groups,
                       const budget_t *kp_rem, json_t *out, agent_free **agents, size_t *nagents)
{
    size_t ng = json_array_size(groups);
    slots_t *using = ts_calloc(ng + 1, sizeof(*using));
    slots_t *free_ = ts_calloc(ng + 1, sizeof(*free_));
    bool ok = resource_usage_by_group(conn, resp, c->user_id, groups, using) &&
              resource_usage_agents(conn, resp, groups, agents, nagents);
    slots_t all;
    slots_clear(&all);
    ts_err err = {{0}};
    for (size_t i = 0; ok && i < *nagents; i++)
        if (!slots_add(&free_[(*agents)[i].group], &(*agents)[i].free, &err) ||
            !slots_add(&all, &(*agents)[i].free, &err))
            TLOG_WARN("free capacity overflow", "error=\"%s\"", err.msg);
    if (ok) {
        json_t *per = json_object();
        for (size_t i = 0; i < ng; i++) {
            budget_t rem = *kp_rem;
            budget_cap(&rem, &free_[i], BUDGET_KNOWN_SLOTS | free_[i].mask);
            json_object_set_new(per, json_string_value(json_array_get(groups, i)),
                                json_pack("{s:o, s:o}", "using",
                                          slots_to_json_known(&using[i], BUDGET_KNOWN_SLOTS),
                                          "remaining", budget_to_json(&rem, BUDGET_KNOWN_SLOTS)));
        }
        budget_t rem = *kp_rem;
        budget_cap(&rem, &all, BUDGET_KNOWN_SLOTS | all.mask);
        json_object_set_new(out, "scaling_group_remaining",
                            budget_to_json(&rem, BUDGET_KNOWN_SLOTS));
        json_object_set_new(out, "scaling_groups", per);
    }
    free(using);
    free(free_);
    return ok;
}

/* "presets", each with "allocatable". */
static bool _presets(PGconn *conn, http_resp *resp, const budget_t *kp_rem,
                     const agent_free *agents, size_t n, json_t *out)
{
    json_t *rows = resource_presets_all(conn, resp);
    if (!rows) return false;
    slots_t *free_ = ts_calloc(n + 1, sizeof(*free_));
    for (size_t i = 0; i < n; i++)
        free_[i] = agents[i].free;
    size_t i;
    json_t *p;
    json_array_foreach(rows, i, p)
    {
        slots_t s;
        ts_err err = {{0}};
        bool fits = slots_from_json(&s, json_object_get(p, "resource_slots"), &err) &&
                    budget_preset_allocatable(&s, kp_rem, free_, n);
        json_object_set_new(p, "allocatable", json_boolean(fits));
    }
    free(free_);
    json_object_set_new(out, "presets", rows);
    return true;
}

/* The scopes part of the answer. */
static void _scopes_json(json_t *out, const scope sc[OCC_SCOPES], const json_t *ctx, bool admin,
                         const budget_t *kp_rem, bool from_redis)
{
    bool has_project = json_is_object(json_object_get(ctx, "project"));
    const scope *kp = &sc[OCC_SCOPE_KEYPAIR], *pj = &sc[OCC_SCOPE_PROJECT];
    json_object_set_new(out, "keypair_limits", budget_to_json(&kp->limit, BUDGET_KNOWN_SLOTS));
    json_object_set_new(out, "keypair_using", slots_to_json_known(&kp->using, BUDGET_KNOWN_SLOTS));
    json_object_set_new(out, "keypair_remaining", budget_to_json(kp_rem, BUDGET_KNOWN_SLOTS));
    json_t *gl = json_null(), *gu = json_null(), *gr = json_null();
    if (has_project && admin) {
        gl = budget_to_json(&pj->limit, BUDGET_KNOWN_SLOTS);
        gu = slots_to_json_known(&pj->using, BUDGET_KNOWN_SLOTS);
        gr = budget_to_json(&pj->remaining, BUDGET_KNOWN_SLOTS);
    } else if (has_project) {
        gl = _hidden(), gu = _hidden(), gr = _hidden();
    }
    json_object_set_new(out, "group_limits", gl);
    json_object_set_new(out, "group_using", gu);
    json_object_set_new(out, "group_remaining", gr);
    json_t *ts = json_pack("{s:o, s:o}", "keypair", _scope_json(kp), "user",
                           _scope_json(&sc[OCC_SCOPE_USER]));
    if (admin) {
        json_object_set_new(ts, "project", has_project ? _scope_json(pj) : json_null());
        json_object_set_new(ts, "domain", _scope_json(&sc[OCC_SCOPE_DOMAIN]));
    }
    json_object_set_new(out, "tessera_scopes", ts);
    json_object_set_new(out, "tessera_usage_source",
                        json_string(from_redis ? "redis" : "database"));
}

/* POST /v1/resource/check-presets */
static void h_check(http_req *req, http_resp *resp, void *ctx)
{
    svc *s = ctx;
    ts_caller c;
    if (!caller_get(req, resp, NULL, &c)) return;
    json_t *body = NULL, *kctx = NULL, *allowed = NULL, *groups = NULL, *out = NULL;
    const char *group = NULL, *sgroup = NULL;
    PGconn *conn = NULL;
    agent_free *agents = NULL;
    size_t nagents = 0;
    scope sc[OCC_SCOPES];
    budget_t kp_rem;
    bool from_redis = false;
    if (!_parse(req, resp, &body, &group, &sgroup)) goto done;
    if (sgroup) tlog_ctx_entity("resource_group", sgroup);
    if (!scaling_groups_context(req, resp, &c, group, &kctx) || !(conn = pgjson_get(s, resp)) ||
        !(allowed = scaling_groups_allowed(conn, resp, kctx)) ||
        !(groups = _groups(allowed, sgroup, resp)) ||
        !_scopes(conn, resp, &c, kctx, sc, &kp_rem, &from_redis))
        goto done;
    out = json_object();
    _scopes_json(out, sc, kctx, caller_is_admin(&c), &kp_rem, from_redis);
    if (!_per_group(conn, resp, &c, groups, &kp_rem, out, &agents, &nagents) ||
        !_presets(conn, resp, &kp_rem, agents, nagents, out))
        goto done;
    http_reply_json(resp, 200, out);
    out = NULL;
done:
    json_decref(out);
    free(agents);
    json_decref(groups);
    json_decref(allowed);
    json_decref(kctx);
    json_decref(body);
    pgjson_put(s, conn);
    caller_free(&c);
}

void check_presets_routes(svc *s)
{
    http_route(svc_router(s), "POST", "/v1/resource/check-presets", h_check, s);
}
