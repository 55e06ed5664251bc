/* audit.c: publish an ApiAccess record for each answered API request. */
#include "audit.h"

#include "libcommon/log.h"
#include "verify.h"
#include "tessera/v1/audit.pb-c.h"

#include <string.h>

static bool is_probe(const char *path)
{
    return strcmp(path, "/healthz") == 0 || strcmp(path, "/readyz") == 0 ||
           strcmp(path, "/metrics") == 0;
}

void audit_request(svc *s, const http_req *req, int status, int64_t latency_us)
{
    gw_identity id;
    bool known = verify_identity_of(req, &id);
    verify_forget();
    kbus *bus = svc_bus(s);
    if (!bus || is_probe(req->path)) return;
    Tessera__V1__ApiAccess rec = TESSERA__V1__API_ACCESS__INIT;
    rec.access_key = known ? id.access_key : "";
    rec.user_id = known ? id.user_id : "";
    rec.client_addr = (char *)req->client_addr;
    rec.method = (char *)req->method;
    rec.path = (char *)req->path; /* no query: it may carry tokens */
    const char *ua = http_header(req, "User-Agent");
    rec.user_agent = (char *)(ua ? ua : "");
    rec.status = status;
    rec.latency_us = latency_us;
    rec.request_id = (char *)req->request_id;
    rec.occurred_at_ms = ts_now_wall_ms();
    const char *key = known && id.user_id[0] ? id.user_id : req->client_addr;
    ts_err err = {{0}};
    if (!kbus_publish(bus, AUDIT_TOPIC, key, &rec.base, req->request_id,
                      known && id.user_id[0] ? id.user_id : NULL, &err))
        TLOG_WARN("audit record not queued", "error=\"%s\"", err.msg);
}
