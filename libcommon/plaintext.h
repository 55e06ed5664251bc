/* plaintext.h: the rule that plain text between hosts is an explicit choice.
 *
 * A service refuses to start when it would talk to PostgreSQL, Redis or Kafka
 * on another host without TLS, unless that transport's allow_plaintext
 * setting says so (docs/operations.md, "Several hosts: encryption"). "Another
 * host" is any host that is not a loopback address, "localhost" or a Unix
 * socket: a name is not resolved, so a name for this host counts as another.
 *
 * - PostgreSQL: pg.dsn's sslmode must be require, verify-ca or verify-full
 *   (disable, allow and prefer may fall back to plain text);
 * - Kafka: kafka.security_protocol ssl (or sasl_ssl);
 * - Redis: the client library (hiredis 0.14) has no TLS: a Redis elsewhere
 *   is reached through a local TLS tunnel (stunnel) on a loopback address.
 *
 * The same goes for the HTTP listener of an internal service: http.listen
 * (and http.shared_listen) on an address that is not loopback (a wildcard
 * counts as not loopback) needs http.tls_cert/http.tls_key, or
 * http.allow_plaintext. The gateway's public listener is not checked: it is
 * often behind a load balancer that terminates TLS. */
#pragma once

#include "libcommon/common.h"

#include <stdbool.h>

/* host (no port) is 127.0.0.0/8, ::1, "localhost" or a Unix socket path. */
bool plaintext_host_is_local(const char *host) TS_MUST_CHECK;

/* pg.dsn (a libpq URI or key=value string): true when every host it names
 * is local or its sslmode is require, verify-ca or verify-full, or allow. */
bool plaintext_check_pg(const char *dsn, bool allow, ts_err *err) TS_MUST_CHECK;

/* redis.url (redis://[:pw@]host:port[/db] or unix:///path): true when its host
 * is local, or allow. */
bool plaintext_check_redis(const char *url, bool allow, ts_err *err) TS_MUST_CHECK;

/* kafka.bootstrap ("host:port,host:port") and kafka.security_protocol: true
 * when the protocol is ssl or sasl_ssl, every host is local, or allow. */
bool plaintext_check_kafka(const char *bootstrap, const char *protocol, bool allow,
                           ts_err *err) TS_MUST_CHECK;

/* An HTTP listen address ("host:port", ":port", "[v6]:port"): true when its
 * host is local, tls (the listener serves TLS), or allow. option names the
 * setting in the message ("http.listen"). */
bool plaintext_check_http(const char *option, const char *listen, bool tls, bool allow,
                          ts_err *err) TS_MUST_CHECK;
