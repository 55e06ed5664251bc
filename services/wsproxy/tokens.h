/* tokens.h: the secrets and names that tie a browser to an app route.
 *
 * - A token (and a cookie value) is 32 random bytes, base64url without
 *   padding: 43 characters. It is the Redis key route:<token>.
 * - An app's hash is the first 16 hex digits of BLAKE2b(user \0 session \0 app):
 *   stable for one user's app in one session. It names the app's cookie
 *   (tessera_app_<hash>) and, where wsproxy.public_url has a "*", its host
 *   (<hash>.apps.example.com).
 * - Requests carry the token as the query argument token=..., which is taken
 *   out before the request reaches the app, and the cookie, which is taken out
 *   of the Cookie header likewise. */
#ifndef WSPROXY_TOKENS_H
#define WSPROXY_TOKENS_H

#include "libcommon/token.h"

#include <stdbool.h>
#include <stddef.h>

struct strip_list;

#define TOK_LEN TS_TOKEN_LEN
#define TOK_HASH_LEN 16
#define TOK_COOKIE_PREFIX "tessera_app_"
#define TOK_COOKIE_PREFIX_LEN 12
#define TOK_COOKIE_NAME_LEN (TOK_COOKIE_PREFIX_LEN + TOK_HASH_LEN)

/* Tokens themselves: ts_token_new, ts_token_syntax_ok (libcommon/token.h). */

void tok_app_hash(const char *user_id, const char *session_id, const char *app,
                  char out[TOK_HASH_LEN + 1]);
bool tok_hash_syntax_ok(const char *s, size_t n) TS_MUST_CHECK;

/* The query argument "token" of a request target: true and its raw value
 * when present (the first one). */
bool tok_query_token(const char *target, size_t len, const char **val, size_t *vlen) TS_MUST_CHECK;
/* The target without any token=... argument (a '?' with nothing after it goes
 * too). Returns the length written to out (cap >= len + 1 suffices). */
size_t tok_strip_query_token(const char *target, size_t len, char *out, size_t cap);

/* The tessera_app_* cookies of a Cookie header value. */
typedef struct tok_cookie {
    char hash[TOK_HASH_LEN + 1];
    const char *value;
    size_t value_len;
} tok_cookie;
/* Fills up to max; returns how many were found (may exceed max). */
int tok_cookie_apps(const char *hdr, size_t len, tok_cookie *out, int max);
/* The Cookie header value without tessera_app_* cookies and those the list
 * also names (strip.h; NULL: none). Returns the length written to out
 * (cap >= len + 1 suffices); 0 when nothing is left. */
size_t tok_cookie_strip(const char *hdr, size_t len, const struct strip_list *also, char *out,
                        size_t cap);

/* Whether a Set-Cookie value (an app's response) sets one of the platform's
 * cookies: a tessera_app_* one, or one the list names (strip.h; NULL: none).
 * The app may not set them: wsproxy's cookies, or the console's login for a
 * parent domain (Domain=...), would be planted in its visitors' browsers. */
bool tok_set_cookie_platform(const char *value, size_t len,
                             const struct strip_list *also) TS_MUST_CHECK;

/* Where a browser's link is sent once its token is taken: the target
 * without token=..., as a path on wsproxy's own origin whatever the target
 * held: leading slashes and backslashes become one '/' ("//evil.example/"
 * would name another host), and a backslash, a control, blank or non-ASCII
 * byte is percent-encoded. Returns the length written to out; "/" when it
 * does not fit in cap (or 0 when cap < 2). */
size_t tok_redirect_location(const char *target, size_t len, char *out, size_t cap);

/* The app hash a Host header names: its first label when that is one (16 hex
 * digits followed by '.'). */
bool tok_host_hash(const char *host, size_t len, char out[TOK_HASH_LEN + 1]) TS_MUST_CHECK;

/* "tessera_app_<hash>=<value>; Path=/; Max-Age=<s>; HttpOnly; SameSite=Lax[; Secure]"
 * into out; value NULL: a deletion (empty value, Max-Age=0). Returns the length. */
size_t tok_set_cookie(char *out, size_t cap, const char *hash, const char *value, long max_age_s,
                      bool secure);

#endif
