/* envelope.c: pack and unpack the event envelope (envelope.h). */
#include "libcommon/envelope.h"

#include <stdlib.h>
#include <string.h>

/* The one schema version this build produces and accepts (tessera.v1). */
#define ENVELOPE_SCHEMA_VERSION 1u

uint8_t *envelope_pack_bytes(const char *type, const uint8_t *payload, size_t payload_len,
                             const char *producer, const char *correlation_id,
                             const char *subject_id, char event_id_out[TS_UUID_STRLEN],
                             size_t *len_out)
{
    ts_assert(type && (payload || payload_len == 0) && len_out);

    char event_id[TS_UUID_STRLEN];
    ts_uuid7(event_id); /* time-ordered: cheap to index where events are stored */
    if (event_id_out) memcpy(event_id_out, event_id, TS_UUID_STRLEN);

    Tessera__V1__Envelope env = TESSERA__V1__ENVELOPE__INIT;
    env.event_id = event_id;
    env.type = (char *)type;
    env.schema_version = ENVELOPE_SCHEMA_VERSION;
    env.occurred_at_ms = ts_now_wall_ms();
    env.producer = (char *)(producer ? producer : "");
    env.correlation_id = (char *)(correlation_id ? correlation_id : "");
    env.subject_id = (char *)(subject_id ? subject_id : "");
    env.payload.data = (uint8_t *)payload;
    env.payload.len = payload_len;

    size_t len = tessera__v1__envelope__get_packed_size(&env);
    uint8_t *out = ts_malloc(len);
    tessera__v1__envelope__pack(&env, out);
    *len_out = len;
    return out;
}

uint8_t *envelope_pack(const ProtobufCMessage *payload, const char *producer,
                       const char *correlation_id, const char *subject_id, size_t *len_out)
{
    ts_assert(payload && payload->descriptor && len_out);

    size_t plen = protobuf_c_message_get_packed_size(payload);
    uint8_t *pbuf = ts_malloc(plen);
    protobuf_c_message_pack(payload, pbuf);
    uint8_t *out = envelope_pack_bytes(payload->descriptor->name, pbuf, plen, producer,
                                       correlation_id, subject_id, NULL, len_out);
    free(pbuf);
    return out;
}

Tessera__V1__Envelope *envelope_unpack(const uint8_t *data, size_t len, ts_err *err)
{
    if (!data || len == 0) {
        ts_err_set(err, "envelope: empty message");
        return NULL;
    }
    Tessera__V1__Envelope *env = tessera__v1__envelope__unpack(NULL, len, data);
    if (!env) {
        ts_err_set(err, "envelope: not a valid protobuf Envelope (%zu bytes)", len);
        return NULL;
    }
    if (!env->event_id || !env->event_id[0]) {
        ts_err_set(err, "envelope: missing event_id");
        goto bad;
    }
    if (!env->type || !env->type[0]) {
        ts_err_set(err, "envelope: missing type (event_id=%s)", env->event_id);
        goto bad;
    }
    if (env->schema_version == 0 || env->schema_version > ENVELOPE_SCHEMA_VERSION) {
        ts_err_set(err, "envelope: unsupported schema_version %u (want 1..%u; type=%s event_id=%s)",
                   env->schema_version, ENVELOPE_SCHEMA_VERSION, env->type, env->event_id);
        goto bad;
    }
    return env;
bad:
    tessera__v1__envelope__free_unpacked(env, NULL);
    return NULL;
}

void envelope_free(Tessera__V1__Envelope *env)
{
    if (env) tessera__v1__envelope__free_unpacked(env, NULL);
}

ProtobufCMessage *envelope_payload(const Tessera__V1__Envelope *env,
                                   const ProtobufCMessageDescriptor *desc, ts_err *err)
{
    ts_assert(env && desc);
    if (!env->type || strcmp(env->type, desc->name) != 0) {
        ts_err_set(err, "envelope: type is %s, expected %s", env->type ? env->type : "(none)",
                   desc->name);
        return NULL;
    }
    ProtobufCMessage *msg =
        protobuf_c_message_unpack(desc, NULL, env->payload.len, env->payload.data);
    if (!msg) {
        ts_err_set(err, "envelope: payload does not decode as %s (%zu bytes, event_id=%s)",
                   desc->name, env->payload.len, env->event_id ? env->event_id : "");
        return NULL;
    }
    return msg;
}
