/* retention.h: how much of each partition's log the development bus keeps.
 *
 * librdkafka's mock cluster (2.0.2) caps every partition's log at 5 MiB and
 * 100,000 message sets and drops the oldest beyond that, whether or not a
 * consumer has read them: a consumer a few seconds behind under load (1,000
 * simulated agents' heartbeats) then finds its position gone ("Offset out of
 * range") and skips what was dropped. The mock has no public setting for the
 * cap, so tessera-devbus links librdkafka statically and sets the two fields
 * of each pre-created partition (rd_kafka_mock_partition_find, the library's
 * own lookup), after checking that they hold the mock's defaults at the
 * offsets this library version has; with another version, or a layout that
 * does not match, nothing is written and the start fails with that reason
 * (devbus.retention = 0 keeps the mock's cap and skips the check).
 *
 * Topics created later (per-agent command topics, on first use) keep the
 * mock's cap: they carry a few commands, not a stream. */
#ifndef TESSERA_DEVBUS_RETENTION_H
#define TESSERA_DEVBUS_RETENTION_H

#include "libcommon/common.h"

#include <librdkafka/rdkafka.h>
#include <librdkafka/rdkafka_mock.h>

/* Keep up to max_bytes of messages on each of topic's partition_cnt
 * partitions (and any number of message sets). Call before any client
 * connects. */
bool devbus_set_retention(rd_kafka_mock_cluster_t *mcluster, const char *topic, int partition_cnt,
                          int64_t max_bytes, ts_err *err) TS_MUST_CHECK;

#endif
