/* test_context_cache.c: the registry's cache of tessera-auth's
 * session contexts (services/registry/context_cache.h) and how tessera.auth.v1
 * events drop its entries (auth_events_apply): hits return independent
 * copies, TTL expiry, the size bound (least recently used goes), drops by
 * key, user and all, a fetch racing an invalidation is not kept, bad input
 * is not cached, undecodable events drop everything, and concurrent use. */
#include "services/registry/auth_events.h"
#include "services/registry/context_cache.h"
#include "services/registry/registry.h"
#include "tessera/v1/auth.pb-c.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

/* main.c is not linked into the unit tests. */
reg_config reg_cfg;
svc *reg_svc;

#define AK1 "AKTEST00000000000001"
#define AK2 "AKTEST00000000000002"
#define U1 "11111111-1111-4111-8111-111111111111"
#define U2 "22222222-2222-4222-8222-222222222222"

static json_t *ctx_of(const char *ak, const char *user, int max_sessions)
{
    return json_pack("{s:s, s:b, s:{s:s, s:s}, s:{s:i}}", "access_key", ak, "is_active", 1, "user",
                     "id", user, "status", "active", "keypair_policy", "max_concurrent_sessions",
                     max_sessions);
}

/* put (ak, group) -> ctx as a fetch after a miss would */
static void fill(ctx_cache *c, const char *ak, const char *group, const char *user, int n,
                 int64_t now)
{
    uint64_t gen;
    json_t *miss = ctx_cache_get(c, ak, group, now, &gen);
    assert_null(miss);
    json_t *ctx = ctx_of(ak, user, n);
    ctx_cache_put(c, ak, group, ctx, gen, now);
    json_decref(ctx);
}

/* the cached max_concurrent_sessions of (ak, group), or -1 on a miss */
static int cached(ctx_cache *c, const char *ak, const char *group, int64_t now)
{
    uint64_t gen;
    json_t *hit = ctx_cache_get(c, ak, group, now, &gen);
    if (!hit) return -1;
    int v = (int)json_integer_value(
        json_object_get(json_object_get(hit, "keypair_policy"), "max_concurrent_sessions"));
    json_decref(hit);
    return v;
}

static void test_hit_is_an_independent_copy(void **state)
{
    (void)state;
    ctx_cache *c = ctx_cache_new(16, 1000);
    fill(c, AK1, "default", U1, 3, 0);
    uint64_t gen;
    json_t *a = ctx_cache_get(c, AK1, "default", 10, &gen);
    assert_non_null(a);
    json_object_set_new(json_object_get(a, "keypair_policy"), "max_concurrent_sessions",
                        json_integer(99));
    json_object_set_new(a, "is_active", json_false());
    json_decref(a);
    assert_int_equal(cached(c, AK1, "default", 20), 3);
    /* the object handed to put is the caller's too */
    json_t *mine = ctx_of(AK2, U2, 5);
    json_t *miss = ctx_cache_get(c, AK2, NULL, 20, &gen);
    assert_null(miss);
    ctx_cache_put(c, AK2, NULL, mine, gen, 20);
    json_object_set_new(json_object_get(mine, "keypair_policy"), "max_concurrent_sessions",
                        json_integer(0));
    json_decref(mine);
    assert_int_equal(cached(c, AK2, NULL, 30), 5);
    ctx_cache_stats st;
    ctx_cache_get_stats(c, &st);
    assert_int_equal(st.hits, 3);
    assert_int_equal(st.misses, 2);
    assert_int_equal(st.stored, 2);
    assert_int_equal(st.entries, 2);
    ctx_cache_free(c);
}

static void test_groups_are_separate_keys(void **state)
{
    (void)state;
    ctx_cache *c = ctx_cache_new(16, 1000);
    fill(c, AK1, NULL, U1, 1, 0);
    fill(c, AK1, "default", U1, 2, 0);
    fill(c, AK1, "", U1, 3, 0);
    fill(c, AK1, "other", U1, 4, 0);
    assert_int_equal(cached(c, AK1, NULL, 1), 1);
    assert_int_equal(cached(c, AK1, "default", 1), 2);
    assert_int_equal(cached(c, AK1, "", 1), 3);
    assert_int_equal(cached(c, AK1, "other", 1), 4);
    assert_int_equal(cached(c, AK1, "nope", 1), -1);
    assert_int_equal(cached(c, AK2, NULL, 1), -1);
    /* a second put of the same key replaces */
    fill(c, AK2, "g", U2, 7, 1);
    uint64_t gen;
    json_decref(ctx_cache_get(c, AK1, "zzz", 2, &gen)); /* a miss: NULL */
    json_t *v = ctx_of(AK2, U2, 8);
    ctx_cache_put(c, AK2, "g", v, gen, 2);
    json_decref(v);
    assert_int_equal(cached(c, AK2, "g", 3), 8);
    ctx_cache_stats st;
    ctx_cache_get_stats(c, &st);
    assert_int_equal(st.entries, 5);
    ctx_cache_free(c);
}

static void test_ttl_expiry(void **state)
{
    (void)state;
    ctx_cache *c = ctx_cache_new(16, 500);
    fill(c, AK1, "default", U1, 3, 1000);
    assert_int_equal(cached(c, AK1, "default", 1499), 3);
    assert_int_equal(cached(c, AK1, "default", 1500), -1);
    assert_int_equal(cached(c, AK1, "default", 1501), -1);
    ctx_cache_stats st;
    ctx_cache_get_stats(c, &st);
    assert_int_equal(st.expired, 1);
    assert_int_equal(st.entries, 0);
    assert_int_equal(st.misses, 3); /* the fill's miss and two after expiry */
    /* a refill lives ttl from its own put */
    fill(c, AK1, "default", U1, 4, 2000);
    assert_int_equal(cached(c, AK1, "default", 2499), 4);
    assert_int_equal(cached(c, AK1, "default", 2500), -1);
    ctx_cache_free(c);
}

static void test_bound_evicts_least_recently_used(void **state)
{
    (void)state;
    ctx_cache *c = ctx_cache_new(3, 10000);
    fill(c, "AKA", NULL, U1, 1, 0);
    fill(c, "AKB", NULL, U1, 2, 0);
    fill(c, "AKC", NULL, U1, 3, 0);
    assert_int_equal(cached(c, "AKA", NULL, 1), 1); /* A is now the most recent */
    fill(c, "AKD", NULL, U1, 4, 2);                 /* evicts B */
    assert_int_equal(cached(c, "AKB", NULL, 3), -1);
    assert_int_equal(cached(c, "AKA", NULL, 3), 1);
    assert_int_equal(cached(c, "AKC", NULL, 3), 3);
    assert_int_equal(cached(c, "AKD", NULL, 3), 4);
    /* many more: never more than 3, the last three stay */
    for (int i = 0; i < 100; i++) {
        char ak[16];
        snprintf(ak, sizeof(ak), "AKX%03d", i);
        fill(c, ak, "g", U1, i, 10 + i);
    }
    ctx_cache_stats st;
    ctx_cache_get_stats(c, &st);
    assert_int_equal(st.entries, 3);
    assert_int_equal(st.evicted, 101);
    assert_int_equal(cached(c, "AKX099", "g", 200), 99);
    assert_int_equal(cached(c, "AKX097", "g", 200), 97);
    assert_int_equal(cached(c, "AKX096", "g", 200), -1);
    ctx_cache_free(c);
    /* a cache of one */
    c = ctx_cache_new(1, 10000);
    fill(c, AK1, NULL, U1, 1, 0);
    fill(c, AK2, NULL, U2, 2, 0);
    assert_int_equal(cached(c, AK1, NULL, 1), -1);
    assert_int_equal(cached(c, AK2, NULL, 1), 2);
    ctx_cache_free(c);
}

static void test_drop_by_key_user_and_all(void **state)
{
    (void)state;
    ctx_cache *c = ctx_cache_new(16, 10000);
    fill(c, AK1, NULL, U1, 1, 0);
    fill(c, AK1, "default", U1, 2, 0);
    fill(c, AK2, NULL, U1, 3, 0); /* a second keypair of the same user */
    fill(c, "AKOTHER", NULL, U2, 4, 0);
    ctx_cache_drop_key(c, AK1);
    assert_int_equal(cached(c, AK1, NULL, 1), -1);
    assert_int_equal(cached(c, AK1, "default", 1), -1);
    assert_int_equal(cached(c, AK2, NULL, 1), 3);
    ctx_cache_drop_key(c, "AKTEST"); /* a prefix is not the key */
    assert_int_equal(cached(c, AK2, NULL, 1), 3);
    fill(c, AK1, "default", U1, 5, 1);
    ctx_cache_drop_user(c, U1);
    assert_int_equal(cached(c, AK1, "default", 2), -1);
    assert_int_equal(cached(c, AK2, NULL, 2), -1);
    assert_int_equal(cached(c, "AKOTHER", NULL, 2), 4);
    ctx_cache_drop_all(c);
    assert_int_equal(cached(c, "AKOTHER", NULL, 3), -1);
    ctx_cache_stats st;
    ctx_cache_get_stats(c, &st);
    assert_int_equal(st.entries, 0);
    assert_int_equal(st.dropped, 5);
    ctx_cache_free(c);
}

static void test_fetch_racing_an_invalidation_is_not_kept(void **state)
{
    (void)state;
    ctx_cache *c = ctx_cache_new(16, 10000);
    uint64_t gen;
    assert_null(ctx_cache_get(c, AK1, NULL, 0, &gen));
    /* the fetch is in flight when auth publishes a change of another key:
     * every drop advances the generation, even one that found nothing */
    ctx_cache_drop_key(c, AK2);
    json_t *v = ctx_of(AK1, U1, 1);
    ctx_cache_put(c, AK1, NULL, v, gen, 1);
    assert_int_equal(cached(c, AK1, NULL, 2), -1);
    ctx_cache_stats st;
    ctx_cache_get_stats(c, &st);
    assert_int_equal(st.stale_puts, 1);
    assert_int_equal(st.stored, 0);
    /* the next miss fetches again and keeps it */
    assert_null(ctx_cache_get(c, AK1, NULL, 3, &gen));
    ctx_cache_put(c, AK1, NULL, v, gen, 3);
    assert_int_equal(cached(c, AK1, NULL, 4), 1);
    json_decref(v);
    ctx_cache_free(c);
}

static void test_bad_input_is_not_cached(void **state)
{
    (void)state;
    ctx_cache *c = ctx_cache_new(16, 10000);
    uint64_t gen;
    char longak[CTX_CACHE_KEY_MAX + 2];
    memset(longak, 'A', sizeof(longak) - 1);
    longak[sizeof(longak) - 1] = '\0';
    char longgroup[CTX_CACHE_GROUP_MAX + 2];
    memset(longgroup, 'g', sizeof(longgroup) - 1);
    longgroup[sizeof(longgroup) - 1] = '\0';
    json_t *v = ctx_of(AK1, U1, 1);
    const char *aks[] = {longak, AK1, "", NULL};
    const char *groups[] = {NULL, longgroup, NULL, NULL};
    for (size_t i = 0; i < TS_ARRAY_LEN(aks); i++) {
        assert_null(ctx_cache_get(c, aks[i], groups[i], 0, &gen));
        ctx_cache_put(c, aks[i], groups[i], v, gen, 0);
        assert_null(ctx_cache_get(c, aks[i], groups[i], 1, &gen));
    }
    /* not a JSON object (a problem body, null) */
    json_t *arr = json_array(), *str = json_string("forbidden");
    ctx_cache_put(c, AK1, NULL, arr, gen, 1);
    ctx_cache_put(c, AK1, NULL, str, gen, 1);
    ctx_cache_put(c, AK1, NULL, NULL, gen, 1);
    assert_null(ctx_cache_get(c, AK1, NULL, 2, &gen));
    /* a context without a user is kept (dropped by key or all, not by user) */
    json_t *nouser = json_pack("{s:s}", "access_key", AK1);
    ctx_cache_put(c, AK1, NULL, nouser, gen, 2);
    ctx_cache_drop_user(c, U1);
    json_t *hit = ctx_cache_get(c, AK1, NULL, 3, &gen);
    assert_non_null(hit);
    json_decref(hit);
    ctx_cache_drop_key(c, AK1);
    ctx_cache_stats st;
    ctx_cache_get_stats(c, &st);
    assert_int_equal(st.entries, 0);
    json_decref(nouser);
    json_decref(arr);
    json_decref(str);
    json_decref(v);
    ctx_cache_free(c);
}

/* ---- events ---------------------------------------------------------------------------- */

typedef struct packed {
    uint8_t *data;
    size_t len;
} packed;

static packed pack_msg(const ProtobufCMessage *m)
{
    packed p;
    p.len = protobuf_c_message_get_packed_size(m);
    p.data = malloc(p.len ? p.len : 1);
    protobuf_c_message_pack(m, p.data);
    return p;
}

/* four entries: AK1 (no group, default) of U1, AK2 of U1, AKOTHER of U2 */
static ctx_cache *four(void)
{
    ctx_cache *c = ctx_cache_new(16, 10000);
    fill(c, AK1, NULL, U1, 1, 0);
    fill(c, AK1, "default", U1, 2, 0);
    fill(c, AK2, NULL, U1, 3, 0);
    fill(c, "AKOTHER00000000000000", NULL, U2, 4, 0);
    return c;
}

static uint64_t entries(ctx_cache *c)
{
    ctx_cache_stats st;
    ctx_cache_get_stats(c, &st);
    return st.entries;
}

static void test_events_drop_what_they_name(void **state)
{
    (void)state;
    /* KeypairRevoked: that key only */
    ctx_cache *c = four();
    Tessera__V1__KeypairRevoked kr = TESSERA__V1__KEYPAIR_REVOKED__INIT;
    kr.access_key = AK1;
    kr.user_id = U1;
    packed p = pack_msg(&kr.base);
    auth_events_apply(c, "tessera.v1.KeypairRevoked", p.data, p.len, AK1);
    free(p.data);
    assert_int_equal(entries(c), 2);
    assert_int_equal(cached(c, AK2, NULL, 1), 3);
    ctx_cache_free(c);
    /* KeypairChanged: the payload's key wins over the record key */
    c = four();
    Tessera__V1__KeypairChanged kc = TESSERA__V1__KEYPAIR_CHANGED__INIT;
    kc.access_key = AK2;
    p = pack_msg(&kc.base);
    auth_events_apply(c, "tessera.v1.KeypairChanged", p.data, p.len, "whatever");
    free(p.data);
    assert_int_equal(entries(c), 3);
    assert_int_equal(cached(c, AK2, NULL, 1), -1);
    ctx_cache_free(c);
    /* UserChanged: every key of the user */
    c = four();
    Tessera__V1__UserChanged uc = TESSERA__V1__USER_CHANGED__INIT;
    uc.user_id = U1;
    uc.status = "inactive";
    p = pack_msg(&uc.base);
    auth_events_apply(c, "tessera.v1.UserChanged", p.data, p.len, U1);
    free(p.data);
    assert_int_equal(entries(c), 1);
    assert_int_equal(cached(c, "AKOTHER00000000000000", NULL, 1), 4);
    ctx_cache_free(c);
    /* UserChanged of a superadmin: everything (its domain admins' contexts
     * list their domain's superadmins) */
    c = four();
    uc.role = "superadmin";
    uc.status = "active";
    p = pack_msg(&uc.base);
    auth_events_apply(c, "tessera.v1.UserChanged", p.data, p.len, U1);
    free(p.data);
    assert_int_equal(entries(c), 0);
    ctx_cache_free(c);
    /* policies, domains, projects, members, resource group access: everything */
    static const char *const all[] = {"tessera.v1.PolicyChanged",
                                      "tessera.v1.DomainChanged",
                                      "tessera.v1.ProjectChanged",
                                      "tessera.v1.ProjectMembersChanged",
                                      "tessera.v1.ResourceGroupAccessChanged",
                                      "tessera.v1.SomethingNew",
                                      "",
                                      NULL};
    for (size_t i = 0; i < TS_ARRAY_LEN(all); i++) {
        c = four();
        Tessera__V1__PolicyChanged pc = TESSERA__V1__POLICY_CHANGED__INIT;
        pc.policy_name = "default";
        p = pack_msg(&pc.base);
        auth_events_apply(c, all[i], p.data, p.len, "default");
        free(p.data);
        assert_int_equal(entries(c), 0);
        ctx_cache_free(c);
    }
}

static void test_undecodable_events_fall_back_safely(void **state)
{
    (void)state;
    static const uint8_t garbage[] = {0xff, 0xff, 0xff, 0xff, 0x0f, 0x12, 0x99};
    /* a keypair event that does not decode: the record key when it is one */
    ctx_cache *c = four();
    auth_events_apply(c, "tessera.v1.KeypairRevoked", garbage, sizeof(garbage), AK1);
    assert_int_equal(entries(c), 2);
    ctx_cache_free(c);
    /* ... else everything */
    static const char *const bad_keys[] = {NULL, "", "not-a-key", "akt est00000000000001",
                                           "AKTEST000000000000012"};
    for (size_t i = 0; i < TS_ARRAY_LEN(bad_keys); i++) {
        c = four();
        auth_events_apply(c, "tessera.v1.KeypairRevoked", garbage, sizeof(garbage), bad_keys[i]);
        assert_int_equal(entries(c), 0);
        ctx_cache_free(c);
        c = four();
        auth_events_apply(c, "tessera.v1.UserChanged", garbage, sizeof(garbage), bad_keys[i]);
        assert_int_equal(entries(c), 0);
        ctx_cache_free(c);
    }
    /* a decodable keypair event without an access key, keyed by nonsense */
    c = four();
    Tessera__V1__KeypairRevoked kr = TESSERA__V1__KEYPAIR_REVOKED__INIT;
    kr.access_key = "lower-case-key-00001";
    packed p = pack_msg(&kr.base);
    auth_events_apply(c, "tessera.v1.KeypairRevoked", p.data, p.len, "x");
    free(p.data);
    assert_int_equal(entries(c), 0);
    ctx_cache_free(c);
    /* a UserChanged whose id is not a UUID, keyed by a UUID: the key */
    c = four();
    Tessera__V1__UserChanged uc = TESSERA__V1__USER_CHANGED__INIT;
    uc.user_id = "nope";
    p = pack_msg(&uc.base);
    auth_events_apply(c, "tessera.v1.UserChanged", p.data, p.len, U2);
    free(p.data);
    assert_int_equal(entries(c), 3);
    ctx_cache_free(c);
    /* no payload at all */
    c = four();
    auth_events_apply(c, "tessera.v1.UserChanged", NULL, 0, NULL);
    assert_int_equal(entries(c), 0);
    ctx_cache_free(c);
}

/* ---- threads --------------------------------------------------------------------------- */

typedef struct worker {
    ctx_cache *c;
    int id;
    int hits;
} worker;

static void *hammer(void *arg)
{
    worker *w = arg;
    char ak[24];
    for (int i = 0; i < 20000; i++) {
        snprintf(ak, sizeof(ak), "AK%02d", (i * 7 + w->id) % 40);
        uint64_t gen;
        json_t *hit = ctx_cache_get(w->c, ak, (i & 1) ? "default" : NULL, i, &gen);
        if (hit) {
            /* a hit is always a whole, consistent context of that key */
            if (strcmp(json_string_value(json_object_get(hit, "access_key")), ak) != 0) abort();
            w->hits++;
            json_decref(hit);
        } else {
            json_t *v = ctx_of(ak, (i % 3) ? U1 : U2, i);
            ctx_cache_put(w->c, ak, (i & 1) ? "default" : NULL, v, gen, i);
            json_decref(v);
        }
        if (w->id == 0 && i % 997 == 0) ctx_cache_drop_all(w->c);
        if (w->id == 1 && i % 331 == 0) ctx_cache_drop_user(w->c, U2);
        if (w->id == 2 && i % 113 == 0) ctx_cache_drop_key(w->c, ak);
    }
    return NULL;
}

static void test_concurrent_use(void **state)
{
    (void)state;
    ctx_cache *c = ctx_cache_new(32, 50);
    pthread_t th[4];
    worker w[4];
    for (int i = 0; i < 4; i++) {
        w[i] = (worker){c, i, 0};
        pthread_create(&th[i], NULL, hammer, &w[i]);
    }
    int hits = 0;
    for (int i = 0; i < 4; i++) {
        pthread_join(th[i], NULL);
        hits += w[i].hits;
    }
    ctx_cache_stats st;
    ctx_cache_get_stats(c, &st);
    assert_true(st.entries <= 32);
    assert_int_equal(st.hits + st.misses, 80000);
    assert_int_equal(st.hits, (uint64_t)hits);
    assert_true(st.hits > 0);
    ctx_cache_free(c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_hit_is_an_independent_copy),
        cmocka_unit_test(test_groups_are_separate_keys),
        cmocka_unit_test(test_ttl_expiry),
        cmocka_unit_test(test_bound_evicts_least_recently_used),
        cmocka_unit_test(test_drop_by_key_user_and_all),
        cmocka_unit_test(test_fetch_racing_an_invalidation_is_not_kept),
        cmocka_unit_test(test_bad_input_is_not_cached),
        cmocka_unit_test(test_events_drop_what_they_name),
        cmocka_unit_test(test_undecodable_events_fall_back_safely),
        cmocka_unit_test(test_concurrent_use),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
