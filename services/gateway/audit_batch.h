/* audit_batch.h: gathers packed ApiAccess records into ApiAccessBatch
 * payloads (proto/tessera/v1/audit.proto) and hands each one to an emit
 * callback on a flusher thread of its own.
 *
 * A batch is emitted when it holds max_records records, when adding a record
 * would take it past max_bytes, or max_wait_ms after its first record,
 * whichever comes first. The payload is the serialized ApiAccessBatch itself:
 * each record is appended as field 1 (tag, length, the record's bytes), so
 * nothing is serialized twice.
 *
 * audit_batch_add() never waits for the flusher or the bus: it copies the
 * record under a mutex held for that copy only. When max_pending full batches
 * already wait for the flusher, a record that needs a new batch is dropped
 * (counted) rather than making the request wait.
 *
 * audit_batch_close() emits everything buffered and stops the flusher; a
 * record added after that is emitted alone at once, on the caller's thread. */
#ifndef GATEWAY_AUDIT_BATCH_H
#define GATEWAY_AUDIT_BATCH_H

#include "libcommon/common.h"

#define AUDIT_BATCH_MAX_RECORDS 10000

typedef struct audit_batch audit_batch;

/* One batch: payload (len bytes, a serialized ApiAccessBatch) of records
 * records. Called on the flusher thread, or on the caller's after close;
 * payload is only valid during the call. */
typedef void (*audit_batch_emit_fn)(const uint8_t *payload, size_t len, size_t records, void *ctx);

typedef struct audit_batch_opts {
    int max_records;  /* 1..AUDIT_BATCH_MAX_RECORDS */
    int max_wait_ms;  /* 0..60000, from a batch's first record */
    size_t max_bytes; /* >= 64; a record that alone is larger goes alone */
    int max_pending;  /* >= 1: full batches waiting for the flusher */
} audit_batch_opts;

audit_batch *audit_batch_new(const audit_batch_opts *o, audit_batch_emit_fn emit, void *ctx,
                             ts_err *err) TS_MUST_CHECK;
/* Add one serialized ApiAccess. False when it was dropped (too many batches
 * pending). */
bool audit_batch_add(audit_batch *b, const uint8_t *rec, size_t len) TS_MUST_CHECK;
/* Emit what is buffered, then stop the flusher (joined). Idempotent. */
void audit_batch_close(audit_batch *b);
/* Close if needed and free. */
void audit_batch_free(audit_batch *b);

typedef struct audit_batch_stats {
    uint64_t batches, records, dropped;
} audit_batch_stats;
void audit_batch_stats_get(audit_batch *b, audit_batch_stats *out);

#endif
