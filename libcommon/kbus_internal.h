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
};

/* What kbus_consumer_hold did with a handler's answer. */
typedef enum kbus_hold {
    KBUS_HOLD_NONE,    /* not a dependency outage: count the attempt as usual */
    KBUS_HOLD_WAITED,  /* paused until the dependency was back: hand it again */
    KBUS_HOLD_STOPPED, /* the consumer stopped while paused */
} kbus_hold;
/* After a handler answered r (why: its reason): for KBUS_WAIT, or
 * KBUS_RETRY while the probe fails, pause (waits: how many times this message
 * was held already, for the backoff) and say so. */
kbus_hold kbus_consumer_hold(kbus_consumer *c, kbus_result r, const char *why, int *waits);

/* Sleep up to ms, waking early when the consumer is stopped; false if stopped. */
bool kbus_consumer_nap(kbus_consumer *c, int ms) TS_MUST_CHECK;
/* Log a consumer poll result that carries an error (partition end, unknown
 * topic, broker errors) at the level it deserves. */
void kbus_consumer_poll_error(kbus_consumer *c, const rd_kafka_message_t *m);
/* Dead-letter m; true once the DLQ record is acknowledged. Retries until it
 * is, or until the consumer stops (then the message will be redelivered). */
bool kbus_consumer_dead_letter(kbus_consumer *c, const rd_kafka_message_t *m, const char *reason,
                               int attempts) TS_MUST_CHECK;
/* Hand one decoded message to the handler alone (a batch handler gets n = 1)
 * with retries, then the DLQ. True when it is settled (handled or
 * dead-lettered): its offset may be stored. False when the consumer stopped
 * first (the message will be redelivered). */
bool kbus_consumer_settle(kbus_consumer *c, const rd_kafka_message_t *m,
                          const kbus_msg *msg) TS_MUST_CHECK;
/* The batch mode's poll loop (kbus_batch.c); returns when c->stop is set. */
void kbus_batch_run(kbus_consumer *c);

#endif
