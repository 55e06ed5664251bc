/* fuzz_http_router.c: arbitrary bytes as an HTTP request for the router.
 * Input: "<method>\n<target>\n<header lines>\n\n<body>" (missing parts are
 * empty). The request is built with http_req_new_local and dispatched to a
 * router with exact and {param} routes; the handler reads params, query
 * arguments, a header and the JSON body. No crash, no leak. */
#include "libcommon/http.h"
#include "libcommon/log.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAX_HEADERS 8

static http_router *router;

static void add_str(json_t *o, const char *key, const char *v)
{
    if (!v) return;
    json_t *s = json_string(v); /* NULL for invalid UTF-8 */
    if (s) json_object_set_new(o, key, s);
}

static void handle(http_req *req, http_resp *resp, void *ctx)
{
    static const char *const names[] = {"id", "kid", "name", "p1", "p8", "nope", ""};
    static const char *const args[] = {"limit", "q", "owner", "", "a b"};
    json_t *out = json_object();
    add_str(out, "route", ctx);
    if (req->n_params < 0 || req->n_params > HTTP_MAX_PARAMS) abort();
    for (int i = 0; i < req->n_params; i++) {
        if (!req->param_names[i] || !req->param_values[i] || !req->param_values[i][0]) abort();
        if (http_param(req, req->param_names[i]) == NULL) abort();
        add_str(out, req->param_names[i], req->param_values[i]);
    }
    for (size_t i = 0; i < TS_ARRAY_LEN(names); i++)
        add_str(out, names[i], http_param(req, names[i]));
    for (size_t i = 0; i < TS_ARRAY_LEN(args); i++)
        add_str(out, args[i], http_query_arg(req, args[i]));
    /* A query argument named by a path parameter, and the same one twice. */
    if (req->n_params > 0) {
        http_query_arg(req, req->param_values[0]);
        http_query_arg(req, req->param_values[0]);
    }
    add_str(out, "rid", http_header(req, "X-Request-ID"));
    add_str(out, "ua", http_header(req, "user-agent"));
    if (req->n_params > 0) http_set_header(resp, "X-Param", req->param_values[0]);

    if (req->body_len > 0 || strcmp(req->method, "POST") == 0) {
        json_t *body = http_json_body(req, resp);
        if (!body) {
            json_decref(out);
            return; /* a 400 problem is set */
        }
        json_object_set(out, "body", body);
        json_decref(body);
    }
    http_reply_json(resp, strcmp(req->method, "POST") == 0 ? 201 : 200, out);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    FILE *devnull = fopen("/dev/null", "w");
    if (!devnull) abort();
    tlog_set_stream(devnull);
    router = http_router_new();
    http_route(router, "GET", "/", handle, "root");
    http_route(router, "GET", "/v1/sessions", handle, "list");
    http_route(router, "POST", "/v1/sessions", handle, "create");
    http_route(router, "GET", "/v1/sessions/mine", handle, "mine");
    http_route(router, "GET", "/v1/sessions/{id}", handle, "get");
    http_route(router, "DELETE", "/v1/sessions/{id}", handle, "delete");
    http_route(router, "GET", "/v1/sessions/{id}/kernels/{kid}", handle, "kernel");
    http_route(router, "POST", "/v1/sessions/{id}/kernels/{kid}/", handle, "kernel-post");
    http_route(router, "*", "/v1/vfolders/{name}/files", handle, "files");
    http_route(router, "PUT", "/v1/deep/{p1}/{p2}/{p3}/{p4}/{p5}/{p6}/{p7}/{p8}", handle, "deep");
    return 0;
}

/* The next '\n'-terminated part of [*p, end) as a new string. */
static char *next_line(const uint8_t **p, const uint8_t *end)
{
    const uint8_t *nl = memchr(*p, '\n', (size_t)(end - *p));
    const uint8_t *stop = nl ? nl : end;
    size_t n = (size_t)(stop - *p);
    char *s = malloc(n + 1);
    if (!s) abort();
    memcpy(s, *p, n);
    s[n] = '\0';
    *p = nl ? nl + 1 : end;
    return s;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const uint8_t *p = data, *end = data + size;
    char *method = next_line(&p, end);
    char *target = next_line(&p, end);
    char *headers[MAX_HEADERS + 1] = {0};
    int nh = 0;
    while (p < end) {
        char *h = next_line(&p, end);
        if (!h[0] || nh == MAX_HEADERS) {
            free(h);
            break;
        }
        headers[nh++] = h;
    }

    http_req *req =
        http_req_new_local(method, target, (const char *const *)headers, p, (size_t)(end - p));
    http_resp *resp = http_resp_new();
    http_router_dispatch(router, req, resp);

    int status = http_resp_status(resp);
    if (status < 100 || status > 599) abort();
    if (req->n_params != 0) abort(); /* cleared after the handler */
    size_t len;
    const char *body = http_resp_body(resp, &len);
    if (len && strlen(body) > len) abort();
    const char *hn, *hv;
    for (size_t i = 0; http_resp_header_at(resp, i, &hn, &hv); i++)
        if (!hn[0] || strpbrk(hn, "\r\n:") || strpbrk(hv, "\r\n")) abort();

    http_resp_free(resp);
    http_req_free_local(req);
    for (int i = 0; i < nh; i++)
        free(headers[i]);
    free(method);
    free(target);
    return 0;
}
