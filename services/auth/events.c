/* events.c: publish tessera.auth.v1 events (see events.h). */
#include "events.h"

#include "libcommon/log.h"
#include "libcommon/pgjson.h"
#include "tessera/v1/auth.pb-c.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static atomic_uint_fast64_t published, failed;

static void collect(FILE *out, void *ctx)
{
    (void)ctx;
    metrics_counter(out, "tessera_auth_events_published_total",
                    "Events handed to the producer on tessera.auth.v1.", atomic_load(&published));
    metrics_counter(out, "tessera_auth_events_failed_total",
                    "Events on tessera.auth.v1 the producer refused (logged).",
                    atomic_load(&failed));
}

void events_init(svc *s)
{
    metrics_add(svc_metrics(s), collect, NULL);
}

static void publish(svc *s, const char *key, const ProtobufCMessage *m, const char *request_id)
{
    kbus *bus = svc_bus(s);
    ts_err err = {{0}};
    if (bus && kbus_publish(bus, AUTH_EVENTS_TOPIC, key, m, request_id, key, &err)) {
        atomic_fetch_add(&published, 1);
        TLOG_DEBUG("event published", "type=%s key=%s", m->descriptor->name, key);
        return;
    }
    atomic_fetch_add(&failed, 1);
    TLOG_ERROR("event not published", "type=%s key=%s error=\"%s\"", m->descriptor->name, key,
               bus ? err.msg : "no bus");
}

void events_user_changed(svc *s, const char *request_id, auth_change change, json_t *user)
{
    Tessera__V1__UserChanged m = TESSERA__V1__USER_CHANGED__INIT;
    m.user_id = (char *)pgjson_str(user, "id");
    m.change = (Tessera__V1__ChangeKind)change;
    m.email = (char *)pgjson_str(user, "email");
    m.username = (char *)pgjson_str(user, "username");
    m.domain_name = (char *)pgjson_str(user, "domain_name");
    m.role = (char *)pgjson_str(user, "role");
    m.status = (char *)pgjson_str(user, "status");
    m.resource_policy = (char *)pgjson_str(user, "resource_policy");
    publish(s, m.user_id, &m.base, request_id);
}

void events_keypair_revoked(svc *s, const char *request_id, const char *access_key,
                            const char *user_id, const char *reason, const char *revoked_by)
{
    Tessera__V1__KeypairRevoked m = TESSERA__V1__KEYPAIR_REVOKED__INIT;
    m.access_key = (char *)access_key;
    m.user_id = (char *)(user_id ? user_id : "");
    m.reason = (char *)(reason ? reason : "");
    m.revoked_by = (char *)(revoked_by ? revoked_by : "system");
    publish(s, access_key, &m.base, request_id);
}

void events_keypair_changed(svc *s, const char *request_id, json_t *keypair, const char *changed_by)
{
    Tessera__V1__KeypairChanged m = TESSERA__V1__KEYPAIR_CHANGED__INIT;
    m.access_key = (char *)pgjson_str(keypair, "access_key");
    m.user_id = (char *)pgjson_str(keypair, "user_id");
    m.is_active = json_is_true(json_object_get(keypair, "is_active"));
    m.is_admin = json_is_true(json_object_get(keypair, "is_admin"));
    m.resource_policy = (char *)pgjson_str(keypair, "resource_policy");
    m.rate_limit = (int32_t)json_integer_value(json_object_get(keypair, "rate_limit"));
    m.changed_by = (char *)(changed_by ? changed_by : "system");
    publish(s, m.access_key, &m.base, request_id);
}

void events_policy_changed(svc *s, const char *request_id, const char *policy_name,
                           const char *kind, auth_change change, json_t *total_slots,
                           int max_concurrent_sessions, int max_session_lifetime_s,
                           int idle_timeout_s)
{
    Tessera__V1__PolicyChanged m = TESSERA__V1__POLICY_CHANGED__INIT;
    m.policy_name = (char *)policy_name;
    m.policy_kind = (char *)kind;
    m.change = (Tessera__V1__ChangeKind)change;
    m.max_concurrent_sessions = max_concurrent_sessions;
    m.max_session_lifetime_s = max_session_lifetime_s;
    m.idle_timeout_s = idle_timeout_s;

    size_t n = json_is_object(total_slots) ? json_object_size(total_slots) : 0;
    Tessera__V1__SlotAmount *slots = n ? ts_calloc(n, sizeof(*slots)) : NULL;
    Tessera__V1__SlotAmount **ptrs = n ? ts_calloc(n, sizeof(*ptrs)) : NULL;
    char **texts = n ? ts_calloc(n, sizeof(char *)) : NULL;
    size_t i = 0;
    const char *name;
    json_t *v;
    if (n) {
        json_object_foreach(total_slots, name, v)
        {
            tessera__v1__slot_amount__init(&slots[i]);
            slots[i].name = (char *)name;
            if (json_is_string(v))
                texts[i] = ts_strdup(json_string_value(v));
            else if (json_is_integer(v))
                texts[i] = ts_asprintf("%lld", (long long)json_integer_value(v));
            else if (json_is_real(v))
                texts[i] = ts_asprintf("%.17g", json_real_value(v));
            else
                texts[i] = ts_strdup("");
            slots[i].amount = texts[i];
            ptrs[i] = &slots[i];
            i++;
        }
    }
    m.n_total_slots = i;
    m.total_slots = ptrs;
    publish(s, policy_name, &m.base, request_id);
    for (size_t k = 0; k < i; k++)
        free(texts[k]);
    free(texts);
    free(ptrs);
    free(slots);
}

void events_domain_changed(svc *s, const char *request_id, auth_change change,
                           const char *domain_name, bool is_active, int idle_timeout_s)
{
    Tessera__V1__DomainChanged m = TESSERA__V1__DOMAIN_CHANGED__INIT;
    m.domain_name = (char *)domain_name;
    m.change = (Tessera__V1__ChangeKind)change;
    m.is_active = is_active;
    m.idle_timeout_s = idle_timeout_s;
    publish(s, m.domain_name, &m.base, request_id);
}

void events_project_changed(svc *s, const char *request_id, auth_change change, json_t *project)
{
    Tessera__V1__ProjectChanged m = TESSERA__V1__PROJECT_CHANGED__INIT;
    m.project_id = (char *)pgjson_str(project, "id");
    m.name = (char *)pgjson_str(project, "name");
    m.domain_name = (char *)pgjson_str(project, "domain_name");
    m.change = (Tessera__V1__ChangeKind)change;
    m.is_active = json_is_true(json_object_get(project, "is_active"));
    m.idle_timeout_s = (int32_t)json_integer_value(json_object_get(project, "idle_timeout"));
    publish(s, m.project_id, &m.base, request_id);
}

void events_project_members_changed(svc *s, const char *request_id, const char *project_id,
                                    json_t *user_ids, bool removed)
{
    Tessera__V1__ProjectMembersChanged m = TESSERA__V1__PROJECT_MEMBERS_CHANGED__INIT;
    m.project_id = (char *)project_id;
    size_t n = json_array_size(user_ids);
    char **ids = n ? ts_calloc(n, sizeof(char *)) : NULL;
    for (size_t i = 0; i < n; i++) {
        const char *v = json_string_value(json_array_get(user_ids, i));
        ids[i] = (char *)(v ? v : "");
    }
    if (removed) {
        m.n_removed_user_ids = n;
        m.removed_user_ids = ids;
    } else {
        m.n_added_user_ids = n;
        m.added_user_ids = ids;
    }
    publish(s, project_id, &m.base, request_id);
    free(ids);
}

void events_rg_access_changed(svc *s, const char *request_id, const char *resource_group,
                              const char *scope_type, const char *scope_id, bool granted)
{
    Tessera__V1__ResourceGroupAccessChanged m = TESSERA__V1__RESOURCE_GROUP_ACCESS_CHANGED__INIT;
    m.resource_group = (char *)resource_group;
    m.scope_type = (char *)scope_type;
    m.scope_id = (char *)scope_id;
    m.granted = granted;
    publish(s, resource_group, &m.base, request_id);
}
