/* Unit tests: service credentials (libcommon/svcauth.h). The expected
 * signatures come from the tests' independent Python signer
 * (tests/integration/svc_signer.py) with the same seed, time and request. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "libcommon/http.h"
#include "libcommon/log.h"
#include "libcommon/svcauth.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define SEED_B64 "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=" /* bytes 0..31 */
#define PUB_B64 "A6EHv/POEL4dcN0Y50vAmWfk1jCbpQ1fHdyGZBJVMbg="
#define T0 1795304401000LL
#define CALLER "0b7ad6a8-6f1c-4b8e-9c43-2f6d8f1d2a10"
#define AK "AKIAIOSFODNN7EXAMPLE"
#define NONCE "bm9uY2Utbm9uY2Ut"

static char g_dir[] = "/tmp/test-svcauth-XXXXXX";

static char *path_of(const char *name)
{
    static char buf[4][256];
    static int i;
    i = (i + 1) % 4;
    snprintf(buf[i], sizeof(buf[i]), "%s/%s", g_dir, name);
    return buf[i];
}

static void write_file(const char *name, const char *text)
{
    FILE *f = fopen(path_of(name), "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
    chmod(path_of(name), 0600);
}

static int setup(void **state)
{
    (void)state;
    if (!tlog_set_level("error")) return -1; /* every refusal is a warning */
    if (!mkdtemp(g_dir)) return -1;
    write_file("gateway.key", "tessera-service-key v1 gateway " SEED_B64 "\n");
    write_file("trusted", "# the gateway\ngateway " PUB_B64 "\n\n");
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    char cmd[300];
    snprintf(cmd, sizeof(cmd), "rm -rf %s", g_dir);
    return system(cmd) == 0 ? 0 : -1;
}

static void load_gateway(void)
{
    ts_err err = {{0}};
    assert_true(svcauth_load("gateway", path_of("gateway.key"), path_of("trusted"), 30000, &err));
}

static void test_known_answers(void **state)
{
    (void)state;
    load_gateway();
    char line[SVCAUTH_HEADER_LINE_MAX];
    const char *t = "/v1/credentials/AKIAIOSFODNN7EXAMPLE?x=1";
    assert_true(svcauth_sign_with(T0, NONCE, "GET", t, strlen(t), NULL, NULL, NULL, 0, line));
    assert_string_equal(line, "X-Tessera-Service-Auth: v1 gateway 1795304401000 " NONCE
                              " XJFL648LrtgEYQH+iegxFZWazR+dvnQzgpIffZXwnQVd9kAIy5LlZvexvivMKiORXI+"
                              "BpInP+dBiMUf+/CdxDQ==");
    const char *body = "{\"a\":1}";
    assert_true(svcauth_sign_with(T0, NONCE, "POST", "/v1/admin/users", 15, CALLER, AK, body,
                                  strlen(body), line));
    assert_string_equal(line, "X-Tessera-Service-Auth: v1 gateway 1795304401000 " NONCE
                              " kf5OBTb43FLSvM02+cFgSAOc4LGRxmpBv4EwbvJwU/sYzdlb3WsrhbwQox4eT5AWWxM"
                              "ewmMoxAK3EgGmUTjnAA==");
    /* random nonces: the same request twice signs differently */
    char a[SVCAUTH_HEADER_LINE_MAX], b[SVCAUTH_HEADER_LINE_MAX];
    assert_true(svcauth_sign_at(T0, "GET", t, strlen(t), NULL, NULL, NULL, 0, a));
    assert_true(svcauth_sign_at(T0, "GET", t, strlen(t), NULL, NULL, NULL, 0, b));
    assert_string_not_equal(a, b);
    svcauth_reset();
    assert_false(svcauth_can_sign());
    assert_false(svcauth_sign_at(T0, "GET", "/", 1, NULL, NULL, NULL, 0, line));
}

static void test_url_target(void **state)
{
    (void)state;
    size_t n;
    const char *t = svcauth_url_target("http://127.0.0.1:8091/v1/x?a=b#frag", &n);
    assert_int_equal(n, 9);
    assert_memory_equal(t, "/v1/x?a=b", 9);
    t = svcauth_url_target("http://host", &n);
    assert_int_equal(n, 1);
    assert_memory_equal(t, "/", 1);
    t = svcauth_url_target("https://user@host:1/a%20b", &n);
    assert_int_equal(n, 6);
    assert_memory_equal(t, "/a%20b", 6);
}

/* The access table of a pretend service. */
static const svcauth_rule RULES[] = {
    {"GET", "/v1/credentials", SVCAUTH_GATEWAY},
    {"*", "/v1/admin/", SVCAUTH_GATEWAY | SVCAUTH_REGISTRY},
    {"POST", "/v1/mounts/resolve", SVCAUTH_REGISTRY},
    {"*", "/v1/transfer", SVCAUTH_PUBLIC},
};
static const svcauth_table TABLE = {RULES, TS_ARRAY_LEN(RULES)};

/* Run the guard on a local request carrying `auth` (NULL: none); returns the
 * status it set (0 when it let the request through) and the service seen. */
static int guard(const char *method, const char *target, const char *auth, const char *caller,
                 const char *body, const char **service)
{
    const char *headers[4];
    int n = 0;
    char ch[200];
    if (auth) headers[n++] = auth;
    if (caller) {
        snprintf(ch, sizeof(ch), "X-Tessera-Caller: %s", caller);
        headers[n++] = ch;
    }
    headers[n] = NULL;
    http_req *req = http_req_new_local(method, target, headers, body, body ? strlen(body) : 0);
    http_resp *resp = http_resp_new();
    bool ok = svcauth_guard(req, resp, (void *)&TABLE);
    int status = http_resp_status(resp);
    if (service) *service = req->service;
    assert_true(ok == (status == 0));
    http_resp_free(resp);
    http_req_free_local(req);
    return status;
}

static void sign_now(const char *method, const char *target, const char *caller, const char *body,
                     char line[SVCAUTH_HEADER_LINE_MAX])
{
    assert_true(svcauth_sign(method, target, strlen(target), caller, NULL, body,
                             body ? strlen(body) : 0, line));
}

static void test_guard(void **state)
{
    (void)state;
    load_gateway();
    char line[SVCAUTH_HEADER_LINE_MAX];
    const char *svc = "x";
    /* signed by the gateway, a route it may call */
    sign_now("GET", "/v1/credentials/AK", NULL, NULL, line);
    assert_int_equal(guard("GET", "/v1/credentials/AK", line, NULL, NULL, &svc), 0);
    assert_string_equal(svc, "gateway");
    /* the same signature again: a replay */
    assert_int_equal(guard("GET", "/v1/credentials/AK", line, NULL, NULL, NULL), 401);
    /* no credential; health and public routes need none */
    assert_int_equal(guard("GET", "/v1/credentials/AK", NULL, NULL, NULL, NULL), 401);
    assert_int_equal(guard("GET", "/healthz", NULL, NULL, NULL, &svc), 0);
    assert_null(svc);
    assert_int_equal(guard("GET", "/metrics", NULL, NULL, NULL, NULL), 0);
    assert_int_equal(guard("PATCH", "/v1/transfer/upload/x", NULL, NULL, NULL, NULL), 0);
    /* a prefix matches whole segments only */
    sign_now("GET", "/v1/credentialsX", NULL, NULL, line);
    assert_int_equal(guard("GET", "/v1/credentialsX", line, NULL, NULL, NULL), 403);
    /* a route the gateway may not call; one no rule names */
    sign_now("POST", "/v1/mounts/resolve", NULL, "{}", line);
    assert_int_equal(guard("POST", "/v1/mounts/resolve", line, NULL, "{}", NULL), 403);
    sign_now("GET", "/v1/other", NULL, NULL, line);
    assert_int_equal(guard("GET", "/v1/other", line, NULL, NULL, NULL), 403);
    /* tampering: another target, body, caller or method than signed */
    sign_now("POST", "/v1/admin/users", CALLER, "{\"role\":\"user\"}", line);
    assert_int_equal(guard("POST", "/v1/admin/users?x", line, CALLER, "{\"role\":\"user\"}", NULL),
                     401);
    assert_int_equal(
        guard("POST", "/v1/admin/users", line, CALLER, "{\"role\":\"superadmin\"}", NULL), 401);
    assert_int_equal(guard("POST", "/v1/admin/users", line, "11111111-2222-3333-4444-555555555555",
                           "{\"role\":\"user\"}", NULL),
                     401);
    assert_int_equal(guard("PATCH", "/v1/admin/users", line, CALLER, "{\"role\":\"user\"}", NULL),
                     401);
    assert_int_equal(guard("POST", "/v1/admin/users", line, CALLER, "{\"role\":\"user\"}", NULL),
                     0);
    /* too old, too far ahead */
    const char *t = "/v1/admin/x";
    assert_true(
        svcauth_sign_at(ts_now_wall_ms() - 31000, "GET", t, strlen(t), NULL, NULL, NULL, 0, line));
    assert_int_equal(guard("GET", t, line, NULL, NULL, NULL), 401);
    assert_true(
        svcauth_sign_at(ts_now_wall_ms() + 31000, "GET", t, strlen(t), NULL, NULL, NULL, 0, line));
    assert_int_equal(guard("GET", t, line, NULL, NULL, NULL), 401);
    /* malformed headers */
    static const char *const bad[] = {
        "X-Tessera-Service-Auth: v2 gateway 1 " NONCE " AAAA",
        "X-Tessera-Service-Auth: v1 gateway",
        "X-Tessera-Service-Auth: v1 Gateway 1795304401000 " NONCE " " SEED_B64 SEED_B64,
        "X-Tessera-Service-Auth: v1 gateway 12a " NONCE " xx",
        "X-Tessera-Service-Auth: v1 gateway 1795304401000 " NONCE " !!!!",
        "X-Tessera-Service-Auth: v1 gateway 1795304401000 short " SEED_B64 SEED_B64,
        "X-Tessera-Service-Auth: v1 gateway 1795304401000 " SEED_B64 SEED_B64,
        "X-Tessera-Service-Auth: ",
    };
    for (size_t i = 0; i < TS_ARRAY_LEN(bad); i++)
        assert_int_equal(guard("GET", t, bad[i], NULL, NULL, NULL), 401);
    /* a service with no trusted key here */
    svcauth_reset();
    write_file("registry.key", "tessera-service-key v1 registry " PUB_B64 "\n");
    ts_err err = {{0}};
    assert_true(svcauth_load("registry", path_of("registry.key"), path_of("trusted"), 30000, &err));
    sign_now("GET", t, NULL, NULL, line);
    assert_int_equal(guard("GET", t, line, NULL, NULL, NULL), 401);
    svcauth_stats st;
    svcauth_get_stats(&st);
    assert_true(st.accepted >= 2 && st.replayed >= 1 && st.missing >= 1 && st.forbidden >= 3 &&
                st.bad_signature >= 4 && st.expired >= 2 && st.malformed >= 7 &&
                st.unknown_service >= 1);
    svcauth_reset();
}

static void test_load_errors(void **state)
{
    (void)state;
    ts_err err = {{0}};
    /* a key made for another service */
    assert_false(svcauth_load("auth", path_of("gateway.key"), NULL, 0, &err));
    assert_non_null(strstr(err.msg, "a key of service 'gateway', not of 'auth'"));
    write_file("junk.key", "tessera-service-key v1 gateway notbase64\n");
    assert_false(svcauth_load("gateway", path_of("junk.key"), NULL, 0, &err));
    assert_non_null(strstr(err.msg, "not a service key file"));
    write_file("bad-trust", "gateway " PUB_B64 "\nregistry\n");
    assert_false(svcauth_load("gateway", NULL, path_of("bad-trust"), 0, &err));
    assert_non_null(strstr(err.msg, "line 2"));
    assert_false(svcauth_load("gateway", path_of("nope.key"), NULL, 0, &err));
    /* a failed reload keeps what was loaded */
    load_gateway();
    assert_false(svcauth_load("gateway", path_of("junk.key"), path_of("trusted"), 0, &err));
    assert_true(svcauth_can_sign());
    assert_int_equal(svcauth_trusted_keys(), 1);
    /* unknown service names in the trust file are ignored */
    write_file("more-trust", "gateway " PUB_B64 "\noperator " PUB_B64 "\n");
    assert_true(svcauth_load("gateway", NULL, path_of("more-trust"), 0, &err));
    assert_int_equal(svcauth_trusted_keys(), 1);
    svcauth_reset();
}

static void test_new_key(void **state)
{
    (void)state;
    ts_err err = {{0}};
    char *buf = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&buf, &len);
    assert_true(svcauth_new_key("vfolder", path_of("vfolder.key"), out, &err));
    fflush(out);
    struct stat st;
    assert_int_equal(stat(path_of("vfolder.key"), &st), 0);
    assert_int_equal(st.st_mode & 0777, 0600);
    assert_int_equal(strncmp(buf, "vfolder ", 8), 0);
    /* never overwritten; bad names refused */
    assert_false(svcauth_new_key("vfolder", path_of("vfolder.key"), out, &err));
    assert_non_null(strstr(err.msg, "never overwritten"));
    assert_false(svcauth_new_key("Bad Name", path_of("x.key"), out, &err));
    /* the public line of the file is the one printed */
    char *buf2 = NULL;
    size_t len2 = 0;
    FILE *out2 = open_memstream(&buf2, &len2);
    assert_true(svcauth_public_line(path_of("vfolder.key"), out2, &err));
    fclose(out2);
    fclose(out);
    assert_string_equal(buf, buf2);
    /* a key signs what the trust line verifies */
    write_file("vf-trust", buf);
    assert_true(svcauth_load("vfolder", path_of("vfolder.key"), path_of("vf-trust"), 0, &err));
    char line[SVCAUTH_HEADER_LINE_MAX];
    sign_now("POST", "/v1/admin/x", NULL, NULL, line);
    assert_int_equal(guard("POST", "/v1/admin/x", line, NULL, NULL, NULL), 403); /* not allowed */
    sign_now("GET", "/v1/transfer/x", NULL, NULL, line);
    assert_int_equal(guard("GET", "/v1/transfer/x", line, NULL, NULL, NULL), 0);
    free(buf);
    free(buf2);
    svcauth_reset();
}

/* Two equal requests in the same millisecond (two threads asking auth for
 * the same context at once) are both accepted: their nonces differ. The
 * same nonce again is a replay. */
static void test_equal_requests_are_not_replays(void **state)
{
    (void)state;
    load_gateway();
    const char *t = "/v1/credentials/AK";
    int64_t now = ts_now_wall_ms();
    char a[SVCAUTH_HEADER_LINE_MAX], b[SVCAUTH_HEADER_LINE_MAX];
    assert_true(svcauth_sign_at(now, "GET", t, strlen(t), NULL, NULL, NULL, 0, a));
    assert_true(svcauth_sign_at(now, "GET", t, strlen(t), NULL, NULL, NULL, 0, b));
    assert_int_equal(guard("GET", t, a, NULL, NULL, NULL), 0);
    assert_int_equal(guard("GET", t, b, NULL, NULL, NULL), 0);
    assert_true(svcauth_sign_with(now, "fixed-nonce", "GET", t, strlen(t), NULL, NULL, NULL, 0, a));
    assert_int_equal(guard("GET", t, a, NULL, NULL, NULL), 0);
    assert_int_equal(guard("GET", t, a, NULL, NULL, NULL), 401);
    /* the nonce is signed: another one in the header does not verify */
    char *sp = strstr(a, "fixed-nonce");
    assert_non_null(sp);
    memcpy(sp, "fixed-noncf", 11);
    assert_int_equal(guard("GET", t, a, NULL, NULL, NULL), 401);
    svcauth_reset();
}

/* Many signatures within the window: the replay set grows and still finds
 * every one (and refuses each a second time). */
static void test_replay_set_grows(void **state)
{
    (void)state;
    load_gateway();
    enum { N = 3000 };
    char(*lines)[SVCAUTH_HEADER_LINE_MAX] = calloc(N, SVCAUTH_HEADER_LINE_MAX);
    assert_non_null(lines);
    char t[64];
    for (int i = 0; i < N; i++) {
        snprintf(t, sizeof(t), "/v1/credentials/k%d", i);
        sign_now("GET", t, NULL, NULL, lines[i]);
        assert_int_equal(guard("GET", t, lines[i], NULL, NULL, NULL), 0);
    }
    for (int i = 0; i < N; i += 7) {
        snprintf(t, sizeof(t), "/v1/credentials/k%d", i);
        assert_int_equal(guard("GET", t, lines[i], NULL, NULL, NULL), 401);
    }
    free(lines);
    svcauth_reset();
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_known_answers),
        cmocka_unit_test(test_url_target),
        cmocka_unit_test(test_guard),
        cmocka_unit_test(test_load_errors),
        cmocka_unit_test(test_new_key),
        cmocka_unit_test(test_replay_set_grows),
        cmocka_unit_test(test_equal_requests_are_not_replays),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
