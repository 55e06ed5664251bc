/* audit.h: one tessera.audit.v1 ApiAccess event per API request answered,
 * allowed or denied (health probes excluded), naming the verified caller
 * (access key and user id; empty for anonymous or refused requests) and keyed
 * by user id when known, else by client address. tessera-auth stores them. */
#ifndef GATEWAY_AUDIT_H
#define GATEWAY_AUDIT_H

#include "libcommon/svc.h"

#define AUDIT_TOPIC "tessera.audit.v1"

void audit_request(svc *s, const http_req *req, int status, int64_t latency_us);

#endif
