/* strip.h: what of a client's request is the platform's and never reaches a
 * tenant's app (docs/wsproxy.md, "What reaches the app").
 *
 * A browser sends an app every cookie of the app's host name, whatever the
 * port: in shared mode on the console's host that was the console's login
 * (tessera_sid). wsproxy therefore removes, before it forwards a request:
 *   - the cookies wsproxy.strip_cookies names (default "tessera_*,sToken":
 *     the console's login, the app cookies, single sign-on), besides
 *     tessera_app_* which it always takes out;
 *   - the header fields wsproxy.strip_headers names (default
 *     "Authorization,Proxy-Authorization,X-BackendAI-*,X-Tessera-*");
 *   - an Authorization of the platform's own scheme ("BackendAI ...")
 *     whatever the list says.
 * A list is comma-separated names; a name ending in '*' is a prefix. Names
 * compare without regard to case. */
#ifndef WSPROXY_STRIP_H
#define WSPROXY_STRIP_H

#include "libcommon/common.h"

#include <stdbool.h>
#include <stddef.h>

#define STRIP_MAX_NAMES 32
#define STRIP_NAME_MAX 64

#define STRIP_DEFAULT_COOKIES "tessera_*,sToken"
#define STRIP_DEFAULT_HEADERS "Authorization,Proxy-Authorization,X-BackendAI-*,X-Tessera-*"

typedef struct strip_list {
    int n;
    struct {
        char name[STRIP_NAME_MAX + 1];
        size_t len;
        bool prefix; /* written with a trailing '*' */
    } names[STRIP_MAX_NAMES];
} strip_list;

/* Parse spec ("a,b*, c"; blanks around names ignored; empty: no names).
 * Each name is an HTTP token (cookie names too), at most STRIP_NAME_MAX
 * characters, a '*' only at its end; at most STRIP_MAX_NAMES names. False
 * with err (naming the bad item) otherwise. */
bool strip_list_parse(const char *spec, strip_list *out, ts_err *err) TS_MUST_CHECK;

/* Whether name (n bytes) is on the list. */
bool strip_list_has(const strip_list *l, const char *name, size_t n) TS_MUST_CHECK;

/* Whether a request header field stays out of what the app gets: named by
 * headers, or an Authorization (or Proxy-Authorization) of the platform's
 * BackendAI scheme. */
bool strip_header(const strip_list *headers, const char *name, size_t name_len, const char *value,
                  size_t value_len) TS_MUST_CHECK;

#endif
