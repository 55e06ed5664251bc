/* kbus_core.h: the bus's internals, shared by the files that implement kbus.h:
 * the bus handle and its producer (kbus_core.c), consumers (kbus_consumer.c),
 * what becomes of a record (kbus_settle.c) and batch mode (kbus_batch.c).
 * Not for use outside libcommon/kbus*.c (and the bus's unit tests). */
#ifndef TESSERA_KBUS_CORE_H
#define TESSERA_KBUS_CORE_H

#include "libcommon/kbus.h"

#include <librdkafka/rdkafka.h>
#include <pthread.h>
#include <stdatomic.h>

struct kbus {
    rd_kafka_t *rk; /* the producer */
    char *bootstrap;
    char *security_protocol; /* NULL = plaintext */
    char *ssl_ca_file;       /* NULL = librdkafka's default */
    char *producer_name;     /* "<service>/<instance>" */
    int max_attempts;
    int retry_backoff_ms;
    int fetch_wait_ms;
    int control_fetch_wait_ms;
    int session_timeout_ms;
    int pause_max_backoff_ms;
    pthread_t poll_thread;
    atomic_bool stopping;
    _Atomic uint64_t produced, produce_errors, consumed, handled, retried, dead_lettered;
    kbus_probe probe;
    void *probe_ctx;
    pthread_mutex_t pause_mu; /* guards pause_why */
    char pause_why[256];
    _Atomic uint64_t pauses, paused_ms, paused_now;
    _Atomic uint64_t slow_retries; /* tries repeated, not counted: a dependency failing */
};

/* How long the bus's threads (the producer's poll thread, each consumer's)
 * wait in one poll while nothing arrives. A poll returns as soon as an event
 * does, and a stop wakes it (kbus_wake), so this bounds neither latency nor
 * how soon a stop is noticed: it is only how often an idle thread wakes. */
#define KBUS_IDLE_POLL_MS 1000

/* Wake whoever waits in rd_kafka_poll() (consumer false) or
 * rd_kafka_consumer_poll() (consumer true) on rk now: a stop is noticed at
 * once. A wake with nobody waiting makes the next wait return at once. */
void kbus_wake(rd_kafka_t *rk, bool consumer);

/* Set name=value on conf; false with err naming the property. */
bool kbus_conf_set(rd_kafka_conf_t *conf, const char *name, const char *value,
                   ts_err *err) TS_MUST_CHECK;
/* Set the bus's bootstrap servers and TLS settings (security.protocol,
 * ssl.ca.location) on conf: every client of the bus connects alike. */
bool kbus_conf_connect(const kbus *bus, rd_kafka_conf_t *conf, ts_err *err) TS_MUST_CHECK;
/* Route librdkafka's log and error callbacks into TLOG. */
void kbus_conf_logging(rd_kafka_conf_t *conf);

/* Produce a dead-letter record and wait for the broker's acknowledgement (up
 * to timeout_ms). headers are consumed in every case. */
bool kbus_produce_wait(kbus *bus, const char *topic, const void *key, size_t key_len,
                       const void *value, size_t len, rd_kafka_headers_t *headers, int timeout_ms,
                       ts_err *err) TS_MUST_CHECK;

/* One subscription: its consumer handle and thread (kbus_consumer.c), run in
 * single mode (handler) or batch mode (batch, kbus_batch.c). */
struct kbus_consumer {
    kbus *bus;
    rd_kafka_t *rk;
    char *group;
    kbus_handler handler;     /* single mode, or NULL */
    kbus_batch_handler batch; /* batch mode, or NULL */
    kbus_batch_opts batch_opts;
    void *ctx;
    pthread_t thread;
    atomic_bool stop;
    atomic_bool joined; /* the group gave it an assignment (maybe empty) */
};

#endif
