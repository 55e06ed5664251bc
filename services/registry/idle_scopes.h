/* idle_scopes.h: where a session's idle timeout comes from (docs/sessions.md,
 * "Idle reclamation"; Backend.AI's network_timeout and its special values).
 *
 * Four scopes may say something, strictest wins:
 *   keypair_policy  the owner keypair's policy's idle_timeout (tessera-auth):
 *                   > 0 seconds; 0 never idle (this scope sets no timeout);
 *                   -1 undefined: the resource group's default applies
 *   resource_group  registry.resource_groups.idle_timeout (0: no default),
 *                   only for a policy that leaves it undefined
 *   project         the project's idle_timeout (tessera-auth; 0: none), a cap
 *   domain          the domain's idle_timeout (tessera-auth; 0: none), a cap
 * The effective timeout is the smallest positive of those that apply (0: the
 * session is never idle), and its scope the one that set it (ties: in the
 * order above). Batch sessions are never checked; inference sessions only
 * in a resource group with idle_inference (else their timeout is 0).
 *
 * A session keeps what each scope said at its create in
 * registry.sessions.idle_inputs; the migration 0021 trigger computes
 * idle_timeout and idle_level from it and the resource group's row on every
 * write of idle_inputs, and moves a RUNNING session's idle_deadline with the
 * timeout (the count's start plus the new timeout). So a scope's change is
 * one UPDATE of the live sessions it concerns (idle_scopes_changed): a
 * resource group's PATCH runs it at once; tessera-auth's PolicyChanged
 * (keypair policies), DomainChanged and ProjectChanged on tessera.auth.v1
 * carry the new idle_timeout_s, and the consumer group
 * tessera-registry.idle-scopes (one per registry; the group's offsets are
 * kept, so a change made while no registry ran applies at the next start)
 * runs it for each. A keypair moved to another policy keeps its sessions'
 * timeout (KeypairChanged does not carry the new policy's). */
#ifndef REGISTRY_IDLE_SCOPES_H
#define REGISTRY_IDLE_SCOPES_H

#include "libcommon/common.h"
#include "libcommon/svc.h"

#include <jansson.h>
#include <libpq-fe.h>

/* The idle_inputs of a session from its owner's context (tessera-auth's
 * session-context answer): {"policy_name", "policy", "project", "domain"},
 * as compact JSON text (heap; never NULL). */
char *idle_scopes_inputs(const json_t *owner);

typedef enum idle_scope {
    IDLE_SCOPE_POLICY,         /* id: the keypair policy's name */
    IDLE_SCOPE_RESOURCE_GROUP, /* id: the group's name; value unused (read from its row) */
    IDLE_SCOPE_PROJECT,        /* id: the project's UUID */
    IDLE_SCOPE_DOMAIN,         /* id: the domain's name */
} idle_scope;

/* One scope's idle_timeout is now value: the live (not ended) sessions of
 * that scope get it, and with it their timeout and deadline, in one UPDATE
 * (rows locked in id order, as the event consumers lock them). *n: how many
 * sessions (may be NULL). False with err on a database error. */
bool idle_scopes_changed(PGconn *conn, idle_scope scope, const char *id, int value, int *n,
                         ts_err *err) TS_MUST_CHECK;

/* What an event of tessera.auth.v1 says about idle timeouts: true with the
 * scope, its id (into id, at least 128 bytes) and the value when it changes
 * one (a keypair policy's create or update, a domain's or a project's
 * change); false for any other event or a payload that does not decode. */
bool idle_scopes_read_event(const char *type, const uint8_t *payload, size_t len, idle_scope *scope,
                            char *id, size_t size, int *value) TS_MUST_CHECK;

/* Start (and stop) the consumer above; the readiness check
 * "idle-scopes-consumer" is green once it joined its group. */
bool idle_scopes_start(svc *s, ts_err *err) TS_MUST_CHECK;
void idle_scopes_stop(void);

#endif
