/* test_plaintext.c: plain text to another host only where allowed
 * (libcommon/plaintext.h). */
#include "libcommon/plaintext.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

static void test_local_hosts(void **state)
{
    (void)state;
    assert_true(plaintext_host_is_local("127.0.0.1"));
    assert_true(plaintext_host_is_local("127.1.2.3"));
    assert_true(plaintext_host_is_local("localhost"));
    assert_true(plaintext_host_is_local("::1"));
    assert_true(plaintext_host_is_local("[::1]"));
    assert_true(plaintext_host_is_local("/run/postgresql"));
    assert_true(plaintext_host_is_local(""));
    assert_false(plaintext_host_is_local("10.215.3.1"));
    assert_false(plaintext_host_is_local("db.example"));
    assert_false(plaintext_host_is_local("128.0.0.1"));
    assert_false(plaintext_host_is_local("::2"));
}

static void test_pg(void **state)
{
    (void)state;
    ts_err err = {0};
    assert_true(plaintext_check_pg("postgresql://t@127.0.0.1:5432/t?sslmode=disable", false, &err));
    assert_true(plaintext_check_pg("host=/tmp/sock dbname=t", false, &err));
    assert_true(plaintext_check_pg("postgresql://t@10.0.0.5/t?sslmode=verify-full&sslrootcert=/ca",
                                   false, &err));
    assert_true(plaintext_check_pg("host=db.example sslmode=require", false, &err));
    assert_false(plaintext_check_pg("postgresql://t@10.0.0.5/t", false, &err)); /* prefer */
    assert_non_null(strstr(err.msg, "10.0.0.5"));
    assert_non_null(strstr(err.msg, "pg.allow_plaintext"));
    assert_false(plaintext_check_pg("host=127.0.0.1,db.example sslmode=prefer", false, &err));
    assert_non_null(strstr(err.msg, "db.example"));
    assert_true(plaintext_check_pg("postgresql://t@10.0.0.5/t?sslmode=disable", true, &err));
    assert_false(plaintext_check_pg("postgresql://t@[bad", false, &err)); /* unparsable */
}

static void test_redis(void **state)
{
    (void)state;
    ts_err err = {0};
    assert_true(plaintext_check_redis("redis://127.0.0.1:6379/0", false, &err));
    assert_true(plaintext_check_redis("redis://:secret@localhost:6379", false, &err));
    assert_true(plaintext_check_redis("unix:///run/redis.sock", false, &err));
    assert_false(plaintext_check_redis("redis://:pw@10.215.0.1:6379/0", false, &err));
    assert_non_null(strstr(err.msg, "10.215.0.1"));
    assert_null(strstr(err.msg, "pw"));
    assert_true(plaintext_check_redis("redis://10.215.0.1:6379/0", true, &err));
}

static void test_kafka(void **state)
{
    (void)state;
    ts_err err = {0};
    assert_true(plaintext_check_kafka("127.0.0.1:9092,127.0.0.1:9093", "plaintext", false, &err));
    assert_true(plaintext_check_kafka("[::1]:9092", "plaintext", false, &err));
    assert_true(plaintext_check_kafka("10.0.0.1:9092", "ssl", false, &err));
    assert_true(plaintext_check_kafka("10.0.0.1:9092", "plaintext", true, &err));
    assert_false(
        plaintext_check_kafka("127.0.0.1:9092, kafka.example:9092", "plaintext", false, &err));
    assert_non_null(strstr(err.msg, "kafka.example"));
    assert_non_null(strstr(err.msg, "kafka.allow_plaintext"));
    assert_false(plaintext_check_kafka("10.0.0.1:9092", NULL, false, &err));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_local_hosts),
        cmocka_unit_test(test_pg),
        cmocka_unit_test(test_redis),
        cmocka_unit_test(test_kafka),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
