/* fuzz_http_front.c: arbitrary bytes as the start of a connection, judged as
 * every service's HTTP server judges a connection's first request head before
 * libmicrohttpd sees it (http_front_check, with libcommon/http1.c under it).
 * Every prefix is judged too, as the bytes would arrive. Checks: an OK head
 * is within the limits and parses again; a refusal has one of the statuses
 * promised and its answer is well-formed problem JSON; once a prefix is
 * refused or complete, longer input never says "more". */
#include "libcommon/http1.h"
#include "libcommon/http_front.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const http_front_limits k_lim = {.max_line = 512, .max_head = 2048};

/* Each (status, reason) once: reasons are static strings, few of them. */
static void check_answer(int status, const char *reason)
{
    static const char *seen[64];
    static int n_seen;
    for (int i = 0; i < n_seen; i++)
        if (seen[i] == reason) return;
    if (n_seen < 64) seen[n_seen++] = reason;
    size_t len;
    char *r = http_front_problem_response(status, reason, "rid", "fuzz", &len);
    if (strlen(r) != len || strncmp(r, "HTTP/1.1 ", 9) != 0) abort();
    const char *body = strstr(r, "\r\n\r\n");
    if (!body) abort();
    json_t *o = json_loads(body + 4, 0, NULL);
    if (!json_is_object(o) || !json_string_value(json_object_get(o, "type"))) abort();
    json_decref(o);
    free(r);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *buf = (const char *)data;
    http_front_verdict v;
    bool decided = false;
    /* prefixes at a few cut points, then the whole */
    for (int k = 0; k <= 8; k++) {
        size_t n = size * (size_t)k / 8;
        http_front_result r = http_front_check(buf, n, &k_lim, &v);
        if (r == HTTP_FRONT_MORE) {
            if (decided) abort();
        } else {
            decided = true;
        }
        if (r == HTTP_FRONT_OK) {
            if (v.head_len == 0 || v.head_len > n || v.head_len > k_lim.max_head) abort();
            h1_msg m;
            if (!h1_parse_request(buf, v.head_len, &m)) abort();
        } else if (r == HTTP_FRONT_BAD) {
            if (!v.reason) abort();
            if (v.status != 400 && v.status != 414 && v.status != 431 && v.status != 501 &&
                v.status != 505)
                abort();
            check_answer(v.status, v.reason);
        }
    }
    return 0;
}
