/* mock_kafka.h: librdkafka's in-process mock cluster (the one tessera-devbus
 * hosts) for the unit tests of kbus: one broker, the named topics created
 * with one partition each. Header-only: each test binary is one .c file. */
#ifndef TESSERA_TESTS_MOCK_KAFKA_H
#define TESSERA_TESTS_MOCK_KAFKA_H

#include <librdkafka/rdkafka.h>
#include <librdkafka/rdkafka_mock.h>
#include <stdlib.h>

typedef struct mock_kafka {
    rd_kafka_t *host;
    rd_kafka_mock_cluster_t *mc;
    const char *bootstrap;
} mock_kafka;

static void mock_kafka_quiet_log(const rd_kafka_t *rk, int level, const char *fac, const char *buf)
{
    (void)rk, (void)level, (void)fac, (void)buf;
}

/* topics: NULL-terminated. Fails the test (cmocka) when the cluster does not start. */
static void mock_kafka_start(mock_kafka *k, const char *const *topics)
{
    char errstr[256];
    rd_kafka_conf_t *conf = rd_kafka_conf_new();
    rd_kafka_conf_set_log_cb(conf, mock_kafka_quiet_log);
    k->host = rd_kafka_new(RD_KAFKA_PRODUCER, conf, errstr, sizeof(errstr));
    assert_non_null(k->host);
    k->mc = rd_kafka_mock_cluster_new(k->host, 1);
    assert_non_null(k->mc);
    for (const char *const *t = topics; *t; t++)
        assert_int_equal(rd_kafka_mock_topic_create(k->mc, *t, 1, 1), 0);
    k->bootstrap = rd_kafka_mock_cluster_bootstraps(k->mc);
}

static void mock_kafka_stop(mock_kafka *k)
{
    rd_kafka_mock_cluster_destroy(k->mc);
    rd_kafka_destroy(k->host);
}

#endif
