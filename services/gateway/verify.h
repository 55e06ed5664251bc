/* verify.h: Backend.AI request signatures, checked by the gateway itself
 * (api-compat.md, libcommon/sign.h) from the credential cache, then the
 * keypair's rate limit.
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

#include "cred_cache.h"
#include "gateway.h"

/* How far a request's date may be from our clock, seconds. */
#define VERIFY_DATE_WINDOW_S (15 * 60)

/* Who signed a request. */
typedef struct gw_identity {
    char access_key[SIGN_ACCESS_KEY_LEN + 1];
    char user_id[CRED_USER_ID_MAX + 1];
    char role[CRED_ROLE_MAX];
    char domain[CRED_DOMAIN_MAX];
    bool is_admin;
} gw_identity;

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

void verify_init(gateway *gw);

/* Check the signature and the rate limit. True: *id is the caller (and is
 * remembered for the audit record). False: resp holds the refusal. */
bool verify_request(gateway *gw, http_req *req, http_resp *resp, gw_identity *id) TS_MUST_CHECK;

/* The identity verify_request accepted for req on this thread, if any (the
 * audit hook runs on the handler's thread right after the response). */
bool verify_identity_of(const http_req *req, gw_identity *out);
/* Forget this thread's identity (after the audit record). */
void verify_forget(void);

#endif
