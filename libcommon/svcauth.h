/* svcauth.h: service credentials: which Tessera service is calling an
 * internal API, proven per request (docs/internal-api.md "Service
 * credentials", docs/security.md).
 *
 * Each service holds an Ed25519 key of its own (service_auth.key_file, 0600,
 * one line "tessera-service-key v1 <service> <base64 seed>"); every process
 * trusts the public keys listed in service_auth.trust_file ("<service>
 * <base64 public key>" per line; a service may have several, for rotation).
 * A call carries
 *     X-Tessera-Service-Auth: v1 <service> <unix-ms> <nonce> <base64 signature>
 * where the signature covers, one per line: "tessera-service-auth-v1", the
 * service, the time, the nonce (random per request, so that two equal requests
 * in the same millisecond are not taken for a replay), the method, the
 * request target as sent, the values of
 * X-Tessera-Caller and X-Tessera-Caller-Access-Key (empty when absent) and the
 * hex SHA-256 of the body. The receiver accepts it when a trusted key of that
 * service verifies it, the time is within service_auth.max_skew of its own
 * clock, the signature was not seen before (replays), and the route's rule
 * names the service. Only public keys travel: a receiver, or a host that holds
 * one, can verify a service's calls but never make them.
 *
 * The process-wide key and trust list are loaded by svc (svc.h) at start and on
 * SIGHUP; the signing side is used by httpc (internal clients) and the
 * gateway's forwarding, the checking side by the HTTP server's guard. */
#ifndef TESSERA_SVCAUTH_H
#define TESSERA_SVCAUTH_H

#include "libcommon/common.h"
#include "libcommon/http.h"

#include <stdio.h>

#define SVCAUTH_HEADER "X-Tessera-Service-Auth"
#define SVCAUTH_NAME_MAX 32
/* "X-Tessera-Service-Auth: v1 " + name + " " + 13-digit ms + " " + nonce + " " + 88 base64 */
#define SVCAUTH_HEADER_LINE_MAX 256

/* The services a rule can name. */
enum svcauth_service {
    SVCAUTH_GATEWAY = 1u << 0,
    SVCAUTH_AUTH = 1u << 1,
    SVCAUTH_REGISTRY = 1u << 2,
    SVCAUTH_SCHEDULER = 1u << 3,
    SVCAUTH_AGENT = 1u << 4,
    SVCAUTH_VFOLDER = 1u << 5,
    SVCAUTH_WSPROXY = 1u << 6,
};
/* A rule's callers: PUBLIC needs no credential (the route checks its own,
 * e.g. a transfer token). */
#define SVCAUTH_PUBLIC 0u

/* One line of a service's access table: requests whose method matches
 * ("*": any) and whose decoded path is prefix or continues it after a '/'
 * (or the prefix ends in '/') may be made by the callers. The first matching
 * rule decides; a request no rule matches is refused (403). /healthz, /readyz
 * and /metrics are always public. */
typedef struct svcauth_rule {
    const char *method;
    const char *prefix;
    unsigned callers; /* enum svcauth_service bits, or SVCAUTH_PUBLIC */
} svcauth_rule;

/* The bit of a service name ("registry"), 0 when it is none of ours. */
unsigned svcauth_service_bit(const char *name);

/* ---- key material ------------------------------------------------------------ */

/* Load this process's key (key_file may be NULL or "": none, then nothing is
 * signed) and the trusted public keys (trust_file NULL or "": none, then no
 * credential verifies). name is this service; a key file made for another
 * service is refused. Replaces what was loaded before only when everything
 * loads (SIGHUP keeps the old keys on an error). */
bool svcauth_load(const char *name, const char *key_file, const char *trust_file,
                  int64_t max_skew_ms, ts_err *err) TS_MUST_CHECK;
/* Forget everything (tests). */
void svcauth_reset(void);
/* Whether a key is loaded (this process signs its internal calls). */
bool svcauth_can_sign(void) TS_MUST_CHECK;
/* How many trusted keys are loaded. */
size_t svcauth_trusted_keys(void);

/* Write a new key for service name to path (created 0600; an existing file is
 * never overwritten) and its trust line "<name> <base64 public key>\n" to
 * out. */
bool svcauth_new_key(const char *name, const char *path, FILE *out, ts_err *err) TS_MUST_CHECK;
/* The trust line of an existing key file. */
bool svcauth_public_line(const char *path, FILE *out, ts_err *err) TS_MUST_CHECK;

/* ---- calling ----------------------------------------------------------------- */

/* The request target of a URL as an HTTP client sends it: what follows
 * scheme://authority ("/" when nothing does), without a fragment. Points into
 * url; *len is its length. */
const char *svcauth_url_target(const char *url, size_t *len);

/* The header line ("X-Tessera-Service-Auth: v1 ...") for one request, or false
 * when no key is loaded. caller and access_key are the X-Tessera-Caller and
 * X-Tessera-Caller-Access-Key values sent (NULL: none). */
bool svcauth_sign(const char *method, const char *target, size_t target_len, const char *caller,
                  const char *access_key, const void *body, size_t body_len,
                  char line[SVCAUTH_HEADER_LINE_MAX]) TS_MUST_CHECK;
/* As svcauth_sign at a given time (tests). */
bool svcauth_sign_at(int64_t unix_ms, const char *method, const char *target, size_t target_len,
                     const char *caller, const char *access_key, const void *body, size_t body_len,
                     char line[SVCAUTH_HEADER_LINE_MAX]) TS_MUST_CHECK;
/* As svcauth_sign_at with a given nonce (8 to 64 of base64url's characters;
 * known-answer tests). */
bool svcauth_sign_with(int64_t unix_ms, const char *nonce, const char *method, const char *target,
                       size_t target_len, const char *caller, const char *access_key,
                       const void *body, size_t body_len,
                       char line[SVCAUTH_HEADER_LINE_MAX]) TS_MUST_CHECK;

/* ---- checking ---------------------------------------------------------------- */

/* The access table of this process's HTTP server. */
typedef struct svcauth_table {
    const svcauth_rule *rules;
    size_t n_rules;
} svcauth_table;

/* http_server guard (http_server_opts.guard, ctx a const svcauth_table *):
 * true when the request may go on (req->service then names the calling
 * service, or is NULL on a public route); false with a 401 (no, malformed,
 * unknown, expired, forged or replayed credential) or 403 (a service the
 * route's rule does not name) problem in resp. */
bool svcauth_guard(http_req *req, http_resp *resp, void *ctx) TS_MUST_CHECK;

/* Refusals since start, by reason (for /metrics). */
typedef struct svcauth_stats {
    uint64_t accepted;
    uint64_t missing, malformed, unknown_service, expired, bad_signature, replayed, forbidden;
} svcauth_stats;
void svcauth_get_stats(svcauth_stats *out);

/* The counters of svcauth_stats as Prometheus text
 * (tessera_service_auth_*), a metrics.h collector (ctx unused). */
void svcauth_collect(FILE *out, void *ctx);

#endif
