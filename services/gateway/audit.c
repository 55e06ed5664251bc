/* audit.c: an ApiAccess record for each answered API request, published in
 * ApiAccessBatch envelopes (audit.h). The request's worker thread serializes
 * its record (on its stack) and copies it into the batch buffer
 * (audit_batch.c); the batch buffer's flusher thread wraps each batch in an
 * envelope and hands it to the bus, so the request never waits for Kafka. */
#include "audit.h"

#include "audit_batch.h"
#include "identity.h"
#include "libcommon/log.h"
#include "tessera/v1/audit.pb-c.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

static _Atomic(audit_batch *) g_batch;
static atomic_uint_fast64_t publish_error_records;

static bool is_probe(const char *path)
{
    return strcmp(path, "/healthz") == 0 || strcmp(path, "/readyz") == 0 ||
           strcmp(path, "/metrics") == 0;
}

/* One batch to the bus. Its records are of many users: the key is the
 * envelope's event id, which spreads batches over the partitions and sends a
 * replayed batch where the original went. */
static void publish_batch(const uint8_t *payload, size_t len, size_t records, void *ctx)
{
    svc *s = ctx;
    char event_id[TS_UUID_STRLEN];
    size_t elen;
    uint8_t *env = envelope_pack_bytes(tessera__v1__api_access_batch__descriptor.name, payload, len,
                                       svc_producer(s), NULL, NULL, event_id, &elen);
    ts_err err = {{0}};
    if (!kbus_produce_raw(svc_bus(s), AUDIT_TOPIC, event_id, env, elen, &err)) {
        atomic_fetch_add(&publish_error_records, records);
        TLOG_WARN("audit batch not queued", "records=%zu error=\"%s\"", records, err.msg);
    }
    free(env);
}

void audit_request(svc *s, const http_req *req, int status, int64_t latency_us)
{
    (void)s;
    audit_batch *b = atomic_load_explicit(&g_batch, memory_order_acquire);
    if (!b || is_probe(req->path)) { /* not yet connected to the bus */
        identity_release(req);
        return;
    }
    const gw_identity *id = identity_of(req);
    Tessera__V1__ApiAccess rec = TESSERA__V1__API_ACCESS__INIT;
    rec.access_key = (char *)(id ? id->access_key : "");
    rec.user_id = (char *)(id ? id->user_id : "");
    rec.client_addr = (char *)req->client_addr;
    rec.method = (char *)req->method;
    rec.path = (char *)req->path; /* no query: it may carry tokens */
    const char *ua = http_header(req, "User-Agent");
    rec.user_agent = (char *)(ua ? ua : "");
    rec.status = status;
    rec.latency_us = latency_us;
    rec.request_id = (char *)req->request_id;
    rec.occurred_at_ms = ts_now_wall_ms();
    uint8_t stack[2048];
    size_t len = tessera__v1__api_access__get_packed_size(&rec);
    uint8_t *buf = len <= sizeof(stack) ? stack : ts_malloc(len);
    tessera__v1__api_access__pack(&rec, buf);
    identity_release(req); /* the request's last use of it */
    /* a record dropped (the buffer is full) is counted in the batch's stats */
    TS_IGNORE(audit_batch_add(b, buf, len));
    if (buf != stack) free(buf);
}

static void collect(FILE *out, void *ctx)
{
    audit_batch *b = ctx;
    audit_batch_stats st;
    audit_batch_stats_get(b, &st);
    metrics_counter(out, "tessera_gateway_audit_batches_total",
                    "ApiAccessBatch envelopes handed to the bus (tessera.audit.v1).", st.batches);
    metrics_counter(out, "tessera_gateway_audit_records_total",
                    "ApiAccess records in those batches (divided by the batches: records per"
                    " batch).",
                    st.records);
    metrics_family(out, "tessera_gateway_audit_records_dropped_total", "counter",
                   "ApiAccess records lost: the batch buffer was full (buffer_full) or the bus"
                   " refused their batch (bus).");
    metrics_sample_u64(out, "tessera_gateway_audit_records_dropped_total", "reason=\"buffer_full\"",
                       st.dropped);
    metrics_sample_u64(out, "tessera_gateway_audit_records_dropped_total", "reason=\"bus\"",
                       atomic_load(&publish_error_records));
}

bool audit_start(svc *s, const audit_opts *o, ts_err *err)
{
    audit_batch_opts bo = {.max_records = o->batch_records,
                           .max_wait_ms = o->batch_wait_ms,
                           .max_bytes = AUDIT_BATCH_BYTES,
                           .max_pending = AUDIT_BATCH_PENDING};
    audit_batch *b = audit_batch_new(&bo, publish_batch, s, err);
    if (!b) return false;
    metrics_add(svc_metrics(s), collect, b);
    atomic_store_explicit(&g_batch, b, memory_order_release);
    return true;
}

void audit_stop(void)
{
    audit_batch *b = atomic_load(&g_batch);
    if (!b) return;
    audit_batch_stats st;
    audit_batch_close(b);
    audit_batch_stats_get(b, &st);
    TLOG_INFO("audit records flushed", "batches=%llu records=%llu dropped=%llu",
              (unsigned long long)st.batches, (unsigned long long)st.records,
              (unsigned long long)(st.dropped + atomic_load(&publish_error_records)));
}
