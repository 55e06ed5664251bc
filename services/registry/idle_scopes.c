/* idle_scopes.c: see idle_scopes.h. */
#include "idle_scopes.h"

#include "db_common.h"
#include "event_consumers.h"
#include "libcommon/kbus.h"
#include "libcommon/log.h"
#include "tessera/v1/auth.pb-c.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

#define IDLE_SCOPES_TOPIC "tessera.auth.v1"

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

bool idle_scopes_read_event(const char *type, const uint8_t *payload, size_t len, idle_scope *scope,
                            char *id, size_t size, int *value)
{
    bool found = false;
    if (!type) return false;
    if (strcmp(type, "tessera.v1.PolicyChanged") == 0) {
        Tessera__V1__PolicyChanged *m = tessera__v1__policy_changed__unpack(NULL, len, payload);
        found = m && m->policy_kind && strcmp(m->policy_kind, "keypair") == 0 && m->policy_name &&
                *m->policy_name && m->change != TESSERA__V1__CHANGE_KIND__CHANGE_KIND_DELETED;
        if (found) {
            *scope = IDLE_SCOPE_POLICY;
            ts_strlcpy(id, m->policy_name, size);
            *value = m->idle_timeout_s;
        }
        if (m) tessera__v1__policy_changed__free_unpacked(m, NULL);
    } else if (strcmp(type, "tessera.v1.DomainChanged") == 0) {
        Tessera__V1__DomainChanged *m = tessera__v1__domain_changed__unpack(NULL, len, payload);
        found = m && m->domain_name && *m->domain_name;
        if (found) {
            *scope = IDLE_SCOPE_DOMAIN;
            ts_strlcpy(id, m->domain_name, size);
            *value = m->idle_timeout_s;
        }
        if (m) tessera__v1__domain_changed__free_unpacked(m, NULL);
    } else if (strcmp(type, "tessera.v1.ProjectChanged") == 0) {
        Tessera__V1__ProjectChanged *m = tessera__v1__project_changed__unpack(NULL, len, payload);
        found = m && m->project_id && ts_uuid_valid(m->project_id);
        if (found) {
            *scope = IDLE_SCOPE_PROJECT;
            ts_strlcpy(id, m->project_id, size);
            *value = m->idle_timeout_s;
        }
        if (m) tessera__v1__project_changed__free_unpacked(m, NULL);
    }
    return found;
}

static kbus_consumer *consumer;

static kbus_result on_auth_event(const kbus_msg *msg, void *ctx, ts_err *reason)
{
    (void)ctx;
    const Tessera__V1__Envelope *env = msg->env;
    idle_scope scope;
    char id[128];
    int value;
    if (!idle_scopes_read_event(env->type, env->payload.data, env->payload.len, &scope, id,
                                sizeof(id), &value))
        return KBUS_DONE;
    PGconn *conn = reg_pg_get(reason);
    if (!conn) return KBUS_RETRY;
    bool ok = idle_scopes_changed(conn, scope, id, value, NULL, reason);
    reg_pg_put(conn);
    return ok ? KBUS_DONE : KBUS_RETRY;
}

static bool check(svc *s, void *ctx, ts_err *err)
{
    (void)s;
    (void)ctx;
    if (consumer && kbus_consumer_joined(consumer)) return true;
    ts_err_set(err, "%s: the idle scopes' consumer has not joined its group yet",
               IDLE_SCOPES_TOPIC);
    return false;
}

bool idle_scopes_start(svc *s, ts_err *err)
{
    static const char *const topics[] = {IDLE_SCOPES_TOPIC, NULL};
    consumer =
        kbus_consume(svc_bus(s), "tessera-registry.idle-scopes", topics, on_auth_event, NULL, err);
    if (!consumer) {
        ts_err_prefix(err, "idle scopes consumer");
        return false;
    }
    svc_add_check(s, "idle-scopes-consumer", check, NULL);
    return true;
}

void idle_scopes_stop(void)
{
    if (consumer) kbus_consumer_stop(consumer);
    consumer = NULL;
}
