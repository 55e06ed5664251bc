/* reply.c: the proxy's own answers (reply.h). */
#include "services/wsproxy/reply.h"

#include "libcommon/http.h"
#include "libcommon/http_front.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *page_text(int status, const char **title)
{
    switch (status) {
    case 401:
        *title = "This app link is not valid";
        return "The link or cookie that opened this app is unknown or has expired, or the "
               "session has ended. Open the app again from Tessera.";
    case 403:
        *title = "This link belongs to another app";
        return "The link was issued for another app, session or user. Open the app again "
               "from Tessera with your own account.";
    case 409:
        *title = "Several apps share this address";
        return "This browser holds cookies for more than one app on this address. Open the "
               "app again from Tessera; the link replaces the other cookies.";
    case 502:
        *title = "The app did not answer";
        return "The app inside the session refused the connection or sent a malformed reply. "
               "It may still be starting.";
    case 503:
        *title = "Temporarily unavailable";
        return "The proxy cannot check app links right now. Try again in a moment.";
    case 504:
        *title = "The app did not answer in time";
        return "Connecting to the app inside the session timed out.";
    default:
        *title = http_status_text(status);
        return "The request could not be proxied.";
    }
}

/* Problem JSON, as the platform's other services answer:
 * {"type": ".../probs/<kind>", "title", "msg"}; msg is the page's text and
 * the detail. */
static char *problem_body(int status, const char *detail)
{
    const char *title;
    const char *text = page_text(status, &title);
    char *msg =
        ts_asprintf("%s%s%s%s", text, detail ? " (" : "", detail ? detail : "", detail ? ")" : "");
    json_t *o = http_problem_json(http_front_kind(status), title, msg);
    free(msg);
    char *body = json_dumps(o, JSON_COMPACT);
    json_decref(o);
    return body ? body : ts_strdup("{}");
}

static char *html_body(int status, const char *detail)
{
    const char *title;
    const char *text = page_text(status, &title);
    return ts_asprintf(
        "<!doctype html>\n<html><head><meta charset=\"utf-8\"><title>%d %s</title>"
        "</head>\n<body style=\"font-family:sans-serif;max-width:40em;margin:3em auto\">"
        "<h1>%s</h1>\n<p>%s</p>\n<p><small>%d %s%s%s &middot; tessera-wsproxy"
        "</small></p></body></html>\n",
        status, http_status_text(status), title, text, status, http_status_text(status),
        detail ? ": " : "", detail ? detail : "");
}

char *reply_message(int status, const char *detail, const char *extra_headers, bool keepalive,
                    bool html, size_t *len)
{
    bool page = status < 400 || html;
    char *body = page ? html_body(status, detail) : problem_body(status, detail);
    char *msg = ts_asprintf("HTTP/1.1 %d %s\r\nContent-Type: %s\r\n"
                            "Content-Length: %zu\r\nCache-Control: no-store\r\n%s%s\r\n%s",
                            status, http_status_text(status),
                            page ? "text/html; charset=utf-8" : "application/problem+json",
                            strlen(body), extra_headers ? extra_headers : "",
                            keepalive ? "" : "Connection: close\r\n", body);
    free(body);
    *len = strlen(msg);
    return msg;
}
