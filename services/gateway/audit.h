/* audit.h: one tessera.audit.v1 ApiAccess event per API request answered,
 * allowed or denied (health probes excluded). tessera-auth stores them. */
#ifndef GATEWAY_AUDIT_H
#define GATEWAY_AUDIT_H

#include "libcommon/svc.h"

#define AUDIT_TOPIC "tessera.audit.v1"

void audit_request(svc *s, const http_req *req, int status, int64_t latency_us);

#endif
