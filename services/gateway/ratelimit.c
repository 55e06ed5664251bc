/* ratelimit.c: fixed-window request counting in Redis (see ratelimit.h). */
#include "ratelimit.h"

#include "libcommon/log.h"

#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#define WINDOW_S 60
/* The counter outlives its window a little, for clocks slightly apart. */
#define KEY_TTL_S "120"
#define WARN_EVERY_MS 10000

/* KEYS[1] the window's counter, ARGV[1] its expiry (s); returns the count. */
static rds_script g_script = {
    .source = "local n = redis.call('INCR', KEYS[1])\n"
              "if n == 1 then redis.call('EXPIRE', KEYS[1], ARGV[1]) end\n"
              "return n\n",
};

static _Atomic uint64_t g_errors;
static _Atomic int64_t g_last_warn_ms;

void ratelimit_init(svc *s)
{
    ts_err err = {{0}};
    rds *r = svc_redis(s, &err);
    if (!r || !rds_script_load(r, &g_script, &err))
        TLOG_WARN("rate limit script not loaded yet", "error=\"%s\"", err.msg);
}

uint64_t ratelimit_errors(void)
{
    return atomic_load(&g_errors);
}

static void _fail_open(const char *why)
{
    atomic_fetch_add(&g_errors, 1);
    int64_t now = ts_now_mono_ms(), last = atomic_load(&g_last_warn_ms);
    if (now - last >= WARN_EVERY_MS &&
        atomic_compare_exchange_strong(&g_last_warn_ms, &last, now)) {
        char q[600];
        TLOG_WARN("rate limit not enforced: Redis failed, letting requests through",
                  "error=%s errors_total=%llu", tlog_quote(q, sizeof(q), why),
                  (unsigned long long)atomic_load(&g_errors));
    }
}

bool ratelimit_allow(svc *s, const char *access_key, int64_t limit, int *retry_after_s)
{
    if (limit <= 0) return true;
    int64_t now_s = ts_now_wall_ms() / 1000;
    int64_t window = now_s / WINDOW_S;
    char key[96];
    snprintf(key, sizeof(key), "ratelimit:%s:%lld", access_key, (long long)window);

    ts_err err = {{0}};
    rds *r = svc_redis(s, &err);
    if (!r) {
        _fail_open(err.msg);
        return true;
    }
    const char *argv[2] = {key, KEY_TTL_S};
    redisReply *rep = rds_eval(r, &g_script, 1, 2, argv, NULL, &err);
    if (!rep) {
        _fail_open(err.msg);
        return true;
    }
    if (rep->type != REDIS_REPLY_INTEGER) {
        _fail_open(rep->type == REDIS_REPLY_ERROR ? rep->str : "unexpected reply to the script");
        freeReplyObject(rep);
        return true;
    }
    long long count = rep->integer;
    freeReplyObject(rep);
    if (count <= limit) return true;
    *retry_after_s = (int)((window + 1) * WINDOW_S - now_s);
    if (*retry_after_s < 1) *retry_after_s = 1;
    return false;
}
