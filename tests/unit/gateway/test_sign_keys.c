/* Unit tests: the gateway's per-thread table of derived signing keys. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "services/gateway/sign_keys.h"

#include <pthread.h>
#include <string.h>

#define AK "AKTESTTESTTESTTEST01"
#define SECRET_A "SECRETSECRETSECRETSECRETSECRETSECRET1234"
#define SECRET_B "SECRETSECRETSECRETSECRETSECRETSECRET5678"
#define DATE_T ((time_t)1795304401) /* 2026-11-21T23:40:01Z */

static const sign_input request = {.method = "GET",
                                   .target = "/auth/test",
                                   .raw_date = "2026-11-21T23:40:01+00:00",
                                   .date = DATE_T,
                                   .host = "gw:8090",
                                   .version = "v8.20240915"};

/* The signature sign_keys_get's key gives, against sign_compute's. */
static bool signs_like(const char *secret, time_t date, const char *host)
{
    sign_input in = request;
    in.date = date;
    in.host = host;
    char want[SIGN_HEX_LEN + 1], got[SIGN_HEX_LEN + 1];
    sign_compute(secret, &in, want);
    sign_key scratch;
    sign_compute_keyed(sign_keys_get(AK, secret, date, host, &scratch), &in, got);
    return strcmp(want, got) == 0;
}

static sign_keys_stats delta(const sign_keys_stats *before)
{
    sign_keys_stats now;
    sign_keys_stats_get(&now);
    return (sign_keys_stats){now.hits - before->hits, now.misses - before->misses};
}

static void test_hit_after_first_use(void **state)
{
    (void)state;
    sign_keys_stats b;
    sign_keys_stats_get(&b);
    assert_true(signs_like(SECRET_A, DATE_T, "gw:8090"));
    assert_true(signs_like(SECRET_A, DATE_T - 60, "gw:8090"));
    assert_true(signs_like(SECRET_A, DATE_T - 3600, "gw:8090"));
    sign_keys_stats d = delta(&b);
    assert_int_equal(d.misses, 1);
    assert_int_equal(d.hits, 2);
}

static void test_changed_secret_day_or_host_derives_again(void **state)
{
    (void)state;
    assert_true(signs_like(SECRET_A, DATE_T, "gw:8090"));
    sign_keys_stats b;
    sign_keys_stats_get(&b);
    assert_true(signs_like(SECRET_B, DATE_T, "gw:8090"));        /* same key, new secret */
    assert_true(signs_like(SECRET_B, DATE_T + 3600, "gw:8090")); /* the next UTC day */
    assert_true(signs_like(SECRET_B, DATE_T + 3600, "gw:443"));  /* another host */
    assert_true(signs_like(SECRET_A, DATE_T, "gw:8090"));        /* and back */
    sign_keys_stats d = delta(&b);
    assert_int_equal(d.misses, 4);
    assert_int_equal(d.hits, 0);
}

static void test_long_host_is_not_kept(void **state)
{
    (void)state;
    char host[300];
    memset(host, 'h', sizeof(host) - 1);
    host[sizeof(host) - 1] = '\0';
    sign_keys_stats b;
    sign_keys_stats_get(&b);
    assert_true(signs_like(SECRET_A, DATE_T, host));
    assert_true(signs_like(SECRET_A, DATE_T, host));
    sign_keys_stats d = delta(&b);
    assert_int_equal(d.misses, 2);
    assert_int_equal(d.hits, 0);
}

/* Many hosts through the 64 slots: every answer is still right. */
static void test_collisions(void **state)
{
    (void)state;
    char host[32];
    for (int round = 0; round < 2; round++)
        for (int i = 0; i < 500; i++) {
            snprintf(host, sizeof(host), "h%d:%d", i, 8000 + i);
            assert_true(signs_like(i % 2 ? SECRET_A : SECRET_B, DATE_T, host));
        }
}

static void *other_thread(void *arg)
{
    (void)arg;
    return (void *)(intptr_t)signs_like(SECRET_A, DATE_T, "gw:8090");
}

/* Each thread has its own table: another thread's first use is a miss. */
static void test_per_thread(void **state)
{
    (void)state;
    assert_true(signs_like(SECRET_A, DATE_T, "gw:8090"));
    sign_keys_stats b;
    sign_keys_stats_get(&b);
    pthread_t t;
    void *ok = NULL;
    assert_int_equal(pthread_create(&t, NULL, other_thread, NULL), 0);
    assert_int_equal(pthread_join(t, &ok), 0);
    assert_true(ok != NULL);
    sign_keys_stats d = delta(&b);
    assert_int_equal(d.misses, 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_hit_after_first_use),
        cmocka_unit_test(test_changed_secret_day_or_host_derives_again),
        cmocka_unit_test(test_long_host_is_not_kept),
        cmocka_unit_test(test_collisions),
        cmocka_unit_test(test_per_thread),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
