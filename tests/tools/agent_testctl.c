/* tessera-agent-testctl: the agent tests' bus tool. Publishes a command
 * described in JSON as a protobuf envelope, and dumps topics as JSON lines.
 *
 *   tessera-agent-testctl publish <topic> <key> <Type> '<json>'
 *       Type: a tessera.v1 message name (CreateKernel, DestroyKernel, ...);
 *       the JSON uses the .proto field names; enums by number or name;
 *       map<string,string> as an object.
 *   tessera-agent-testctl consume <topic>[,<topic>...] [seconds]
 *       from the beginning (a fresh consumer group), one JSON object per
 *       line: {"topic", "key", "type", "event_id", "correlation_id",
 *       "payload": {...}}; runs for seconds (default: until killed).
 *
 * KAFKA_BOOTSTRAP (or TESSERA_KAFKA_BOOTSTRAP) names the bus. */
#include <jansson.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "libcommon/kbus.h"
#include "libcommon/log.h"
#include "tessera/v1/agent.pb-c.h"
#include "tessera/v1/agent_cmd.pb-c.h"
#include "tessera/v1/kernel.pb-c.h"
#include "tessera/v1/session.pb-c.h"
#include "tessera/v1/usage.pb-c.h"

static const ProtobufCMessageDescriptor *const known[] = {
    &tessera__v1__create_kernel__descriptor,     &tessera__v1__destroy_kernel__descriptor,
    &tessera__v1__execute__descriptor,           &tessera__v1__start_service__descriptor,
    &tessera__v1__kernel_pulling__descriptor,    &tessera__v1__kernel_creating__descriptor,
    &tessera__v1__kernel_started__descriptor,    &tessera__v1__kernel_exited__descriptor,
    &tessera__v1__kernel_terminated__descriptor, &tessera__v1__agent_started__descriptor,
    &tessera__v1__agent_heartbeat__descriptor,   &tessera__v1__agent_stopped__descriptor,
    &tessera__v1__kernel_usage__descriptor,
};

static const ProtobufCMessageDescriptor *_find(const char *name)
{
    for (size_t i = 0; i < TS_ARRAY_LEN(known); i++)
        if (strcmp(known[i]->name, name) == 0 || strcmp(known[i]->short_name, name) == 0)
            return known[i];
    return NULL;
}

/* ---- JSON -> protobuf ---------------------------------------------------------- */

static ProtobufCMessage *_from_json(const ProtobufCMessageDescriptor *d, json_t *j);

static size_t _elem_size(const ProtobufCFieldDescriptor *f)
{
    switch (f->type) {
    case PROTOBUF_C_TYPE_INT32:
    case PROTOBUF_C_TYPE_SINT32:
    case PROTOBUF_C_TYPE_SFIXED32:
    case PROTOBUF_C_TYPE_UINT32:
    case PROTOBUF_C_TYPE_FIXED32:
    case PROTOBUF_C_TYPE_ENUM:
        return 4;
    case PROTOBUF_C_TYPE_INT64:
    case PROTOBUF_C_TYPE_SINT64:
    case PROTOBUF_C_TYPE_SFIXED64:
    case PROTOBUF_C_TYPE_UINT64:
    case PROTOBUF_C_TYPE_FIXED64:
        return 8;
    case PROTOBUF_C_TYPE_FLOAT:
        return sizeof(float);
    case PROTOBUF_C_TYPE_DOUBLE:
        return sizeof(double);
    case PROTOBUF_C_TYPE_BOOL:
        return sizeof(protobuf_c_boolean);
    case PROTOBUF_C_TYPE_BYTES:
        return sizeof(ProtobufCBinaryData);
    default:
        return sizeof(void *);
    }
}

static void _set_scalar(const ProtobufCFieldDescriptor *f, void *dst, json_t *v)
{
    switch (f->type) {
    case PROTOBUF_C_TYPE_INT32:
    case PROTOBUF_C_TYPE_SINT32:
    case PROTOBUF_C_TYPE_SFIXED32:
    case PROTOBUF_C_TYPE_UINT32:
    case PROTOBUF_C_TYPE_FIXED32:
        *(int32_t *)dst = (int32_t)json_integer_value(v);
        break;
    case PROTOBUF_C_TYPE_ENUM: {
        int32_t x = (int32_t)json_integer_value(v);
        if (json_is_string(v)) {
            const ProtobufCEnumValue *ev = protobuf_c_enum_descriptor_get_value_by_name(
                (const ProtobufCEnumDescriptor *)f->descriptor, json_string_value(v));
            if (ev) x = ev->value;
        }
        *(int32_t *)dst = x;
        break;
    }
    case PROTOBUF_C_TYPE_INT64:
    case PROTOBUF_C_TYPE_SINT64:
    case PROTOBUF_C_TYPE_SFIXED64:
    case PROTOBUF_C_TYPE_UINT64:
    case PROTOBUF_C_TYPE_FIXED64:
        *(int64_t *)dst = (int64_t)json_integer_value(v);
        break;
    case PROTOBUF_C_TYPE_FLOAT:
        *(float *)dst = (float)json_number_value(v);
        break;
    case PROTOBUF_C_TYPE_DOUBLE:
        *(double *)dst = json_number_value(v);
        break;
    case PROTOBUF_C_TYPE_BOOL:
        *(protobuf_c_boolean *)dst = json_is_true(v);
        break;
    case PROTOBUF_C_TYPE_STRING:
        *(char **)dst = ts_strdup(json_is_string(v) ? json_string_value(v) : "");
        break;
    case PROTOBUF_C_TYPE_BYTES: {
        const char *s = json_string_value(v);
        ProtobufCBinaryData *b = dst;
        b->data = (uint8_t *)ts_strdup(s ? s : "");
        b->len = s ? strlen(s) : 0;
        break;
    }
    case PROTOBUF_C_TYPE_MESSAGE:
        *(ProtobufCMessage **)dst =
            _from_json((const ProtobufCMessageDescriptor *)f->descriptor, v);
        break;
    }
}

static ProtobufCMessage *_from_json(const ProtobufCMessageDescriptor *d, json_t *j)
{
    ProtobufCMessage *m = ts_calloc(1, d->sizeof_message);
    protobuf_c_message_init(d, m);
    const char *key;
    json_t *v;
    json_object_foreach(j, key, v)
    {
        const ProtobufCFieldDescriptor *f = protobuf_c_message_descriptor_get_field_by_name(d, key);
        if (!f) {
            fprintf(stderr, "warning: %s has no field '%s' (ignored)\n", d->name, key);
            continue;
        }
        char *base = (char *)m;
        if (f->label == PROTOBUF_C_LABEL_REPEATED) {
            size_t n = 0;
            json_t *items = v;
            json_t *map_items = NULL;
            if (json_is_object(v) && f->type == PROTOBUF_C_TYPE_MESSAGE) {
                /* a map: {"k": "v"} -> entries {key, value} */
                map_items = json_array();
                const char *mk;
                json_t *mv;
                json_object_foreach(v, mk, mv) json_array_append_new(
                    map_items, json_pack("{s:s, s:O}", "key", mk, "value", mv));
                items = map_items;
            }
            n = json_array_size(items);
            size_t es = _elem_size(f);
            char *arr = ts_calloc(n + 1, es);
            for (size_t i = 0; i < n; i++)
                _set_scalar(f, arr + i * es, json_array_get(items, i));
            *(size_t *)(base + f->quantifier_offset) = n;
            *(void **)(base + f->offset) = arr;
            json_decref(map_items);
        } else {
            _set_scalar(f, base + f->offset, v);
            if (f->label == PROTOBUF_C_LABEL_OPTIONAL && f->quantifier_offset)
                *(protobuf_c_boolean *)(base + f->quantifier_offset) = 1;
        }
    }
    return m;
}

/* ---- protobuf -> JSON ---------------------------------------------------------- */

static json_t *_to_json(const ProtobufCMessage *m);

static json_t *_scalar_json(const ProtobufCFieldDescriptor *f, const void *src)
{
    switch (f->type) {
    case PROTOBUF_C_TYPE_INT32:
    case PROTOBUF_C_TYPE_SINT32:
    case PROTOBUF_C_TYPE_SFIXED32:
    case PROTOBUF_C_TYPE_ENUM:
        return json_integer(*(const int32_t *)src);
    case PROTOBUF_C_TYPE_UINT32:
    case PROTOBUF_C_TYPE_FIXED32:
        return json_integer(*(const uint32_t *)src);
    case PROTOBUF_C_TYPE_INT64:
    case PROTOBUF_C_TYPE_SINT64:
    case PROTOBUF_C_TYPE_SFIXED64:
    case PROTOBUF_C_TYPE_UINT64:
    case PROTOBUF_C_TYPE_FIXED64:
        return json_integer((json_int_t) * (const int64_t *)src);
    case PROTOBUF_C_TYPE_FLOAT:
        return json_real(*(const float *)src);
    case PROTOBUF_C_TYPE_DOUBLE:
        return json_real(*(const double *)src);
    case PROTOBUF_C_TYPE_BOOL:
        return json_boolean(*(const protobuf_c_boolean *)src);
    case PROTOBUF_C_TYPE_STRING: {
        const char *s = *(char *const *)src;
        return json_string(s ? s : "") ?: json_string("<not utf-8>");
    }
    case PROTOBUF_C_TYPE_BYTES: {
        const ProtobufCBinaryData *b = src;
        return json_stringn((const char *)b->data, b->len) ?: json_string("<bytes>");
    }
    case PROTOBUF_C_TYPE_MESSAGE: {
        const ProtobufCMessage *sub = *(ProtobufCMessage *const *)src;
        return sub ? _to_json(sub) : json_null();
    }
    }
    return json_null();
}

static json_t *_to_json(const ProtobufCMessage *m)
{
    const ProtobufCMessageDescriptor *d = m->descriptor;
    json_t *j = json_object();
    const char *base = (const char *)m;
    for (unsigned i = 0; i < d->n_fields; i++) {
        const ProtobufCFieldDescriptor *f = &d->fields[i];
        if (f->label == PROTOBUF_C_LABEL_REPEATED) {
            size_t n = *(const size_t *)(base + f->quantifier_offset);
            const char *arr = *(char *const *)(base + f->offset);
            json_t *a = json_array();
            for (size_t k = 0; k < n; k++)
                json_array_append_new(a, _scalar_json(f, arr + k * _elem_size(f)));
            json_object_set_new(j, f->name, a);
        } else {
            json_object_set_new(j, f->name, _scalar_json(f, base + f->offset));
        }
    }
    return j;
}

/* ---- commands --------------------------------------------------------------------- */

static kbus *_bus(void)
{
    const char *bs = getenv("KAFKA_BOOTSTRAP");
    if (!bs || !*bs) bs = getenv("TESSERA_KAFKA_BOOTSTRAP");
    if (!bs || !*bs) {
        fprintf(stderr, "KAFKA_BOOTSTRAP is not set\n");
        exit(2);
    }
    kbus_opts o = {.bootstrap = bs,
                   .service = "agent-testctl",
                   .instance = "test",
                   .linger_ms = 1,
                   .max_attempts = 1,
                   .retry_backoff_ms = 10};
    ts_err err = {{0}};
    kbus *b = kbus_new(&o, &err);
    if (!b) {
        fprintf(stderr, "kafka: %s\n", err.msg);
        exit(1);
    }
    return b;
}

static int _publish(int argc, char **argv)
{
    if (argc != 6) {
        fprintf(stderr, "usage: publish <topic> <key> <Type> '<json>'\n");
        return 2;
    }
    const ProtobufCMessageDescriptor *d = _find(argv[4]);
    if (!d) {
        fprintf(stderr, "unknown message type %s\n", argv[4]);
        return 2;
    }
    json_error_t je;
    json_t *j = json_loads(argv[5], 0, &je);
    if (!json_is_object(j)) {
        fprintf(stderr, "bad JSON: %s\n", je.text);
        return 2;
    }
    ProtobufCMessage *m = _from_json(d, j);
    kbus *b = _bus();
    ts_err err = {{0}};
    char corr[TS_UUID_STRLEN];
    ts_uuid4(corr);
    bool ok = kbus_publish(b, argv[2], argv[3], m, corr, argv[3], &err) && kbus_flush(b, 10000);
    kbus_close(b, 5000);
    if (!ok) {
        fprintf(stderr, "publish failed: %s\n", err.msg[0] ? err.msg : "flush timed out");
        return 1;
    }
    return 0;
}

static pthread_mutex_t out_mu = PTHREAD_MUTEX_INITIALIZER;

static kbus_result _on_msg(const kbus_msg *msg, void *ctx, ts_err *reason)
{
    (void)ctx;
    (void)reason;
    const Tessera__V1__Envelope *env = msg->env;
    json_t *j = json_pack("{s:s, s:s, s:s, s:s, s:s, s:I}", "topic", msg->topic, "key",
                          msg->key ? msg->key : "", "type", env->type ? env->type : "", "event_id",
                          env->event_id ? env->event_id : "", "correlation_id",
                          env->correlation_id ? env->correlation_id : "", "occurred_at_ms",
                          (json_int_t)env->occurred_at_ms);
    const ProtobufCMessageDescriptor *d = _find(env->type ? env->type : "");
    if (d) {
        ProtobufCMessage *m =
            protobuf_c_message_unpack(d, NULL, env->payload.len, env->payload.data);
        if (m) {
            json_object_set_new(j, "payload", _to_json(m));
            protobuf_c_message_free_unpacked(m, NULL);
        }
    }
    char *s = json_dumps(j, JSON_COMPACT);
    pthread_mutex_lock(&out_mu);
    fputs(s, stdout);
    fputc('\n', stdout);
    fflush(stdout);
    pthread_mutex_unlock(&out_mu);
    free(s);
    json_decref(j);
    return KBUS_DONE;
}

static int _consume(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: consume <topic>[,<topic>...] [seconds]\n");
        return 2;
    }
    char *topics_s = ts_strdup(argv[2]);
    const char *topics[16];
    int n = 0;
    char *save = NULL;
    for (char *t = strtok_r(topics_s, ",", &save); t && n < 15; t = strtok_r(NULL, ",", &save))
        topics[n++] = t;
    topics[n] = NULL;
    int seconds = argc > 3 ? atoi(argv[3]) : 0;
    kbus *b = _bus();
    char group[80];
    char id[TS_UUID_STRLEN];
    ts_uuid4(id);
    snprintf(group, sizeof(group), "agent-testctl.%s", id);
    ts_err err = {{0}};
    kbus_consumer *c = kbus_consume(b, group, topics, _on_msg, NULL, &err);
    if (!c) {
        fprintf(stderr, "consume: %s\n", err.msg);
        return 1;
    }
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    if (seconds > 0) {
        struct timespec ts = {.tv_sec = seconds};
        sigtimedwait(&set, NULL, &ts);
    } else {
        int sig;
        sigwait(&set, &sig);
    }
    kbus_consumer_stop(c);
    kbus_close(b, 1000);
    free(topics_s);
    return 0;
}

int main(int argc, char **argv)
{
    /* signals are waited for, not delivered (threads inherit the mask) */
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    pthread_sigmask(SIG_BLOCK, &set, NULL);
    tlog_init("agent-testctl", "test");
    if (!tlog_set_level(getenv("TESTCTL_LOG_LEVEL") ? getenv("TESTCTL_LOG_LEVEL") : "warn"))
        return 2;
    if (argc >= 2 && strcmp(argv[1], "publish") == 0) return _publish(argc, argv);
    if (argc >= 2 && strcmp(argv[1], "consume") == 0) return _consume(argc, argv);
    fprintf(stderr,
            "usage: %s publish <topic> <key> <Type> '<json>' | consume <topics> [seconds]\n",
            argv[0]);
    return 2;
}
