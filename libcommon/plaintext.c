/* plaintext.c: refuse plain text to other hosts unless it is allowed
 * (plaintext.h). */
#include "libcommon/plaintext.h"

#include <arpa/inet.h>
#include <libpq-fe.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

bool plaintext_host_is_local(const char *host)
{
    if (!host || !host[0]) return true; /* libpq and hiredis: the default, a local socket */
    if (host[0] == '/') return true;    /* a Unix socket directory or path */
    if (strcasecmp(host, "localhost") == 0) return true;
    struct in_addr a4;
    if (inet_pton(AF_INET, host, &a4) == 1) return (ntohl(a4.s_addr) >> 24) == 127;
    char h6[64];
    size_t n = strlen(host);
    if (host[0] == '[' && n > 2 && n - 2 < sizeof(h6) && host[n - 1] == ']') {
        memcpy(h6, host + 1, n - 2);
        h6[n - 2] = '\0';
        host = h6;
    }
    struct in6_addr a6;
    if (inet_pton(AF_INET6, host, &a6) == 1) return IN6_IS_ADDR_LOOPBACK(&a6);
    return false;
}

/* _first_remote: the first host of a comma-separated list that is not local,
 * copied to out; false when all are local. */
static bool _first_remote(const char *list, bool with_port, char *out, size_t outsz)
{
    const char *p = list ? list : "";
    while (*p) {
        size_t len = strcspn(p, ",");
        char item[256];
        size_t n = len < sizeof(item) - 1 ? len : sizeof(item) - 1;
        memcpy(item, p, n);
        item[n] = '\0';
        char *s = item;
        while (*s == ' ')
            s++;
        char *e = s + strlen(s);
        while (e > s && e[-1] == ' ')
            *--e = '\0';
        if (with_port) {
            char *colon = strrchr(s, ':');
            /* host:port, [v6]:port; a bare v6 address has several colons */
            if (colon && (s[0] == '[' ? colon > strchr(s, ']') : strchr(s, ':') == colon))
                *colon = '\0';
        }
        if (*s && !plaintext_host_is_local(s)) {
            snprintf(out, outsz, "%s", s);
            return true;
        }
        p += len;
        if (*p == ',') p++;
    }
    return false;
}

bool plaintext_check_pg(const char *dsn, bool allow, ts_err *err)
{
    char *perr = NULL;
    PQconninfoOption *opts = PQconninfoParse(dsn ? dsn : "", &perr);
    if (!opts) {
        ts_err_set(err, "pg.dsn: %s", perr ? perr : "cannot be parsed");
        PQfreemem(perr);
        return false;
    }
    const char *host = NULL, *hostaddr = NULL, *sslmode = NULL;
    for (PQconninfoOption *o = opts; o->keyword; o++) {
        if (!o->val) continue;
        if (strcmp(o->keyword, "host") == 0)
            host = o->val;
        else if (strcmp(o->keyword, "hostaddr") == 0)
            hostaddr = o->val;
        else if (strcmp(o->keyword, "sslmode") == 0)
            sslmode = o->val;
    }
    char remote[256];
    bool far =
        _first_remote(hostaddr && hostaddr[0] ? hostaddr : host, false, remote, sizeof(remote));
    bool tls = sslmode && (strcmp(sslmode, "require") == 0 || strcmp(sslmode, "verify-ca") == 0 ||
                           strcmp(sslmode, "verify-full") == 0);
    bool ok = !far || tls || allow;
    if (!ok)
        ts_err_set(err,
                   "pg.dsn names host %s with sslmode=%s: PostgreSQL on another host needs "
                   "sslmode=verify-full (with sslrootcert), or pg.allow_plaintext=true",
                   remote, sslmode ? sslmode : "prefer");
    PQconninfoFree(opts);
    return ok;
}

bool plaintext_check_redis(const char *url, bool allow, ts_err *err)
{
    if (allow || !url || strncmp(url, "redis://", 8) != 0) return true;
    const char *h = url + 8;
    const char *at = strchr(h, '@');
    const char *slash = strchr(h, '/');
    if (at && (!slash || at < slash)) h = at + 1;
    size_t len = slash ? (size_t)(slash - h) : strlen(h);
    char hp[256];
    if (len >= sizeof(hp)) len = sizeof(hp) - 1;
    memcpy(hp, h, len);
    hp[len] = '\0';
    char remote[256];
    if (!_first_remote(hp, true, remote, sizeof(remote))) return true;
    ts_err_set(err,
               "redis.url names host %s: Redis on another host is reached through a local TLS "
               "tunnel (stunnel, docs/operations.md), or set redis.allow_plaintext=true",
               remote);
    return false;
}

bool plaintext_check_kafka(const char *bootstrap, const char *protocol, bool allow, ts_err *err)
{
    if (allow) return true;
    if (protocol && (strcasecmp(protocol, "ssl") == 0 || strcasecmp(protocol, "sasl_ssl") == 0))
        return true;
    char remote[256];
    if (!_first_remote(bootstrap, true, remote, sizeof(remote))) return true;
    ts_err_set(err,
               "kafka.bootstrap names host %s with kafka.security_protocol=%s: Kafka on another "
               "host needs kafka.security_protocol=ssl (with kafka.ssl_ca_file), or "
               "kafka.allow_plaintext=true",
               remote, protocol && protocol[0] ? protocol : "plaintext");
    return false;
}

bool plaintext_check_http(const char *option, const char *listen, bool tls, bool allow, ts_err *err)
{
    if (tls || allow || !listen || !*listen) return true;
    char remote[256];
    /* ":port" binds every address: not loopback */
    if (listen[0] == ':') {
        ts_strlcpy(remote, "(every address)", sizeof(remote));
    } else if (!_first_remote(listen, true, remote, sizeof(remote))) {
        return true;
    }
    ts_err_set(err,
               "%s = %s binds %s, not a loopback address, with plain HTTP: serve TLS there "
               "(http.tls_cert and http.tls_key), bind 127.0.0.1, or set "
               "http.allow_plaintext=true (docs/operations.md, \"Several hosts: encryption\")",
               option, listen, remote);
    return false;
}
