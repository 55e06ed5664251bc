/* events.h: tessera-auth's events on tessera.auth.v1 (docs/events.md).
 * Call these only AFTER the transaction that made the change committed: a
 * consumer that sees the event and asks auth must find the new state. The
 * correlation id is the request's X-Request-ID. Publishing is asynchronous;
 * a refusal by the local producer queue is logged and counted
 * (tessera_auth_events_failed_total), never turned into an HTTP error: the
 * change is already durable and gateway caches also expire on their own. */
#ifndef AUTH_EVENTS_H
#define AUTH_EVENTS_H

#include "libcommon/svc.h"

#define AUTH_EVENTS_TOPIC "tessera.auth.v1"

typedef enum auth_change {
    AUTH_CHANGE_CREATED = 1,
    AUTH_CHANGE_UPDATED = 2,
    AUTH_CHANGE_DELETED = 3,
} auth_change;

/* Register the metrics; call once from the start hook. */
void events_init(svc *s);

/* UserChanged, key user id. user: an object with at least id, email,
 * username, domain_name, role, status, resource_policy (as users.c returns,
 * or a row of EVENTS_USER_COLUMNS of auth.users). */
void events_user_changed(svc *s, const char *request_id, auth_change change, json_t *user);
#define EVENTS_USER_COLUMNS                                                                        \
    "id::text AS id, email, username, domain_name, role, status, resource_policy"

/* KeypairRevoked, key access key. reason: "deleted", "deactivated",
 * "user-deleted", "user-deactivated"; revoked_by: a user id or "system". */
void events_keypair_revoked(svc *s, const char *request_id, const char *access_key,
                            const char *user_id, const char *reason, const char *revoked_by);

/* KeypairChanged, key access key: an active keypair's is_admin, policy or
 * rate limit changed. keypair: an object with access_key, user_id,
 * is_active, is_admin, resource_policy, rate_limit. */
void events_keypair_changed(svc *s, const char *request_id, json_t *keypair,
                            const char *changed_by);

/* PolicyChanged, key policy name. kind: "keypair", "user" or "project".
 * total_slots: an object {"cpu": "8", ...} of decimal text (or numbers), or
 * NULL; the two limits are 0 when unlimited or not applicable. */
void events_policy_changed(svc *s, const char *request_id, const char *policy_name,
                           const char *kind, auth_change change, json_t *total_slots,
                           int max_concurrent_sessions, int max_session_lifetime_s,
                           int idle_timeout_s);

/* DomainChanged, key domain name (create, patch, delete = deactivate). */
void events_domain_changed(svc *s, const char *request_id, auth_change change,
                           const char *domain_name, bool is_active, int idle_timeout_s);

/* ProjectChanged, key project id. project: a row with id, name, domain_name,
 * is_active (as projects.c answers). */
void events_project_changed(svc *s, const char *request_id, auth_change change, json_t *project);

/* ProjectMembersChanged, key project id. user_ids: the ids that changed
 * (a JSON array of strings); removed: they left, else they joined. */
void events_project_members_changed(svc *s, const char *request_id, const char *project_id,
                                    json_t *user_ids, bool removed);

/* ResourceGroupAccessChanged, key resource group. */
void events_rg_access_changed(svc *s, const char *request_id, const char *resource_group,
                              const char *scope_type, const char *scope_id, bool granted);

#endif
