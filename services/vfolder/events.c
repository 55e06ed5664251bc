/* events.c: publish tessera.vfolder.v1 events (see events.h). */
#include "events.h"

#include "libcommon/log.h"
#include "tessera/v1/vfolder.pb-c.h"

#include <stdatomic.h>
#include <stdio.h>

static atomic_uint_fast64_t published, failed;

static void _collect(FILE *out, void *ctx)
{
    (void)ctx;
    metrics_counter(out, "tessera_vfolder_events_published_total",
                    "Events handed to the producer on tessera.vfolder.v1.",
                    atomic_load(&published));
    metrics_counter(out, "tessera_vfolder_events_failed_total",
                    "Events on tessera.vfolder.v1 the producer refused (logged).",
                    atomic_load(&failed));
}

void vf_events_init(svc *s)
{
    metrics_add(svc_metrics(s), _collect, NULL);
}

static void _publish(svc *s, const char *key, const ProtobufCMessage *m, const char *request_id)
{
    kbus *bus = svc_bus(s);
    ts_err err = {{0}};
    if (bus && kbus_publish(bus, VF_EVENTS_TOPIC, key, m, request_id, key, &err)) {
        atomic_fetch_add(&published, 1);
        TLOG_DEBUG("event published", "type=%s", m->descriptor->name);
        return;
    }
    atomic_fetch_add(&failed, 1);
    TLOG_ERROR("event not published", "type=%s error=\"%s\"", m->descriptor->name,
               bus ? err.msg : "no bus");
}

static char *_s(const char *v)
{
    return (char *)(v ? v : "");
}

void vf_event_created(svc *s, const char *request_id, const vf_folder *f, const char *created_by)
{
    Tessera__V1__VfolderCreated m = TESSERA__V1__VFOLDER_CREATED__INIT;
    bool user = f->ownership == VF_OWNER_USER;
    m.vfolder_id = _s(f->id);
    m.name = _s(f->name);
    m.host = _s(f->host);
    m.ownership_type = user ? "user" : "project";
    m.owner_user_id = user ? _s(f->owner_id) : "";
    m.owner_project_id = user ? "" : _s(f->owner_id);
    m.usage_mode = _s(f->usage_mode);
    m.permission = _s(vf_perm_name(f->folder_perm));
    m.quota_bytes = f->quota_bytes;
    m.created_by = _s(created_by);
    m.domain_name = _s(f->domain_name);
    _publish(s, f->id, &m.base, request_id);
}

void vf_event_deleted(svc *s, const char *request_id, const char *vfolder_id, const char *name,
                      const char *host, const char *deleted_by, bool purged)
{
    Tessera__V1__VfolderDeleted m = TESSERA__V1__VFOLDER_DELETED__INIT;
    m.vfolder_id = _s(vfolder_id);
    m.name = _s(name);
    m.host = _s(host);
    m.deleted_by = deleted_by ? (char *)deleted_by : "system";
    m.purged = purged;
    _publish(s, vfolder_id, &m.base, request_id);
}

void vf_event_shared(svc *s, const char *request_id, const char *vfolder_id, const char *user_id,
                     const char *perm, const char *shared_by, const char *invitation_id,
                     bool revoked)
{
    Tessera__V1__VfolderShared m = TESSERA__V1__VFOLDER_SHARED__INIT;
    m.vfolder_id = _s(vfolder_id);
    m.user_id = _s(user_id);
    m.permission = revoked ? "" : _s(perm);
    m.shared_by = _s(shared_by);
    m.invitation_id = _s(invitation_id);
    m.revoked = revoked;
    _publish(s, vfolder_id, &m.base, request_id);
}

void vf_event_quota_exceeded(svc *s, const char *request_id, const char *vfolder_id,
                             const char *quota_scope_id, int64_t used, int64_t limit,
                             const char *host)
{
    Tessera__V1__VfolderQuotaExceeded m = TESSERA__V1__VFOLDER_QUOTA_EXCEEDED__INIT;
    m.vfolder_id = _s(vfolder_id);
    m.quota_scope_id = _s(quota_scope_id);
    m.used_bytes = used;
    m.limit_bytes = limit;
    m.host = _s(host);
    _publish(s, vfolder_id, &m.base, request_id);
}
