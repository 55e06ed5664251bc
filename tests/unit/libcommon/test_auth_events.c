/* test_auth_events.c: how tessera.auth.v1 events drop the entries of the
 * caches registered with libcommon/auth_events.h (auth_events_apply): what
 * each event names, for a cache of contexts and one of credentials, where
 * the access key and the user id come from, and what an event that cannot
 * be read does (everything goes). Also libcommon/authctx.h's caller and
 * context checks. */
#include "libcommon/auth_events.h"
#include "libcommon/authctx.h"
#include "tessera/v1/auth.pb-c.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#define AK1 "AKTEST00000000000001"
#define AK2 "AKTEST00000000000002"
#define AK3 "AKOTHER0000000000000"
#define U1 "11111111-1111-4111-8111-111111111111"
#define U2 "22222222-2222-4222-8222-222222222222"

/* The source: every key is known, as a context of the user its name says. */
static authcache_result fetch(void *ctx, const char *ak, const char *variant, void *arg,
                              void **value, ts_err *err)
{
    (void)ctx;
    (void)variant;
    (void)arg;
    (void)err;
    *value =
        json_pack("{s:s, s:{s:s}}", "access_key", ak, "user", "id", strcmp(ak, AK3) == 0 ? U2 : U1);
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

static void get(authcache *c, const char *ak, const char *variant)
{
    void *v = NULL;
    assert_int_equal(authcache_get(c, ak, variant, NULL, &v, NULL), AUTHCACHE_FOUND);
    json_decref(v);
}

typedef struct fixture {
    authcache *c;
    auth_events *ev;
} fixture;

/* four entries: AK1 (no group, default) of U1, AK2 of U1, AK3 of U2, in a
 * cache holding what holds says */
static fixture four(auth_events_holds holds)
{
    authcache_opts o = {.max_entries = 16,
                        .ttl_ms = 60000,
                        .fetch = fetch,
                        .copy = copy_json,
                        .free = free_json,
                        .user_of = user_of};
    fixture f = {authcache_new(&o), auth_events_new()};
    auth_events_add(f.ev, f.c, holds, "test");
    get(f.c, AK1, NULL);
    get(f.c, AK1, "default");
    get(f.c, AK2, NULL);
    get(f.c, AK3, NULL);
    return f;
}

static uint64_t entries(const fixture *f)
{
    authcache_stats st;
    authcache_stats_get(f->c, &st);
    return st.entries;
}

static void done(fixture *f)
{
    auth_events_free(f->ev);
    authcache_free(f->c);
}

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

/* Apply an event to a fresh four(holds); the entries left. */
static uint64_t left_after(auth_events_holds holds, const char *type, const ProtobufCMessage *m,
                           const char *key, const char *subject)
{
    fixture f = four(holds);
    packed p = m ? pack_msg(m) : (packed){NULL, 0};
    auth_events_apply(f.ev, type, p.data, p.len, key, subject);
    free(p.data);
    uint64_t n = entries(&f);
    done(&f);
    return n;
}

static void test_keypair_events_drop_that_key(void **state)
{
    (void)state;
    Tessera__V1__KeypairRevoked kr = TESSERA__V1__KEYPAIR_REVOKED__INIT;
    kr.access_key = AK1;
    kr.user_id = U1;
    Tessera__V1__KeypairChanged kc = TESSERA__V1__KEYPAIR_CHANGED__INIT;
    kc.access_key = AK2;
    for (int h = AUTH_EVENTS_CREDENTIALS; h <= AUTH_EVENTS_CONTEXTS; h++) {
        /* KeypairRevoked: that key only (both its groups) */
        assert_int_equal(left_after(h, "tessera.v1.KeypairRevoked", &kr.base, AK1, NULL), 2);
        /* KeypairChanged: the payload's key wins over the record key */
        assert_int_equal(left_after(h, "tessera.v1.KeypairChanged", &kc.base, "whatever", NULL), 3);
    }
    /* the stats of a key drop */
    fixture f = four(AUTH_EVENTS_CONTEXTS);
    packed p = pack_msg(&kr.base);
    auth_events_apply(f.ev, "tessera.v1.KeypairRevoked", p.data, p.len, AK1, NULL);
    free(p.data);
    authcache_stats st;
    authcache_stats_get(f.c, &st);
    assert_int_equal(st.invalidated_key, 1);
    assert_int_equal(st.dropped, 2);
    done(&f);
}

static void test_user_changed(void **state)
{
    (void)state;
    Tessera__V1__UserChanged uc = TESSERA__V1__USER_CHANGED__INIT;
    uc.user_id = U1;
    uc.status = "inactive";
    /* every key of the user */
    assert_int_equal(left_after(AUTH_EVENTS_CONTEXTS, "tessera.v1.UserChanged", &uc.base, U1, NULL),
                     1);
    assert_int_equal(
        left_after(AUTH_EVENTS_CREDENTIALS, "tessera.v1.UserChanged", &uc.base, U1, NULL), 1);
    /* a superadmin: contexts drop everything (its domain admins' contexts
     * list their domain's superadmins); credentials only the user's */
    uc.role = "superadmin";
    uc.status = "active";
    assert_int_equal(left_after(AUTH_EVENTS_CONTEXTS, "tessera.v1.UserChanged", &uc.base, U1, NULL),
                     0);
    assert_int_equal(
        left_after(AUTH_EVENTS_CREDENTIALS, "tessera.v1.UserChanged", &uc.base, U1, NULL), 1);
    /* an id that is not a UUID, keyed by a UUID: the key */
    uc.role = "user";
    uc.user_id = "nope";
    assert_int_equal(left_after(AUTH_EVENTS_CONTEXTS, "tessera.v1.UserChanged", &uc.base, U2, NULL),
                     3);
}

static void test_project_and_other_events(void **state)
{
    (void)state;
    static const char *const projects[] = {"tessera.v1.ProjectChanged",
                                           "tessera.v1.ProjectMembersChanged",
                                           "tessera.v1.ResourceGroupAccessChanged"};
    static const char *const all[] = {"tessera.v1.PolicyChanged", "tessera.v1.DomainChanged",
                                      "tessera.v1.SomethingNew", "", NULL};
    Tessera__V1__PolicyChanged pc = TESSERA__V1__POLICY_CHANGED__INIT;
    pc.policy_name = "default";
    for (size_t i = 0; i < TS_ARRAY_LEN(projects); i++) {
        /* what a session may use: contexts go, credentials stay */
        assert_int_equal(left_after(AUTH_EVENTS_CONTEXTS, projects[i], &pc.base, "p", NULL), 0);
        assert_int_equal(left_after(AUTH_EVENTS_CREDENTIALS, projects[i], &pc.base, "p", NULL), 4);
    }
    for (size_t i = 0; i < TS_ARRAY_LEN(all); i++) {
        assert_int_equal(left_after(AUTH_EVENTS_CONTEXTS, all[i], &pc.base, "default", NULL), 0);
        assert_int_equal(left_after(AUTH_EVENTS_CREDENTIALS, all[i], &pc.base, "default", NULL), 0);
    }
    /* a project event is counted as no invalidation of credentials */
    fixture f = four(AUTH_EVENTS_CREDENTIALS);
    auth_events_apply(f.ev, projects[0], NULL, 0, "p", NULL);
    authcache_stats st;
    authcache_stats_get(f.c, &st);
    assert_int_equal(st.invalidated_all + st.invalidated_key + st.invalidated_user, 0);
    done(&f);
}

static void test_undecodable_events_fall_back_safely(void **state)
{
    (void)state;
    static const uint8_t garbage[] = {0xff, 0xff, 0xff, 0xff, 0x0f, 0x12, 0x99};
    auth_events_holds h = AUTH_EVENTS_CONTEXTS;
    /* a keypair event that does not decode: the record key when it is one,
     * else the envelope's subject */
    fixture f = four(h);
    auth_events_apply(f.ev, "tessera.v1.KeypairRevoked", garbage, sizeof(garbage), AK1, NULL);
    assert_int_equal(entries(&f), 2);
    done(&f);
    f = four(h);
    auth_events_apply(f.ev, "tessera.v1.KeypairRevoked", garbage, sizeof(garbage), "x", AK2);
    assert_int_equal(entries(&f), 3);
    done(&f);
    /* ... else everything */
    static const char *const bad_keys[] = {NULL, "", "not-a-key", "akt est00000000000001",
                                           "AKTEST000000000000012"};
    for (size_t i = 0; i < TS_ARRAY_LEN(bad_keys); i++) {
        for (int k = 0; k < 2; k++) {
            f = four(k ? AUTH_EVENTS_CREDENTIALS : AUTH_EVENTS_CONTEXTS);
            auth_events_apply(f.ev, "tessera.v1.KeypairRevoked", garbage, sizeof(garbage),
                              bad_keys[i], bad_keys[i]);
            assert_int_equal(entries(&f), 0);
            done(&f);
            f = four(k ? AUTH_EVENTS_CREDENTIALS : AUTH_EVENTS_CONTEXTS);
            auth_events_apply(f.ev, "tessera.v1.UserChanged", garbage, sizeof(garbage), bad_keys[i],
                              NULL);
            assert_int_equal(entries(&f), 0);
            done(&f);
        }
    }
    /* a decodable keypair event without an access key, keyed by nonsense */
    Tessera__V1__KeypairRevoked kr = TESSERA__V1__KEYPAIR_REVOKED__INIT;
    kr.access_key = "lower-case-key-00001";
    assert_int_equal(left_after(h, "tessera.v1.KeypairRevoked", &kr.base, "x", NULL), 0);
    /* no payload at all */
    assert_int_equal(left_after(h, "tessera.v1.UserChanged", NULL, NULL, NULL), 0);
    assert_int_equal(left_after(h, NULL, NULL, NULL, NULL), 0);
}

static void test_two_caches_one_consumer(void **state)
{
    (void)state;
    fixture creds = four(AUTH_EVENTS_CREDENTIALS);
    fixture ctxs = four(AUTH_EVENTS_CONTEXTS);
    auth_events_add(creds.ev, ctxs.c, AUTH_EVENTS_CONTEXTS, "contexts");
    auth_events_apply(creds.ev, "tessera.v1.ProjectChanged", NULL, 0, NULL, NULL);
    assert_int_equal(entries(&creds), 4);
    assert_int_equal(entries(&ctxs), 0);
    assert_int_equal(auth_events_count(creds.ev), 0); /* counted by the consumer only */
    assert_int_equal(auth_events_count(NULL), 0);
    done(&creds);
    done(&ctxs);
}

/* ---- authctx's checks ------------------------------------------------------------------ */

static void test_caller_of_a_request(void **state)
{
    (void)state;
    static const struct {
        const char *h[3];
        authctx_caller want;
    } cases[] = {
        {{"X-Tessera-Caller: " U1, "X-Tessera-Caller-Access-Key: " AK1, NULL}, AUTHCTX_CALLER_OK},
        {{"X-Tessera-Caller-Access-Key: " AK1, NULL}, AUTHCTX_CALLER_NONE},
        {{"X-Tessera-Caller: not-a-uuid", "X-Tessera-Caller-Access-Key: " AK1, NULL},
         AUTHCTX_CALLER_NONE},
        {{"X-Tessera-Caller: " U1, NULL}, AUTHCTX_CALLER_BAD_KEY},
        {{"X-Tessera-Caller: " U1, "X-Tessera-Caller-Access-Key: AKSHORT", NULL},
         AUTHCTX_CALLER_BAD_KEY},
    };
    for (size_t i = 0; i < TS_ARRAY_LEN(cases); i++) {
        http_req *req = http_req_new_local("GET", "/", cases[i].h, NULL, 0);
        const char *user, *ak;
        assert_int_equal(authctx_caller_of(req, &user, &ak), cases[i].want);
        if (cases[i].want == AUTHCTX_CALLER_OK) {
            assert_string_equal(user, U1);
            assert_string_equal(ak, AK1);
        }
        http_req_free_local(req);
    }
}

static void test_context_check(void **state)
{
    (void)state;
    json_t *ok = json_pack("{s:b, s:{s:s, s:s, s:s}}", "is_active", 1, "user", "id", U1, "status",
                           "active", "role", "admin");
    assert_int_equal(authctx_check(ok, U1), AUTHCTX_ACTIVE);
    assert_int_equal(authctx_check(ok, NULL), AUTHCTX_ACTIVE);
    assert_int_equal(authctx_check(ok, U2), AUTHCTX_NOT_CALLERS);
    assert_string_equal(authctx_user_field(ok, "role"), "admin");
    assert_string_equal(authctx_user_field(ok, "email"), "");
    json_object_set_new(ok, "is_active", json_false());
    assert_int_equal(authctx_check(ok, U1), AUTHCTX_KEY_INACTIVE);
    json_object_set_new(ok, "is_active", json_true());
    json_object_set_new(json_object_get(ok, "user"), "status", json_string("inactive"));
    assert_int_equal(authctx_check(ok, U1), AUTHCTX_USER_INACTIVE);
    json_decref(ok);
    json_t *empty = json_object();
    assert_int_equal(authctx_check(empty, U1), AUTHCTX_NOT_CALLERS);
    assert_int_equal(authctx_check(empty, NULL), AUTHCTX_KEY_INACTIVE);
    json_decref(empty);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_keypair_events_drop_that_key),
        cmocka_unit_test(test_user_changed),
        cmocka_unit_test(test_project_and_other_events),
        cmocka_unit_test(test_undecodable_events_fall_back_safely),
        cmocka_unit_test(test_two_caches_one_consumer),
        cmocka_unit_test(test_caller_of_a_request),
        cmocka_unit_test(test_context_check),
    };
    return cmocka_run_group_tests_name("auth_events", tests, NULL, NULL);
}
