/* websession.h: the browser sessions of the web console ("session mode", as
 * Backend.AI's webserver keeps them). A password login (server_login.c)
 * makes one; the browser holds only its id, in the HttpOnly cookie
 * tessera_sid, and the keypair stays on the server: requests under /func/
 * are admitted here and then run as that keypair's (verify.c).
 *
 * Redis:
 *   websess:<SHA-256 hex of the id>  HASH ak, uid, user, csrf, created (ms);
 *                                    TTL gateway.web_session_idle, renewed
 *                                    by each admitted request
 *   websess:user:<user id>           SET of the user's session keys (sign
 *                                    out everywhere), TTL the longest life
 * A session also ends gateway.web_session_max_age after its login however it
 * is used, and when its keypair or user is no longer active (verify.c).
 *
 * A request in session mode is admitted when
 *   - its Origin, if any, is the gateway's own (the Host it was sent to) or
 *     one of gateway.web_allowed_origins, and its Sec-Fetch-Site, if any, is
 *     same-origin or none (another site's page cannot use the login);
 *   - its cookie names a live session;
 *   - its X-CSRF-Token header is the session's CSRF token (handed to the
 *     page by the login and by /server/login-check, the latter only to a
 *     request from the console's own page: websession_from_page); or, as
 *     Backend.AI's clients send it in session mode, no such header but an
 *     X-BackendAI-Version header (a custom header: another site's page
 *     cannot send it without a CORS preflight, which only
 *     gateway.cors_origins pass); or neither for GET /events/... (a
 *     browser's EventSource can send no header; read-only, and refused
 *     cross-site by the origin check).
 * Refusals: 403 forbidden (origin, CSRF), 401 auth-failed (no or an ended
 * session), 503 (Redis not answering). Metrics:
 * tessera_gateway_web_sessions_total{event=...}. */
#ifndef GATEWAY_WEBSESSION_H
#define GATEWAY_WEBSESSION_H

#include "gateway.h"

#include "libcommon/token.h"

#define WEBSESSION_COOKIE "tessera_sid"
#define WEBSESSION_USER_MAX 255

typedef struct websession {
    char key[65]; /* SHA-256 hex of the id: the Redis key's tail */
    char access_key[SIGN_ACCESS_KEY_LEN + 1];
    char user_id[CRED_USER_ID_MAX + 1];
    char username[WEBSESSION_USER_MAX + 1]; /* as typed at the login */
    char csrf[TS_TOKEN_LEN + 1];
    int64_t created_ms;
} websession;

typedef enum websession_event {
    WEBSESSION_LOGIN,
    WEBSESSION_LOGIN_FAILED,
    WEBSESSION_LOGOUT,
    WEBSESSION_ENDED, /* by its keypair or user, or its age */
    WEBSESSION_REFUSED,
    WEBSESSION_N_EVENTS,
} websession_event;

/* The metrics. */
void websession_init(gateway *gw);
void websession_count(websession_event e);

/* A new session for access_key (user_id, username): *ws filled, sid the
 * cookie's value. False with err when Redis failed. */
bool websession_create(gateway *gw, const char *access_key, const char *user_id,
                       const char *username, websession *ws, char sid[TS_TOKEN_LEN + 1],
                       ts_err *err) TS_MUST_CHECK;

typedef enum websession_found {
    WEBSESSION_FOUND,
    WEBSESSION_NONE, /* no cookie, or its session ended */
    WEBSESSION_UNAVAILABLE,
} websession_found;

/* The session req's cookie names (renewing its idle time). */
websession_found websession_find(gateway *gw, const http_req *req, websession *ws,
                                 ts_err *err) TS_MUST_CHECK;

/* End ws (everywhere: every session of its user). */
bool websession_end(gateway *gw, const websession *ws, bool everywhere, ts_err *err) TS_MUST_CHECK;

/* The origin checks above; false: resp holds the 403. */
bool websession_origin_ok(gateway *gw, const http_req *req, http_resp *resp) TS_MUST_CHECK;

/* Whether req says it comes from one of the console's pages: Sec-Fetch-Site
 * same-origin, or an Origin that is the gateway's own or listed. Every
 * browser sends one of the two on a POST (and the console's login check is
 * one); a script replaying a stolen cookie sends neither unless it forges
 * it. GET /server/login-check hands out the CSRF token only then. */
bool websession_from_page(gateway *gw, const http_req *req) TS_MUST_CHECK;

/* Origin, cookie and CSRF token (above): true with *ws; false: resp holds
 * the refusal. */
bool websession_admit(gateway *gw, const http_req *req, http_resp *resp,
                      websession *ws) TS_MUST_CHECK;

/* The value of cookie name in a Cookie header (not NUL-terminated: *len
 * bytes), or NULL. */
const char *websession_cookie(const char *header, const char *name, size_t *len);

/* Set the cookie to sid (NULL: clear it) on resp. */
void websession_set_cookie(gateway *gw, const http_req *req, http_resp *resp, const char *sid);

#endif
