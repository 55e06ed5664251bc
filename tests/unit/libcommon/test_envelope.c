/* test_envelope.c: the event envelope (libcommon/envelope.c). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "libcommon/envelope.h"
#include "tessera/v1/audit.pb-c.h"
#include "tessera/v1/session.pb-c.h"

#include <stdlib.h>
#include <string.h>

static uint8_t *pack_access(size_t *len)
{
    Tessera__V1__ApiAccess a = TESSERA__V1__API_ACCESS__INIT;
    a.access_key = "AKIATEST";
    a.user_id = "u-1";
    a.client_addr = "10.0.0.1:5555";
    a.method = "POST";
    a.path = "/session";
    a.status = 201;
    a.latency_us = 1234;
    a.request_id = "req-9";
    a.occurred_at_ms = 1700000000000;
    return envelope_pack(&a.base, "gateway/node-1", "req-9", "u-1", len);
}

static void test_round_trip(void **state)
{
    (void)state;
    int64_t before = ts_now_wall_ms();
    size_t len;
    uint8_t *buf = pack_access(&len);
    int64_t after = ts_now_wall_ms();
    assert_non_null(buf);
    assert_true(len > 0);

    ts_err err = {{0}};
    Tessera__V1__Envelope *env = envelope_unpack(buf, len, &err);
    assert_non_null(env);
    assert_true(ts_uuid_valid(env->event_id));
    assert_string_equal(env->type, "tessera.v1.ApiAccess");
    assert_int_equal(env->schema_version, 1);
    assert_true(env->occurred_at_ms >= before && env->occurred_at_ms <= after);
    assert_string_equal(env->producer, "gateway/node-1");
    assert_string_equal(env->correlation_id, "req-9");
    assert_string_equal(env->subject_id, "u-1");

    ProtobufCMessage *m = envelope_payload(env, &tessera__v1__api_access__descriptor, &err);
    assert_non_null(m);
    Tessera__V1__ApiAccess *a = (Tessera__V1__ApiAccess *)m;
    assert_string_equal(a->access_key, "AKIATEST");
    assert_string_equal(a->user_id, "u-1");
    assert_string_equal(a->client_addr, "10.0.0.1:5555");
    assert_string_equal(a->method, "POST");
    assert_string_equal(a->path, "/session");
    assert_int_equal(a->status, 201);
    assert_int_equal(a->latency_us, 1234);
    assert_string_equal(a->request_id, "req-9");
    assert_int_equal(a->occurred_at_ms, 1700000000000);
    protobuf_c_message_free_unpacked(m, NULL);
    envelope_free(env);
    free(buf);
}

static void test_fresh_event_ids_and_null_ids(void **state)
{
    (void)state;
    Tessera__V1__SessionCancelled c = TESSERA__V1__SESSION_CANCELLED__INIT;
    c.session_id = "s-1";
    size_t l1, l2;
    uint8_t *b1 = envelope_pack(&c.base, "registry/x", NULL, NULL, &l1);
    uint8_t *b2 = envelope_pack(&c.base, "registry/x", NULL, NULL, &l2);
    ts_err err = {{0}};
    Tessera__V1__Envelope *e1 = envelope_unpack(b1, l1, &err);
    Tessera__V1__Envelope *e2 = envelope_unpack(b2, l2, &err);
    assert_non_null(e1);
    assert_non_null(e2);
    assert_string_not_equal(e1->event_id, e2->event_id);
    assert_string_equal(e1->correlation_id, "");
    assert_string_equal(e1->subject_id, "");
    assert_string_equal(e1->type, "tessera.v1.SessionCancelled");
    envelope_free(e1);
    envelope_free(e2);
    free(b1);
    free(b2);
}

/* A payload serialized beforehand travels as given, under the type named,
 * and the new event id is handed back. */
static void test_pack_bytes(void **state)
{
    (void)state;
    Tessera__V1__ApiAccess a = TESSERA__V1__API_ACCESS__INIT;
    a.method = "GET";
    a.path = "/x";
    uint8_t rec[64];
    size_t rlen = tessera__v1__api_access__pack(&a, rec + 2);
    rec[0] = 0x0a; /* ApiAccessBatch.records, length-delimited */
    rec[1] = (uint8_t)rlen;
    char id[TS_UUID_STRLEN];
    size_t len;
    uint8_t *buf = envelope_pack_bytes("tessera.v1.ApiAccessBatch", rec, rlen + 2, "gateway/n",
                                       NULL, NULL, id, &len);
    ts_err err = {{0}};
    Tessera__V1__Envelope *env = envelope_unpack(buf, len, &err);
    assert_non_null(env);
    assert_string_equal(env->event_id, id);
    assert_string_equal(env->type, "tessera.v1.ApiAccessBatch");
    assert_string_equal(env->producer, "gateway/n");
    assert_string_equal(env->correlation_id, "");
    assert_int_equal(env->payload.len, rlen + 2);
    assert_memory_equal(env->payload.data, rec, rlen + 2);
    Tessera__V1__ApiAccessBatch *b = (Tessera__V1__ApiAccessBatch *)envelope_payload(
        env, &tessera__v1__api_access_batch__descriptor, &err);
    assert_non_null(b);
    assert_int_equal(b->n_records, 1);
    assert_string_equal(b->records[0]->path, "/x");
    protobuf_c_message_free_unpacked(&b->base, NULL);
    envelope_free(env);
    free(buf);
    /* An empty payload, no id wanted. */
    buf = envelope_pack_bytes("tessera.v1.ApiAccessBatch", NULL, 0, NULL, NULL, NULL, NULL, &len);
    env = envelope_unpack(buf, len, &err);
    assert_non_null(env);
    assert_int_equal(env->payload.len, 0);
    envelope_free(env);
    free(buf);
}

static void test_wrong_descriptor(void **state)
{
    (void)state;
    size_t len;
    uint8_t *buf = pack_access(&len);
    ts_err err = {{0}};
    Tessera__V1__Envelope *env = envelope_unpack(buf, len, &err);
    assert_non_null(env);
    err.msg[0] = 0;
    ProtobufCMessage *m = envelope_payload(env, &tessera__v1__session_failed__descriptor, &err);
    assert_null(m);
    assert_non_null(strstr(err.msg, "tessera.v1.ApiAccess"));
    assert_non_null(strstr(err.msg, "tessera.v1.SessionFailed"));
    envelope_free(env);
    free(buf);
}

/* The right type name but a payload that is not that message. */
static void test_payload_garbage(void **state)
{
    (void)state;
    Tessera__V1__Envelope e = TESSERA__V1__ENVELOPE__INIT;
    e.event_id = "0b7c1c7e-3c1b-4e6a-9a51-2f1e2b3c4d5e";
    e.type = "tessera.v1.ApiAccess";
    e.schema_version = 1;
    uint8_t junk[] = {0xff, 0xff, 0xff, 0xff, 0xff};
    e.payload.data = junk;
    e.payload.len = sizeof(junk);
    uint8_t buf[256];
    size_t len = tessera__v1__envelope__pack(&e, buf);
    ts_err err = {{0}};
    Tessera__V1__Envelope *env = envelope_unpack(buf, len, &err);
    assert_non_null(env);
    assert_null(envelope_payload(env, &tessera__v1__api_access__descriptor, &err));
    assert_non_null(strstr(err.msg, "does not decode"));
    envelope_free(env);
}

static void expect_reject(const uint8_t *data, size_t len, const char *needle)
{
    ts_err err = {{0}};
    Tessera__V1__Envelope *env = envelope_unpack(data, len, &err);
    assert_null(env);
    assert_true(err.msg[0] != 0);
    if (needle && !strstr(err.msg, needle)) fail_msg("error \"%s\" lacks \"%s\"", err.msg, needle);
}

static void test_garbage(void **state)
{
    (void)state;
    expect_reject(NULL, 0, "empty");
    uint8_t one = 0;
    expect_reject(&one, 0, "empty");

    /* Truncations of a valid envelope: none may crash (ASan checks the
     * reads), and all but the cut right before the payload must fail. */
    size_t len;
    uint8_t *buf = pack_access(&len);
    for (size_t n = 1; n < len; n++) {
        uint8_t *copy = malloc(n); /* exact size so ASan sees overreads */
        memcpy(copy, buf, n);
        ts_err err = {{0}};
        Tessera__V1__Envelope *env = envelope_unpack(copy, n, &err);
        if (env) {
            /* A cut exactly before the payload field leaves a well-formed
             * envelope without payload; anything else must fail. */
            assert_int_equal(env->payload.len, 0);
            envelope_free(env);
            free(copy);
            continue;
        }
        assert_true(err.msg[0] != 0);
        free(copy);
    }
    free(buf);

    /* Random bytes. */
    srand(42);
    for (int i = 0; i < 2000; i++) {
        size_t n = 1 + (size_t)(rand() % 200);
        uint8_t *r = malloc(n);
        for (size_t j = 0; j < n; j++)
            r[j] = (uint8_t)rand();
        ts_err err = {{0}};
        Tessera__V1__Envelope *env = envelope_unpack(r, n, &err);
        if (env) {
            /* Possible in principle; it must then be fully valid. */
            assert_true(env->event_id[0] && env->type[0] && env->schema_version == 1);
            envelope_free(env);
        } else {
            assert_true(err.msg[0] != 0);
        }
        free(r);
    }

    const char *text = "{\"event_id\": \"x\"}";
    expect_reject((const uint8_t *)text, strlen(text), NULL);
}

static void expect_field_reject(const char *event_id, const char *type, uint32_t version,
                                const char *needle)
{
    Tessera__V1__Envelope e = TESSERA__V1__ENVELOPE__INIT;
    e.event_id = (char *)event_id;
    e.type = (char *)type;
    e.schema_version = version;
    e.producer = "test/1";
    uint8_t buf[256];
    size_t len = tessera__v1__envelope__pack(&e, buf);
    expect_reject(buf, len, needle);
}

static void test_invalid_fields(void **state)
{
    (void)state;
    const char *id = "0b7c1c7e-3c1b-4e6a-9a51-2f1e2b3c4d5e";
    expect_field_reject(id, "tessera.v1.ApiAccess", 7, "schema_version 7");
    expect_field_reject(id, "tessera.v1.ApiAccess", 0, "schema_version 0");
    expect_field_reject("", "tessera.v1.ApiAccess", 1, "event_id");
    expect_field_reject(id, "", 1, "missing type");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_round_trip),      cmocka_unit_test(test_fresh_event_ids_and_null_ids),
        cmocka_unit_test(test_pack_bytes),      cmocka_unit_test(test_wrong_descriptor),
        cmocka_unit_test(test_payload_garbage), cmocka_unit_test(test_garbage),
        cmocka_unit_test(test_invalid_fields),
    };
    return cmocka_run_group_tests_name("envelope", tests, NULL, NULL);
}
