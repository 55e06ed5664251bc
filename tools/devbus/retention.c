/* retention.c: see retention.h. */
#include "retention.h"

#include <librdkafka/rdkafka.h>
#include <string.h>

/* librdkafka's own lookups (rdkafka_mock_int.h, not installed; present in the
 * static library tessera-devbus links). */
struct rd_kafka_mock_topic_s;
struct rd_kafka_mock_partition_s;
struct rd_kafka_mock_topic_s *rd_kafka_mock_topic_find(const rd_kafka_mock_cluster_t *mcluster,
                                                       const char *name);
struct rd_kafka_mock_partition_s *
rd_kafka_mock_partition_find(const struct rd_kafka_mock_topic_s *mtopic, int32_t partition);

/* struct rd_kafka_mock_partition_s in librdkafka 2.0.2 (x86-64 and other LP64
 * targets): size_t size, cnt, max_size, max_cnt at these offsets, read from
 * the library's rd_kafka_mock_partition_log_append. */
#define MOCK_VERSION 0x020002ff
#define OFF_SIZE 0x50
#define OFF_CNT 0x58
#define OFF_MAX_SIZE 0x60
#define OFF_MAX_CNT 0x68
#define MOCK_DEFAULT_MAX_SIZE ((size_t)5 * 1024 * 1024)
#define MOCK_DEFAULT_MAX_CNT ((size_t)100000)
/* Message sets kept: the byte cap is the one that counts. */
#define RETAINED_MAX_CNT ((size_t)1 << 40)

static size_t _field(const void *mpart, size_t off)
{
    size_t v;
    memcpy(&v, (const char *)mpart + off, sizeof(v));
    return v;
}

bool devbus_set_retention(rd_kafka_mock_cluster_t *mcluster, const char *topic, int partition_cnt,
                          int64_t max_bytes, ts_err *err)
{
    if (rd_kafka_version() != MOCK_VERSION) {
        ts_err_set(err,
                   "librdkafka %s: the mock cluster's log cap is set for 2.0.2 only "
                   "(devbus.retention = 0 keeps the mock's own 5 MiB a partition)",
                   rd_kafka_version_str());
        return false;
    }
    struct rd_kafka_mock_topic_s *mtopic = rd_kafka_mock_topic_find(mcluster, topic);
    if (!mtopic) {
        ts_err_set(err, "topic %s: not in the mock cluster", topic);
        return false;
    }
    for (int p = 0; p < partition_cnt; p++) {
        char *mpart = (char *)rd_kafka_mock_partition_find(mtopic, p);
        if (!mpart) {
            ts_err_set(err, "topic %s partition %d: not in the mock cluster", topic, p);
            return false;
        }
        /* A fresh partition holds the mock's defaults and nothing else: any
         * other values mean the layout is not the one above. */
        if (_field(mpart, OFF_SIZE) != 0 || _field(mpart, OFF_CNT) != 0 ||
            _field(mpart, OFF_MAX_SIZE) != MOCK_DEFAULT_MAX_SIZE ||
            _field(mpart, OFF_MAX_CNT) != MOCK_DEFAULT_MAX_CNT) {
            ts_err_set(err,
                       "topic %s partition %d: the mock partition does not look as expected "
                       "(size %zu, count %zu, caps %zu/%zu); not changed (devbus.retention = 0 "
                       "keeps the mock's cap)",
                       topic, p, _field(mpart, OFF_SIZE), _field(mpart, OFF_CNT),
                       _field(mpart, OFF_MAX_SIZE), _field(mpart, OFF_MAX_CNT));
            return false;
        }
        size_t max_size = (size_t)max_bytes, max_cnt = RETAINED_MAX_CNT;
        memcpy(mpart + OFF_MAX_SIZE, &max_size, sizeof(max_size));
        memcpy(mpart + OFF_MAX_CNT, &max_cnt, sizeof(max_cnt));
    }
    return true;
}
