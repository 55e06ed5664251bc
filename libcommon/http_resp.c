/* http_resp.c: the response a handler fills, problem JSON in Backend.AI's
 * shape, and the JSON body helpers. No libmicrohttpd here: the server turns a
 * finished http_resp into the bytes on the wire. */
#include "libcommon/http.h"

#include "libcommon/deps.h"
#include "libcommon/log.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define PROBLEM_TYPE_BASE "https://api.backend.ai/probs/"

typedef struct resp_header {
    char *name;
    char *value;
} resp_header;

struct http_resp {
    int status; /* 0 until a reply is set */
    char *content_type;
    char *body;
    size_t body_len;
    resp_header *headers;
    size_t n_headers, cap_headers;
};

http_resp *http_resp_new(void)
{
    return ts_calloc(1, sizeof(http_resp));
}

void http_resp_free(http_resp *resp)
{
    if (!resp) return;
    free(resp->content_type);
    free(resp->body);
    for (size_t i = 0; i < resp->n_headers; i++) {
        free(resp->headers[i].name);
        free(resp->headers[i].value);
    }
    free(resp->headers);
    free(resp);
}

int http_resp_status(const http_resp *resp)
{
    return resp->status;
}

const char *http_resp_body(const http_resp *resp, size_t *len)
{
    if (len) *len = resp->body_len;
    return resp->body ? resp->body : "";
}

const char *http_resp_header(const http_resp *resp, const char *name)
{
    if (strcasecmp(name, "Content-Type") == 0) return resp->content_type;
    for (size_t i = 0; i < resp->n_headers; i++)
        if (strcasecmp(resp->headers[i].name, name) == 0) return resp->headers[i].value;
    return NULL;
}

bool http_resp_header_at(const http_resp *resp, size_t i, const char **name, const char **value)
{
    if (i >= resp->n_headers) return false;
    *name = resp->headers[i].name;
    *value = resp->headers[i].value;
    return true;
}

/* A header line must not let a value smuggle in another line. */
static bool header_text_ok(const char *s, bool is_name)
{
    if (!s || (is_name && !*s)) return false;
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p == '\r' || *p == '\n' || *p == 0x7f) return false;
        if (*p < 0x20 && *p != '\t') return false;
        if (is_name && (*p == ':' || *p == ' ' || *p == '\t')) return false;
    }
    return true;
}

void http_set_header(http_resp *resp, const char *name, const char *value)
{
    if (!header_text_ok(name, true) || !header_text_ok(value, false)) {
        char q[128];
        TLOG_WARN("http header refused", "name=%s", tlog_quote(q, sizeof(q), name));
        return;
    }
    if (strcasecmp(name, "Content-Type") == 0) {
        free(resp->content_type);
        resp->content_type = ts_strdup(value);
        return;
    }
    for (size_t i = 0; i < resp->n_headers; i++) {
        if (strcasecmp(resp->headers[i].name, name) == 0) {
            free(resp->headers[i].value);
            resp->headers[i].value = ts_strdup(value);
            return;
        }
    }
    if (resp->n_headers == resp->cap_headers) {
        resp->cap_headers = resp->cap_headers ? resp->cap_headers * 2 : 4;
        resp->headers = ts_realloc(resp->headers, resp->cap_headers * sizeof(resp_header));
    }
    resp->headers[resp->n_headers].name = ts_strdup(name);
    resp->headers[resp->n_headers].value = ts_strdup(value);
    resp->n_headers++;
}

/* Takes ownership of body (malloc'd, NUL-terminated after len). */
static void reply_owned(http_resp *resp, int status, const char *content_type, char *body,
                        size_t len)
{
    free(resp->body);
    free(resp->content_type);
    resp->status = status;
    resp->content_type = content_type ? ts_strdup(content_type) : NULL;
    resp->body = body;
    resp->body_len = len;
}

void http_reply(http_resp *resp, int status, const char *content_type, const void *body, size_t len)
{
    if (status < 100 || status > 599) {
        http_problem(resp, 500, "internal-server-error", NULL, "handler set HTTP status %d",
                     status);
        return;
    }
    char *copy = ts_malloc(len + 1);
    if (len) memcpy(copy, body, len);
    copy[len] = '\0';
    reply_owned(resp, status, content_type, copy, len);
}

static char *json_text(json_t *body, size_t *len)
{
    char *text = json_dumps(body, JSON_COMPACT | JSON_ENCODE_ANY);
    if (text) *len = strlen(text);
    return text;
}

void http_reply_json(http_resp *resp, int status, json_t *body)
{
    size_t len = 0;
    char *text = body ? json_text(body, &len) : NULL;
    json_decref(body);
    if (!text) {
        http_problem(resp, 500, "internal-server-error", NULL,
                     "response could not be encoded as JSON");
        return;
    }
    if (status < 100 || status > 599) {
        free(text);
        http_problem(resp, 500, "internal-server-error", NULL, "handler set HTTP status %d",
                     status);
        return;
    }
    reply_owned(resp, status, "application/json", text, len);
}

const char *http_status_text(int status)
{
    switch (status) {
    case 302:
        return "Found";
    case 400:
        return "Bad Request";
    case 401:
        return "Unauthorized";
    case 403:
        return "Forbidden";
    case 404:
        return "Not Found";
    case 405:
        return "Method Not Allowed";
    case 408:
        return "Request Timeout";
    case 409:
        return "Conflict";
    case 412:
        return "Precondition Failed";
    case 413:
        return "Content Too Large";
    case 414:
        return "URI Too Long";
    case 415:
        return "Unsupported Media Type";
    case 422:
        return "Unprocessable Entity";
    case 429:
        return "Too Many Requests";
    case 431:
        return "Request Header Fields Too Large";
    case 500:
        return "Internal Server Error";
    case 501:
        return "Not Implemented";
    case 502:
        return "Bad Gateway";
    case 503:
        return "Service Unavailable";
    case 504:
        return "Gateway Timeout";
    case 505:
        return "HTTP Version Not Supported";
    default:
        return status >= 500 ? "Server Error" : "Client Error";
    }
}

json_t *http_problem_json(const char *kind, const char *title, const char *msg)
{
    json_t *o = json_object();
    char *type = ts_asprintf(PROBLEM_TYPE_BASE "%s", kind && *kind ? kind : "generic-error");
    json_object_set_new(o, "type", json_string(type));
    free(type);
    /* json_string refuses invalid UTF-8: fall back to a lossless-enough form. */
    json_t *t = json_string(title ? title : "");
    json_t *m = json_string(msg ? msg : "");
    json_object_set_new(o, "title", t ? t : json_string("(not UTF-8)"));
    json_object_set_new(o, "msg", m ? m : json_string("(not UTF-8)"));
    return o;
}

void http_problem(http_resp *resp, int status, const char *kind, const char *title, const char *fmt,
                  ...)
{
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    if (status < 400 || status > 599) status = 500;
    /* A failure while a dependency fails to answer is that outage, not a
     * fault of the request or a bug: the client may try again later. */
    const char *down = status == 500 ? deps_failing() : NULL;
    if (down) {
        size_t used = strlen(msg);
        snprintf(msg + used, sizeof(msg) - used, " (%s is unavailable)", down);
        status = 503;
        kind = "service-unavailable";
        title = NULL;
    }
    json_t *o = http_problem_json(kind, title ? title : http_status_text(status), msg);
    size_t len = 0;
    char *text = json_text(o, &len);
    json_decref(o);
    if (!text) ts_panic("problem JSON could not be encoded");
    reply_owned(resp, status, "application/problem+json", text, len);
    if (down) {
        char secs[16];
        snprintf(secs, sizeof(secs), "%d", DEPS_RETRY_AFTER_S);
        http_set_header(resp, "Retry-After", secs);
    }
}

json_t *http_json_body(http_req *req, http_resp *resp)
{
    if (!req->body || req->body_len == 0) {
        http_problem(resp, 400, "invalid-api-params", NULL,
                     "request body is empty; expected a "
                     "JSON object");
        return NULL;
    }
    json_error_t jerr;
    json_t *v = json_loadb(req->body, req->body_len, 0, &jerr);
    if (!v) {
        http_problem(resp, 400, "invalid-api-params", NULL,
                     "request body is not valid JSON: %s (line %d, column %d)", jerr.text,
                     jerr.line, jerr.column);
        return NULL;
    }
    if (!json_is_object(v)) {
        json_decref(v);
        http_problem(resp, 400, "invalid-api-params", NULL, "request body must be a JSON object");
        return NULL;
    }
    return v;
}
