/* test_kbus_local.c: the parts of kbus that need no broker: dead-letter
 * headers (libcommon/kbus_dlq.c) and argument checks. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "libcommon/kbus.h"
#include "libcommon/kbus_dlq.h"

#include <stdlib.h>
#include <string.h>

/* The last value of header name as a NUL-terminated string (static buffer). */
static const char *hdr(const rd_kafka_headers_t *h, const char *name)
{
    static char buf[2048];
    const void *v;
    size_t n;
    if (rd_kafka_header_get_last(h, name, &v, &n) != RD_KAFKA_RESP_ERR_NO_ERROR) return NULL;
    assert_true(n < sizeof(buf));
    memcpy(buf, v, n);
    buf[n] = 0;
    return buf;
}

static size_t count(const rd_kafka_headers_t *h, const char *name)
{
    size_t c = 0;
    const void *v;
    size_t n;
    while (rd_kafka_header_get(h, c, name, &v, &n) == RD_KAFKA_RESP_ERR_NO_ERROR)
        c++;
    return c;
}

static void test_headers_fresh(void **state)
{
    (void)state;
    kbus_dlq_info info = {.reason = "undecodable: envelope: empty message",
                          .topic = "tessera.audit.v1",
                          .partition = 2,
                          .offset = 9876543210LL,
                          .group = "auth",
                          .attempts = 0};
    rd_kafka_headers_t *h = kbus_dlq_headers(NULL, &info);
    assert_string_equal(hdr(h, "dlq.reason"), "undecodable: envelope: empty message");
    assert_string_equal(hdr(h, "dlq.topic"), "tessera.audit.v1");
    assert_string_equal(hdr(h, "dlq.partition"), "2");
    assert_string_equal(hdr(h, "dlq.offset"), "9876543210");
    assert_string_equal(hdr(h, "dlq.group"), "auth");
    assert_string_equal(hdr(h, "dlq.attempts"), "0");
    assert_int_equal(rd_kafka_header_cnt(h), 6);
    rd_kafka_headers_destroy(h);
}

static void test_headers_keep_original_and_replace_dlq(void **state)
{
    (void)state;
    rd_kafka_headers_t *orig = rd_kafka_headers_new(4);
    rd_kafka_header_add(orig, "traceparent", -1, "00-abc-def-01", -1);
    rd_kafka_header_add(orig, "dlq.reason", -1, "old reason", -1);
    kbus_dlq_info info = {.reason = "rejected: bad session id",
                          .topic = "tessera.session.v1",
                          .partition = 0,
                          .offset = 5,
                          .group = "scheduler",
                          .attempts = 3};
    rd_kafka_headers_t *h = kbus_dlq_headers(orig, &info);
    assert_string_equal(hdr(h, "traceparent"), "00-abc-def-01");
    assert_string_equal(hdr(h, "dlq.reason"), "rejected: bad session id");
    assert_int_equal(count(h, "dlq.reason"), 1);
    assert_string_equal(hdr(h, "dlq.attempts"), "3");
    /* The original list is untouched. */
    assert_string_equal(hdr(orig, "dlq.reason"), "old reason");
    assert_int_equal(rd_kafka_header_cnt(orig), 2);
    rd_kafka_headers_destroy(h);
    rd_kafka_headers_destroy(orig);
}

static void test_headers_long_and_missing_reason(void **state)
{
    (void)state;
    char *long_reason = malloc(5000);
    memset(long_reason, 'x', 4999);
    long_reason[4999] = 0;
    kbus_dlq_info info = {.reason = long_reason, .topic = "t", .group = "g"};
    rd_kafka_headers_t *h = kbus_dlq_headers(NULL, &info);
    assert_int_equal(strlen(hdr(h, "dlq.reason")), KBUS_DLQ_REASON_MAX);
    rd_kafka_headers_destroy(h);
    free(long_reason);

    kbus_dlq_info none = {.reason = NULL, .topic = NULL, .group = NULL};
    h = kbus_dlq_headers(NULL, &none);
    assert_string_equal(hdr(h, "dlq.reason"), "unknown");
    assert_string_equal(hdr(h, "dlq.topic"), "");
    rd_kafka_headers_destroy(h);
}

static void test_new_rejects_bad_options(void **state)
{
    (void)state;
    ts_err err = {{0}};
    kbus_opts o = {.bootstrap = "", .service = "t", .instance = "1"};
    assert_null(kbus_new(&o, &err));
    assert_non_null(strstr(err.msg, "bootstrap"));
    o.bootstrap = "127.0.0.1:1";
    o.linger_ms = 5000;
    assert_null(kbus_new(&o, &err));
    assert_non_null(strstr(err.msg, "linger"));
}

/* A bus whose broker is unreachable: creating and closing it works, a ping
 * fails with a message, publish is accepted locally. */
static void test_unreachable_broker(void **state)
{
    (void)state;
    ts_err err = {{0}};
    kbus_opts o = {.bootstrap = "127.0.0.1:1",
                   .service = "test",
                   .instance = "1",
                   .max_attempts = 3,
                   .retry_backoff_ms = 10};
    kbus *bus = kbus_new(&o, &err);
    assert_non_null(bus);
    assert_false(kbus_ping(bus, 300, &err));
    assert_non_null(strstr(err.msg, "127.0.0.1:1"));
    static const char *const topics[] = {"tessera.audit.v1", NULL};
    assert_null(kbus_consume(bus, "", topics, NULL, NULL, &err));
    kbus_stats st;
    kbus_get_stats(bus, &st);
    assert_int_equal(st.produced, 0);
    kbus_close(bus, 100);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_headers_fresh),
        cmocka_unit_test(test_headers_keep_original_and_replace_dlq),
        cmocka_unit_test(test_headers_long_and_missing_reason),
        cmocka_unit_test(test_new_rejects_bad_options),
        cmocka_unit_test(test_unreachable_broker),
    };
    return cmocka_run_group_tests_name("kbus_local", tests, NULL, NULL);
}
