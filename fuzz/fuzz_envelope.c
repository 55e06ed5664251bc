/* fuzz_envelope.c: arbitrary bytes as a packed event envelope. When
 * envelope_unpack accepts them, decode the payload with several message
 * descriptors (the one the envelope names, and each one forced), re-pack what
 * decodes, and free everything: crashes and leaks are findings. */
#include "libcommon/envelope.h"
#include "libcommon/log.h"
#include "tessera/v1/agent.pb-c.h"
#include "tessera/v1/audit.pb-c.h"
#include "tessera/v1/kernel.pb-c.h"
#include "tessera/v1/session.pb-c.h"
#include "tessera/v1/usage.pb-c.h"
#include "tessera/v1/vfolder.pb-c.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const ProtobufCMessageDescriptor *const descs[] = {
    &tessera__v1__api_access__descriptor,     &tessera__v1__session_enqueued__descriptor,
    &tessera__v1__kernel_started__descriptor, &tessera__v1__agent_heartbeat__descriptor,
    &tessera__v1__kernel_usage__descriptor,   &tessera__v1__vfolder_created__descriptor,
};

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    FILE *devnull = fopen("/dev/null", "w");
    if (!devnull) abort();
    tlog_set_stream(devnull);
    return 0;
}

static void check_payload(const Tessera__V1__Envelope *env, const ProtobufCMessageDescriptor *d)
{
    ts_err err = {{0}};
    ProtobufCMessage *msg = envelope_payload(env, d, &err);
    if (!msg) {
        if (!err.msg[0]) abort();
        return;
    }
    if (msg->descriptor != d) abort();
    /* What decodes packs again, and the envelope round-trips. */
    size_t len = 0;
    uint8_t *packed = envelope_pack(msg, env->producer, env->correlation_id, env->subject_id, &len);
    Tessera__V1__Envelope *again = envelope_unpack(packed, len, &err);
    if (!again || strcmp(again->type, d->name) != 0) abort();
    envelope_free(again);
    free(packed);
    protobuf_c_message_free_unpacked(msg, NULL);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    ts_err err = {{0}};
    Tessera__V1__Envelope *env = envelope_unpack(data, size, &err);
    if (!env) {
        if (!err.msg[0]) abort();
        return 0;
    }
    if (!env->event_id[0] || !env->type[0] || env->schema_version != 1) abort();
    for (size_t i = 0; i < TS_ARRAY_LEN(descs); i++) {
        check_payload(env, descs[i]);
        /* The same payload bytes as if the envelope named this type. */
        Tessera__V1__Envelope forced = *env;
        forced.type = (char *)descs[i]->name;
        check_payload(&forced, descs[i]);
    }
    envelope_free(env);
    return 0;
}
