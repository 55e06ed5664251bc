/* publish.h: events out, after the transaction that decided them commits.
 *
 * Handlers collect what to publish in an outbox while their transaction runs
 * (packed envelopes, nothing sent), then flush it after COMMIT, or discard it
 * after a ROLLBACK; so an event never announces a change that did not happen.
 * The outbox also carries waiter notifications (waiters.h), sent at the flush.
 *
 *   session events  tessera.session.v1, key = session id
 *   agent commands  tessera.agent.cmd.<agent-id>, key = kernel id
 *   agent events    tessera.agent.v1, key = agent id (AgentStopped "lost") */
#ifndef REGISTRY_PUBLISH_H
#define REGISTRY_PUBLISH_H

#include "libcommon/svc.h"

#include <protobuf-c/protobuf-c.h>

#define TOPIC_SESSION "tessera.session.v1"
#define TOPIC_KERNEL "tessera.kernel.v1"
#define TOPIC_AGENT "tessera.agent.v1"
#define TOPIC_AGENT_CMD_PREFIX "tessera.agent.cmd."

typedef struct outbox_item {
    char *topic;
    char *key;
    uint8_t *value; /* packed envelope */
    size_t len;
    char *notify_session; /* a waiter notification instead of a record */
    char *notify_status;
} outbox_item;

typedef struct outbox {
    char *correlation_id;
    outbox_item *items;
    size_t n, cap;
} outbox;

void ob_init(outbox *ob, const char *correlation_id);
void ob_session_event(outbox *ob, const char *session_id, const ProtobufCMessage *m);
void ob_agent_cmd(outbox *ob, const char *agent_id, const char *kernel_id,
                  const ProtobufCMessage *m);
void ob_agent_event(outbox *ob, const char *agent_id, const ProtobufCMessage *m);
void ob_notify(outbox *ob, const char *session_id, const char *status);
/* Send everything (in order) and empty the outbox. A record the producer's
 * local queue refuses is logged ("event not published") and dropped; the
 * reconcile pass repairs what that leaves behind (reconcile.h). */
void ob_flush(outbox *ob);
void ob_discard(outbox *ob);

#endif
