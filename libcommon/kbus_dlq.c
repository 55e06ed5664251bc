/* kbus_dlq.c: the headers of a dead-letter record (kbus_dlq.h). */
#include "libcommon/kbus_dlq.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

static void _add(rd_kafka_headers_t *h, const char *name, const char *value)
{
    rd_kafka_header_remove(h, name);
    rd_kafka_header_add(h, name, -1, value, (ssize_t)strlen(value));
}

rd_kafka_headers_t *kbus_dlq_headers(const rd_kafka_headers_t *orig, const kbus_dlq_info *info)
{
    rd_kafka_headers_t *h = orig ? rd_kafka_headers_copy(orig) : rd_kafka_headers_new(8);
    char num[32];

    const char *reason = info->reason && info->reason[0] ? info->reason : "unknown";
    size_t rlen = strnlen(reason, KBUS_DLQ_REASON_MAX);
    rd_kafka_header_remove(h, "dlq.reason");
    rd_kafka_header_add(h, "dlq.reason", -1, reason, (ssize_t)rlen);
    _add(h, "dlq.topic", info->topic ? info->topic : "");
    snprintf(num, sizeof(num), "%" PRId32, info->partition);
    _add(h, "dlq.partition", num);
    snprintf(num, sizeof(num), "%" PRId64, info->offset);
    _add(h, "dlq.offset", num);
    _add(h, "dlq.group", info->group ? info->group : "");
    snprintf(num, sizeof(num), "%d", info->attempts);
    _add(h, "dlq.attempts", num);
    return h;
}
