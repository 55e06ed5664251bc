/* test_authcache.c: the cache of tessera-auth's answers (libcommon/authcache.h)
 * over a fake source and a fake clock: hits are independent copies,
 * variants are keys of their own, TTL and negative TTL, the size bound
 * (least recently used goes), drops by key, user and all, a fetch racing an
 * invalidation is not kept, may_keep, keys that are never kept, concurrent
 * misses coalesced (errors and timeouts too), and concurrent use. */
#include "libcommon/authcache.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <jansson.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define AK1 "AKTEST00000000000001"
#define AK2 "AKTEST00000000000002"
#define U1 "11111111-1111-4111-8111-111111111111"
#define U2 "22222222-2222-4222-8222-222222222222"

/* ---- a fake source and clock ------------------------------------------------------- */

static int64_t g_now;
static json_t *g_src;            /* "ak|variant" -> context; absent: NOT_FOUND */
static atomic_bool g_down;       /* the source does not answer */
static atomic_int g_fetches;     /* fetch calls */
static atomic_int g_sleep_ms;    /* each fetch takes this long */
static void (*g_during)(void *); /* called inside a fetch (an invalidation racing it) */
static void *g_during_arg;

static int64_t fake_now(void)
{
    return g_now;
}

static void src_key(char *out, size_t size, const char *ak, const char *variant)
{
    snprintf(out, size, "%s|%s", ak ? ak : "(null)", variant ? variant : "(none)");
}

static json_t *ctx_of(const char *ak, const char *user, int n)
{
    return json_pack("{s:s, s:b, s:{s:s, s:s}, s:{s:i}}", "access_key", ak, "is_active", 1, "user",
                     "id", user, "status", "active", "keypair_policy", "max_concurrent_sessions",
                     n);
}

/* The source answers (ak, variant) with this context from now on. */
static void src_set(const char *ak, const char *variant, const char *user, int n)
{
    char k[400];
    src_key(k, sizeof(k), ak, variant);
    json_object_set_new(g_src, k, ctx_of(ak ? ak : "", user, n));
}

static authcache_result fetch(void *ctx, const char *ak, const char *variant, void *arg,
                              void **value, ts_err *err)
{
    (void)ctx;
    (void)arg;
    atomic_fetch_add(&g_fetches, 1);
    if (atomic_load(&g_sleep_ms)) usleep((useconds_t)atomic_load(&g_sleep_ms) * 1000);
    if (g_during) g_during(g_during_arg);
    if (atomic_load(&g_down)) {
        ts_err_set(err, "source down");
        return AUTHCACHE_UNAVAILABLE;
    }
    char k[400];
    src_key(k, sizeof(k), ak, variant);
    json_t *v = json_object_get(g_src, k);
    if (!v) return AUTHCACHE_NOT_FOUND;
    *value = json_deep_copy(v);
    return AUTHCACHE_FOUND;
}

static void *copy_json(const void *v)
{
    return json_deep_copy(v);
}

static void free_json(void *v)
{
    json_decref(v);
}

static const char *user_of(const void *v)
{
    return json_string_value(json_object_get(json_object_get(v, "user"), "id"));
}

static authcache_opts opts(size_t max, int64_t ttl)
{
    return (authcache_opts){.max_entries = max,
                            .ttl_ms = ttl,
                            .fetch = fetch,
                            .copy = copy_json,
                            .free = free_json,
                            .user_of = user_of,
                            .now_ms = fake_now};
}

static int setup(void **state)
{
    (void)state;
    g_now = 0;
    g_src = json_object();
    atomic_store(&g_down, false);
    atomic_store(&g_fetches, 0);
    atomic_store(&g_sleep_ms, 0);
    g_during = NULL;
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    json_decref(g_src);
    return 0;
}

/* The cached max_concurrent_sessions of (ak, variant) at now, or -1 when the
 * get had to ask the source (a miss; the source's answer is then kept). */
static int cached(authcache *c, const char *ak, const char *variant, int64_t now)
{
    g_now = now;
    int before = atomic_load(&g_fetches);
    void *v = NULL;
    ts_err err = {{0}};
    authcache_result r = authcache_get(c, ak, variant, NULL, &v, &err);
    int n = r == AUTHCACHE_FOUND
                ? (int)json_integer_value(json_object_get(json_object_get(v, "keypair_policy"),
                                                          "max_concurrent_sessions"))
                : -2;
    json_decref(v);
    return atomic_load(&g_fetches) != before ? -1 : n;
}

/* The source learns (ak, variant) and a get fetches and keeps it. */
static void fill(authcache *c, const char *ak, const char *variant, const char *user, int n,
                 int64_t now)
{
    src_set(ak, variant, user, n);
    assert_int_equal(cached(c, ak, variant, now), -1);
}

static authcache_stats stats(authcache *c)
{
    authcache_stats st;
    authcache_stats_get(c, &st);
    return st;
}

/* ---- tests -------------------------------------------------------------------------- */

static void test_hit_is_an_independent_copy(void **state)
{
    (void)state;
    authcache_opts o = opts(16, 1000);
    authcache *c = authcache_new(&o);
    fill(c, AK1, "default", U1, 3, 0);
    void *a = NULL;
    assert_int_equal(authcache_get(c, AK1, "default", NULL, &a, NULL), AUTHCACHE_FOUND);
    json_object_set_new(json_object_get(a, "keypair_policy"), "max_concurrent_sessions",
                        json_integer(99));
    json_decref(a);
    assert_int_equal(cached(c, AK1, "default", 20), 3);
    /* the fetcher's answer is its own too */
    src_set(AK2, NULL, U2, 5);
    assert_int_equal(authcache_get(c, AK2, NULL, NULL, &a, NULL), AUTHCACHE_FOUND);
    json_object_set_new(json_object_get(a, "keypair_policy"), "max_concurrent_sessions",
                        json_integer(0));
    json_decref(a);
    assert_int_equal(cached(c, AK2, NULL, 30), 5);
    authcache_stats st = stats(c);
    assert_int_equal(st.hits, 3);
    assert_int_equal(st.misses, 2);
    assert_int_equal(st.stored, 2);
    assert_int_equal(st.entries, 2);
    authcache_free(c);
}

static void test_variants_are_separate_keys(void **state)
{
    (void)state;
    authcache_opts o = opts(16, 1000);
    authcache *c = authcache_new(&o);
    fill(c, AK1, NULL, U1, 1, 0);
    fill(c, AK1, "default", U1, 2, 0);
    fill(c, AK1, "", U1, 3, 0);
    fill(c, AK1, "other", U1, 4, 0);
    assert_int_equal(cached(c, AK1, NULL, 1), 1);
    assert_int_equal(cached(c, AK1, "default", 1), 2);
    assert_int_equal(cached(c, AK1, "", 1), 3);
    assert_int_equal(cached(c, AK1, "other", 1), 4);
    assert_int_equal(cached(c, AK1, "nope", 1), -1); /* NOT_FOUND, not kept */
    assert_int_equal(cached(c, AK2, NULL, 1), -1);
    authcache_stats st = stats(c);
    assert_int_equal(st.entries, 4);
    assert_int_equal(st.negative_hits, 0);
    authcache_free(c);
}

static void test_ttl_expiry(void **state)
{
    (void)state;
    authcache_opts o = opts(16, 500);
    authcache *c = authcache_new(&o);
    fill(c, AK1, "default", U1, 3, 1000);
    assert_int_equal(cached(c, AK1, "default", 1499), 3);
    src_set(AK1, "default", U1, 4); /* what the source says now */
    assert_int_equal(cached(c, AK1, "default", 1500), -1);
    authcache_stats st = stats(c);
    assert_int_equal(st.expired, 1);
    assert_int_equal(st.misses, 2); /* the fill's and the one after expiry */
    /* the refill lives ttl from its own fetch */
    assert_int_equal(cached(c, AK1, "default", 1999), 4);
    assert_int_equal(cached(c, AK1, "default", 2000), -1);
    authcache_free(c);
}

static void test_negative_ttl(void **state)
{
    (void)state;
    authcache_opts o = opts(16, 60000);
    o.negative_ttl_ms = 1000;
    authcache *c = authcache_new(&o);
    /* an unknown key is asked once per negative TTL */
    assert_int_equal(cached(c, AK1, NULL, 0), -1);
    assert_int_equal(cached(c, AK1, NULL, 999), -2);
    assert_int_equal(cached(c, AK1, NULL, 999), -2);
    assert_int_equal(atomic_load(&g_fetches), 1);
    /* once known, the next look-up past the negative TTL finds it */
    src_set(AK1, NULL, U1, 7);
    assert_int_equal(cached(c, AK1, NULL, 1000), -1);
    assert_int_equal(cached(c, AK1, NULL, 1001), 7);
    authcache_stats st = stats(c);
    assert_int_equal(st.negative_hits, 2);
    assert_int_equal(st.hits, 1);
    assert_int_equal(st.misses, 2);
    authcache_free(c);
    /* without a negative TTL, each look-up of an unknown key asks */
    o.negative_ttl_ms = 0;
    c = authcache_new(&o);
    assert_int_equal(cached(c, AK2, NULL, 0), -1);
    assert_int_equal(cached(c, AK2, NULL, 1), -1);
    assert_int_equal(stats(c).entries, 0);
    authcache_free(c);
}

static void test_bound_evicts_least_recently_used(void **state)
{
    (void)state;
    authcache_opts o = opts(3, 10000);
    authcache *c = authcache_new(&o);
    fill(c, "AKA", NULL, U1, 1, 0);
    fill(c, "AKB", NULL, U1, 2, 0);
    fill(c, "AKC", NULL, U1, 3, 0);
    assert_int_equal(cached(c, "AKA", NULL, 1), 1); /* A is now the most recent */
    fill(c, "AKD", NULL, U1, 4, 2);                 /* evicts B */
    assert_int_equal(cached(c, "AKA", NULL, 3), 1);
    assert_int_equal(cached(c, "AKC", NULL, 3), 3);
    assert_int_equal(cached(c, "AKD", NULL, 3), 4);
    assert_int_equal(cached(c, "AKB", NULL, 3), -1); /* asked again (and evicts A) */
    /* many more: never more than 3, the last three stay */
    for (int i = 0; i < 100; i++) {
        char ak[16];
        snprintf(ak, sizeof(ak), "AKX%03d", i);
        fill(c, ak, "g", U1, i, 10 + i);
    }
    authcache_stats st = stats(c);
    assert_int_equal(st.entries, 3);
    assert_int_equal(st.evicted, 102);
    assert_int_equal(cached(c, "AKX099", "g", 200), 99);
    assert_int_equal(cached(c, "AKX097", "g", 200), 97);
    assert_int_equal(cached(c, "AKX096", "g", 200), -1);
    authcache_free(c);
    /* a cache of one */
    o = opts(1, 10000);
    c = authcache_new(&o);
    fill(c, AK1, NULL, U1, 1, 0);
    fill(c, AK2, NULL, U2, 2, 0);
    assert_int_equal(cached(c, AK2, NULL, 1), 2);
    assert_int_equal(cached(c, AK1, NULL, 1), -1);
    authcache_free(c);
    /* sharded: the bound holds over all shards */
    o = opts(64, 10000);
    o.shards = 16;
    c = authcache_new(&o);
    for (int i = 0; i < 1000; i++) {
        char ak[16];
        snprintf(ak, sizeof(ak), "AKS%04d", i);
        fill(c, ak, NULL, U1, i, i);
    }
    assert_true(stats(c).entries <= 64);
    assert_int_equal(cached(c, "AKS0999", NULL, 2000), 999);
    authcache_free(c);
}

static void test_drop_by_key_user_and_all(void **state)
{
    (void)state;
    authcache_opts o = opts(16, 10000);
    o.shards = 4;
    authcache *c = authcache_new(&o);
    fill(c, AK1, NULL, U1, 1, 0);
    fill(c, AK1, "default", U1, 2, 0);
    fill(c, AK2, NULL, U1, 3, 0); /* a second keypair of the same user */
    fill(c, "AKOTHER", NULL, U2, 4, 0);
    authcache_drop_key(c, AK1);
    assert_int_equal(cached(c, AK2, NULL, 1), 3);
    assert_int_equal(cached(c, AK1, NULL, 1), -1);
    assert_int_equal(cached(c, AK1, "default", 1), -1);
    authcache_drop_key(c, "AKTEST"); /* a prefix is not the key */
    assert_int_equal(cached(c, AK2, NULL, 1), 3);
    authcache_drop_user(c, U1);
    assert_int_equal(cached(c, "AKOTHER", NULL, 2), 4);
    assert_int_equal(cached(c, AK1, "default", 2), -1);
    assert_int_equal(cached(c, AK2, NULL, 2), -1);
    authcache_drop_all(c);
    assert_int_equal(cached(c, "AKOTHER", NULL, 3), -1);
    authcache_stats st = stats(c);
    assert_int_equal(st.dropped, 2 + 3 + 3);
    assert_int_equal(st.invalidated_key, 2);
    assert_int_equal(st.invalidated_user, 1);
    assert_int_equal(st.invalidated_all, 1);
    assert_int_equal(st.entries, 1);
    /* a value without a user is dropped by key or all, not by user */
    json_object_set_new(g_src, AK1 "|(none)", json_pack("{s:s}", "access_key", AK1));
    authcache_drop_all(c);
    assert_int_equal(cached(c, AK1, NULL, 4), -1);
    authcache_drop_user(c, U1);
    authcache_drop_user(c, "");
    assert_int_equal(stats(c).entries, 1);
    authcache_drop_key(c, AK1);
    assert_int_equal(stats(c).entries, 0);
    authcache_free(c);
}

static void drop_ak2(void *c)
{
    authcache_drop_key(c, AK2);
}

static void test_fetch_racing_an_invalidation_is_not_kept(void **state)
{
    (void)state;
    authcache_opts o = opts(16, 10000);
    authcache *c = authcache_new(&o);
    src_set(AK1, NULL, U1, 1);
    /* the fetch is in flight when auth publishes a change of another key:
     * every drop advances the generation, even one that found nothing */
    g_during = drop_ak2;
    g_during_arg = c;
    assert_int_equal(cached(c, AK1, NULL, 0), -1);
    g_during = NULL;
    authcache_stats st = stats(c);
    assert_int_equal(st.stale, 1);
    assert_int_equal(st.stored, 0);
    assert_int_equal(st.entries, 0);
    /* the next miss fetches again and keeps it */
    assert_int_equal(cached(c, AK1, NULL, 1), -1);
    assert_int_equal(cached(c, AK1, NULL, 2), 1);
    authcache_free(c);
    /* the same with coalescing: the entry being fetched goes */
    o.wait_ms = 1000;
    c = authcache_new(&o);
    g_during = drop_ak2;
    g_during_arg = c;
    assert_int_equal(cached(c, AK1, NULL, 0), -1);
    g_during = NULL;
    assert_int_equal(stats(c).entries, 0);
    assert_int_equal(cached(c, AK1, NULL, 1), -1);
    assert_int_equal(cached(c, AK1, NULL, 2), 1);
    authcache_free(c);
}

static bool g_allow;
static bool allow(void *ctx)
{
    (void)ctx;
    return g_allow;
}

static void test_may_keep_vetoes(void **state)
{
    (void)state;
    authcache_opts o = opts(16, 10000);
    o.may_keep = allow;
    authcache *c = authcache_new(&o);
    src_set(AK1, NULL, U1, 1);
    g_allow = false;
    assert_int_equal(cached(c, AK1, NULL, 0), -1);
    assert_int_equal(cached(c, AK1, NULL, 1), -1);
    g_allow = true;
    assert_int_equal(cached(c, AK1, NULL, 2), -1);
    assert_int_equal(cached(c, AK1, NULL, 3), 1);
    authcache_free(c);
}

static void test_keys_never_kept(void **state)
{
    (void)state;
    authcache_opts o = opts(16, 10000);
    authcache *c = authcache_new(&o);
    char longak[AUTHCACHE_KEY_MAX + 2];
    memset(longak, 'A', sizeof(longak) - 1);
    longak[sizeof(longak) - 1] = '\0';
    char longvar[AUTHCACHE_VARIANT_MAX + 2];
    memset(longvar, 'g', sizeof(longvar) - 1);
    longvar[sizeof(longvar) - 1] = '\0';
    const char *aks[] = {longak, AK1, "", NULL};
    const char *variants[] = {NULL, longvar, NULL, NULL};
    for (size_t i = 0; i < TS_ARRAY_LEN(aks); i++) {
        src_set(aks[i], variants[i], U1, 1);
        assert_int_equal(cached(c, aks[i], variants[i], 0), -1);
        assert_int_equal(cached(c, aks[i], variants[i], 1), -1); /* asked again */
    }
    authcache_stats st = stats(c);
    assert_int_equal(st.entries, 0);
    assert_int_equal(st.misses, 8);
    authcache_free(c);
}

/* ---- coalescing ----------------------------------------------------------------------- */

typedef struct getter {
    authcache *c;
    const char *ak;
    authcache_result r;
    int n;
    char err[128];
} getter;

static void *get_once(void *arg)
{
    getter *g = arg;
    void *v = NULL;
    ts_err err = {{0}};
    g->r = authcache_get(g->c, g->ak, NULL, NULL, &v, &err);
    g->n = (int)json_integer_value(
        json_object_get(json_object_get(v, "keypair_policy"), "max_concurrent_sessions"));
    ts_strlcpy(g->err, err.msg, sizeof(g->err));
    json_decref(v);
    return NULL;
}

/* n concurrent gets of ak; their results in gs. */
static void burst(authcache *c, const char *ak, getter *gs, int n)
{
    pthread_t th[16];
    for (int i = 0; i < n; i++) {
        gs[i] = (getter){.c = c, .ak = ak};
        pthread_create(&th[i], NULL, get_once, &gs[i]);
    }
    for (int i = 0; i < n; i++)
        pthread_join(th[i], NULL);
}

static void test_concurrent_misses_share_one_fetch(void **state)
{
    (void)state;
    authcache_opts o = opts(16, 60000);
    o.negative_ttl_ms = 60000;
    o.wait_ms = 3000;
    o.error_ttl_ms = 60000;
    o.now_ms = NULL; /* waits are real */
    authcache *c = authcache_new(&o);
    src_set(AK1, NULL, U1, 5);
    atomic_store(&g_sleep_ms, 100);
    getter gs[16];
    burst(c, AK1, gs, 16);
    assert_int_equal(atomic_load(&g_fetches), 1);
    for (int i = 0; i < 16; i++) {
        assert_int_equal(gs[i].r, AUTHCACHE_FOUND);
        assert_int_equal(gs[i].n, 5);
    }
    authcache_stats st = stats(c);
    assert_int_equal(st.misses, 1);
    assert_int_equal(st.hits, 15); /* a get that waited counts as coalesced and a hit */
    assert_true(st.coalesced >= 1);
    /* an unknown key too */
    burst(c, AK2, gs, 16);
    assert_int_equal(atomic_load(&g_fetches), 2);
    for (int i = 0; i < 16; i++)
        assert_int_equal(gs[i].r, AUTHCACHE_NOT_FOUND);
    /* a failed fetch: the waiters get its error, and so does a get within
     * the error TTL, without asking */
    atomic_store(&g_down, true);
    burst(c, "AKDOWN", gs, 8);
    assert_int_equal(atomic_load(&g_fetches), 3);
    for (int i = 0; i < 8; i++) {
        assert_int_equal(gs[i].r, AUTHCACHE_UNAVAILABLE);
        assert_string_equal(gs[i].err, "source down");
    }
    burst(c, "AKDOWN", gs, 1);
    assert_int_equal(gs[0].r, AUTHCACHE_UNAVAILABLE);
    assert_int_equal(atomic_load(&g_fetches), 3);
    authcache_free(c);
}

static void test_a_wait_times_out(void **state)
{
    (void)state;
    authcache_opts o = opts(16, 60000);
    o.wait_ms = 50;
    o.now_ms = NULL;
    authcache *c = authcache_new(&o);
    src_set(AK1, NULL, U1, 5);
    atomic_store(&g_sleep_ms, 400);
    getter gs[4];
    burst(c, AK1, gs, 4);
    int found = 0, timed_out = 0;
    for (int i = 0; i < 4; i++) {
        if (gs[i].r == AUTHCACHE_FOUND) found++;
        if (gs[i].r == AUTHCACHE_UNAVAILABLE && strstr(gs[i].err, "timed out")) timed_out++;
    }
    assert_int_equal(found, 1);
    assert_int_equal(timed_out, 3);
    assert_int_equal(stats(c).fetch_errors, 3);
    authcache_free(c);
}

/* ---- threads ---------------------------------------------------------------------------- */

typedef struct worker {
    authcache *c;
    int id;
    int hits;
} worker;

static void *hammer(void *arg)
{
    worker *w = arg;
    char ak[24];
    for (int i = 0; i < 20000; i++) {
        snprintf(ak, sizeof(ak), "AK%02d", (i * 7 + w->id) % 40);
        void *v = NULL;
        authcache_result r = authcache_get(w->c, ak, (i & 1) ? "default" : NULL, NULL, &v, NULL);
        /* every answer is a whole, consistent context of that key */
        if (r != AUTHCACHE_FOUND ||
            strcmp(json_string_value(json_object_get(v, "access_key")), ak) != 0)
            abort();
        json_decref(v);
        if (w->id == 0 && i % 997 == 0) authcache_drop_all(w->c);
        if (w->id == 1 && i % 331 == 0) authcache_drop_user(w->c, U2);
        if (w->id == 2 && i % 113 == 0) authcache_drop_key(w->c, ak);
    }
    return NULL;
}

static void test_concurrent_use(void **state)
{
    (void)state;
    for (int i = 0; i < 40; i++) {
        char ak[24];
        snprintf(ak, sizeof(ak), "AK%02d", i);
        src_set(ak, NULL, (i % 3) ? U1 : U2, i);
        src_set(ak, "default", (i % 3) ? U1 : U2, i);
    }
    for (unsigned shards = 1; shards <= 8; shards *= 8) {
        for (int64_t wait = 0; wait <= 1000; wait += 1000) {
            authcache_opts o = opts(32, 60000);
            o.shards = shards;
            o.wait_ms = wait;
            o.now_ms = NULL;
            authcache *c = authcache_new(&o);
            pthread_t th[4];
            worker w[4];
            for (int i = 0; i < 4; i++) {
                w[i] = (worker){c, i, 0};
                pthread_create(&th[i], NULL, hammer, &w[i]);
            }
            for (int i = 0; i < 4; i++)
                pthread_join(th[i], NULL);
            authcache_stats st = stats(c);
            assert_true(st.entries <= 32);
            assert_int_equal(st.hits + st.misses, 80000);
            assert_true(st.hits > 0);
            authcache_free(c);
        }
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_hit_is_an_independent_copy, setup, teardown),
        cmocka_unit_test_setup_teardown(test_variants_are_separate_keys, setup, teardown),
        cmocka_unit_test_setup_teardown(test_ttl_expiry, setup, teardown),
        cmocka_unit_test_setup_teardown(test_negative_ttl, setup, teardown),
        cmocka_unit_test_setup_teardown(test_bound_evicts_least_recently_used, setup, teardown),
        cmocka_unit_test_setup_teardown(test_drop_by_key_user_and_all, setup, teardown),
        cmocka_unit_test_setup_teardown(test_fetch_racing_an_invalidation_is_not_kept, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_may_keep_vetoes, setup, teardown),
        cmocka_unit_test_setup_teardown(test_keys_never_kept, setup, teardown),
        cmocka_unit_test_setup_teardown(test_concurrent_misses_share_one_fetch, setup, teardown),
        cmocka_unit_test_setup_teardown(test_a_wait_times_out, setup, teardown),
        cmocka_unit_test_setup_teardown(test_concurrent_use, setup, teardown),
    };
    return cmocka_run_group_tests_name("authcache", tests, NULL, NULL);
}
