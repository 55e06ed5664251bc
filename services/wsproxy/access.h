/* access.h: who may pass: a request's token (?token=...) or app cookie to its
 * route (Redis through the worker's cache), or why not. On a token, a cookie
 * is minted for the browser (docs/wsproxy.md, "Tokens and cookies"). */
#ifndef WSPROXY_ACCESS_H
#define WSPROXY_ACCESS_H

#include "libcommon/http1.h"
#include "services/wsproxy/routes.h"
#include "services/wsproxy/worker.h"

typedef enum acc_result {
    ACC_OK = 0,
    ACC_UNKNOWN,     /* 401: no token or cookie, unknown or expired */
    ACC_FOREIGN,     /* 403: a token/cookie for another app, user or session */
    ACC_AMBIGUOUS,   /* 409: several apps' cookies on one address */
    ACC_UNAVAILABLE, /* 503: Redis failed */
} acc_result;

typedef struct acc_decision {
    acc_result res;
    route rt;
    bool via_token;   /* authorized by ?token= */
    char *set_cookie; /* heap "Set-Cookie: ...\r\n" lines to send, or NULL */
    const char *why;  /* for the log */
} acc_decision;

void access_decide(worker *w, const h1_msg *m, acc_decision *d);
/* "ok", "unknown", "foreign", "ambiguous", "unavailable" (for the log). */
const char *access_result_name(acc_result r);
/* The HTTP status of a refusal: 401, 403, 409 or 503. */
int access_status(acc_result r);

#endif
