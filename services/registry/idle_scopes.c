/* idle_scopes.c: see idle_scopes.h. */
#include "idle_scopes.h"

#include "db_common.h"
#include "libcommon/log.h"

#include <stdio.h>
#include <stdlib.h>

char *idle_scopes_inputs(const json_t *owner)
{
    const json_t *policy = json_object_get(owner, "keypair_policy");
    const json_t *project = json_object_get(owner, "project");
    const json_t *domain = json_object_get(owner, "domain");
    json_t *in = json_pack("{s:s, s:I, s:I, s:I}", "policy_name",
                           json_string_value(json_object_get(policy, "name"))
                               ? json_string_value(json_object_get(policy, "name"))
                               : "",
                           "policy", json_integer_value(json_object_get(policy, "idle_timeout")),
                           "project", json_integer_value(json_object_get(project, "idle_timeout")),
                           "domain", json_integer_value(json_object_get(domain, "idle_timeout")));
    char *text = json_dumps(in, JSON_COMPACT);
    json_decref(in);
    return text;
}

/* $1: the scope's id, $2: its new value. SET idle_inputs fires the trigger
 * even where the value is the same (a resource group's default changed). */
#define CHANGE_SQL(set, match)                                                                     \
    "UPDATE registry.sessions s SET idle_inputs = " set                                            \
    " WHERE s.id IN (SELECT x.id FROM registry.sessions x WHERE x.status NOT IN " SQL_FINAL        \
    "   AND " match " ORDER BY x.id FOR UPDATE)"
#define SET_KEY(key) "jsonb_set(s.idle_inputs, '{" key "}', to_jsonb($2::int))"

static const char *const change_sql[] = {
    [IDLE_SCOPE_POLICY] = CHANGE_SQL(SET_KEY("policy"), "x.idle_inputs->>'policy_name' = $1"),
    [IDLE_SCOPE_RESOURCE_GROUP] =
        CHANGE_SQL("s.idle_inputs", "x.resource_group = $1 AND $2::int IS NOT NULL"),
    [IDLE_SCOPE_PROJECT] = CHANGE_SQL(SET_KEY("project"), "x.project_id = $1::uuid"),
    [IDLE_SCOPE_DOMAIN] = CHANGE_SQL(SET_KEY("domain"), "x.domain_name = $1"),
};

static const char *const scope_names[] = {
    [IDLE_SCOPE_POLICY] = "keypair_policy",
    [IDLE_SCOPE_RESOURCE_GROUP] = "resource_group",
    [IDLE_SCOPE_PROJECT] = "project",
    [IDLE_SCOPE_DOMAIN] = "domain",
};

bool idle_scopes_changed(PGconn *conn, idle_scope scope, const char *id, int value, int *n,
                         ts_err *err)
{
    char v[16];
    snprintf(v, sizeof(v), "%d", value);
    const char *p[] = {id, v};
    PGresult *r = reg_exec(conn, change_sql[scope], 2, p, err);
    if (!r) return false;
    int count = atoi(PQcmdTuples(r));
    PQclear(r);
    if (n) *n = count;
    if (count > 0)
        TLOG_INFO("idle timeouts recomputed", "scope=%s %s=\"%s\" idle_timeout=%d sessions=%d",
                  scope_names[scope], scope_names[scope], id, value, count);
    return true;
}
