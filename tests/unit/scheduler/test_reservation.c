/* test_reservation.c: Redis reservation scripts against a real
 * redis-server that the test starts on a free port (and stops in teardown):
 * no double booking under concurrency, idempotent reserve, exactly-once
 * release, all-or-nothing sessions, rebuild after FLUSHALL, the invariant, and
 * two engines (scheduler instances) racing on one agent. */
#include "libcommon/log.h"
#include "services/scheduler/reservation.h"
#include "services/scheduler/reserve_redis.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

static struct {
    char dir[64];
    char log[128];
    pid_t pid;
    char problem[256];
    char url[128];
} T;

/* ---- redis-server ---------------------------------------------------------------------- */

static int free_port(void)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof(a);
    if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof(a)) != 0 ||
        getsockname(fd, (struct sockaddr *)&a, &len) != 0) {
        if (fd >= 0) close(fd);
        return -1;
    }
    close(fd);
    return ntohs(a.sin_port);
}

static int group_setup(void **state)
{
    (void)state;
    tlog_min_level = TLOG_LEVEL_ERROR;
    ts_strlcpy(T.dir, "/tmp/tessera-sched-XXXXXX", sizeof(T.dir));
    if (!mkdtemp(T.dir)) return -1;
    snprintf(T.log, sizeof(T.log), "%s/redis.log", T.dir);
    if (system("command -v redis-server >/dev/null") != 0) return 0;
    int port = free_port();
    char ps[16];
    snprintf(ps, sizeof(ps), "%d", port);
    snprintf(T.url, sizeof(T.url), "redis://127.0.0.1:%d", port);
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) return -1;
    if (pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        int fd = open(T.log, O_WRONLY | O_CREAT | O_APPEND, 0644);
        if (fd >= 0) {
            dup2(fd, 1);
            dup2(fd, 2);
        }
        execlp("redis-server", "redis-server", "--port", ps, "--bind", "127.0.0.1", "--save", "",
               "--appendonly", "no", "--daemonize", "no", (char *)NULL);
        _exit(127);
    }
    T.pid = pid;
    int64_t deadline = ts_now_mono_ms() + 10000;
    while (ts_now_mono_ms() < deadline) {
        ts_err err;
        rds *r = rds_connect(T.url, 500, &err);
        if (r) {
            rds_free(r);
            return 0;
        }
        usleep(20000);
    }
    snprintf(T.problem, sizeof(T.problem), "redis-server did not come up (see %s)", T.log);
    return 0;
}

static int group_teardown(void **state)
{
    (void)state;
    if (T.pid > 0) {
        kill(T.pid, SIGTERM);
        waitpid(T.pid, NULL, 0);
    }
    char cmd[128];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", T.dir);
    return system(cmd) == 0 ? 0 : -1;
}

#define NEED_REDIS()                                                                               \
    do {                                                                                           \
        if (T.problem[0]) fail_msg("Redis: %s", T.problem);                                        \
        if (T.pid <= 0) skip();                                                                    \
    } while (0)

static rds *conn(void)
{
    ts_err err = {{0}};
    rds *r = rds_connect(T.url, 5000, &err);
    if (!r) fail_msg("connect: %s", err.msg);
    return r;
}

static void redis_cmd(rds *r, const char *a0, const char *a1, const char *a2, const char *a3)
{
    const char *argv[4] = {a0, a1, a2, a3};
    int argc = a3 ? 4 : a2 ? 3 : a1 ? 2 : 1;
    ts_err err = {{0}};
    redisReply *rep = rds_command(r, argc, argv, NULL, &err);
    if (!rep) fail_msg("%s: %s", a0, err.msg);
    freeReplyObject(rep);
}

static long long hget(rds *r, const char *key, const char *field)
{
    const char *argv[3] = {"HGET", key, field};
    ts_err err = {{0}};
    redisReply *rep = rds_command(r, 3, argv, NULL, &err);
    if (!rep) fail_msg("HGET: %s", err.msg);
    long long v = rep->type == REDIS_REPLY_STRING ? atoll(rep->str) : 0;
    freeReplyObject(rep);
    return v;
}

static bool exists(rds *r, const char *key)
{
    const char *argv[2] = {"EXISTS", key};
    ts_err err = {{0}};
    redisReply *rep = rds_command(r, 2, argv, NULL, &err);
    if (!rep) fail_msg("EXISTS: %s", err.msg);
    bool e = rep->integer == 1;
    freeReplyObject(rep);
    return e;
}

static slots_t S(const char *text)
{
    slots_t s;
    ts_err err = {{0}};
    if (!slots_parse_text(&s, text, &err)) fail_msg("'%s': %s", text, err.msg);
    return s;
}

static void set_agent(resv *v, const char *id, const char *slots, int ndev)
{
    slots_t total = S(slots);
    int32_t caps[32];
    for (int i = 0; i < ndev; i++)
        caps[i] = 100;
    slots_put(&total, SLOT_CUDA_DEVICE, ndev);
    slots_put(&total, SLOT_CUDA_SHARES, 100 * ndev);
    resv_agent a = {id, &total, ndev, caps, true};
    ts_err err = {{0}};
    if (!resv_set_agent(v, &a, &err)) fail_msg("set agent: %s", err.msg);
}

static void invariant_holds(resv *v)
{
    char why[512];
    ts_err err = {{0}};
    bool holds;
    if (!resv_check_invariant(v, &holds, why, sizeof(why), &err))
        fail_msg("invariant: %s", err.msg);
    if (!holds) fail_msg("invariant broken: %s", why);
}

/* resv_release, which must reach Redis: how many kernels it released. */
static int release_n(resv *v, const char *const *ids, int n, bool *released)
{
    ts_err err = {{0}};
    int count = -1;
    if (!resv_release(v, ids, n, released, &count, &err)) fail_msg("release: %s", err.msg);
    return count;
}

/* One-kernel session. */
typedef struct one {
    slots_t slots;
    resv_dev dev[2];
    resv_kernel k;
    resv_session s;
} one;

static void mk_one(one *o, const char *sid, const char *kid, const char *agent, const char *slots,
                   int dev, int shares)
{
    o->slots = S(slots);
    o->dev[0] = (resv_dev){dev, shares};
    o->k = (resv_kernel){kid, agent, &o->slots, shares > 0 ? 1 : 0, o->dev};
    o->s = (resv_session){sid, {"AK1", "u1", "p1", "d1"}, 1, &o->k};
}

static resv_status reserve1(resv *v, one *o, char *reason)
{
    resv_result res;
    ts_err err = {{0}};
    if (!resv_reserve(v, &o->s, 1, &res, &err)) fail_msg("reserve: %s", err.msg);
    if (reason) strcpy(reason, res.reason);
    return res.status;
}

/* ---- tests ------------------------------------------------------------------------------- */

static void test_reserve_release_idempotent(void **state)
{
    (void)state;
    NEED_REDIS();
    rds *r = conn();
    redis_cmd(r, "FLUSHALL", NULL, NULL, NULL);
    resv *v = resv_new(r, "");
    set_agent(v, "a1", "cpu=4 mem=16g", 2);
    assert_int_equal(hget(r, "agent:a1", "cap:cpu"), 4000);
    assert_int_equal(hget(r, "agent:a1", "devcap:1"), 100);
    /* the drained mark: the registry sets and clears it, the scheduler's
     * writes (OCC_DRAIN_KEEP) leave it */
    {
        slots_t total = S("cpu=4 mem=16g");
        ts_err err = {{0}};
        bool drained = true;
        assert_true(resv_read_drained(v, "a1", &drained, &err));
        assert_false(drained);
        resv_agent d = {"a1", &total, 0, NULL, false, OCC_DRAIN_ON};
        assert_true(resv_set_agent(v, &d, &err));
        assert_true(resv_read_drained(v, "a1", &drained, &err));
        assert_true(drained);
        assert_int_equal(hget(r, "agent:a1", "schedulable"), 0);
        set_agent(v, "a1", "cpu=4 mem=16g", 2); /* KEEP */
        assert_true(resv_read_drained(v, "a1", &drained, &err));
        assert_true(drained);
        d.schedulable = true;
        d.drain = OCC_DRAIN_OFF;
        assert_true(resv_set_agent(v, &d, &err));
        assert_true(resv_read_drained(v, "a1", &drained, &err));
        assert_false(drained);
        set_agent(v, "a1", "cpu=4 mem=16g", 2);
    }
    one o;
    mk_one(&o, "s1", "k1", "a1", "cpu=1 mem=1g cuda.shares=0.5", 0, 50);
    assert_int_equal(reserve1(v, &o, NULL), RESV_OK);
    assert_int_equal(hget(r, "agent:a1", "used:cpu"), 1000);
    assert_int_equal(hget(r, "agent:a1", "used:mem"), 1LL << 30);
    assert_int_equal(hget(r, "agent:a1", "used:cuda.shares"), 50);
    assert_int_equal(hget(r, "agent:a1", "dev:0"), 50);
    assert_int_equal(hget(r, "usage:kp:AK1", "cpu"), 1000);
    assert_int_equal(hget(r, "usage:kp:AK1", "sessions"), 1);
    assert_int_equal(hget(r, "usage:domain:d1", "mem"), 1LL << 30);
    invariant_holds(v);
    /* the same reservation again (a retry): no effect */
    assert_int_equal(reserve1(v, &o, NULL), RESV_EXISTS);
    assert_int_equal(hget(r, "agent:a1", "used:cpu"), 1000);
    assert_int_equal(hget(r, "usage:kp:AK1", "sessions"), 1);
    /* the same session placed elsewhere by another scheduler instance:
     * "taken", no effect (that instance publishes its own placement) */
    set_agent(v, "a2", "cpu=4 mem=16g", 2);
    one elsewhere;
    mk_one(&elsewhere, "s1", "k1", "a2", "cpu=1 mem=1g cuda.shares=0.5", 0, 50);
    assert_int_equal(reserve1(v, &elsewhere, NULL), RESV_TAKEN);
    assert_int_equal(hget(r, "agent:a2", "used:cpu"), 0);
    assert_int_equal(hget(r, "usage:kp:AK1", "sessions"), 1);
    /* the kernel under another session: refused */
    one other;
    mk_one(&other, "s2", "k1", "a1", "cpu=1", 0, 0);
    char why[200];
    assert_int_equal(reserve1(v, &other, why), RESV_REFUSED);
    assert_non_null(strstr(why, "kernel k1 is reserved by session s1"));
    /* release twice: released once */
    const char *ids[] = {"k1"};
    bool rel;
    ts_err err = {{0}};
    assert_int_equal(release_n(v, ids, 1, &rel), 1);
    assert_true(rel);
    assert_int_equal(release_n(v, ids, 1, &rel), 0);
    assert_false(rel);
    assert_int_equal(hget(r, "agent:a1", "used:cpu"), 0);
    assert_int_equal(hget(r, "agent:a1", "dev:0"), 0);
    assert_int_equal(hget(r, "usage:kp:AK1", "sessions"), 0);
    assert_false(exists(r, "alloc:k1"));
    assert_false(exists(r, "sess:s1"));
    invariant_holds(v);
    /* capacity and occupancy read back; capacity update keeps occupancy */
    assert_int_equal(reserve1(v, &o, NULL), RESV_OK);
    set_agent(v, "a1", "cpu=8 mem=16g", 1);
    slots_t total, used;
    int ndev;
    int32_t dc[32], du[32];
    assert_true(resv_read_agent(v, "a1", &total, &used, &ndev, dc, du, &err));
    assert_int_equal(slots_get(&total, SLOT_CPU), 8000);
    assert_int_equal(slots_get(&used, SLOT_CPU), 1000);
    assert_int_equal(ndev, 1);
    assert_int_equal(du[0], 50);
    assert_false(exists(r, "agent:nope") ||
                 resv_read_agent(v, "nope", &total, &used, &ndev, dc, du, &err));
    resv_free(v);
    rds_free(r);
}

static void test_refusals_have_no_effect(void **state)
{
    (void)state;
    NEED_REDIS();
    rds *r = conn();
    redis_cmd(r, "FLUSHALL", NULL, NULL, NULL);
    resv *v = resv_new(r, "");
    set_agent(v, "a1", "cpu=4 mem=16g", 2);
    set_agent(v, "a2", "cpu=1 mem=16g", 0);
    one o, big, dev;
    char why[200];
    mk_one(&o, "s1", "k1", "a1", "cpu=1 cuda.shares=0.6", 1, 60);
    assert_int_equal(reserve1(v, &o, NULL), RESV_OK);
    mk_one(&big, "s2", "k2", "a1", "cpu=3.001", 0, 0);
    assert_int_equal(reserve1(v, &big, why), RESV_REFUSED);
    assert_string_equal(why, "agent a1 has not enough cpu");
    mk_one(&dev, "s3", "k3", "a1", "cpu=1 cuda.shares=0.5", 1, 50);
    assert_int_equal(reserve1(v, &dev, why), RESV_REFUSED);
    assert_string_equal(why, "agent a1 device 1 has not enough shares");
    mk_one(&dev, "s3", "k3", "ghost", "cpu=1", 0, 0);
    assert_int_equal(reserve1(v, &dev, why), RESV_REFUSED);
    assert_string_equal(why, "agent ghost is not known");
    assert_int_equal(hget(r, "agent:a1", "used:cpu"), 1000);
    assert_int_equal(hget(r, "agent:a1", "dev:1"), 60);
    assert_false(exists(r, "alloc:k2") || exists(r, "alloc:k3"));

    /* a two-kernel session: one kernel fits, the other not: neither is reserved */
    slots_t s1 = S("cpu=2"), s2 = S("cpu=2");
    resv_kernel ks[2] = {{"m0", "a1", &s1, 0, NULL}, {"m1", "a2", &s2, 0, NULL}};
    resv_session ms = {"multi", {"AK1", "u1", NULL, NULL}, 2, ks};
    /* batched with an independent session that fits */
    one ok2;
    mk_one(&ok2, "s4", "k4", "a1", "cpu=1", 0, 0);
    resv_session batch[2] = {ms, ok2.s};
    resv_result res[2];
    ts_err err = {{0}};
    assert_true(resv_reserve(v, batch, 2, res, &err));
    assert_int_equal(res[0].status, RESV_REFUSED);
    assert_string_equal(res[0].reason, "agent a2 has not enough cpu");
    assert_int_equal(res[1].status, RESV_OK);
    assert_false(exists(r, "alloc:m0") || exists(r, "alloc:m1"));
    assert_int_equal(hget(r, "agent:a1", "used:cpu"), 2000);
    /* two kernels on the same agent count together: 2 + 2 > 4 - 2 */
    ks[1].agent_id = "a1";
    assert_true(resv_reserve(v, &ms, 1, res, &err));
    assert_int_equal(res[0].status, RESV_REFUSED);
    s2 = S("cpu=0");
    assert_true(resv_reserve(v, &ms, 1, res, &err));
    assert_int_equal(res[0].status, RESV_OK);
    assert_true(exists(r, "sess:multi"));
    const char *m0[] = {"m0"};
    assert_int_equal(release_n(v, m0, 1, NULL), 1);
    assert_int_equal(hget(r, "usage:kp:AK1", "sessions"), 3); /* multi still holds m1 */
    invariant_holds(v);
    const char *m1[] = {"m1"};
    assert_int_equal(release_n(v, m1, 1, NULL), 1);
    assert_int_equal(hget(r, "usage:kp:AK1", "sessions"), 2);
    invariant_holds(v);
    /* bad ids are errors, not script input */
    mk_one(&dev, "bad id", "k9", "a1", "cpu=1", 0, 0);
    assert_false(resv_reserve(v, &dev.s, 1, res, &err));
    assert_non_null(strstr(err.msg, "contains a blank"));
    resv_free(v);
    rds_free(r);
}

typedef struct racer {
    int id;
    int ok_cpu, ok_dev;
    char err[256];
} racer;

static void *race(void *arg)
{
    racer *me = arg;
    ts_err err = {{0}};
    rds *r = rds_connect(T.url, 5000, &err);
    if (!r) {
        snprintf(me->err, sizeof(me->err), "%s", err.msg);
        return NULL;
    }
    resv *v = resv_new(r, "race:");
    for (int i = 0; i < 40; i++) {
        one o;
        char sid[32], kid[32];
        snprintf(sid, sizeof(sid), "c%d-%d", me->id, i);
        snprintf(kid, sizeof(kid), "kc%d-%d", me->id, i);
        mk_one(&o, sid, kid, "hot", "cpu=1", 0, 0);
        resv_result res;
        if (!resv_reserve(v, &o.s, 1, &res, &err)) {
            snprintf(me->err, sizeof(me->err), "%s", err.msg);
            break;
        }
        me->ok_cpu += res.status == RESV_OK;
        snprintf(sid, sizeof(sid), "d%d-%d", me->id, i);
        snprintf(kid, sizeof(kid), "kd%d-%d", me->id, i);
        mk_one(&o, sid, kid, "hot", "mem=1", i % 2, 30);
        if (!resv_reserve(v, &o.s, 1, &res, &err)) {
            snprintf(me->err, sizeof(me->err), "%s", err.msg);
            break;
        }
        me->ok_dev += res.status == RESV_OK;
    }
    resv_free(v);
    rds_free(r);
    return NULL;
}

static void test_concurrent_reserve_never_overbooks(void **state)
{
    (void)state;
    NEED_REDIS();
    rds *r = conn();
    redis_cmd(r, "FLUSHALL", NULL, NULL, NULL);
    resv *v = resv_new(r, "race:");
    set_agent(v, "hot", "cpu=50 mem=1g", 2);
    racer rc[8];
    pthread_t th[8];
    for (int i = 0; i < 8; i++) {
        rc[i] = (racer){.id = i};
        assert_int_equal(pthread_create(&th[i], NULL, race, &rc[i]), 0);
    }
    int ok_cpu = 0, ok_dev = 0;
    for (int i = 0; i < 8; i++) {
        pthread_join(th[i], NULL);
        if (rc[i].err[0]) fail_msg("racer %d: %s", i, rc[i].err);
        ok_cpu += rc[i].ok_cpu;
        ok_dev += rc[i].ok_dev;
    }
    /* 320 attempts each: exactly the capacity is granted, never more */
    assert_int_equal(ok_cpu, 50);
    assert_int_equal(ok_dev, 6); /* 3 x 0.30 per device */
    assert_int_equal(hget(r, "race:agent:hot", "used:cpu"), 50000);
    assert_int_equal(hget(r, "race:agent:hot", "dev:0"), 90);
    assert_int_equal(hget(r, "race:agent:hot", "dev:1"), 90);
    invariant_holds(v);
    resv_free(v);
    rds_free(r);
}

/* Limits are checked against usage:<scope> in Redis: what every instance placed. */
static void test_limits_checked_in_redis(void **state)
{
    (void)state;
    NEED_REDIS();
    rds *r = conn();
    redis_cmd(r, "FLUSHALL", NULL, NULL, NULL);
    resv *v = resv_new(r, "");
    set_agent(v, "a1", "cpu=16 mem=64g", 0);
    one o[4];
    char why[200];
    /* keypair: 2 sessions at once; user: 3 cpu at once */
    const char *kid[] = {"lk1", "lk2", "lk3", "lk4"}, *sid[] = {"ls1", "ls2", "ls3", "ls4"};
    for (int i = 0; i < 4; i++) {
        mk_one(&o[i], sid[i], kid[i], "a1", i == 2 ? "cpu=2" : "cpu=1", 0, 0);
        o[i].s.limits[RESV_SCOPE_KEYPAIR] = "sessions=2";
        o[i].s.limits[RESV_SCOPE_USER] = "cpu=3000";
    }
    assert_int_equal(reserve1(v, &o[0], NULL), RESV_OK);
    assert_int_equal(reserve1(v, &o[1], NULL), RESV_OK);
    assert_int_equal(reserve1(v, &o[3], why), RESV_REFUSED);
    assert_string_equal(why, "limit:kp:AK1:sessions 2 held + 1 > 2");
    assert_int_equal(hget(r, "usage:kp:AK1", "sessions"), 2); /* no effect */
    assert_int_equal(hget(r, "agent:a1", "used:cpu"), 2000);
    /* a retry of a granted session is still "exists", not a limit refusal */
    assert_int_equal(reserve1(v, &o[1], NULL), RESV_EXISTS);
    const char *ids[] = {"lk1"};
    assert_int_equal(release_n(v, ids, 1, NULL), 1);
    /* one session held, 1 cpu: 2 more cpu would make 3 (allowed), 3 would not */
    o[2].s.limits[RESV_SCOPE_USER] = "cpu=2999";
    assert_int_equal(reserve1(v, &o[2], why), RESV_REFUSED);
    assert_string_equal(why, "limit:user:u1:cpu 1000 held + 2000 > 2999");
    o[2].s.limits[RESV_SCOPE_USER] = "cpu=3000";
    assert_int_equal(reserve1(v, &o[2], NULL), RESV_OK);
    assert_int_equal(hget(r, "usage:user:u1", "cpu"), 3000);
    /* a session without limits is not held back by others' */
    mk_one(&o[3], "ls5", "lk5", "a1", "cpu=1", 0, 0);
    assert_int_equal(reserve1(v, &o[3], NULL), RESV_OK);
    invariant_holds(v);
    resv_free(v);
    rds_free(r);
}

static void test_rebuild_after_flushall(void **state)
{
    (void)state;
    NEED_REDIS();
    rds *r = conn();
    redis_cmd(r, "FLUSHALL", NULL, NULL, NULL);
    resv *v = resv_new(r, "rb:");
    /* the truth: 3 agents, 5 sessions (one with two kernels) */
    slots_t tot[3];
    int32_t caps[2] = {100, 100};
    resv_agent ag[3];
    const char *names[3] = {"g1", "g2", "c1"};
    for (int i = 0; i < 3; i++) {
        tot[i] = S(i < 2 ? "cpu=16 mem=64g" : "cpu=8 mem=32g");
        slots_put(&tot[i], SLOT_CUDA_DEVICE, i < 2 ? 2 : 0);
        slots_put(&tot[i], SLOT_CUDA_SHARES, i < 2 ? 200 : 0);
        ag[i] = (resv_agent){names[i], &tot[i], i < 2 ? 2 : 0, caps, true};
    }
    slots_t ks[6];
    resv_dev dv[6];
    resv_kernel kk[6];
    const char *kid[6] = {"k1", "k2", "k3", "k4", "k5a", "k5b"};
    const char *kag[6] = {"g1", "g1", "g2", "c1", "g2", "c1"};
    const char *ksl[6] = {"cpu=1 cuda.shares=0.25", "cpu=2 mem=1g cuda.device=1",
                          "cpu=1 cuda.shares=0.5",  "cpu=2 mem=2g",
                          "cpu=1 cuda.shares=0.25", "cpu=1"};
    resv_dev kdv[6] = {{0, 25}, {1, 100}, {0, 50}, {0, 0}, {0, 25}, {0, 0}};
    for (int i = 0; i < 6; i++) {
        ks[i] = S(ksl[i]);
        dv[i] = kdv[i];
        kk[i] = (resv_kernel){kid[i], kag[i], &ks[i], kdv[i].shares ? 1 : 0, &dv[i]};
    }
    resv_session ss[5] = {
        {"s1", {"AK1", "u1", "p1", "d"}, 1, &kk[0]}, {"s2", {"AK1", "u1", "p1", "d"}, 1, &kk[1]},
        {"s3", {"AK2", "u2", "p1", "d"}, 1, &kk[2]}, {"s4", {"AK2", "u2", NULL, "d"}, 1, &kk[3]},
        {"s5", {"AK3", "u3", "p2", "d"}, 2, &kk[4]},
    };
    ts_err err = {{0}};
    for (int i = 0; i < 3; i++)
        assert_true(resv_set_agent(v, &ag[i], &err));
    resv_result res[5];
    assert_true(resv_reserve(v, ss, 5, res, &err));
    for (int i = 0; i < 5; i++)
        if (res[i].status != RESV_OK) fail_msg("s%d: %s", i + 1, res[i].reason);
    invariant_holds(v);
    long long before[4] = {hget(r, "rb:agent:g1", "used:cpu"), hget(r, "rb:agent:g2", "dev:0"),
                           hget(r, "rb:usage:user:u2", "cpu"),
                           hget(r, "rb:usage:domain:d", "sessions")};
    assert_int_equal(before[1], 75);
    assert_int_equal(before[3], 5);

    redis_cmd(r, "FLUSHALL", NULL, NULL, NULL);
    assert_false(exists(r, "rb:agent:g1"));
    ag[2].schedulable = false; /* draining since: its kernel is still in the truth */
    /* a stale key that the truth does not have goes too */
    redis_cmd(r, "HSET", "rb:alloc:stale", "agent", "g1");
    assert_true(resv_rebuild(v, ag, 3, ss, 5, &err));
    invariant_holds(v);
    assert_false(exists(r, "rb:alloc:stale"));
    assert_false(exists(r, "rb:rebuild"));
    assert_int_equal(hget(r, "rb:agent:g1", "used:cpu"), before[0]);
    assert_int_equal(hget(r, "rb:agent:g2", "dev:0"), before[1]);
    assert_int_equal(hget(r, "rb:usage:user:u2", "cpu"), before[2]);
    assert_int_equal(hget(r, "rb:usage:domain:d", "sessions"), before[3]);
    assert_int_equal(hget(r, "rb:agent:c1", "schedulable"), 0);
    /* the rebuilt state behaves: retry is EXISTS, release once, capacity enforced */
    assert_true(resv_reserve(v, &ss[0], 1, res, &err));
    assert_int_equal(res[0].status, RESV_EXISTS);
    const char *rel[] = {"k5a", "k5b", "k5a"};
    assert_int_equal(release_n(v, rel, 3, NULL), 2);
    invariant_holds(v);
    /* while a rebuild runs, reserve refuses */
    redis_cmd(r, "SET", "rb:rebuild", "1", NULL);
    one o;
    mk_one(&o, "s9", "k9", "g1", "cpu=1", 0, 0);
    char why[200];
    assert_int_equal(reserve1(v, &o, why), RESV_REFUSED);
    assert_string_equal(why, "occupancy is being rebuilt");
    redis_cmd(r, "DEL", "rb:rebuild", NULL, NULL);
    /* the invariant notices a broken counter */
    redis_cmd(r, "HINCRBY", "rb:agent:g1", "used:cpu", "1");
    char msg[512];
    bool holds = true;
    assert_true(resv_check_invariant(v, &holds, msg, sizeof(msg), &err));
    assert_false(holds);
    assert_non_null(strstr(msg, "rb:agent:g1 used:cpu is 3001"));
    resv_free(v);
    rds_free(r);
}

/* Two scheduler instances (two engines with their own models) race on one agent. */
static void test_two_engines_never_double_book(void **state)
{
    (void)state;
    NEED_REDIS();
    rds *r = conn();
    redis_cmd(r, "FLUSHALL", NULL, NULL, NULL);
    resv *v = resv_new(r, "");
    set_agent(v, "a1", "cpu=4 mem=16g", 1);
    sched_engine *e[2];
    sched_rg_policy pol = {SCHED_FIFO, SCHED_CONCENTRATED, 0, 1};
    ts_err err = {{0}};
    for (int i = 0; i < 2; i++) {
        e[i] = sched_engine_new();
        assert_true(sched_engine_add_group(e[i], "default", &pol, &err));
        sched_agent_spec spec = {
            .id = "a1", .total = S("cpu=4 mem=16g"), .ndev = 1, .schedulable = true};
        assert_true(sched_group_set_agent(sched_engine_group(e[i], "default"), &spec, &err));
        sched_session *s = sched_session_new(i ? "sB" : "sA", 1);
        ts_strlcpy(s->access_key, "AK", sizeof(s->access_key));
        ts_strlcpy(s->user_id, "u", sizeof(s->user_id));
        snprintf(s->kernels[0].kernel_id, SCHED_ID_MAX, "%s-k0", s->id);
        s->kernels[0].slots = S("cpu=3 cuda.shares=0.6");
        assert_true(sched_session_finish(s, &err));
        sched_verdict vd;
        assert_true(sched_engine_enqueue(e[i], "default", s, &vd));
    }
    sched_pass_stats st[2];
    assert_int_equal(sched_engine_pass(e[0], "default", 0, sched_reserve_redis, NULL, v, &st[0]),
                     1);
    assert_int_equal(sched_engine_pass(e[1], "default", 0, sched_reserve_redis, NULL, v, &st[1]),
                     0);
    assert_int_equal(st[1].refused, 1);
    sched_session *sb = sched_queue_find(sched_engine_queue(e[1], "default"), "sB");
    assert_string_equal(sb->reason_code, "reservation_refused");
    assert_non_null(strstr(sb->reason, "agent a1 has not enough cpu"));
    /* the loser's model is unchanged (rolled back) */
    sched_agent *a = sched_group_agent(sched_engine_group(e[1], "default"), "a1");
    assert_true(slots_is_zero(&a->used));
    assert_int_equal(a->dev_used[0], 0);
    assert_int_equal(hget(r, "agent:a1", "used:cpu"), 3000);
    invariant_holds(v);
    for (int i = 0; i < 2; i++)
        sched_engine_free(e[i]);
    resv_free(v);
    rds_free(r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_reserve_release_idempotent),
        cmocka_unit_test(test_refusals_have_no_effect),
        cmocka_unit_test(test_concurrent_reserve_never_overbooks),
        cmocka_unit_test(test_limits_checked_in_redis),
        cmocka_unit_test(test_rebuild_after_flushall),
        cmocka_unit_test(test_two_engines_never_double_book),
    };
    return cmocka_run_group_tests_name("sched_reservation", tests, group_setup, group_teardown);
}
