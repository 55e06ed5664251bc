/* kbus_settle.c: what becomes of one consumed record (kbus_settle.h): the
 * handler's retries, pauses while a dependency is down, and the DLQ. */
#include "libcommon/kbus_settle.h"

#include "libcommon/deps.h"
#include "libcommon/kbus_dlq.h"
#include "libcommon/log.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* How long a DLQ produce may take before it is tried again. */
#define DLQ_ACK_TIMEOUT_MS 10000

bool kbus_consumer_nap(kbus_consumer *c, int ms)
{
    while (ms > 0 && !atomic_load(&c->stop)) {
        int step = ms < 50 ? ms : 50;
        usleep((useconds_t)step * 1000);
        ms -= step;
    }
    return !atomic_load(&c->stop);
}

/* Produce one DLQ record (value, key, headers orig plus info's) and wait for
 * its acknowledgement, retrying until it comes or the consumer stops. */
static bool _dead_letter(kbus_consumer *c, const void *key, size_t key_len, const void *value,
                         size_t len, const rd_kafka_headers_t *orig, const kbus_dlq_info *info)
{
    char q[KBUS_DLQ_REASON_MAX + 64];
    TLOG_WARN("dead-lettering message",
              "group=%s topic=%s partition=%d offset=%lld attempts=%d reason=%s", c->group,
              info->topic, (int)info->partition, (long long)info->offset, info->attempts,
              tlog_quote(q, sizeof(q), info->reason));
    for (int backoff = 100;; backoff = backoff < 5000 ? backoff * 2 : 5000) {
        ts_err err = {{0}};
        rd_kafka_headers_t *h = kbus_dlq_headers(orig, info);
        if (kbus_produce_wait(c->bus, KBUS_TOPIC_DLQ, key, key_len, value, len, h,
                              DLQ_ACK_TIMEOUT_MS, &err)) {
            atomic_fetch_add(&c->bus->dead_lettered, 1);
            return true;
        }
        TLOG_ERROR("dead-letter produce failed, will retry",
                   "group=%s topic=%s offset=%lld error=%s", c->group, info->topic,
                   (long long)info->offset, tlog_quote(q, sizeof(q), err.msg));
        if (!kbus_consumer_nap(c, backoff)) return false;
    }
}

bool kbus_consumer_dead_letter(kbus_consumer *c, const rd_kafka_message_t *m, const char *reason,
                               int attempts)
{
    rd_kafka_headers_t *orig = NULL;
    if (rd_kafka_message_headers(m, &orig) != RD_KAFKA_RESP_ERR_NO_ERROR) orig = NULL;
    kbus_dlq_info info = {.reason = reason,
                          .topic = rd_kafka_topic_name(m->rkt),
                          .partition = m->partition,
                          .offset = m->offset,
                          .group = c->group,
                          .attempts = attempts};
    return _dead_letter(c, m->key, m->key_len, m->payload, m->len, orig, &info);
}

bool kbus_dead_letter_part(const kbus_msg *msg, const void *value, size_t len, const char *reason)
{
    kbus_consumer *c = msg->consumer;
    ts_assert(c && reason);
    char full[KBUS_DLQ_REASON_MAX];
    snprintf(full, sizeof(full), "rejected: %s", reason);
    kbus_dlq_info info = {.reason = full,
                          .topic = msg->topic,
                          .partition = msg->partition,
                          .offset = msg->offset,
                          .group = c->group,
                          .attempts = 1};
    return _dead_letter(c, msg->key, msg->key ? strlen(msg->key) : 0, value, len, NULL, &info);
}

kbus_hold kbus_consumer_hold(kbus_consumer *c, kbus_result r, const char *why, int *waits)
{
    kbus *bus = c->bus;
    if (r != KBUS_WAIT && r != KBUS_RETRY) return KBUS_HOLD_NONE;
    ts_err down = {{0}};
    bool probe_failed = bus->probe && !bus->probe(bus->probe_ctx, &down);
    if (r == KBUS_RETRY && !probe_failed) {
        /* A dependency that is slow or failing but not judged down (deps.h):
         * neither a pause nor a counted try; one backoff, then again. */
        const char *failing = deps_failing();
        if (!failing) return KBUS_HOLD_NONE;
        atomic_fetch_add(&bus->slow_retries, 1);
        char q[600];
        TLOG_DEBUG("handler retries, not counted: a dependency is slow",
                   "group=%s dependency=%s handler_reason=%s", c->group, failing,
                   tlog_quote(q, sizeof(q), why));
        int backoff = bus->retry_backoff_ms > 0 ? bus->retry_backoff_ms : 100;
        return kbus_consumer_nap(c, backoff) ? KBUS_HOLD_WAITED : KBUS_HOLD_STOPPED;
    }
    const char *what = probe_failed ? down.msg : why;
    char q[600], d[600];
    if (*waits == 0 || *waits % 20 == 0)
        TLOG_WARN("consumer paused: a dependency is unavailable",
                  "group=%s handler_reason=%s dependency=%s", c->group,
                  tlog_quote(q, sizeof(q), why),
                  tlog_quote(d, sizeof(d), probe_failed ? down.msg : "(the handler's)"));
    pthread_mutex_lock(&bus->pause_mu);
    ts_strlcpy(bus->pause_why, what, sizeof(bus->pause_why));
    pthread_mutex_unlock(&bus->pause_mu);
    if (*waits == 0) atomic_fetch_add(&bus->pauses, 1);
    atomic_fetch_add(&bus->paused_now, 1);
    int64_t t0 = ts_now_mono_ms();
    kbus_hold res = KBUS_HOLD_WAITED;
    for (;;) {
        int backoff = bus->retry_backoff_ms > 0 ? bus->retry_backoff_ms : 100;
        for (int i = 0; i < *waits && backoff < bus->pause_max_backoff_ms; i++)
            backoff *= 2;
        if (backoff > bus->pause_max_backoff_ms) backoff = bus->pause_max_backoff_ms;
        (*waits)++;
        if (!kbus_consumer_nap(c, backoff)) {
            res = KBUS_HOLD_STOPPED;
            break;
        }
        /* The handler's own KBUS_WAIT: one backoff, then it tries again. */
        if (!probe_failed) break;
        ts_err again = {{0}};
        if (bus->probe(bus->probe_ctx, &again)) break;
    }
    atomic_fetch_sub(&bus->paused_now, 1);
    atomic_fetch_add(&bus->paused_ms, (uint64_t)(ts_now_mono_ms() - t0));
    if (probe_failed && res == KBUS_HOLD_WAITED)
        TLOG_INFO("consumer resumes: its dependencies answer again", "group=%s waits=%d", c->group,
                  *waits);
    return res;
}

bool kbus_consumer_settle(kbus_consumer *c, const rd_kafka_message_t *m, const kbus_msg *msg)
{
    kbus *bus = c->bus;
    char reason[KBUS_DLQ_REASON_MAX];
    bool settled = false;
    int waits = 0;
    tlog_ctx_request(msg->env->correlation_id);
    for (int attempt = 1;; attempt++) {
        ts_err why = {{0}};
        kbus_result r = c->handler ? c->handler(msg, c->ctx, &why) : c->batch(msg, 1, c->ctx, &why);
        const char *w = why.msg[0] ? why.msg : "no reason given";
        kbus_hold hold = kbus_consumer_hold(c, r, w, &waits);
        if (hold == KBUS_HOLD_STOPPED) break; /* redelivered after the restart */
        if (hold == KBUS_HOLD_WAITED) {
            attempt--; /* an outage's tries do not count */
            continue;
        }
        if (r == KBUS_DONE) {
            atomic_fetch_add(&bus->handled, 1);
            settled = true;
            break;
        }
        if (r == KBUS_REJECT) {
            snprintf(reason, sizeof(reason), "rejected: %s", w);
            settled = kbus_consumer_dead_letter(c, m, reason, attempt);
            break;
        }
        if (attempt >= bus->max_attempts) {
            snprintf(reason, sizeof(reason), "retries exhausted after %d attempts: %s", attempt, w);
            settled = kbus_consumer_dead_letter(c, m, reason, attempt);
            break;
        }
        atomic_fetch_add(&bus->retried, 1);
        char q[600];
        TLOG_INFO("handler asked to retry",
                  "group=%s topic=%s offset=%lld type=%s attempt=%d reason=%s", c->group,
                  msg->topic, (long long)m->offset, msg->env->type, attempt,
                  tlog_quote(q, sizeof(q), w));
        /* Stopped while waiting: leave the offset; the message is redelivered. */
        if (!kbus_consumer_nap(c, bus->retry_backoff_ms)) break;
    }
    tlog_ctx_clear();
    return settled;
}

void kbus_consumer_poll_error(kbus_consumer *c, const rd_kafka_message_t *m)
{
    if (m->err == RD_KAFKA_RESP_ERR__PARTITION_EOF) {
        TLOG_DEBUG("kafka partition end", "group=%s topic=%s partition=%d", c->group,
                   m->rkt ? rd_kafka_topic_name(m->rkt) : "", (int)m->partition);
    } else if (m->err == RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART ||
               m->err == RD_KAFKA_RESP_ERR__UNKNOWN_TOPIC) {
        /* A subscribed topic that does not exist yet: it will be
         * picked up on the next metadata refresh once created. */
        char q[600];
        TLOG_DEBUG("kafka topic not available yet", "group=%s detail=%s", c->group,
                   tlog_quote(q, sizeof(q), rd_kafka_message_errstr(m)));
    } else {
        char q[600];
        TLOG_WARN("kafka consume error", "group=%s error=%s detail=%s", c->group,
                  rd_kafka_err2name(m->err), tlog_quote(q, sizeof(q), rd_kafka_message_errstr(m)));
    }
}
