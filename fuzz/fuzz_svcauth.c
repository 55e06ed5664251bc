/* fuzz_svcauth.c: the service-credential guard (libcommon/svcauth.h) on
 * arbitrary requests. Input: "<flags byte><method>\n<target>\n<header
 * value>\n<caller>\n<body>" (missing parts are empty). With bit 0 of the
 * flags the request is first signed for real by a loaded key (so the
 * signature, time and replay paths run), and bits 1 to 3 then change the
 * method, target or body after signing. The guard must answer 0 (through),
 * 401 or 403, never crash or leak; a signed, unchanged request to an allowed
 * route must go through unless it is a replay. */
#include "libcommon/http.h"
#include "libcommon/log.h"
#include "libcommon/svcauth.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const svcauth_rule RULES[] = {
    {"GET", "/v1/credentials", SVCAUTH_GATEWAY},
    {"*", "/v1/admin/", SVCAUTH_GATEWAY | SVCAUTH_REGISTRY},
    {"POST", "/v1/mounts/resolve", SVCAUTH_REGISTRY},
    {"*", "/v1/transfer", SVCAUTH_PUBLIC},
};
static const svcauth_table TABLE = {RULES, TS_ARRAY_LEN(RULES)};

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    if (!tlog_set_level("error")) abort();
    char dir[] = "/tmp/fuzz-svcauth-XXXXXX";
    if (!mkdtemp(dir)) abort();
    char key[256], trust[256];
    snprintf(key, sizeof(key), "%s/gateway.key", dir);
    snprintf(trust, sizeof(trust), "%s/trusted", dir);
    ts_err err = {{0}};
    FILE *t = fopen(trust, "w");
    if (!t || !svcauth_new_key("gateway", key, t, &err)) abort();
    fclose(t);
    if (!svcauth_load("gateway", key, trust, 30000, &err)) abort();
    unlink(key);
    unlink(trust);
    rmdir(dir);
    return 0;
}

/* The next '\n'-terminated part of [*p, end) as a NUL-terminated copy. */
static char *part(const char **p, const char *end)
{
    const char *nl = memchr(*p, '\n', (size_t)(end - *p));
    const char *stop = nl ? nl : end;
    char *s = ts_strndup(*p, (size_t)(stop - *p));
    *p = nl ? nl + 1 : end;
    return s;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1) return 0;
    unsigned flags = data[0];
    const char *p = (const char *)data + 1, *end = (const char *)data + size;
    char *method = part(&p, end), *target = part(&p, end), *value = part(&p, end),
         *caller = part(&p, end);
    size_t body_len = (size_t)(end - p);
    if (!*method || !*target || target[0] != '/' || strchr(target, ' ')) goto out;

    char line[SVCAUTH_HEADER_LINE_MAX] = "X-Tessera-Service-Auth: ";
    size_t n = strlen(line);
    if (flags & 1) {
        if (!svcauth_sign(method, target, strlen(target), *caller ? caller : NULL, NULL, p,
                          body_len, line))
            abort();
    } else {
        snprintf(line + n, sizeof(line) - n, "%s", value);
    }
    const char *m = (flags & 2) ? "DELETE" : method;
    char *t = (flags & 4) ? ts_asprintf("%s/x", target) : ts_strdup(target);
    size_t blen = (flags & 8) ? (body_len ? body_len - 1 : 0) : body_len;
    char ch[300];
    snprintf(ch, sizeof(ch), "X-Tessera-Caller: %s", caller);
    const char *headers[3] = {line, *caller ? ch : NULL, NULL};
    http_req *req = http_req_new_local(m, t, headers, p, blen);
    http_resp *resp = http_resp_new();
    bool ok = svcauth_guard(req, resp, (void *)&TABLE);
    int st = http_resp_status(resp);
    if (ok ? st != 0 : (st != 401 && st != 403)) abort();
    if (ok && req->service && strcmp(req->service, "gateway") != 0) abort();
    http_resp_free(resp);
    http_req_free_local(req);
    free(t);
out:
    free(method);
    free(target);
    free(value);
    free(caller);
    return 0;
}
