/* kbus_batch.c: the batch mode of a consumer (kbus_consume_batch, kbus.h).
 *
 * Gather up to max_messages for at most max_wait_ms from the first one;
 * dead-letter what does not decode; hand the rest to the batch handler at
 * once; on DONE store every offset; otherwise settle each message alone
 * (kbus_consumer_settle: retries, then the DLQ). Offsets are stored per
 * partition only up to the first message that is not settled (the consumer
 * stopped while it waited), so nothing after it is skipped on restart. */
#include "libcommon/kbus_dlq.h"
#include "libcommon/kbus_batch.h"
#include "libcommon/kbus_settle.h"
#include "libcommon/log.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct batch_item {
    rd_kafka_message_t *m;
    Tessera__V1__Envelope *env; /* NULL: undecodable */
    char *key;
    bool settled;
} batch_item;

/* Poll until max messages, or max_wait_ms after the first one, or a stop.
 * Whatever has already arrived is taken after the deadline too (poll 0). */
static size_t _gather(kbus_consumer *c, batch_item *items)
{
    size_t n = 0, max = (size_t)c->batch_opts.max_messages;
    int64_t deadline = 0;
    while (n < max && !atomic_load(&c->stop)) {
        int timeout = KBUS_IDLE_POLL_MS;
        if (n > 0) {
            int64_t left = deadline - ts_now_mono_ms();
            timeout = left > 0 ? (int)left : 0;
        }
        rd_kafka_message_t *m = rd_kafka_consumer_poll(c->rk, timeout);
        if (!m) {
            if (n > 0 && timeout == 0) break;
            continue;
        }
        if (m->err) {
            kbus_consumer_poll_error(c, m);
            rd_kafka_message_destroy(m);
            continue;
        }
        if (n == 0) deadline = ts_now_mono_ms() + c->batch_opts.max_wait_ms;
        items[n++] = (batch_item){.m = m};
    }
    return n;
}

/* Store, per topic and partition, the offset after the last message of an
 * unbroken run of settled ones from the batch's start. */
static void _store_offsets(kbus_consumer *c, const batch_item *items, size_t n)
{
    rd_kafka_topic_partition_list_t *store = rd_kafka_topic_partition_list_new((int)n);
    rd_kafka_topic_partition_list_t *blocked = rd_kafka_topic_partition_list_new(4);
    for (size_t i = 0; i < n; i++) {
        const rd_kafka_message_t *m = items[i].m;
        const char *topic = rd_kafka_topic_name(m->rkt);
        if (rd_kafka_topic_partition_list_find(blocked, topic, m->partition)) continue;
        if (!items[i].settled) {
            rd_kafka_topic_partition_list_add(blocked, topic, m->partition);
            continue;
        }
        rd_kafka_topic_partition_t *p =
            rd_kafka_topic_partition_list_find(store, topic, m->partition);
        if (!p) p = rd_kafka_topic_partition_list_add(store, topic, m->partition);
        p->offset = m->offset + 1;
    }
    if (store->cnt > 0) {
        rd_kafka_resp_err_t e = rd_kafka_offsets_store(c->rk, store);
        for (int i = 0; i < store->cnt; i++) {
            rd_kafka_resp_err_t pe = e ? e : store->elems[i].err;
            if (pe)
                TLOG_WARN("kafka offset store failed",
                          "group=%s topic=%s partition=%d offset=%lld error=%s", c->group,
                          store->elems[i].topic, (int)store->elems[i].partition,
                          (long long)store->elems[i].offset - 1, rd_kafka_err2name(pe));
        }
    }
    rd_kafka_topic_partition_list_destroy(blocked);
    rd_kafka_topic_partition_list_destroy(store);
}

static void _handle_batch(kbus_consumer *c, batch_item *items, size_t n, kbus_msg *msgs,
                          size_t *which)
{
    kbus *bus = c->bus;
    atomic_fetch_add(&bus->consumed, n);
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        const rd_kafka_message_t *m = items[i].m;
        ts_err err = {{0}};
        items[i].env = envelope_unpack(m->payload, m->len, &err);
        if (!items[i].env) {
            char reason[KBUS_DLQ_REASON_MAX];
            snprintf(reason, sizeof(reason), "undecodable: %s", err.msg);
            items[i].settled = kbus_consumer_dead_letter(c, m, reason, 0);
            continue;
        }
        items[i].key = m->key ? ts_strndup(m->key, m->key_len) : NULL;
        msgs[k] = (kbus_msg){.topic = rd_kafka_topic_name(m->rkt),
                             .partition = m->partition,
                             .offset = m->offset,
                             .key = items[i].key,
                             .env = items[i].env,
                             .consumer = c};
        which[k++] = i;
    }
    if (k > 0 && !atomic_load(&c->stop)) {
        ts_err why = {{0}};
        kbus_result r;
        kbus_hold hold;
        int waits = 0;
        /* While a dependency is down the whole batch waits and is handed
         * again; one by one is for a message that fails on its own. */
        do {
            why.msg[0] = '\0';
            r = c->batch(msgs, k, c->ctx, &why);
            hold = kbus_consumer_hold(c, r, why.msg[0] ? why.msg : "no reason given", &waits);
        } while (hold == KBUS_HOLD_WAITED);
        if (hold == KBUS_HOLD_STOPPED) {
            /* nothing settled: the batch is redelivered after the restart */
        } else if (r == KBUS_DONE) {
            atomic_fetch_add(&bus->handled, k);
            for (size_t j = 0; j < k; j++)
                items[which[j]].settled = true;
        } else {
            char q[600];
            TLOG_INFO("batch handler failed, handing its messages one by one",
                      "group=%s messages=%zu result=%s reason=%s", c->group, k,
                      r == KBUS_RETRY  ? "retry"
                      : r == KBUS_WAIT ? "wait"
                                       : "reject",
                      tlog_quote(q, sizeof(q), why.msg[0] ? why.msg : "no reason given"));
            for (size_t j = 0; j < k; j++) {
                items[which[j]].settled = kbus_consumer_settle(c, items[which[j]].m, &msgs[j]);
                if (!items[which[j]].settled) break; /* stopped: the rest is redelivered */
            }
        }
    }
    _store_offsets(c, items, n);
    for (size_t i = 0; i < n; i++) {
        free(items[i].key);
        if (items[i].env) envelope_free(items[i].env);
        rd_kafka_message_destroy(items[i].m);
    }
}

void kbus_batch_run(kbus_consumer *c)
{
    size_t max = (size_t)c->batch_opts.max_messages;
    batch_item *items = ts_calloc(max, sizeof(*items));
    kbus_msg *msgs = ts_calloc(max, sizeof(*msgs));
    size_t *which = ts_calloc(max, sizeof(*which));
    while (!atomic_load(&c->stop)) {
        size_t n = _gather(c, items);
        if (n > 0) _handle_batch(c, items, n, msgs, which);
        memset(items, 0, n * sizeof(*items));
    }
    free(which);
    free(msgs);
    free(items);
}
