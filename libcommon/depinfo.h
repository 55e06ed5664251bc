/* depinfo.h: what a service can cheaply tell about the servers it depends
 * on, for /readyz's "dependencies" object (svc.c) and the gateway's platform
 * status (GET /admin/status): each answer is a JSON object
 * {"status": "ok" | "<why not>", "version": "..."} (version only when the
 * server told it). None of this decides readiness: the checks do. */
#ifndef TESSERA_DEPINFO_H
#define TESSERA_DEPINFO_H

#include "libcommon/common.h"
#include "libcommon/pg.h"
#include "libcommon/rds.h"

#include <jansson.h>

/* PostgreSQL: the server_version a pooled connection was told at start-up
 * (no round trip); waits at most 500 ms for a free connection. */
json_t *depinfo_pg(pg_pool *p);
/* Redis: redis_version from INFO server (one round trip on r; r NULL: why
 * is the status). */
json_t *depinfo_redis(rds *r, const char *why);
/* An HTTP server's reachability: GET url within timeout_ms, without any
 * credential; ok when it answered ok_status or 401 (it is up and wants a
 * login). "url" is in the answer. */
json_t *depinfo_http(const char *url, int timeout_ms, long ok_status);

/* The value of key in Redis INFO text ("key:value" lines, CRLF or LF), as
 * out (size n). False when absent or empty. */
bool depinfo_info_field(const char *info, const char *key, char *out, size_t n) TS_MUST_CHECK;

#endif
