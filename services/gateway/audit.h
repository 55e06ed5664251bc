/* audit.h: one access record (tessera.v1.ApiAccess) per API request answered,
 * allowed or denied (health probes excluded), naming the verified caller
 * (access key and user id; empty for anonymous or refused requests). The
 * records travel in batches: one tessera.v1.ApiAccessBatch envelope on
 * tessera.audit.v1 per up to audit.batch_records records or per
 * audit.batch_wait, keyed by the envelope's event id (audit_batch.h gathers
 * them). tessera-auth stores them in its access log. */
#ifndef GATEWAY_AUDIT_H
#define GATEWAY_AUDIT_H

#include "libcommon/svc.h"

#define AUDIT_TOPIC "tessera.audit.v1"

/* Payload bytes of one batch at most (below Kafka's default message.max.bytes
 * of 1,000,000 with room for the envelope; a record is at most a few KiB). */
#define AUDIT_BATCH_BYTES (512 * 1024)
/* Full batches that may wait for the flusher before records are dropped. */
#define AUDIT_BATCH_PENDING 64

typedef struct audit_opts {
    int batch_records; /* audit.batch_records */
    int batch_wait_ms; /* audit.batch_wait */
} audit_opts;

/* Start batching (once the bus is connected); metrics registered. */
bool audit_start(svc *s, const audit_opts *o, ts_err *err) TS_MUST_CHECK;
/* Publish what is buffered (before the bus is closed). Records of requests
 * answered later are published one batch each, at once. */
void audit_stop(void);

/* svc_spec.on_request: the record of one answered request, naming the
 * caller verify.c kept in it (identity.h), which it releases. */
void audit_request(svc *s, const http_req *req, int status, int64_t latency_us);

#endif
