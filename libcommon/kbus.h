/* kbus.h: the Kafka bus (librdkafka). Events are envelopes (envelope.h).
 *
 * Producer: idempotent (enable.idempotence), murmur2_random partitioner so
 * other Kafka clients agree on partitions, linger.ms from config (low by
 * default: these are latency-critical control events).
 *
 * Consumer: one consumer group per service. The handler runs for each message;
 * the offset is stored only after it returns KBUS_DONE (enable.auto.offset.store
 * = false), so a crash replays, never loses. A message that does not decode, or
 * whose handler returned KBUS_RETRY max_attempts times, or KBUS_REJECT once, is
 * produced to tessera.dlq.v1 with the same key, the original bytes, and headers
 * (dlq.reason, dlq.topic, dlq.partition, dlq.offset, dlq.group, dlq.attempts);
 * then its offset is stored and consumption goes on.
 *
 * A dependency outage is never a dead letter. When the handler answers
 * KBUS_WAIT (it could not reach something it needs), or KBUS_RETRY while the
 * bus's probe (kbus_set_probe: the service's PostgreSQL, Redis and broker
 * checks) fails, the consumer pauses on that message: it waits, backing off up
 * to pause_max_backoff_ms, until the probe passes (or, for KBUS_WAIT, for the
 * backoff), then hands the same message again; those tries are not counted
 * against max_attempts. The probe fails only for a dependency judged down
 * (deps.h: failures in a row over a window); a KBUS_RETRY while one is only
 * failing (a slow answer that timed out) is tried again after one
 * retry_backoff_ms, not counted and not a pause. kbus_paused() says how many consumers are paused
 * now (readiness, metrics). A pause longer than max.poll.interval.ms (5 min) makes the group hand
 * the partition to another member; the message is then applied again there, which handlers, being
 * at-least-once, already allow.
 *
 * Producer: a record waits in the local queue while the brokers are down
 * (message.timeout.ms = kafka.message_timeout; 0, the default, waits for ever)
 * and is delivered when they are back. */
#ifndef TESSERA_KBUS_H
#define TESSERA_KBUS_H

#include "libcommon/common.h"
#include "libcommon/envelope.h"

#include <stdio.h>

#define KBUS_TOPIC_DLQ "tessera.dlq.v1"

typedef struct kbus_opts {
    const char *bootstrap;         /* "host:port,host:port" */
    const char *service;           /* producer name in envelopes, client.id */
    const char *instance;          /* instance id (hostname or configured) */
    int linger_ms;                 /* producer linger; 0..1000 */
    int max_attempts;              /* consumer: tries before a message goes to the DLQ (>= 1) */
    int retry_backoff_ms;          /* consumer: wait between tries */
    int fetch_wait_ms;             /* consumer: fetch.wait.max.ms; 0 = 500 */
    int control_fetch_wait_ms;     /* the same for control-path consumers
                                    * (kbus_consume_control, kbus_batch_opts.control);
                                    * 0 = fetch_wait_ms */
    int session_timeout_ms;        /* consumer: session.timeout.ms; 0 = 6000 */
    int pause_max_backoff_ms;      /* consumer: longest wait between tries while paused; 0 = 5000 */
    int message_timeout_ms;        /* producer: message.timeout.ms; 0 = never give up */
    const char *security_protocol; /* security.protocol: "plaintext" (NULL) or "ssl" */
    const char *ssl_ca_file;       /* ssl.ca.location with ssl; NULL or "" = the system's */
} kbus_opts;

typedef struct kbus kbus;

kbus *kbus_new(const kbus_opts *opts, ts_err *err);
/* Flush outstanding messages (up to timeout_ms) and destroy everything. */
void kbus_close(kbus *bus, int timeout_ms);

/* Produce a packed envelope (see envelope_pack) asynchronously. Returns false
 * when the local queue refuses it (err set). */
bool kbus_produce_raw(kbus *bus, const char *topic, const char *key, const void *value, size_t len,
                      ts_err *err) TS_MUST_CHECK;
/* Wrap payload in an envelope and produce it. */
bool kbus_publish(kbus *bus, const char *topic, const char *key, const ProtobufCMessage *payload,
                  const char *correlation_id, const char *subject_id, ts_err *err) TS_MUST_CHECK;
/* Wait until everything produced so far is acknowledged (or timeout). */
bool kbus_flush(kbus *bus, int timeout_ms) TS_MUST_CHECK;

/* Broker metadata reachable within timeout_ms (used by /readyz). */
bool kbus_ping(kbus *bus, int timeout_ms, ts_err *err) TS_MUST_CHECK;
/* *count: the partitions of topic (broker metadata); false with err when the
 * brokers do not answer or do not know the topic. */
bool kbus_topic_partitions(kbus *bus, const char *topic, int timeout_ms, int *count,
                           ts_err *err) TS_MUST_CHECK;
/* The partition of count that the producer's partitioner (murmur2_random,
 * as Kafka's Java client) gives a message keyed key (not NULL). */
int kbus_key_partition(const char *key, int count);

typedef enum kbus_result {
    KBUS_DONE,   /* effect is durable: store the offset */
    KBUS_RETRY,  /* transient: try again (up to max_attempts, then DLQ; a pause
                  * instead while the probe fails) */
    KBUS_REJECT, /* permanent: to the DLQ now */
    KBUS_WAIT,   /* a dependency is unreachable: pause, try again, never the DLQ */
} kbus_result;

/* The dependency probe: true when everything the handlers need answers, else
 * false with err saying what does not. Runs on consumer threads, only after a
 * handler failed. */
typedef bool (*kbus_probe)(void *ctx, ts_err *err);
void kbus_set_probe(kbus *bus, kbus_probe probe, void *ctx);
/* Consumers paused now on a dependency (0 when none); why (may be NULL)
 * receives the reason of one of them. */
int kbus_paused(kbus *bus, ts_err *why);

typedef struct kbus_consumer kbus_consumer;

typedef struct kbus_msg {
    const char *topic;
    int32_t partition;
    int64_t offset;
    const char *key; /* may be NULL; NUL-terminated copy */
    const Tessera__V1__Envelope *env;
    kbus_consumer *consumer; /* the one handing it over */
} kbus_msg;

/* The handler may set reason (for the DLQ header) when it does not return DONE. */
typedef kbus_result (*kbus_handler)(const kbus_msg *msg, void *ctx, ts_err *reason);

/* Batch mode: the handler gets up to max_messages decoded envelopes at once,
 * in consumption order (per partition, offset order). A batch is gathered for
 * at most max_wait_ms from its first message (whatever has already arrived is
 * taken even after that). Offsets are stored only after the batch handler
 * returns KBUS_DONE for the batch (at least once, as in the single mode).
 * Messages that do not decode go to the DLQ ("undecodable: ...", attempts 0)
 * and never reach the handler. When the handler returns anything else for a
 * batch, each of its messages is handed again alone (n = 1) with the single
 * mode's rules: KBUS_RETRY up to max_attempts, then the DLQ; KBUS_REJECT to
 * the DLQ now. So one poison message is dead-lettered and the others are
 * kept. A batch handler must therefore be idempotent (a batch may be applied
 * in part before it fails, and is then replayed message by message). */
typedef kbus_result (*kbus_batch_handler)(const kbus_msg *msgs, size_t n, void *ctx,
                                          ts_err *reason);

#define KBUS_BATCH_MAX_MESSAGES 100000
#define KBUS_BATCH_MAX_WAIT_MS 60000

typedef struct kbus_batch_opts {
    int max_messages; /* 1..KBUS_BATCH_MAX_MESSAGES */
    int max_wait_ms;  /* 0..KBUS_BATCH_MAX_WAIT_MS */
    bool control;     /* on the control path: fetches wait control_fetch_wait_ms */
} kbus_batch_opts;

/* Subscribe group to topics (NULL-terminated) and run the handler on a thread
 * of its own. Topics are created on first use by the brokers. */
kbus_consumer *kbus_consume(kbus *bus, const char *group, const char *const *topics,
                            kbus_handler handler, void *ctx, ts_err *err);
/* The same for a consumer on the control path, where a user waits for each
 * event (session transitions, kernel events, agent commands): its fetches
 * wait control_fetch_wait_ms. That matters only with librdkafka's mock cluster
 * (tessera-devbus), which holds an empty fetch for the whole wait even when a
 * message arrives meanwhile; a real broker answers at once. */
kbus_consumer *kbus_consume_control(kbus *bus, const char *group, const char *const *topics,
                                    kbus_handler handler, void *ctx, ts_err *err);
/* The same with a batch handler (see kbus_batch_handler). */
kbus_consumer *kbus_consume_batch(kbus *bus, const char *group, const char *const *topics,
                                  const kbus_batch_opts *opts, kbus_batch_handler handler,
                                  void *ctx, ts_err *err);
/* Every process sees every message from now on (cache invalidation): a
 * consumer group of its own (named "<producer>.broadcast.<uuid>") that starts
 * at the latest offsets. Past messages are not replayed. */
kbus_consumer *kbus_consume_broadcast(kbus *bus, const char *const *topics, kbus_handler handler,
                                      void *ctx, ts_err *err);
/* Stop polling, commit stored offsets, leave the group, join the thread. */
void kbus_consumer_stop(kbus_consumer *c);
/* The same for n consumers at once (NULL entries skipped): all stop polling
 * first, then all leave together. Members of one group stopped one by one
 * each set off a rebalance among those left, and a close waits it out (5 s a
 * member on the development bus); stopped together, nobody is left to
 * rebalance. */
void kbus_consumers_stop(kbus_consumer *const *cs, int n);
/* True once the group has assigned this consumer at least one partition (for
 * readiness: a broadcast consumer sees events only from then on). */
bool kbus_consumer_assigned(kbus_consumer *c) TS_MUST_CHECK;
/* True once the group gave this consumer an assignment, even an empty one
 * (a member of a group with more members than partitions): it takes part. */
bool kbus_consumer_joined(kbus_consumer *c) TS_MUST_CHECK;
/* Partitions assigned to this consumer now (0 when none or unknown). */
int kbus_consumer_partitions(kbus_consumer *c);
/* The partitions of topic assigned to this consumer now, as a set over
 * [0, max): owned[p] true; *n: how many. False when the assignment cannot
 * be read (then owned is untouched). */
bool kbus_consumer_assignment(kbus_consumer *c, const char *topic, bool *owned, int max,
                              int *n) TS_MUST_CHECK;

/* For a handler whose message carries several records (e.g. an
 * ApiAccessBatch): dead-letter one of them, value (e.g. that record in an
 * envelope of its own), keeping the message itself. The DLQ record gets msg's
 * key and the dlq.* headers naming msg's topic, partition and offset, with
 * dlq.reason "rejected: <reason>" and dlq.attempts 1 (msg's own headers are
 * not copied). Waits for the broker's acknowledgement, retrying; false only
 * when the consumer stopped first (answer KBUS_RETRY then: the message is
 * redelivered). */
bool kbus_dead_letter_part(const kbus_msg *msg, const void *value, size_t len,
                           const char *reason) TS_MUST_CHECK;

/* Counters for /metrics. */
typedef struct kbus_stats {
    uint64_t produced, produce_errors, consumed, handled, retried, dead_lettered;
    uint64_t pauses;        /* times a consumer paused on a dependency */
    uint64_t paused_ms;     /* time spent paused, all consumers */
    uint64_t paused_now;    /* consumers paused now */
    uint64_t slow_retries;  /* tries repeated uncounted while a dependency failed (deps.h) */
    uint64_t offset_resets; /* consumer positions moved by the broker's log: messages skipped
                             * (process-wide) */
} kbus_stats;
void kbus_get_stats(kbus *bus, kbus_stats *out);

/* The bus's counters as Prometheus text (tessera_kafka_*), for /metrics. */
void kbus_collect(FILE *out, kbus *bus);

#endif
