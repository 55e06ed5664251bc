/* ratelimit.h: per-keypair request rate limit in Redis (the keypair's
 * rate_limit, requests per minute; 0 = unlimited).
 *
 * Fixed one-minute windows: a Lua script increments ratelimit:<ak>:<window>
 * (window = Unix minutes by the gateway's clock, so every gateway shares the
 * counter) and sets its expiry on first use; a request over the limit is
 * refused with Retry-After = seconds to the next window. One Redis round trip
 * per signed request of a limited keypair, on the worker thread's own
 * connection. When Redis fails, requests are let through (fail open) with a
 * warning at most every 10 s and tessera_gateway_ratelimit_errors_total. */
#ifndef GATEWAY_RATELIMIT_H
#define GATEWAY_RATELIMIT_H

#include "libcommon/svc.h"

/* Load the script (at start-up; a failure is only logged: it loads again on first use). */
void ratelimit_init(svc *s);

/* True when the request may go on; false with *retry_after_s set when the
 * key is over its limit. */
bool ratelimit_allow(svc *s, const char *access_key, int64_t limit_per_minute,
                     int *retry_after_s) TS_MUST_CHECK;

/* Redis failures that let requests through. */
uint64_t ratelimit_errors(void);

#endif
