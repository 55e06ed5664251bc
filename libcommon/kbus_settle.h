/* kbus_settle.h: what becomes of one consumed record, for both consumer
 * modes (kbus_consumer.c, kbus_batch.c): the handler's answer, retries with
 * backoff, pauses while a dependency is down (kafka.pause_max_backoff), and
 * the dead-letter topic. */
#ifndef TESSERA_KBUS_SETTLE_H
#define TESSERA_KBUS_SETTLE_H

#include "libcommon/kbus_core.h"

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

#endif
