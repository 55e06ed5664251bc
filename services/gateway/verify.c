/* verify.c: signed-request verification and the rate-limit gate (verify.h). */
#include "verify.h"

#include "libcommon/log.h"
#include "ratelimit.h"
#include "sign_keys.h"
#include "websession.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static const char *const RESULT_NAMES[VERIFY_N_RESULTS] = {
    [VERIFY_OK] = "ok",
    [VERIFY_BAD_SIGNATURE] = "bad_signature",
    [VERIFY_UNKNOWN_KEY] = "unknown_key",
    [VERIFY_INACTIVE] = "inactive",
    [VERIFY_STALE_DATE] = "stale_date",
    [VERIFY_MALFORMED] = "malformed",
    [VERIFY_RATE_LIMITED] = "rate_limited",
    [VERIFY_UNAVAILABLE] = "unavailable",
};

static _Atomic uint64_t g_results[VERIFY_N_RESULTS];

/* ---- metrics ---------------------------------------------------------------------- */

static void _collect(FILE *out, void *ctx)
{
    (void)ctx;
    char labels[64];
    metrics_family(out, "tessera_gateway_auth_total", "counter",
                   "Signed-request verifications, by result.");
    for (int i = 0; i < VERIFY_N_RESULTS; i++) {
        snprintf(labels, sizeof(labels), "result=\"%s\"", RESULT_NAMES[i]);
        metrics_sample_u64(out, "tessera_gateway_auth_total", labels, atomic_load(&g_results[i]));
    }
    sign_keys_stats sk;
    sign_keys_stats_get(&sk);
    metrics_family(out, "tessera_gateway_sign_key_cache_total", "counter",
                   "Signature checks by whether the derived signing key (per access key, day"
                   " and host) was in the thread's table.");
    metrics_sample_u64(out, "tessera_gateway_sign_key_cache_total", "result=\"hit\"", sk.hits);
    metrics_sample_u64(out, "tessera_gateway_sign_key_cache_total", "result=\"miss\"", sk.misses);
    metrics_counter(out, "tessera_gateway_ratelimit_errors_total",
                    "Rate-limit checks that failed in Redis (the request was let through).",
                    ratelimit_errors());
}

void verify_init(gateway *gw)
{
    metrics_add(svc_metrics(gw->svc), _collect, gw);
}

/* ---- checks ----------------------------------------------------------------------- */

static bool _refuse(http_resp *resp, verify_result r, int status, const char *fmt, ...)
    TS_PRINTF(4, 5);

static bool _refuse(http_resp *resp, verify_result r, int status, const char *fmt, ...)
{
    char msg[600];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    atomic_fetch_add(&g_results[r], 1);
    const char *kind = status == 400   ? "invalid-api-params"
                       : status == 429 ? "too-many-requests"
                       : status == 503 ? "service-unavailable"
                                       : "auth-failed";
    http_problem(resp, status, kind, status == 401 ? "Authentication failed" : NULL, "%s", msg);
    if (status == 401)
        http_set_header(resp, "WWW-Authenticate", "BackendAI signMethod=HMAC-SHA256");
    return false;
}

/* "vN.YYYYMMDD" -> N. */
static bool _parse_version(const char *v, long *major)
{
    if (v[0] != 'v' || v[1] < '0' || v[1] > '9') return false;
    char *end;
    *major = strtol(v + 1, &end, 10);
    if (*end != '.' || end[1] == '\0') return false;
    for (const char *p = end + 1; *p; p++)
        if (*p < '0' || *p > '9') return false;
    return strlen(end + 1) == 8;
}

/* The keypair c may act (key and user active, within its rate limit): true
 * with *id the caller, kept in req. */
static bool _admit(gateway *gw, http_req *req, http_resp *resp, const cred *c, gw_identity *id)
{
    if (!c->key_active) return _refuse(resp, VERIFY_INACTIVE, 401, "keypair is inactive");
    if (strcmp(c->user_status, "active") != 0)
        return _refuse(resp, VERIFY_INACTIVE, 401, "user is %s",
                       c->user_status[0] ? c->user_status : "not active");

    memset(id, 0, sizeof(*id));
    ts_strlcpy(id->access_key, c->access_key, sizeof(id->access_key));
    ts_strlcpy(id->user_id, c->user_id, sizeof(id->user_id));
    ts_strlcpy(id->role, c->role, sizeof(id->role));
    ts_strlcpy(id->domain, c->domain, sizeof(id->domain));
    id->is_admin = c->is_admin;
    /* Verified: the access record names the caller even when it is throttled. */
    identity_attach(req, id);
    tlog_ctx_user(id->user_id);

    int retry_after = 0;
    if (!ratelimit_allow(gw->svc, c->access_key, c->rate_limit, &retry_after)) {
        char ra[16];
        snprintf(ra, sizeof(ra), "%d", retry_after);
        _refuse(resp, VERIFY_RATE_LIMITED, 429,
                "rate limit of %lld requests per minute exceeded for this keypair; retry in %d s",
                (long long)c->rate_limit, retry_after);
        http_set_header(resp, "Retry-After", ra);
        return false;
    }
    atomic_fetch_add(&g_results[VERIFY_OK], 1);
    return true;
}

/* The credentials of ak: true with *c; false with the refusal in resp. */
static bool _lookup(gateway *gw, const char *ak, http_resp *resp, cred *c)
{
    ts_err err = {{0}};
    switch (credentials_get(gw->creds, ak, c, &err)) {
    case AUTHCACHE_FOUND:
        return true;
    case AUTHCACHE_NOT_FOUND:
        return _refuse(resp, VERIFY_UNKNOWN_KEY, 401, "unknown access key");
    case AUTHCACHE_UNAVAILABLE:
        break;
    }
    char q[600];
    TLOG_WARN("credential look-up failed", "error=%s", tlog_quote(q, sizeof(q), err.msg));
    return _refuse(resp, VERIFY_UNAVAILABLE, 503,
                   "the signature cannot be checked now: tessera-auth is not answering; try "
                   "again later");
}

/* Session mode (/func/...): the console's login stands for the signature;
 * the request runs as the login's keypair. A keypair or user no longer
 * active ends the login. */
static bool _verify_session(gateway *gw, http_req *req, http_resp *resp, gw_identity *id)
{
    websession ws;
    if (!websession_admit(gw, req, resp, &ws)) return false;
    tlog_ctx_access_key(ws.access_key);
    cred c;
    bool ok = _lookup(gw, ws.access_key, resp, &c);
    memset(c.secret_key, 0, sizeof(c.secret_key));
    if (ok) ok = _admit(gw, req, resp, &c, id);
    if (!ok && http_resp_status(resp) == 401) {
        ts_err err = {{0}};
        if (!websession_end(gw, &ws, false, &err))
            TLOG_WARN("console session not ended", "error=\"%s\"", err.msg);
        websession_count(WEBSESSION_ENDED);
        TLOG_INFO("console session ended: its keypair or user is no longer active", "");
    }
    return ok;
}

bool verify_request(gateway *gw, http_req *req, http_resp *resp, gw_identity *id)
{
    if (req->mount) return _verify_session(gw, req, resp, id);
    char ak[SIGN_ACCESS_KEY_LEN + 1], sig[SIGN_HEX_LEN + 1];
    ts_err err = {{0}};

    const char *authz = http_header(req, "Authorization");
    if (!authz || !*authz)
        return _refuse(resp, VERIFY_MALFORMED, 401,
                       "missing Authorization header: this endpoint needs a signed request");
    if (!sign_parse_authorization(authz, ak, sig, &err))
        return _refuse(resp, VERIFY_MALFORMED, 401, "malformed Authorization header: %s", err.msg);
    tlog_ctx_access_key(ak);

    const char *version = http_header(req, "X-BackendAI-Version");
    long major = 0;
    if (!version || !*version)
        return _refuse(resp, VERIFY_MALFORMED, 400, "missing X-BackendAI-Version header");
    if (strlen(version) > 32 || !_parse_version(version, &major))
        return _refuse(
            resp, VERIFY_MALFORMED, 400,
            "malformed X-BackendAI-Version header (expected vN.YYYYMMDD, e.g. v8.20240915)");
    if (major < 4)
        return _refuse(resp, VERIFY_MALFORMED, 400,
                       "API version %s is not supported: v4 or later is required", version);

    const char *date_name = "Date";
    const char *raw_date = http_header(req, "Date");
    if (!raw_date || !*raw_date) {
        date_name = "X-BackendAI-Date";
        raw_date = http_header(req, "X-BackendAI-Date");
    }
    if (!raw_date || !*raw_date)
        return _refuse(resp, VERIFY_MALFORMED, 401, "missing Date or X-BackendAI-Date header");
    time_t date;
    if (!sign_parse_date(raw_date, &date))
        return _refuse(resp, VERIFY_MALFORMED, 401,
                       "malformed %s header (ISO 8601 with a timezone or RFC 7231 expected)",
                       date_name);
    long skew = (long)(date - time(NULL));
    if (skew > VERIFY_DATE_WINDOW_S || skew < -VERIFY_DATE_WINDOW_S)
        return _refuse(resp, VERIFY_STALE_DATE, 401,
                       "date/time out of the 15-minute window: the %s header is %ld s %s the "
                       "server's clock",
                       date_name, labs(skew), skew > 0 ? "ahead of" : "behind");

    const char *host = http_header(req, "Host");
    if (!host || !*host) return _refuse(resp, VERIFY_MALFORMED, 401, "missing Host header");

    cred c;
    if (!_lookup(gw, ak, resp, &c)) return false;

    sign_input in = {
        .method = req->method,
        .target = req->target,
        .raw_date = raw_date,
        .date = date,
        .host = host,
        .content_type = http_header(req, "Content-Type"),
        .version = version,
        .body = req->body,
        .body_len = req->body_len,
    };
    char expected[SIGN_HEX_LEN + 1];
    sign_key scratch;
    const sign_key *key = sign_keys_get(ak, c.secret_key, date, host, &scratch);
    sign_compute_keyed(key, &in, expected);
    bool match = sign_equal(expected, sig);
    if (!match && !in.content_type) {
        /* Without a Content-Type, Backend.AI's manager signs what aiohttp
         * reads then, application/octet-stream (RFC 9110's default): the
         * Python client's WebSocket and event-stream requests are signed so. */
        in.content_type = "application/octet-stream";
        sign_compute_keyed(key, &in, expected);
        match = sign_equal(expected, sig);
    }
    sign_key_wipe(&scratch);
    memset(c.secret_key, 0, sizeof(c.secret_key));
    if (!match)
        return _refuse(resp, VERIFY_BAD_SIGNATURE, 401,
                       "signature mismatch: check the secret key, the Host header (port "
                       "included), the raw path and query, the date and the content type");
    return _admit(gw, req, resp, &c, id);
}
