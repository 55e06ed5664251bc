/* kbus_consumer.c: consumer groups with handler, retries and dead-lettering
 * (kbus.h). One rd_kafka_t consumer handle and one thread per kbus_consume()
 * or kbus_consume_batch() (whose gathering is kbus_batch.c). */
#include "libcommon/kbus_dlq.h"
#include "libcommon/kbus_batch.h"
#include "libcommon/kbus_settle.h"
#include "libcommon/log.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Group membership tuned for fast joins on a small cluster:
 * - session.timeout.ms (kafka.session_timeout, default 6000): the smallest a
 *   default Kafka broker accepts (group.min.session.timeout.ms); a dead
 *   member is evicted within 6 s.
 * - heartbeat.interval.ms 1000: rebalances are noticed within a second.
 * - topic.metadata.refresh.interval.ms 5000: a subscribed topic that did not
 *   exist yet is seen (and assigned) within 5 s of its creation.
 * - auto.commit.interval.ms 1000: stored offsets reach the broker within 1 s,
 *   so a restart replays at most about a second of handled messages.
 * - fetch.wait.max.ms (kafka.fetch_wait, default 500, librdkafka's own): a real broker
 *   answers a fetch as soon as a message arrives, so the wait is what an idle consumer
 *   costs (a fetch per broker per wait), not a latency. Consumers on the control path
 *   (kbus_consume_control, kbus_batch_opts.control) take kafka.control_fetch_wait instead
 *   (kbus.h says why: the mock cluster waits every fetch out). */
#define CONSUMER_HEARTBEAT_MS "1000"
#define CONSUMER_METADATA_REFRESH_MS "5000"
#define CONSUMER_COMMIT_INTERVAL_MS "1000"

static void _store_offset(kbus_consumer *c, const rd_kafka_message_t *m)
{
    rd_kafka_topic_partition_list_t *l = rd_kafka_topic_partition_list_new(1);
    rd_kafka_topic_partition_list_add(l, rd_kafka_topic_name(m->rkt), m->partition)->offset =
        m->offset + 1;
    rd_kafka_resp_err_t e = rd_kafka_offsets_store(c->rk, l);
    if (!e && l->elems[0].err) e = l->elems[0].err;
    if (e)
        TLOG_WARN("kafka offset store failed",
                  "group=%s topic=%s partition=%d offset=%lld error=%s", c->group,
                  rd_kafka_topic_name(m->rkt), (int)m->partition, (long long)m->offset,
                  rd_kafka_err2name(e));
    rd_kafka_topic_partition_list_destroy(l);
}

static void _handle(kbus_consumer *c, const rd_kafka_message_t *m)
{
    atomic_fetch_add(&c->bus->consumed, 1);
    ts_err err = {{0}};
    Tessera__V1__Envelope *env = envelope_unpack(m->payload, m->len, &err);
    if (!env) {
        char reason[KBUS_DLQ_REASON_MAX];
        snprintf(reason, sizeof(reason), "undecodable: %s", err.msg);
        if (kbus_consumer_dead_letter(c, m, reason, 0)) _store_offset(c, m);
        return;
    }
    char *key = m->key ? ts_strndup(m->key, m->key_len) : NULL;
    kbus_msg msg = {.topic = rd_kafka_topic_name(m->rkt),
                    .partition = m->partition,
                    .offset = m->offset,
                    .key = key,
                    .env = env,
                    .consumer = c};
    if (kbus_consumer_settle(c, m, &msg)) _store_offset(c, m);
    free(key);
    envelope_free(env);
}

/* The group's assignments, as librdkafka applies them without a callback,
 * noting the first one (kbus_consumer_joined). */
static void _rebalance(rd_kafka_t *rk, rd_kafka_resp_err_t err,
                       rd_kafka_topic_partition_list_t *parts, void *opaque)
{
    kbus_consumer *c = opaque;
    bool cooperative = strcmp(rd_kafka_rebalance_protocol(rk), "COOPERATIVE") == 0;
    rd_kafka_error_t *e = NULL;
    rd_kafka_resp_err_t re = RD_KAFKA_RESP_ERR_NO_ERROR;
    if (err == RD_KAFKA_RESP_ERR__ASSIGN_PARTITIONS) {
        if (cooperative)
            e = rd_kafka_incremental_assign(rk, parts);
        else
            re = rd_kafka_assign(rk, parts);
        atomic_store(&c->joined, true);
    } else if (cooperative) {
        e = rd_kafka_incremental_unassign(rk, parts);
    } else {
        re = rd_kafka_assign(rk, NULL);
    }
    if (e) {
        TLOG_WARN("kafka rebalance", "group=%s error=\"%s\"", c->group, rd_kafka_error_string(e));
        rd_kafka_error_destroy(e);
    } else if (re) {
        TLOG_WARN("kafka rebalance", "group=%s error=%s", c->group, rd_kafka_err2name(re));
    }
}

static void *_consume_main(void *arg)
{
    kbus_consumer *c = arg;
    if (c->batch) {
        kbus_batch_run(c);
        return NULL;
    }
    while (!atomic_load(&c->stop)) {
        rd_kafka_message_t *m = rd_kafka_consumer_poll(c->rk, KBUS_IDLE_POLL_MS);
        if (!m) continue;
        if (m->err)
            kbus_consumer_poll_error(c, m);
        else
            _handle(c, m);
        rd_kafka_message_destroy(m);
    }
    return NULL;
}

static kbus_consumer *_consume(kbus *bus, const char *group, const char *const *topics,
                               kbus_handler handler, kbus_batch_handler batch,
                               const kbus_batch_opts *batch_opts, void *ctx,
                               const char *offset_reset, bool control, ts_err *err)
{
    if (!bus || !group || !group[0] || !topics || !topics[0] || (!handler && !batch)) {
        ts_err_set(err, "kafka consume: group, topics and handler are required");
        return NULL;
    }
    if (batch &&
        (!batch_opts || batch_opts->max_messages < 1 ||
         batch_opts->max_messages > KBUS_BATCH_MAX_MESSAGES || batch_opts->max_wait_ms < 0 ||
         batch_opts->max_wait_ms > KBUS_BATCH_MAX_WAIT_MS)) {
        ts_err_set(err, "kafka consume %s: a batch takes 1..%d messages and a wait of 0..%d ms",
                   group, KBUS_BATCH_MAX_MESSAGES, KBUS_BATCH_MAX_WAIT_MS);
        return NULL;
    }
    rd_kafka_conf_t *conf = rd_kafka_conf_new();
    char fetch_wait[16], session_timeout[16];
    int wait_ms = control ? bus->control_fetch_wait_ms : bus->fetch_wait_ms;
    snprintf(fetch_wait, sizeof(fetch_wait), "%d", wait_ms);
    snprintf(session_timeout, sizeof(session_timeout), "%d", bus->session_timeout_ms);
    char *client_id = ts_asprintf("%s/%s", bus->producer_name, group);
    bool ok = kbus_conf_connect(bus, conf, err) &&
              kbus_conf_set(conf, "client.id", client_id, err) &&
              kbus_conf_set(conf, "group.id", group, err) &&
              kbus_conf_set(conf, "enable.auto.offset.store", "false", err) &&
              kbus_conf_set(conf, "enable.auto.commit", "true", err) &&
              kbus_conf_set(conf, "auto.commit.interval.ms", CONSUMER_COMMIT_INTERVAL_MS, err) &&
              kbus_conf_set(conf, "auto.offset.reset", offset_reset, err) &&
              kbus_conf_set(conf, "fetch.wait.max.ms", fetch_wait, err) &&
              kbus_conf_set(conf, "allow.auto.create.topics", "true", err) &&
              kbus_conf_set(conf, "session.timeout.ms", session_timeout, err) &&
              kbus_conf_set(conf, "heartbeat.interval.ms", CONSUMER_HEARTBEAT_MS, err) &&
              kbus_conf_set(conf, "topic.metadata.refresh.interval.ms",
                            CONSUMER_METADATA_REFRESH_MS, err);
    free(client_id);
    if (!ok) {
        rd_kafka_conf_destroy(conf);
        return NULL;
    }
    kbus_conf_logging(conf);
    kbus_consumer *c = ts_calloc(1, sizeof(*c));
    rd_kafka_conf_set_opaque(conf, c);
    rd_kafka_conf_set_rebalance_cb(conf, _rebalance);

    char errstr[512];
    rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_CONSUMER, conf, errstr, sizeof(errstr));
    if (!rk) {
        rd_kafka_conf_destroy(conf);
        free(c);
        ts_err_set(err, "kafka consumer %s: %s", group, errstr);
        return NULL;
    }
    rd_kafka_poll_set_consumer(rk);

    rd_kafka_topic_partition_list_t *subs = rd_kafka_topic_partition_list_new(4);
    size_t tlen = 0;
    char names[512] = "";
    for (const char *const *t = topics; *t; t++) {
        rd_kafka_topic_partition_list_add(subs, *t, RD_KAFKA_PARTITION_UA);
        tlen += (size_t)snprintf(names + tlen, tlen < sizeof(names) ? sizeof(names) - tlen : 0,
                                 "%s%s", t == topics ? "" : ",", *t);
        if (tlen >= sizeof(names)) tlen = sizeof(names) - 1;
    }
    rd_kafka_resp_err_t e = rd_kafka_subscribe(rk, subs);
    rd_kafka_topic_partition_list_destroy(subs);
    if (e) {
        ts_err_set(err, "kafka consumer %s: subscribe %s: %s", group, names, rd_kafka_err2str(e));
        rd_kafka_destroy(rk);
        free(c);
        return NULL;
    }

    c->bus = bus;
    c->rk = rk;
    c->group = ts_strdup(group);
    c->handler = handler;
    c->batch = batch;
    if (batch) c->batch_opts = *batch_opts;
    c->ctx = ctx;
    int rc = pthread_create(&c->thread, NULL, _consume_main, c);
    if (rc != 0) {
        ts_err_set(err, "kafka consumer %s: thread: %s", group, strerror(rc));
        rd_kafka_consumer_close(rk);
        rd_kafka_destroy(rk);
        free(c->group);
        free(c);
        return NULL;
    }
    if (batch)
        TLOG_INFO("kafka consumer started",
                  "group=%s topics=%s fetch_wait_ms=%d batch=%d batch_wait_ms=%d", group, names,
                  wait_ms, batch_opts->max_messages, batch_opts->max_wait_ms);
    else
        TLOG_INFO("kafka consumer started", "group=%s topics=%s fetch_wait_ms=%d", group, names,
                  wait_ms);
    return c;
}

kbus_consumer *kbus_consume(kbus *bus, const char *group, const char *const *topics,
                            kbus_handler handler, void *ctx, ts_err *err)
{
    return _consume(bus, group, topics, handler, NULL, NULL, ctx, "earliest", false, err);
}

kbus_consumer *kbus_consume_control(kbus *bus, const char *group, const char *const *topics,
                                    kbus_handler handler, void *ctx, ts_err *err)
{
    return _consume(bus, group, topics, handler, NULL, NULL, ctx, "earliest", true, err);
}

kbus_consumer *kbus_consume_batch(kbus *bus, const char *group, const char *const *topics,
                                  const kbus_batch_opts *opts, kbus_batch_handler handler,
                                  void *ctx, ts_err *err)
{
    return _consume(bus, group, topics, NULL, handler, opts, ctx, "earliest", opts && opts->control,
                    err);
}

kbus_consumer *kbus_consume_broadcast(kbus *bus, const char *const *topics, kbus_handler handler,
                                      void *ctx, ts_err *err)
{
    char id[TS_UUID_STRLEN];
    ts_uuid4(id);
    char *group = ts_asprintf("%s.broadcast.%s", bus ? bus->producer_name : "?", id);
    kbus_consumer *c = _consume(bus, group, topics, handler, NULL, NULL, ctx, "latest", false, err);
    free(group);
    return c;
}

bool kbus_consumer_assigned(kbus_consumer *c)
{
    if (!c) return false;
    rd_kafka_topic_partition_list_t *parts = NULL;
    if (rd_kafka_assignment(c->rk, &parts) != RD_KAFKA_RESP_ERR_NO_ERROR || !parts) return false;
    bool assigned = parts->cnt > 0;
    rd_kafka_topic_partition_list_destroy(parts);
    return assigned;
}

bool kbus_consumer_joined(kbus_consumer *c)
{
    return c && atomic_load(&c->joined);
}

int kbus_consumer_partitions(kbus_consumer *c)
{
    if (!c) return 0;
    rd_kafka_topic_partition_list_t *parts = NULL;
    if (rd_kafka_assignment(c->rk, &parts) != RD_KAFKA_RESP_ERR_NO_ERROR || !parts) return 0;
    int n = parts->cnt;
    rd_kafka_topic_partition_list_destroy(parts);
    return n;
}

bool kbus_consumer_assignment(kbus_consumer *c, const char *topic, bool *owned, int max, int *n)
{
    rd_kafka_topic_partition_list_t *parts = NULL;
    if (!c || rd_kafka_assignment(c->rk, &parts) != RD_KAFKA_RESP_ERR_NO_ERROR || !parts)
        return false;
    memset(owned, 0, sizeof(*owned) * (size_t)max);
    *n = 0;
    for (int i = 0; i < parts->cnt; i++) {
        const rd_kafka_topic_partition_t *tp = &parts->elems[i];
        if (strcmp(tp->topic, topic) != 0 || tp->partition < 0 || tp->partition >= max) continue;
        if (!owned[tp->partition]) (*n)++;
        owned[tp->partition] = true;
    }
    rd_kafka_topic_partition_list_destroy(parts);
    return true;
}

static void *_close_main(void *arg)
{
    kbus_consumer *c = arg;
    /* Close commits the stored offsets (auto commit) and leaves the group. */
    rd_kafka_resp_err_t e = rd_kafka_consumer_close(c->rk);
    if (e) TLOG_WARN("kafka consumer close", "group=%s error=%s", c->group, rd_kafka_err2name(e));
    return NULL;
}

static void _free_closed(kbus_consumer *c)
{
    rd_kafka_destroy(c->rk);
    TLOG_INFO("kafka consumer stopped", "group=%s", c->group);
    free(c->group);
    free(c);
}

void kbus_consumer_stop(kbus_consumer *c)
{
    kbus_consumers_stop(&c, 1);
}

void kbus_consumers_stop(kbus_consumer *const *cs, int n)
{
    for (int i = 0; i < n; i++)
        if (cs[i]) {
            atomic_store(&cs[i]->stop, true);
            kbus_wake(cs[i]->rk, true);
        }
    for (int i = 0; i < n; i++)
        if (cs[i]) pthread_join(cs[i]->thread, NULL);
    /* Commit what each has stored while all are still members: once one has
     * left, the others' commits meet the rebalance its leaving starts and
     * fail (and those messages would be handed out again). */
    for (int i = 0; i < n; i++) {
        if (!cs[i]) continue;
        rd_kafka_resp_err_t e = rd_kafka_commit(cs[i]->rk, NULL, 0);
        if (e && e != RD_KAFKA_RESP_ERR__NO_OFFSET)
            TLOG_WARN("kafka consumer commit at stop", "group=%s error=%s", cs[i]->group,
                      rd_kafka_err2name(e));
    }
    /* every close in a thread of its own, so that the members leave together;
     * one that cannot get a thread is closed here */
    pthread_t *th = ts_calloc((size_t)(n > 0 ? n : 1), sizeof(*th));
    bool *threaded = ts_calloc((size_t)(n > 0 ? n : 1), sizeof(*threaded));
    for (int i = 0; i < n; i++)
        if (cs[i] && n > 1) threaded[i] = pthread_create(&th[i], NULL, _close_main, cs[i]) == 0;
    for (int i = 0; i < n; i++)
        if (cs[i] && !threaded[i]) _close_main(cs[i]);
    for (int i = 0; i < n; i++)
        if (threaded[i]) pthread_join(th[i], NULL);
    for (int i = 0; i < n; i++)
        if (cs[i]) _free_closed(cs[i]);
    free(threaded);
    free(th);
}
