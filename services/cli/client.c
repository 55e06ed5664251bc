/* client.c: signed requests and problem JSON -> messages. */
#include "services/cli/client.h"
#include "libcommon/http.h"
#include "libcommon/sign.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

bool client_host_of(const char *url, char *host, size_t size, char **base_path)
{
    const char *p = strstr(url, "://");
    if (!p || p == url) return false;
    const char *auth = p + 3;
    size_t n = strcspn(auth, "/?#");
    const char *at = memrchr(auth, '@', n);
    if (at) {
        n -= (size_t)(at + 1 - auth);
        auth = at + 1;
    }
    if (n == 0 || n >= size) return false;
    memcpy(host, auth, n);
    host[n] = '\0';
    if (base_path) {
        const char *path = auth + n;
        size_t plen = strcspn(path, "?#");
        while (plen && path[plen - 1] == '/')
            plen--;
        *base_path = ts_strndup(path, plen);
    }
    return true;
}

void client_query_add(char **path, const char *name, const char *value)
{
    char *v = httpc_escape(value);
    char *next = ts_asprintf("%s%c%s=%s", *path, strchr(*path, '?') ? '&' : '?', name, v);
    free(v);
    free(*path);
    *path = next;
}

bool client_has_keys(const cli *c)
{
    if (c->creds.access_key) return true;
    fprintf(stderr, "tessera: no credentials: run `tessera login`, or set TESSERA_ACCESS_KEY and "
                    "TESSERA_SECRET_KEY (or BACKEND_ACCESS_KEY and BACKEND_SECRET_KEY)\n");
    return false;
}

static void iso_now(char *buf, size_t size, time_t *t)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    struct tm tm;
    gmtime_r(&ts.tv_sec, &tm);
    char base[32];
    strftime(base, sizeof(base), "%Y-%m-%dT%H:%M:%S", &tm);
    snprintf(buf, size, "%s.%06ld+00:00", base, ts.tv_nsec / 1000);
    *t = ts.tv_sec;
}

/* "tessera: <title>: <msg> (HTTP <status>)" from a problem body, or the best
 * that a non-problem body allows. */
static void print_problem(long status, const httpc_resp *r)
{
    json_t *p = r->body_len ? json_loadb(r->body, r->body_len, 0, NULL) : NULL;
    const char *title = json_string_value(json_object_get(p, "title"));
    const char *msg = json_string_value(json_object_get(p, "msg"));
    if (!msg) msg = json_string_value(json_object_get(p, "detail"));
    if (!msg) msg = json_string_value(json_object_get(p, "error"));
    const char *type = json_string_value(json_object_get(p, "type"));
    if (!title && type && strrchr(type, '/')) title = strrchr(type, '/') + 1;
    if (!title || !*title) title = http_status_text((int)status);
    char text[240] = "";
    if (!msg && !p && r->body_len) { /* not JSON: show the start of the text */
        size_t n = 0;
        for (const char *s = r->body; *s && n + 1 < sizeof(text); s++)
            text[n++] = (*s == '\n' || *s == '\r') ? ' ' : *s;
        text[n] = '\0';
        msg = text;
    }
    if (msg && *msg)
        fprintf(stderr, "tessera: %s: %s (HTTP %ld)\n", title, msg, status);
    else
        fprintf(stderr, "tessera: %s (HTTP %ld)\n", title, status);
    json_decref(p);
}

cli_status client_headers(cli *c, const char *method, const char *path, const char *content_type,
                          const char *accept, const void *body, size_t len, bool sign,
                          char *lines[CLIENT_MAX_HEADERS + 1], char **url)
{
    memset(lines, 0, (CLIENT_MAX_HEADERS + 1) * sizeof(*lines));
    *url = NULL;
    const char *endpoint = c->creds.endpoint;
    char host[256];
    char *base = NULL;
    if (!client_host_of(endpoint, host, sizeof(host), &base)) {
        fprintf(stderr, "tessera: bad endpoint '%s': expected http[s]://host[:port]\n", endpoint);
        return CLI_USAGE;
    }
    size_t elen = strlen(endpoint);
    while (elen && endpoint[elen - 1] == '/')
        elen--;
    *url = ts_asprintf("%.*s%s", (int)elen, endpoint, path);
    char *target = ts_asprintf("%s%s", base, path);

    char date[64];
    time_t now;
    iso_now(date, sizeof(date), &now);
    size_t n = 0;
    if (content_type) lines[n++] = ts_asprintf("Content-Type: %s", content_type);
    lines[n++] = ts_asprintf("Accept: %s", accept);
    lines[n++] = ts_strdup("X-BackendAI-Version: " CLIENT_API_VERSION);
    lines[n++] = ts_asprintf("Host: %s", host);
    lines[n++] = ts_asprintf("Date: %s", date);
    lines[n++] = ts_asprintf("X-BackendAI-Date: %s", date);
    lines[n++] = ts_strdup("User-Agent: tessera-cli/" TESSERA_VERSION);
    if (sign && c->creds.access_key) {
        sign_input in = {.method = method,
                         .target = target,
                         .raw_date = date,
                         .date = now,
                         .host = host,
                         .content_type = content_type,
                         .version = CLIENT_API_VERSION,
                         .body = body,
                         .body_len = len};
        char sig[SIGN_HEX_LEN + 1];
        sign_compute(c->creds.secret_key, &in, sig);
        lines[n++] =
            ts_asprintf("Authorization: BackendAI signMethod=HMAC-SHA256, credential=%s:%s",
                        c->creds.access_key, sig);
    }
    free(target);
    free(base);
    return CLI_OK;
}

void client_headers_free(char *lines[CLIENT_MAX_HEADERS + 1])
{
    for (size_t i = 0; i < CLIENT_MAX_HEADERS && lines[i]; i++)
        free(lines[i]);
}

cli_status client_call_raw(cli *c, const char *method, const char *path, const char *content_type,
                           const void *body, size_t len, bool sign, httpc_resp *out)
{
    memset(out, 0, sizeof(*out));
    char *lines[CLIENT_MAX_HEADERS + 1];
    char *url;
    const char *endpoint = c->creds.endpoint;
    cli_status hrc = client_headers(c, method, path, content_type, "application/json", body, len,
                                    sign, lines, &url);
    if (hrc != CLI_OK) return hrc;
    const char *const *headers = (const char *const *)lines;
    ts_err err = {{0}};
    cli_status rc = CLI_FAIL;
    if (!httpc_request(c->http, method, url, headers, body, len, NULL, out, &err)) {
        fprintf(stderr, "tessera: cannot reach the gateway at %s: %s\n", endpoint, err.msg);
    } else if (out->status >= 200 && out->status < 300) {
        rc = CLI_OK;
    } else {
        print_problem(out->status, out);
    }
    if (rc != CLI_OK) httpc_resp_free(out);
    client_headers_free(lines);
    free(url);
    return rc;
}

cli_status client_call(cli *c, const char *method, const char *path, json_t *body, bool sign,
                       json_t **out)
{
    *out = NULL;
    char *text = body ? json_dumps(body, JSON_COMPACT) : NULL;
    httpc_resp r;
    cli_status rc = client_call_raw(c, method, path, "application/json", text,
                                    text ? strlen(text) : 0, sign, &r);
    if (rc == CLI_OK) {
        if (r.body_len) *out = json_loadb(r.body, r.body_len, JSON_DECODE_ANY, NULL);
        if (r.body_len && !*out) {
            fprintf(stderr, "tessera: %s %s answered %ld with a body that is not JSON\n", method,
                    path, r.status);
            rc = CLI_FAIL;
        }
        httpc_resp_free(&r);
    }
    free(text);
    return rc;
}
