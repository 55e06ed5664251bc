/* app_tunnel.h: `tessera app SESSION APP --bind [HOST:]PORT`: a local TCP
 * listener whose connections are tunnelled to a tcp app of a session through
 * tessera-wsproxy (docs/wsproxy.md, "TCP apps"): for each connection, a
 * `GET /v1/tcp?token=...` with `Upgrade: tessera-tcp` to wsproxy, then raw
 * bytes both ways once it answers 101. One process per connection. */
#ifndef TESSERA_CLI_APP_TUNNEL_H
#define TESSERA_CLI_APP_TUNNEL_H

#include "libcommon/common.h"

/* A fresh tunnel URL (heap) for a connection when the last one is getting
 * old (tokens expire), or NULL to keep the old one. */
typedef char *(*app_tunnel_refresh_fn)(void *ctx);

/* Listen on spec ("PORT" on 127.0.0.1, "HOST:PORT", "[V6]:PORT"; port 0: any
 * free one): the socket into *fd and "host:port" as bound into bound. False
 * with err set ("cannot listen on 127.0.0.1:8080: Address already in use"). */
bool app_tunnel_listen(const char *spec, int *fd, char *bound, size_t size,
                       ts_err *err) TS_MUST_CHECK;

/* Whether url is a tunnel URL this client can use (http://HOST[:PORT]/...);
 * err says why not. */
bool app_tunnel_url_ok(const char *url, ts_err *err) TS_MUST_CHECK;

/* Accept and tunnel connections on lfd (closed at the end) to url until
 * SIGINT or SIGTERM (true); false when accept fails (said on stderr).
 * refresh is asked for a new URL before a connection when the URL is older
 * than refresh_after_ms. */
bool app_tunnel_serve(int lfd, const char *url, int64_t refresh_after_ms,
                      app_tunnel_refresh_fn refresh, void *ctx) TS_MUST_CHECK;

#endif
