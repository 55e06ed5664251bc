/* kbus_internal.h: what kbus.c (the bus and its producer) shares with
 * kbus_consumer.c. Not for use outside libcommon/kbus*.c. */
#ifndef TESSERA_KBUS_INTERNAL_H
#define TESSERA_KBUS_INTERNAL_H

#include "libcommon/kbus.h"

#include <librdkafka/rdkafka.h>
#include <pthread.h>
#include <stdatomic.h>

struct kbus {
    rd_kafka_t *rk; /* the producer */
    char *bootstrap;
    char *producer_name; /* "<service>/<instance>" */
    int max_attempts;
    int retry_backoff_ms;
    int fetch_wait_ms;
    pthread_t poll_thread;
    atomic_bool stopping;
    _Atomic uint64_t produced, produce_errors, consumed, handled, retried, dead_lettered;
};

/* Set name=value on conf; false with err naming the property. */
bool kbus_conf_set(rd_kafka_conf_t *conf, const char *name, const char *value,
                   ts_err *err) TS_MUST_CHECK;
/* Route librdkafka's log and error callbacks into TLOG. */
void kbus_conf_logging(rd_kafka_conf_t *conf);

/* Produce a dead-letter record and wait for the broker's acknowledgement (up
 * to timeout_ms). headers are consumed in every case. */
bool kbus_produce_wait(kbus *bus, const char *topic, const void *key, size_t key_len,
                       const void *value, size_t len, rd_kafka_headers_t *headers, int timeout_ms,
                       ts_err *err) TS_MUST_CHECK;

#endif
