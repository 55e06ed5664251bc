/* verify.h: Backend.AI request signatures, checked by the gateway itself
 * (api-compat.md, libcommon/sign.h) from the credential cache
 * (credentials.h), then the keypair's rate limit (ratelimit.h). The entry
 * point of every signed route: it puts the access key (and, once verified,
 * the user) in the thread's log context, and keeps the verified caller in
 * the request for its access record (identity.h).
 *
 * A signed request carries X-BackendAI-Version (v4.* or later), a date
 * (Date, else X-BackendAI-Date; within 15 minutes of our clock) and
 * Authorization: BackendAI signMethod=HMAC-SHA256, credential=<AK>:<hex>.
 * Refusals: 400 invalid-api-params for a missing, malformed or too old
 * version; 401 auth-failed for everything else (missing or malformed header,
 * bad date, unknown key, inactive keypair or user, signature mismatch); 429
 * too-many-requests over the rate limit; 503 when auth cannot be asked about
 * a key the cache does not hold. */
#ifndef GATEWAY_VERIFY_H
#define GATEWAY_VERIFY_H

#include "gateway.h"
#include "identity.h"

/* How far a request's date may be from our clock, seconds. */
#define VERIFY_DATE_WINDOW_S (15 * 60)

/* Outcomes, for tessera_gateway_auth_total{result=...}. */
typedef enum verify_result {
    VERIFY_OK,
    VERIFY_BAD_SIGNATURE,
    VERIFY_UNKNOWN_KEY,
    VERIFY_INACTIVE,
    VERIFY_STALE_DATE,
    VERIFY_MALFORMED,
    VERIFY_RATE_LIMITED,
    VERIFY_UNAVAILABLE,
    VERIFY_N_RESULTS,
} verify_result;

/* Metrics: tessera_gateway_auth_total{result}, the signing-key table's and
 * the rate limit's. */
void verify_init(gateway *gw);

/* Check the signature and the rate limit. True: *id is the caller. Once the
 * signature holds, the caller is kept in req (identity_attach), so that the
 * access record names it even when the rate limit refuses it. False: resp
 * holds the refusal. */
bool verify_request(gateway *gw, http_req *req, http_resp *resp, gw_identity *id) TS_MUST_CHECK;

#endif
