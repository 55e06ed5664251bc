/* kbus_dlq.h: building dead-letter records (internal to kbus; exposed for tests).
 *
 * A DLQ record on tessera.dlq.v1 keeps the original key and value bytes and the
 * original headers, plus these headers (values are text):
 *   dlq.reason     why it was dead-lettered ("undecodable: ...", "rejected: ...",
 *                  "retries exhausted after N attempts: ...")
 *   dlq.topic      the topic it was consumed from
 *   dlq.partition  its partition (decimal)
 *   dlq.offset     its offset (decimal)
 *   dlq.group      the consumer group that gave up on it
 *   dlq.attempts   how many times the handler ran (0 when it did not decode) */
#ifndef TESSERA_KBUS_DLQ_H
#define TESSERA_KBUS_DLQ_H

#include "libcommon/common.h"

#include <librdkafka/rdkafka.h>

/* Longest dlq.reason value written; longer reasons are cut. */
#define KBUS_DLQ_REASON_MAX 1024

typedef struct kbus_dlq_info {
    const char *reason;
    const char *topic;
    int32_t partition;
    int64_t offset;
    const char *group;
    int attempts;
} kbus_dlq_info;

/* New header list: a copy of orig (may be NULL) plus the dlq.* headers, any
 * dlq.* headers already in orig replaced (a record dead-lettered twice says
 * why the second time). Free with rd_kafka_headers_destroy() unless handed to
 * a produce call that took it. */
rd_kafka_headers_t *kbus_dlq_headers(const rd_kafka_headers_t *orig, const kbus_dlq_info *info);

#endif
