/* envelope.h: the one protobuf envelope every event travels in
 * (proto/tessera/v1/envelope.proto). The payload is the serialized message
 * named by `type` (e.g. "tessera.v1.ApiAccess"). */
#ifndef TESSERA_ENVELOPE_H
#define TESSERA_ENVELOPE_H

#include "libcommon/common.h"
#include "tessera/v1/envelope.pb-c.h"

#include <protobuf-c/protobuf-c.h>

/* Fill a new envelope around payload: fresh event id, occurred_at = now,
 * producer = "<service>/<instance>", schema_version from the message's
 * descriptor (1 for v1). correlation_id and subject_id may be NULL.
 * Returns a heap buffer with the packed envelope (free with free()). */
uint8_t *envelope_pack(const ProtobufCMessage *payload, const char *producer,
                       const char *correlation_id, const char *subject_id, size_t *len_out);

/* The same around a payload already serialized (payload_len bytes of the
 * message whose fully-qualified name is type, e.g. "tessera.v1.ApiAccessBatch"),
 * for producers that build it piecewise. event_id_out, when not NULL, gets the
 * new envelope's event id. */
uint8_t *envelope_pack_bytes(const char *type, const uint8_t *payload, size_t payload_len,
                             const char *producer, const char *correlation_id,
                             const char *subject_id, char event_id_out[TS_UUID_STRLEN],
                             size_t *len_out);

/* Decode; NULL with err set for garbage, a missing event id or type, or an
 * unknown schema version. Free with envelope_free(). */
Tessera__V1__Envelope *envelope_unpack(const uint8_t *data, size_t len, ts_err *err);
void envelope_free(Tessera__V1__Envelope *env);

/* Decode the payload as the given message type; NULL with err set when the
 * envelope's type names another message or the payload does not decode.
 * Free with protobuf_c_message_free_unpacked(msg, NULL). */
ProtobufCMessage *envelope_payload(const Tessera__V1__Envelope *env,
                                   const ProtobufCMessageDescriptor *desc, ts_err *err);

#endif
