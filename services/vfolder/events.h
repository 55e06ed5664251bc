/* events.h: tessera-vfolder's events on tessera.vfolder.v1, keyed by vfolder
 * id (proto/tessera/v1/vfolder.proto, docs/events.md). Call them only after
 * the transaction that made the change committed, with the folder in the
 * thread's log context (tlog_ctx_entity("folder", id)). Publishing is
 * asynchronous; a refusal by the local producer queue is logged and counted
 * (tessera_vfolder_events_failed_total), never an HTTP error. */
#ifndef VFOLDER_EVENTS_H
#define VFOLDER_EVENTS_H

#include "folders.h"

#define VF_EVENTS_TOPIC "tessera.vfolder.v1"

void vf_events_init(svc *s);

/* f: the new folder; created_by: the caller's user id. */
void vf_event_created(svc *s, const char *request_id, const vf_folder *f, const char *created_by);
void vf_event_deleted(svc *s, const char *request_id, const char *vfolder_id, const char *name,
                      const char *host, const char *deleted_by, bool purged);
/* perm NULL or "" when revoked. */
void vf_event_shared(svc *s, const char *request_id, const char *vfolder_id, const char *user_id,
                     const char *perm, const char *shared_by, const char *invitation_id,
                     bool revoked);
void vf_event_quota_exceeded(svc *s, const char *request_id, const char *vfolder_id,
                             const char *quota_scope_id, int64_t used, int64_t limit,
                             const char *host);

#endif
