/* watch.h: the watcher thread between Redis and the proxy workers:
 * - revocations: follows the stream wsproxy:revocations (XREAD BLOCK) and
 *   hands each session id to proxy_revoke(), which closes its connections;
 * - last access: once a second, writes session:<id>:last_access for the
 *   sessions the workers proxied since (and slides session:<id>:routes). */
#ifndef WSPROXY_WATCH_H
#define WSPROXY_WATCH_H

#include "services/wsproxy/proxy.h"

typedef struct watch watch;

watch *watch_start(proxy *p, rds *(*redis)(void *ctx, ts_err *err), void *redis_ctx,
                   int64_t session_ttl_ms, int block_ms);
void watch_stop(watch *w);

#endif
