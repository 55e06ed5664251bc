/* test_rds.c: rds.c against a real Redis that the test starts in a temp dir
 * (servers.h). */
#include "libcommon/log.h"
#include "libcommon/rds.h"
#include "tests/unit/libcommon/servers.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ---- Redis ----------------------------------------------------------------------------------- */

static rds *connect_rds(const char *url)
{
    ts_err err = {{0}};
    rds *r = rds_connect(url, 1000, &err);
    if (!r) fail_msg("rds_connect %s: %s", url, err.msg);
    return r;
}

static redisReply *cmd(rds *r, const char *a0, const char *a1, const char *a2)
{
    const char *argv[3] = {a0, a1, a2};
    int argc = a2 ? 3 : a1 ? 2 : 1;
    ts_err err = {{0}};
    redisReply *rep = rds_command(r, argc, argv, NULL, &err);
    if (!rep) fail_msg("%s: %s", a0, err.msg);
    return rep;
}

static void test_rds_bad_urls(void **state)
{
    (void)state;
    static const struct {
        const char *url, *want;
    } cases[] = {
        {"", "empty"},
        {"http://localhost:6379", "must start with redis:// or unix://"},
        {"redis://", "missing host"},
        {"redis://:6379", "missing host"},
        {"redis://localhost:notaport", "port"},
        {"redis://localhost:70000", "port"},
        {"redis://localhost:0", "port"},
        {"redis://localhost:6379/x", "database"},
        {"redis://pw@localhost", "':password@'"},
        {"redis://:p%zz@localhost", "%-escape"},
        {"redis://[::1", "']'"},
        {"unix://relative/sock", "absolute"},
        {"unix:///tmp/x.sock?db=x", "?db="},
    };
    for (size_t i = 0; i < TS_ARRAY_LEN(cases); i++) {
        ts_err err = {{0}};
        rds *r = rds_connect(cases[i].url, 200, &err);
        if (r) {
            rds_free(r);
            fail_msg("'%s' accepted", cases[i].url);
        }
        if (!strstr(err.msg, cases[i].want))
            fail_msg("'%s': got '%s', want '%s'", cases[i].url, err.msg, cases[i].want);
    }
    char url[64];
    snprintf(url, sizeof(url), "redis://127.0.0.1:%d", free_port());
    ts_err err = {{0}};
    assert_null(rds_connect(url, 200, &err));
    assert_non_null(strstr(err.msg, "cannot connect to Redis at 127.0.0.1:"));
    assert_null(rds_connect("unix:///nonexistent/redis.sock", 200, &err));
    assert_non_null(strstr(err.msg, "/nonexistent/redis.sock"));
}

static void test_rds_connect_ping_select(void **state)
{
    (void)state;
    NEED_REDIS();
    ts_err err = {{0}};
    char url[200];
    snprintf(url, sizeof(url), "%s/2", T.redis_url);
    rds *db2 = connect_rds(url);
    assert_true(rds_ping(db2, &err));
    freeReplyObject(cmd(db2, "SET", "where", "db2"));

    rds *db0 = connect_rds(T.redis_url);
    redisReply *rep = cmd(db0, "GET", "where", NULL);
    assert_int_equal(rep->type, REDIS_REPLY_NIL);
    freeReplyObject(rep);

    snprintf(url, sizeof(url), "unix://%s?db=2", T.redis_sock);
    rds *ux = connect_rds(url);
    assert_true(rds_ping(ux, &err));
    rep = cmd(ux, "GET", "where", NULL);
    assert_int_equal(rep->type, REDIS_REPLY_STRING);
    assert_string_equal(rep->str, "db2");
    freeReplyObject(rep);

    /* Binary-safe arguments and error replies come back as replies. */
    const char *argv[3] = {"SET", "bin", "a\0b"};
    size_t lens[3] = {3, 3, 3};
    rep = rds_command(db0, 3, argv, lens, &err);
    assert_non_null(rep);
    freeReplyObject(rep);
    rep = cmd(db0, "STRLEN", "bin", NULL);
    assert_int_equal(rep->integer, 3);
    freeReplyObject(rep);
    rep = cmd(db0, "NOSUCHCOMMAND", NULL, NULL);
    assert_int_equal(rep->type, REDIS_REPLY_ERROR);
    freeReplyObject(rep);

    rds_free(ux);
    rds_free(db0);
    rds_free(db2);
}

static void test_rds_script_eval_and_noscript(void **state)
{
    (void)state;
    NEED_REDIS();
    ts_err err = {{0}};
    rds *r = connect_rds(T.redis_url);
    rds_script s = {.source = "return redis.call('INCRBY', KEYS[1], ARGV[1])"};
    assert_true(rds_script_load(r, &s, &err));
    assert_int_equal(strlen(s.sha), 40);
    const char *args[2] = {"counter", "5"};
    redisReply *rep = rds_eval(r, &s, 1, 2, args, NULL, &err);
    assert_non_null(rep);
    assert_int_equal(rep->type, REDIS_REPLY_INTEGER);
    assert_int_equal(rep->integer, 5);
    freeReplyObject(rep);

    freeReplyObject(cmd(r, "SCRIPT", "FLUSH", NULL));
    rep = rds_eval(r, &s, 1, 2, args, NULL, &err); /* NOSCRIPT -> load again -> retry */
    if (!rep) fail_msg("eval after flush: %s", err.msg);
    assert_int_equal(rep->type, REDIS_REPLY_INTEGER);
    assert_int_equal(rep->integer, 10);
    freeReplyObject(rep);

    /* Not loaded yet: eval loads it. A script error is an error reply. */
    rds_script bad = {.source = "return redis.call('NOSUCH')"};
    rep = rds_eval(r, &bad, 0, 0, NULL, NULL, &err);
    assert_non_null(rep);
    assert_int_equal(rep->type, REDIS_REPLY_ERROR);
    freeReplyObject(rep);
    rds_script syntax = {.source = "this is not lua"};
    assert_false(rds_script_load(r, &syntax, &err));
    assert_non_null(strstr(err.msg, "SCRIPT LOAD"));
    assert_null(rds_eval(r, &s, 3, 2, args, NULL, &err)); /* more keys than args */
    rds_free(r);
}

static void test_rds_reconnect_after_kill(void **state)
{
    (void)state;
    NEED_REDIS();
    ts_err err = {{0}};
    rds *r = connect_rds(T.redis_url);
    rds *admin = connect_rds(T.redis_url);
    redisReply *rep = cmd(r, "CLIENT", "ID", NULL);
    char id[32];
    snprintf(id, sizeof(id), "%lld", rep->integer);
    freeReplyObject(rep);
    const char *kill_argv[4] = {"CLIENT", "KILL", "ID", id};
    rep = rds_command(admin, 4, kill_argv, NULL, &err);
    assert_non_null(rep);
    assert_int_equal(rep->integer, 1);
    freeReplyObject(rep);

    assert_true(rds_ping(r, &err)); /* EOF -> reconnect -> retry */
    rep = cmd(r, "CLIENT", "ID", NULL);
    assert_true(rep->integer != atoll(id));
    freeReplyObject(rep);
    rds_free(admin);
    rds_free(r);
}

static void test_rds_command_timeout(void **state)
{
    (void)state;
    NEED_REDIS();
    ts_err err = {{0}};
    rds *r = rds_connect(T.redis_url, 300, &err);
    assert_non_null(r);
    int64_t t0 = ts_now_mono_ms();
    const char *argv[3] = {"BLPOP", "never-filled", "3"};
    assert_null(rds_command(r, 3, argv, NULL, &err));
    int64_t took = ts_now_mono_ms() - t0;
    assert_true(took >= 250 && took < 1500); /* not retried */
    assert_non_null(strstr(err.msg, "timed out"));
    assert_true(rds_ping(r, &err)); /* a fresh connection */
    rds_free(r);
}

static void test_rds_auth(void **state)
{
    (void)state;
    NEED_REDIS(); /* runs last: it leaves a password on the server */
    ts_err err = {{0}};
    rds *admin = connect_rds(T.redis_url);
    const char *set_pw[4] = {"CONFIG", "SET", "requirepass", "p@ss:w/rd"};
    redisReply *rep = rds_command(admin, 4, set_pw, NULL, &err);
    assert_non_null(rep);
    assert_int_equal(rep->type, REDIS_REPLY_STATUS);
    freeReplyObject(rep);

    rds *anon = connect_rds(T.redis_url);
    assert_false(rds_ping(anon, &err));
    assert_non_null(strstr(err.msg, "NOAUTH"));
    rds_free(anon);

    char url[200];
    snprintf(url, sizeof(url), "redis://:p%%40ss%%3Aw%%2Frd@127.0.0.1:%d/1", T.redis_port);
    rds *r = connect_rds(url);
    assert_true(rds_ping(r, &err));
    rds_free(r);
    snprintf(url, sizeof(url), "redis://default:p%%40ss%%3Aw%%2Frd@127.0.0.1:%d", T.redis_port);
    r = connect_rds(url);
    assert_true(rds_ping(r, &err));
    rds_free(r);

    snprintf(url, sizeof(url), "redis://:wrong@127.0.0.1:%d", T.redis_port);
    assert_null(rds_connect(url, 1000, &err));
    assert_non_null(strstr(err.msg, "AUTH"));
    assert_null(strstr(err.msg, "wrong"));
    rds_free(admin);
}

static int group_setup(void **state)
{
    (void)state;
    return servers_setup(false, true);
}

static int group_teardown(void **state)
{
    (void)state;
    return servers_teardown();
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rds_bad_urls),
        cmocka_unit_test(test_rds_connect_ping_select),
        cmocka_unit_test(test_rds_script_eval_and_noscript),
        cmocka_unit_test(test_rds_reconnect_after_kill),
        cmocka_unit_test(test_rds_command_timeout),
        cmocka_unit_test(test_rds_auth),
    };
    return cmocka_run_group_tests_name("rds", tests, group_setup, group_teardown);
}
