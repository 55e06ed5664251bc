/* kbus_core.c: the bus handle and its producer (kbus.h, kbus_core.h).
 * Consumers live in kbus_consumer.c, what becomes of a record in
 * kbus_settle.c, dead-letter headers in kbus_dlq.c. */
#include "libcommon/kbus_core.h"

#include "libcommon/deps.h"

#include "libcommon/log.h"
#include "libcommon/metrics.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

/* ---- configuration and logging ------------------------------------------- */

bool kbus_conf_set(rd_kafka_conf_t *conf, const char *name, const char *value, ts_err *err)
{
    char errstr[256];
    if (rd_kafka_conf_set(conf, name, value, errstr, sizeof(errstr)) != RD_KAFKA_CONF_OK) {
        ts_err_set(err, "kafka config %s=%s: %s", name, value, errstr);
        return false;
    }
    return true;
}

bool kbus_conf_connect(const kbus *bus, rd_kafka_conf_t *conf, ts_err *err)
{
    if (!kbus_conf_set(conf, "bootstrap.servers", bus->bootstrap, err)) return false;
    if (!bus->security_protocol) return true;
    if (!kbus_conf_set(conf, "security.protocol", bus->security_protocol, err)) return false;
    /* the broker's certificate must name the address it is reached at */
    if (!kbus_conf_set(conf, "ssl.endpoint.identification.algorithm", "https", err)) return false;
    return !bus->ssl_ca_file || kbus_conf_set(conf, "ssl.ca.location", bus->ssl_ca_file, err);
}

/* librdkafka uses syslog levels: 0..3 errors, 4 warnings, 5 notices, 6 info,
 * 7 debug. Notices are mostly connection chatter: keep them at debug so a
 * healthy service logs nothing from here. Connection failures (facility FAIL)
 * also reach _error_cb, which logs them once: debug here. */
static _Atomic uint64_t g_offset_resets;

static void _log_cb(const rd_kafka_t *rk, int level, const char *fac, const char *buf)
{
    char q[600];
    /* A consumer whose position the broker no longer holds (Offset out of
     * range: the log was truncated under it) jumps to auto.offset.reset:
     * the messages in between are never handled. */
    if (level <= 4 && strcmp(fac, "OFFSET") == 0 && strstr(buf, "offset reset")) {
        atomic_fetch_add(&g_offset_resets, 1);
        TLOG_ERROR("kafka consumer position reset: messages skipped", "client=%s detail=%s",
                   rd_kafka_name(rk), tlog_quote(q, sizeof(q), buf));
        return;
    }
    int tl = level <= 2                               ? TLOG_LEVEL_ERROR
             : level == 3 && strcmp(fac, "FAIL") != 0 ? TLOG_LEVEL_ERROR
             : level == 4                             ? TLOG_LEVEL_WARN
                                                      : TLOG_LEVEL_DEBUG;
    TLOG(tl, "librdkafka", "client=%s facility=%s detail=%s", rd_kafka_name(rk), fac,
         tlog_quote(q, sizeof(q), buf));
}

static void _error_cb(rd_kafka_t *rk, int err, const char *reason, void *opaque)
{
    (void)opaque;
    char q[600];
    if (err == RD_KAFKA_RESP_ERR__FATAL) {
        char fatal[512];
        rd_kafka_resp_err_t ferr = rd_kafka_fatal_error(rk, fatal, sizeof(fatal));
        TLOG_ERROR("kafka fatal error", "client=%s error=%s detail=%s", rd_kafka_name(rk),
                   rd_kafka_err2name(ferr), tlog_quote(q, sizeof(q), fatal));
        return;
    }
    /* Transport errors repeat while a broker is down; one warning per event. */
    TLOG_WARN("kafka error", "client=%s error=%s detail=%s", rd_kafka_name(rk),
              rd_kafka_err2name((rd_kafka_resp_err_t)err), tlog_quote(q, sizeof(q), reason));
}

void kbus_conf_logging(rd_kafka_conf_t *conf)
{
    rd_kafka_conf_set_log_cb(conf, _log_cb);
    rd_kafka_conf_set_error_cb(conf, _error_cb);
    /* Brokers close idle connections; that is not worth a line. */
    ts_err ignored;
    if (!kbus_conf_set(conf, "log.connection.close", "false", &ignored))
        TLOG_WARN("kafka config", "error=\"%s\"", ignored.msg);
}

/* ---- delivery reports ----------------------------------------------------- */

/* A produce someone waits for (kbus_produce_wait): shared by the waiter and
 * the delivery report; whoever drops the last reference frees it. */
typedef struct produce_wait {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    bool done;
    rd_kafka_resp_err_t err;
    atomic_int refs;
} produce_wait;

static void _wait_unref(produce_wait *w)
{
    if (atomic_fetch_sub(&w->refs, 1) == 1) {
        pthread_mutex_destroy(&w->mu);
        pthread_cond_destroy(&w->cv);
        free(w);
    }
}

static void _dr_cb(rd_kafka_t *rk, const rd_kafka_message_t *m, void *opaque)
{
    (void)rk;
    kbus *bus = opaque;
    if (m->err) {
        atomic_fetch_add(&bus->produce_errors, 1);
        TLOG_WARN("kafka delivery failed", "topic=%s error=%s", rd_kafka_topic_name(m->rkt),
                  rd_kafka_err2name(m->err));
    } else {
        atomic_fetch_add(&bus->produced, 1);
        deps_answered(DEP_KAFKA);
    }
    produce_wait *w = m->_private;
    if (w) {
        pthread_mutex_lock(&w->mu);
        w->done = true;
        w->err = m->err;
        pthread_cond_broadcast(&w->cv);
        pthread_mutex_unlock(&w->mu);
        _wait_unref(w);
    }
}

/* Serves delivery reports and callbacks while nobody else polls. */
static void *_poll_main(void *arg)
{
    kbus *bus = arg;
    while (!atomic_load(&bus->stopping))
        rd_kafka_poll(bus->rk, KBUS_IDLE_POLL_MS);
    return NULL;
}

void kbus_wake(rd_kafka_t *rk, bool consumer)
{
    rd_kafka_queue_t *q = consumer ? rd_kafka_queue_get_consumer(rk) : rd_kafka_queue_get_main(rk);
    if (!q) return;
    rd_kafka_queue_yield(q);
    rd_kafka_queue_destroy(q);
}

/* ---- the bus --------------------------------------------------------------- */

kbus *kbus_new(const kbus_opts *opts, ts_err *err)
{
    if (!opts || !opts->bootstrap || !opts->bootstrap[0]) {
        ts_err_set(err, "kafka: no bootstrap servers");
        return NULL;
    }
    if (opts->linger_ms < 0 || opts->linger_ms > 1000) {
        ts_err_set(err, "kafka: linger_ms %d out of range 0..1000", opts->linger_ms);
        return NULL;
    }
    kbus *bus = ts_calloc(1, sizeof(*bus));
    bus->bootstrap = ts_strdup(opts->bootstrap);
    if (opts->security_protocol && opts->security_protocol[0] &&
        strcasecmp(opts->security_protocol, "plaintext") != 0)
        bus->security_protocol = ts_strdup(opts->security_protocol);
    if (bus->security_protocol && opts->ssl_ca_file && opts->ssl_ca_file[0]) {
        if (access(opts->ssl_ca_file, R_OK) != 0) {
            ts_err_set(err, "kafka.ssl_ca_file %s: %s", opts->ssl_ca_file, strerror(errno));
            free(bus->bootstrap);
            free(bus->security_protocol);
            free(bus);
            return NULL;
        }
        bus->ssl_ca_file = ts_strdup(opts->ssl_ca_file);
    }
    bus->producer_name = ts_asprintf("%s/%s", opts->service ? opts->service : "tessera",
                                     opts->instance && opts->instance[0] ? opts->instance : "0");
    bus->max_attempts = opts->max_attempts >= 1 ? opts->max_attempts : 1;
    bus->retry_backoff_ms = opts->retry_backoff_ms >= 0 ? opts->retry_backoff_ms : 0;
    bus->fetch_wait_ms = opts->fetch_wait_ms > 0 ? opts->fetch_wait_ms : 500;
    bus->control_fetch_wait_ms =
        opts->control_fetch_wait_ms > 0 ? opts->control_fetch_wait_ms : bus->fetch_wait_ms;
    bus->session_timeout_ms = opts->session_timeout_ms > 0 ? opts->session_timeout_ms : 6000;
    bus->pause_max_backoff_ms = opts->pause_max_backoff_ms > 0 ? opts->pause_max_backoff_ms : 5000;
    pthread_mutex_init(&bus->pause_mu, NULL);

    rd_kafka_conf_t *conf = rd_kafka_conf_new();
    char linger[16], msg_timeout[16];
    snprintf(linger, sizeof(linger), "%d", opts->linger_ms);
    snprintf(msg_timeout, sizeof(msg_timeout), "%d",
             opts->message_timeout_ms > 0 ? opts->message_timeout_ms : 0);
    if (!kbus_conf_connect(bus, conf, err) ||
        !kbus_conf_set(conf, "client.id", bus->producer_name, err) ||
        !kbus_conf_set(conf, "enable.idempotence", "true", err) ||
        !kbus_conf_set(conf, "partitioner", "murmur2_random", err) ||
        !kbus_conf_set(conf, "linger.ms", linger, err) ||
        !kbus_conf_set(conf, "message.timeout.ms", msg_timeout, err)) {
        rd_kafka_conf_destroy(conf);
        goto fail;
    }
    kbus_conf_logging(conf);
    rd_kafka_conf_set_dr_msg_cb(conf, _dr_cb);
    rd_kafka_conf_set_opaque(conf, bus);

    char errstr[512];
    bus->rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, errstr, sizeof(errstr));
    if (!bus->rk) {
        rd_kafka_conf_destroy(conf);
        ts_err_set(err, "kafka producer: %s", errstr);
        goto fail;
    }
    int rc = pthread_create(&bus->poll_thread, NULL, _poll_main, bus);
    if (rc != 0) {
        ts_err_set(err, "kafka: poll thread: %s", strerror(rc));
        rd_kafka_destroy(bus->rk);
        goto fail;
    }
    TLOG_INFO("kafka producer ready", "bootstrap=%s client=%s linger_ms=%d security_protocol=%s",
              bus->bootstrap, bus->producer_name, opts->linger_ms,
              bus->security_protocol ? bus->security_protocol : "plaintext");
    return bus;
fail:
    pthread_mutex_destroy(&bus->pause_mu);
    free(bus->bootstrap);
    free(bus->security_protocol);
    free(bus->ssl_ca_file);
    free(bus->producer_name);
    free(bus);
    return NULL;
}

void kbus_close(kbus *bus, int timeout_ms)
{
    if (!bus) return;
    rd_kafka_resp_err_t ferr = rd_kafka_flush(bus->rk, timeout_ms);
    if (ferr)
        TLOG_WARN("kafka close: unflushed messages dropped", "count=%d error=%s",
                  rd_kafka_outq_len(bus->rk), rd_kafka_err2name(ferr));
    atomic_store(&bus->stopping, true);
    kbus_wake(bus->rk, false);
    pthread_join(bus->poll_thread, NULL);
    rd_kafka_destroy(bus->rk);
    pthread_mutex_destroy(&bus->pause_mu);
    free(bus->bootstrap);
    free(bus->security_protocol);
    free(bus->ssl_ca_file);
    free(bus->producer_name);
    free(bus);
}

void kbus_set_probe(kbus *bus, kbus_probe probe, void *ctx)
{
    bus->probe_ctx = ctx;
    bus->probe = probe;
}

int kbus_paused(kbus *bus, ts_err *why)
{
    int n = (int)atomic_load(&bus->paused_now);
    if (n > 0 && why) {
        pthread_mutex_lock(&bus->pause_mu);
        ts_err_set(why, "%s", bus->pause_why);
        pthread_mutex_unlock(&bus->pause_mu);
    }
    return n;
}

/* Produce one record; on a full local queue, wait for room up to ~1 s. */
static bool _produce(kbus *bus, const char *topic, const void *key, size_t key_len,
                     const void *value, size_t len, rd_kafka_headers_t *headers, void *opaque,
                     ts_err *err)
{
    rd_kafka_vu_t vu[6];
    size_t n = 0;
    vu[n++] = (rd_kafka_vu_t){.vtype = RD_KAFKA_VTYPE_TOPIC, .u.cstr = topic};
    vu[n++] = (rd_kafka_vu_t){.vtype = RD_KAFKA_VTYPE_KEY, .u.mem = {(void *)key, key_len}};
    vu[n++] = (rd_kafka_vu_t){.vtype = RD_KAFKA_VTYPE_VALUE, .u.mem = {(void *)value, len}};
    vu[n++] = (rd_kafka_vu_t){.vtype = RD_KAFKA_VTYPE_MSGFLAGS, .u.i = RD_KAFKA_MSG_F_COPY};
    vu[n++] = (rd_kafka_vu_t){.vtype = RD_KAFKA_VTYPE_OPAQUE, .u.ptr = opaque};
    /* Headers are handed over only on success (the caller frees them otherwise). */
    if (headers) vu[n++] = (rd_kafka_vu_t){.vtype = RD_KAFKA_VTYPE_HEADERS, .u.headers = headers};

    rd_kafka_resp_err_t e = RD_KAFKA_RESP_ERR_NO_ERROR;
    for (int i = 0; i < 20; i++) {
        rd_kafka_error_t *error = rd_kafka_produceva(bus->rk, vu, n);
        e = error ? rd_kafka_error_code(error) : RD_KAFKA_RESP_ERR_NO_ERROR;
        if (error) rd_kafka_error_destroy(error);
        if (e != RD_KAFKA_RESP_ERR__QUEUE_FULL) break;
        usleep(50 * 1000);
    }
    if (e) {
        atomic_fetch_add(&bus->produce_errors, 1);
        ts_err_set(err, "kafka produce to %s: %s", topic, rd_kafka_err2str(e));
        return false;
    }
    return true;
}

bool kbus_produce_raw(kbus *bus, const char *topic, const char *key, const void *value, size_t len,
                      ts_err *err)
{
    return _produce(bus, topic, key, key ? strlen(key) : 0, value, len, NULL, NULL, err);
}

bool kbus_publish(kbus *bus, const char *topic, const char *key, const ProtobufCMessage *payload,
                  const char *correlation_id, const char *subject_id, ts_err *err)
{
    size_t len;
    uint8_t *buf = envelope_pack(payload, bus->producer_name, correlation_id, subject_id, &len);
    bool ok = kbus_produce_raw(bus, topic, key, buf, len, err);
    free(buf);
    if (ok)
        TLOG_DEBUG("published", "topic=%s key=%s type=%s", topic, key ? key : "",
                   payload->descriptor->name);
    return ok;
}

bool kbus_produce_wait(kbus *bus, const char *topic, const void *key, size_t key_len,
                       const void *value, size_t len, rd_kafka_headers_t *headers, int timeout_ms,
                       ts_err *err)
{
    produce_wait *w = ts_calloc(1, sizeof(*w));
    pthread_mutex_init(&w->mu, NULL);
    pthread_cond_init(&w->cv, NULL);
    atomic_init(&w->refs, 2);
    if (!_produce(bus, topic, key, key_len, value, len, headers, w, err)) {
        rd_kafka_headers_destroy(headers); /* not taken on failure */
        atomic_store(&w->refs, 1);
        _wait_unref(w);
        return false;
    }
    struct timespec deadline;
    clock_gettime(CLOCK_REALTIME, &deadline);
    deadline.tv_sec += timeout_ms / 1000;
    deadline.tv_nsec += (long)(timeout_ms % 1000) * 1000000L;
    if (deadline.tv_nsec >= 1000000000L) {
        deadline.tv_sec++;
        deadline.tv_nsec -= 1000000000L;
    }
    pthread_mutex_lock(&w->mu);
    int rc = 0;
    while (!w->done && rc != ETIMEDOUT)
        rc = pthread_cond_timedwait(&w->cv, &w->mu, &deadline);
    bool done = w->done;
    rd_kafka_resp_err_t e = w->err;
    pthread_mutex_unlock(&w->mu);
    _wait_unref(w);
    if (!done) {
        ts_err_set(err, "kafka produce to %s: not acknowledged within %d ms", topic, timeout_ms);
        return false;
    }
    if (e) {
        ts_err_set(err, "kafka produce to %s: %s", topic, rd_kafka_err2str(e));
        return false;
    }
    return true;
}

bool kbus_flush(kbus *bus, int timeout_ms)
{
    return rd_kafka_flush(bus->rk, timeout_ms) == RD_KAFKA_RESP_ERR_NO_ERROR;
}

bool kbus_topic_partitions(kbus *bus, const char *topic, int timeout_ms, int *count, ts_err *err)
{
    const struct rd_kafka_metadata *md = NULL;
    rd_kafka_resp_err_t e = rd_kafka_metadata(bus->rk, 1, NULL, &md, timeout_ms);
    if (e) {
        ts_err_set(err, "kafka %s: metadata: %s", bus->bootstrap, rd_kafka_err2str(e));
        return false;
    }
    int n = -1;
    for (int i = 0; i < md->topic_cnt; i++)
        if (strcmp(md->topics[i].topic, topic) == 0 && !md->topics[i].err)
            n = md->topics[i].partition_cnt;
    rd_kafka_metadata_destroy(md);
    *count = n < 0 ? 0 : n;
    if (n >= 0) return true;
    ts_err_set(err, "kafka %s: topic %s is not known", bus->bootstrap, topic);
    return false;
}

bool kbus_ping(kbus *bus, int timeout_ms, ts_err *err)
{
    const struct rd_kafka_metadata *md = NULL;
    rd_kafka_resp_err_t e = rd_kafka_metadata(bus->rk, 0, NULL, &md, timeout_ms);
    if (e) {
        ts_err_set(err, "kafka %s: metadata: %s", bus->bootstrap, rd_kafka_err2str(e));
        deps_failed(DEP_KAFKA, err ? err->msg : rd_kafka_err2str(e));
        return false;
    }
    int brokers = md->broker_cnt;
    rd_kafka_metadata_destroy(md);
    if (brokers <= 0) {
        ts_err_set(err, "kafka %s: no brokers in metadata", bus->bootstrap);
        deps_failed(DEP_KAFKA, "no brokers in metadata");
        return false;
    }
    deps_answered(DEP_KAFKA);
    return true;
}

void kbus_get_stats(kbus *bus, kbus_stats *out)
{
    out->produced = atomic_load(&bus->produced);
    out->produce_errors = atomic_load(&bus->produce_errors);
    out->consumed = atomic_load(&bus->consumed);
    out->handled = atomic_load(&bus->handled);
    out->retried = atomic_load(&bus->retried);
    out->dead_lettered = atomic_load(&bus->dead_lettered);
    out->pauses = atomic_load(&bus->pauses);
    out->paused_ms = atomic_load(&bus->paused_ms);
    out->paused_now = atomic_load(&bus->paused_now);
    out->slow_retries = atomic_load(&bus->slow_retries);
    out->offset_resets = atomic_load(&g_offset_resets);
}

void kbus_collect(FILE *out, kbus *bus)
{
    kbus_stats st;
    kbus_get_stats(bus, &st);
    metrics_counter(out, "tessera_kafka_produced_total", "Events produced to Kafka.", st.produced);
    metrics_counter(out, "tessera_kafka_produce_errors_total", "Events Kafka failed to take.",
                    st.produce_errors);
    metrics_counter(out, "tessera_kafka_consumed_total", "Messages consumed from Kafka.",
                    st.consumed);
    metrics_counter(out, "tessera_kafka_handled_total", "Messages whose effect is durable.",
                    st.handled);
    metrics_counter(out, "tessera_kafka_retried_total", "Handler tries that asked for a retry.",
                    st.retried);
    metrics_counter(out, "tessera_kafka_dead_lettered_total",
                    "Messages sent to tessera.dlq.v1 (undecodable or failing).", st.dead_lettered);
    metrics_counter(out, "tessera_kafka_consumer_pauses_total",
                    "Times a consumer paused on a message because a dependency was down.",
                    st.pauses);
    metrics_family(out, "tessera_kafka_consumer_paused_seconds_total", "counter",
                   "Time consumers spent paused on a dependency.");
    metrics_sample(out, "tessera_kafka_consumer_paused_seconds_total", NULL,
                   (double)st.paused_ms / 1000);
    metrics_gauge(out, "tessera_kafka_consumers_paused", "Consumers paused on a dependency now.",
                  st.paused_now);
    metrics_counter(out, "tessera_kafka_slow_retries_total",
                    "Handler tries repeated without counting them (and without a pause) because "
                    "a dependency was failing but not judged down.",
                    st.slow_retries);
    metrics_counter(out, "tessera_kafka_offset_resets_total",
                    "Consumer positions the broker no longer held (log truncated under them): "
                    "the messages skipped were lost to this service.",
                    st.offset_resets);
}

int kbus_key_partition(const char *key, int count)
{
    if (count <= 1) return 0;
    /* librdkafka's own partitioner (the topic handle and opaques are not
     * used when there is a key) */
    return (int)rd_kafka_msg_partitioner_murmur2_random(NULL, key, strlen(key), count, NULL, NULL);
}
