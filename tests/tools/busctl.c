/* tessera-busctl: a test and debugging tool for the bus (docs/testing.md).
 *
 *   tessera-busctl publish -b BOOT -t TOPIC -T TYPE [-k KEY] [JSON]
 *       Publish one event: JSON is the payload with the proto field names
 *       ({"session_id": "s1", "kernels": [{"kernel_id": "k1", "slots":
 *       [{"name": "cpu", "amount": "1"}]}]}), enums by name or number, 64-bit
 *       integers as numbers or strings, bytes as hex. Without JSON, one payload
 *       per stdin line. A stdin line may also be a whole event:
 *       {"topic": ..., "type": ..., "key": ..., "payload": {...}}.
 *   tessera-busctl publish-raw -b BOOT -t TOPIC [-k KEY] TEXT
 *       Produce TEXT as the record value, no envelope (undecodable on purpose).
 *   tessera-busctl dump -b BOOT -t TOPIC [--from-end] [--type T] [--key K]
 *                       [--count N] [--timeout S] [--idle S]
 *       Print records as JSON lines {"topic", "partition", "offset", "key",
 *       "type", "event_id", "producer", "occurred_at_ms", "payload"}; stops after
 *       N matching records, S seconds, or S seconds without a record. Exit 0
 *       when --count was reached (or not given), 1 otherwise. Every partition is
 *       assigned directly (no consumer group to join), nothing committed,
 *       nothing dead-lettered.
 *   tessera-busctl types
 *       List the message types it knows. */
#include "libcommon/envelope.h"
#include "libcommon/kbus.h"
#include "libcommon/log.h"

#include <getopt.h>
#include <jansson.h>
#include <librdkafka/rdkafka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

extern const ProtobufCMessageDescriptor *const busctl_types[];

static const ProtobufCMessageDescriptor *find_type(const char *name)
{
    for (int i = 0; busctl_types[i]; i++)
        if (strcmp(busctl_types[i]->name, name) == 0 ||
            strcmp(busctl_types[i]->short_name, name) == 0)
            return busctl_types[i];
    return NULL;
}

/* ---- protobuf -> JSON ------------------------------------------------------------------- */

static json_t *msg_to_json(const ProtobufCMessage *m);

static json_t *value_to_json(const ProtobufCFieldDescriptor *f, const void *p)
{
    switch (f->type) {
    case PROTOBUF_C_TYPE_INT32:
    case PROTOBUF_C_TYPE_SINT32:
    case PROTOBUF_C_TYPE_SFIXED32:
        return json_integer(*(const int32_t *)p);
    case PROTOBUF_C_TYPE_UINT32:
    case PROTOBUF_C_TYPE_FIXED32:
        return json_integer(*(const uint32_t *)p);
    case PROTOBUF_C_TYPE_INT64:
    case PROTOBUF_C_TYPE_SINT64:
    case PROTOBUF_C_TYPE_SFIXED64:
        return json_integer((json_int_t) * (const int64_t *)p);
    case PROTOBUF_C_TYPE_UINT64:
    case PROTOBUF_C_TYPE_FIXED64:
        return json_integer((json_int_t) * (const uint64_t *)p);
    case PROTOBUF_C_TYPE_FLOAT:
        return json_real(*(const float *)p);
    case PROTOBUF_C_TYPE_DOUBLE:
        return json_real(*(const double *)p);
    case PROTOBUF_C_TYPE_BOOL:
        return json_boolean(*(const protobuf_c_boolean *)p);
    case PROTOBUF_C_TYPE_ENUM: {
        const ProtobufCEnumValue *v =
            protobuf_c_enum_descriptor_get_value(f->descriptor, *(const int *)p);
        return v ? json_string(v->name) : json_integer(*(const int *)p);
    }
    case PROTOBUF_C_TYPE_STRING: {
        const char *s = *(char *const *)p;
        return json_string(s ? s : "");
    }
    case PROTOBUF_C_TYPE_BYTES: {
        const ProtobufCBinaryData *b = p;
        char *hex = ts_malloc(b->len * 2 + 1);
        for (size_t i = 0; i < b->len; i++)
            snprintf(hex + 2 * i, 3, "%02x", b->data[i]);
        hex[b->len * 2] = '\0';
        json_t *j = json_string(hex);
        free(hex);
        return j;
    }
    case PROTOBUF_C_TYPE_MESSAGE: {
        const ProtobufCMessage *sub = *(ProtobufCMessage *const *)p;
        return sub ? msg_to_json(sub) : json_null();
    }
    }
    return json_null();
}

static size_t type_size(const ProtobufCFieldDescriptor *f)
{
    switch (f->type) {
    case PROTOBUF_C_TYPE_INT64:
    case PROTOBUF_C_TYPE_SINT64:
    case PROTOBUF_C_TYPE_SFIXED64:
    case PROTOBUF_C_TYPE_UINT64:
    case PROTOBUF_C_TYPE_FIXED64:
    case PROTOBUF_C_TYPE_DOUBLE:
        return 8;
    case PROTOBUF_C_TYPE_STRING:
    case PROTOBUF_C_TYPE_MESSAGE:
        return sizeof(void *);
    case PROTOBUF_C_TYPE_BYTES:
        return sizeof(ProtobufCBinaryData);
    case PROTOBUF_C_TYPE_BOOL:
        return sizeof(protobuf_c_boolean);
    default:
        return 4;
    }
}

static json_t *msg_to_json(const ProtobufCMessage *m)
{
    json_t *o = json_object();
    const ProtobufCMessageDescriptor *d = m->descriptor;
    for (unsigned i = 0; i < d->n_fields; i++) {
        const ProtobufCFieldDescriptor *f = &d->fields[i];
        const char *base = (const char *)m + f->offset;
        if (f->label == PROTOBUF_C_LABEL_REPEATED) {
            size_t n = *(const size_t *)((const char *)m + f->quantifier_offset);
            const char *arr = *(char *const *)base;
            json_t *a = json_array();
            for (size_t k = 0; k < n; k++)
                json_array_append_new(a, value_to_json(f, arr + k * type_size(f)));
            json_object_set_new(o, f->name, a);
        } else {
            json_object_set_new(o, f->name, value_to_json(f, base));
        }
    }
    return o;
}

/* ---- JSON -> protobuf -------------------------------------------------------------------- */

static ProtobufCMessage *msg_from_json(const ProtobufCMessageDescriptor *d, json_t *j, ts_err *err);

static bool int_of(json_t *v, long long *out)
{
    if (json_is_integer(v)) {
        *out = json_integer_value(v);
        return true;
    }
    if (json_is_string(v)) {
        char *end;
        *out = strtoll(json_string_value(v), &end, 10);
        return *json_string_value(v) && !*end;
    }
    if (json_is_boolean(v)) {
        *out = json_is_true(v);
        return true;
    }
    return false;
}

static bool value_from_json(const ProtobufCFieldDescriptor *f, json_t *v, void *p, ts_err *err)
{
    long long n;
    switch (f->type) {
    case PROTOBUF_C_TYPE_INT32:
    case PROTOBUF_C_TYPE_SINT32:
    case PROTOBUF_C_TYPE_SFIXED32:
    case PROTOBUF_C_TYPE_UINT32:
    case PROTOBUF_C_TYPE_FIXED32:
        if (!int_of(v, &n)) goto bad;
        *(int32_t *)p = (int32_t)n;
        return true;
    case PROTOBUF_C_TYPE_INT64:
    case PROTOBUF_C_TYPE_SINT64:
    case PROTOBUF_C_TYPE_SFIXED64:
    case PROTOBUF_C_TYPE_UINT64:
    case PROTOBUF_C_TYPE_FIXED64:
        if (!int_of(v, &n)) goto bad;
        *(int64_t *)p = n;
        return true;
    case PROTOBUF_C_TYPE_FLOAT:
        if (!json_is_number(v)) goto bad;
        *(float *)p = (float)json_number_value(v);
        return true;
    case PROTOBUF_C_TYPE_DOUBLE:
        if (!json_is_number(v)) goto bad;
        *(double *)p = json_number_value(v);
        return true;
    case PROTOBUF_C_TYPE_BOOL:
        if (!json_is_boolean(v)) goto bad;
        *(protobuf_c_boolean *)p = json_is_true(v);
        return true;
    case PROTOBUF_C_TYPE_ENUM: {
        if (json_is_string(v)) {
            const ProtobufCEnumValue *ev =
                protobuf_c_enum_descriptor_get_value_by_name(f->descriptor, json_string_value(v));
            if (!ev) goto bad;
            *(int *)p = ev->value;
            return true;
        }
        if (!int_of(v, &n)) goto bad;
        *(int *)p = (int)n;
        return true;
    }
    case PROTOBUF_C_TYPE_STRING:
        if (!json_is_string(v)) goto bad;
        *(char **)p = ts_strdup(json_string_value(v));
        return true;
    case PROTOBUF_C_TYPE_BYTES: {
        if (!json_is_string(v)) goto bad;
        const char *hex = json_string_value(v);
        size_t len = strlen(hex) / 2;
        ProtobufCBinaryData *b = p;
        b->data = ts_malloc(len + 1);
        b->len = len;
        for (size_t i = 0; i < len; i++) {
            unsigned x;
            if (sscanf(hex + 2 * i, "%2x", &x) != 1) goto bad;
            b->data[i] = (uint8_t)x;
        }
        return true;
    }
    case PROTOBUF_C_TYPE_MESSAGE: {
        ProtobufCMessage *sub = msg_from_json(f->descriptor, v, err);
        if (!sub) return false;
        *(ProtobufCMessage **)p = sub;
        return true;
    }
    }
bad:
    if (!err->msg[0]) ts_err_set(err, "field %s: bad value", f->name);
    return false;
}

static ProtobufCMessage *msg_from_json(const ProtobufCMessageDescriptor *d, json_t *j, ts_err *err)
{
    if (!json_is_object(j)) {
        ts_err_set(err, "%s: a JSON object is needed", d->name);
        return NULL;
    }
    ProtobufCMessage *m = ts_calloc(1, d->sizeof_message);
    d->message_init(m);
    const char *key;
    json_t *v;
    json_object_foreach(j, key, v)
    {
        const ProtobufCFieldDescriptor *f = protobuf_c_message_descriptor_get_field_by_name(d, key);
        if (!f) {
            ts_err_set(err, "%s has no field '%s'", d->name, key);
            goto fail;
        }
        char *base = (char *)m + f->offset;
        if (f->label == PROTOBUF_C_LABEL_REPEATED) {
            json_t *arr = v;
            json_t *tmp = NULL;
            if (json_is_object(v) && f->type == PROTOBUF_C_TYPE_MESSAGE) { /* a map */
                tmp = json_array();
                const char *mk;
                json_t *mv;
                json_object_foreach(v, mk, mv)
                    json_array_append_new(tmp, json_pack("{s:s, s:O}", "key", mk, "value", mv));
                arr = tmp;
            }
            if (!json_is_array(arr)) {
                ts_err_set(err, "field %s: a JSON array is needed", key);
                json_decref(tmp);
                goto fail;
            }
            size_t n = json_array_size(arr);
            char *a = ts_calloc(n + 1, type_size(f));
            *(char **)base = a;
            *(size_t *)((char *)m + f->quantifier_offset) = n;
            for (size_t i = 0; i < n; i++)
                if (!value_from_json(f, json_array_get(arr, i), a + i * type_size(f), err)) {
                    *(size_t *)((char *)m + f->quantifier_offset) = i;
                    json_decref(tmp);
                    goto fail;
                }
            json_decref(tmp);
        } else {
            if (f->quantifier_offset && f->label == PROTOBUF_C_LABEL_OPTIONAL)
                *(protobuf_c_boolean *)((char *)m + f->quantifier_offset) = 1;
            if (f->type == PROTOBUF_C_TYPE_STRING) {
                char *old = *(char **)base;
                if (!value_from_json(f, v, base, err)) {
                    *(char **)base = old;
                    goto fail;
                }
                continue;
            }
            if (!value_from_json(f, v, base, err)) goto fail;
        }
    }
    return m;
fail:
    ts_err_prefix(err, "%s", d->short_name);
    protobuf_c_message_free_unpacked(m, NULL);
    return NULL;
}

/* ---- commands ---------------------------------------------------------------------------- */

static kbus *bus_open(const char *boot)
{
    kbus_opts o = {.bootstrap = boot,
                   .service = "busctl",
                   .instance = "busctl",
                   .linger_ms = 5,
                   .max_attempts = 1,
                   .retry_backoff_ms = 100};
    ts_err err;
    kbus *b = kbus_new(&o, &err);
    if (!b) {
        fprintf(stderr, "tessera-busctl: %s\n", err.msg);
        exit(2);
    }
    return b;
}

static bool publish_one(kbus *b, const char *topic, const char *type, const char *key,
                        json_t *payload, ts_err *err)
{
    const ProtobufCMessageDescriptor *d = type ? find_type(type) : NULL;
    if (!d) {
        ts_err_set(err, "unknown type '%s' (tessera-busctl types)", type ? type : "");
        return false;
    }
    ProtobufCMessage *m = msg_from_json(d, payload, err);
    if (!m) return false;
    bool ok = kbus_publish(b, topic, key && *key ? key : NULL, m, NULL, key, err);
    protobuf_c_message_free_unpacked(m, NULL);
    return ok;
}

static int cmd_publish(const char *boot, const char *topic, const char *type, const char *key,
                       const char *json, bool raw)
{
    kbus *b = bus_open(boot);
    ts_err err = {{0}};
    int rc = 0;
    long n = 0;
    if (raw) {
        if (!kbus_produce_raw(b, topic, key, json, strlen(json), &err)) rc = 1;
        n = rc == 0;
    } else if (json) {
        json_error_t je;
        json_t *j = json_loads(json, 0, &je);
        if (!j) {
            fprintf(stderr, "tessera-busctl: JSON: %s\n", je.text);
            kbus_close(b, 1000);
            return 2;
        }
        if (!publish_one(b, topic, type, key, j, &err)) rc = 1;
        n = rc == 0;
        json_decref(j);
    } else {
        char *line = NULL;
        size_t cap = 0;
        ssize_t len;
        while ((len = getline(&line, &cap, stdin)) > 0) {
            if (len <= 1) continue;
            json_error_t je;
            json_t *j = json_loads(line, 0, &je);
            if (!j) {
                fprintf(stderr, "tessera-busctl: line %ld: JSON: %s\n", n + 1, je.text);
                rc = 2;
                break;
            }
            json_t *pl = json_object_get(j, "payload");
            bool ok;
            if (pl && json_object_get(j, "type")) {
                const char *t = json_string_value(json_object_get(j, "topic"));
                const char *k = json_string_value(json_object_get(j, "key"));
                ok = publish_one(b, t ? t : topic, json_string_value(json_object_get(j, "type")),
                                 k ? k : key, pl, &err);
            } else {
                ok = publish_one(b, topic, type, key, j, &err);
            }
            json_decref(j);
            if (!ok) {
                rc = 1;
                break;
            }
            n++;
        }
        free(line);
    }
    if (rc == 1) fprintf(stderr, "tessera-busctl: %s\n", err.msg);
    if (!kbus_flush(b, 30000)) {
        fprintf(stderr, "tessera-busctl: not every event was acknowledged\n");
        rc = 1;
    }
    kbus_close(b, 5000);
    if (rc == 0) fprintf(stderr, "published %ld\n", n);
    return rc;
}

static int cmd_dump(const char *boot, const char *topic, bool from_end, const char *want_type,
                    const char *want_key, long count, double timeout_s, double idle_s)
{
    rd_kafka_conf_t *conf = rd_kafka_conf_new();
    char errstr[512], group[64];
    snprintf(group, sizeof(group), "busctl.%d.%lld", (int)getpid(), (long long)ts_now_wall_ms());
    const char *kv[][2] = {{"bootstrap.servers", boot},
                           {"group.id", group},
                           {"auto.offset.reset", from_end ? "latest" : "earliest"},
                           {"enable.auto.commit", "false"},
                           {"topic.metadata.refresh.interval.ms", "1000"},
                           {"fetch.wait.max.ms", "50"},
                           {"log_level", "3"}};
    for (size_t i = 0; i < TS_ARRAY_LEN(kv); i++)
        if (rd_kafka_conf_set(conf, kv[i][0], kv[i][1], errstr, sizeof(errstr)) !=
            RD_KAFKA_CONF_OK) {
            fprintf(stderr, "tessera-busctl: %s\n", errstr);
            return 2;
        }
    rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_CONSUMER, conf, errstr, sizeof(errstr));
    if (!rk) {
        fprintf(stderr, "tessera-busctl: %s\n", errstr);
        return 2;
    }
    rd_kafka_poll_set_consumer(rk);
    /* Every partition assigned directly (no group join to wait for): the
     * topic's partitions from the metadata, retried while it does not exist. */
    int64_t start = ts_now_mono_ms(), last = 0; /* idle counts from the first record */
    int nparts = 0;
    while (nparts == 0 && ts_now_mono_ms() - start < (int64_t)(timeout_s * 1000)) {
        rd_kafka_topic_t *rkt = rd_kafka_topic_new(rk, topic, NULL);
        const struct rd_kafka_metadata *md = NULL;
        if (rd_kafka_metadata(rk, 0, rkt, &md, 5000) == RD_KAFKA_RESP_ERR_NO_ERROR) {
            if (md->topic_cnt == 1 && !md->topics[0].err) nparts = md->topics[0].partition_cnt;
            rd_kafka_metadata_destroy(md);
        }
        rd_kafka_topic_destroy(rkt);
        if (nparts == 0) usleep(200000);
    }
    rd_kafka_topic_partition_list_t *parts = rd_kafka_topic_partition_list_new(nparts ? nparts : 1);
    for (int p = 0; p < nparts; p++)
        rd_kafka_topic_partition_list_add(parts, topic, p)->offset =
            from_end ? RD_KAFKA_OFFSET_END : RD_KAFKA_OFFSET_BEGINNING;
    if (nparts) rd_kafka_assign(rk, parts);
    rd_kafka_topic_partition_list_destroy(parts);
    long found = 0;
    while ((count <= 0 || found < count) &&
           ts_now_mono_ms() - start < (int64_t)(timeout_s * 1000)) {
        if (idle_s > 0 && last && ts_now_mono_ms() - last > (int64_t)(idle_s * 1000)) break;
        rd_kafka_message_t *m = rd_kafka_consumer_poll(rk, 100);
        if (!m) continue;
        if (m->err) {
            rd_kafka_message_destroy(m);
            continue;
        }
        last = ts_now_mono_ms();
        char *key = m->key ? ts_strndup(m->key, m->key_len) : NULL;
        json_t *o =
            json_pack("{s:s, s:i, s:I, s:s?}", "topic", rd_kafka_topic_name(m->rkt), "partition",
                      (int)m->partition, "offset", (json_int_t)m->offset, "key", key);
        ts_err err;
        Tessera__V1__Envelope *env = envelope_unpack(m->payload, m->len, &err);
        const char *type = env ? env->type : "";
        if (env) {
            json_object_set_new(o, "type", json_string(env->type));
            json_object_set_new(o, "event_id", json_string(env->event_id));
            json_object_set_new(o, "producer", json_string(env->producer));
            json_object_set_new(o, "occurred_at_ms", json_integer(env->occurred_at_ms));
            const ProtobufCMessageDescriptor *d = find_type(env->type);
            ProtobufCMessage *pm = d ? envelope_payload(env, d, &err) : NULL;
            json_object_set_new(o, "payload", pm ? msg_to_json(pm) : json_null());
            if (pm) protobuf_c_message_free_unpacked(pm, NULL);
        } else {
            json_object_set_new(o, "undecodable", json_string(err.msg));
            json_object_set_new(o, "value", json_stringn(m->payload ? m->payload : "", m->len));
        }
        bool match =
            (!want_type ||
             (env && (strcmp(type, want_type) == 0 || (strncmp(type, "tessera.v1.", 11) == 0 &&
                                                       strcmp(type + 11, want_type) == 0)))) &&
            (!want_key || (key && strcmp(key, want_key) == 0));
        if (match) {
            char *s = json_dumps(o, JSON_COMPACT);
            printf("%s\n", s);
            fflush(stdout);
            free(s);
            found++;
        }
        json_decref(o);
        if (env) envelope_free(env);
        free(key);
        rd_kafka_message_destroy(m);
    }
    rd_kafka_assign(rk, NULL);
    rd_kafka_destroy(rk);
    return count > 0 && found < count ? 1 : 0;
}

static void usage(FILE *out)
{
    fprintf(out, "Usage: tessera-busctl publish -b BOOT -t TOPIC -T TYPE [-k KEY] [JSON]\n"
                 "       tessera-busctl publish-raw -b BOOT -t TOPIC [-k KEY] TEXT\n"
                 "       tessera-busctl dump -b BOOT -t TOPIC [--from-end] [--type T] [--key K]\n"
                 "                           [--count N] [--timeout S] [--idle S]\n"
                 "       tessera-busctl types\n"
                 "BOOT defaults to $KAFKA_BOOTSTRAP. See docs/testing.md.\n");
}

int main(int argc, char **argv)
{
    if (argc < 2 || strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
        usage(argc < 2 ? stderr : stdout);
        return argc < 2 ? 2 : 0;
    }
    const char *cmd = argv[1];
    if (strcmp(cmd, "types") == 0) {
        for (int i = 0; busctl_types[i]; i++)
            printf("%s\n", busctl_types[i]->name);
        return 0;
    }
    tlog_init("busctl", "busctl");
    if (!tlog_set_level("warn")) return 2;
    const char *boot = getenv("KAFKA_BOOTSTRAP"), *topic = NULL, *type = NULL, *key = NULL;
    bool from_end = false;
    long count = 0;
    double timeout_s = 10, idle_s = 0;
    static const struct option opts[] = {{"bootstrap", required_argument, NULL, 'b'},
                                         {"topic", required_argument, NULL, 't'},
                                         {"type", required_argument, NULL, 'T'},
                                         {"key", required_argument, NULL, 'k'},
                                         {"from-end", no_argument, NULL, 'e'},
                                         {"count", required_argument, NULL, 'n'},
                                         {"timeout", required_argument, NULL, 'w'},
                                         {"idle", required_argument, NULL, 'i'},
                                         {NULL, 0, NULL, 0}};
    optind = 2;
    int c;
    while ((c = getopt_long(argc, argv, "b:t:T:k:en:w:i:", opts, NULL)) != -1) {
        switch (c) {
        case 'b':
            boot = optarg;
            break;
        case 't':
            topic = optarg;
            break;
        case 'T':
            type = optarg;
            break;
        case 'k':
            key = optarg;
            break;
        case 'e':
            from_end = true;
            break;
        case 'n':
            count = atol(optarg);
            break;
        case 'w':
            timeout_s = atof(optarg);
            break;
        case 'i':
            idle_s = atof(optarg);
            break;
        default:
            usage(stderr);
            return 2;
        }
    }
    if (!boot || !topic) {
        fprintf(stderr,
                "tessera-busctl: --bootstrap (or KAFKA_BOOTSTRAP) and --topic are needed\n");
        return 2;
    }
    const char *arg = optind < argc ? argv[optind] : NULL;
    if (strcmp(cmd, "publish") == 0) {
        if (!type && arg) {
            fprintf(stderr, "tessera-busctl: --type is needed\n");
            return 2;
        }
        return cmd_publish(boot, topic, type, key, arg, false);
    }
    if (strcmp(cmd, "publish-raw") == 0) {
        if (!arg) {
            usage(stderr);
            return 2;
        }
        return cmd_publish(boot, topic, NULL, key, arg, true);
    }
    if (strcmp(cmd, "dump") == 0)
        return cmd_dump(boot, topic, from_end, type, key, count, timeout_s, idle_s);
    usage(stderr);
    return 2;
}
