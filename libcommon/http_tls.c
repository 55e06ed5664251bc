/* http_tls.c: loading and checking the HTTP server's certificate and key
 * (http_tls.h). */
#include "libcommon/http_tls.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The whole of a PEM file, NUL-terminated, or NULL with err set. */
static char *_read_pem(const char *option, const char *path, ts_err *err)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        ts_err_set(err, "%s %s: cannot be read: %s", option, path, strerror(errno));
        return NULL;
    }
    char *buf = ts_malloc(HTTP_TLS_MAX_FILE + 1);
    size_t n = fread(buf, 1, HTTP_TLS_MAX_FILE + 1, f);
    bool failed = ferror(f) != 0;
    fclose(f);
    if (failed) {
        ts_err_set(err, "%s %s: cannot be read", option, path);
    } else if (n > HTTP_TLS_MAX_FILE) {
        ts_err_set(err, "%s %s: larger than %d bytes: not a PEM file", option, path,
                   HTTP_TLS_MAX_FILE);
        failed = true;
    }
    if (failed) {
        explicit_bzero(buf, HTTP_TLS_MAX_FILE + 1);
        free(buf);
        return NULL;
    }
    buf[n] = '\0';
    if (memchr(buf, '\0', n)) { /* DER, or something else binary */
        ts_err_set(err, "%s %s: not a PEM file (binary content; DER must be converted)", option,
                   path);
        explicit_bzero(buf, n);
        free(buf);
        return NULL;
    }
    return buf;
}

/* A "-----BEGIN <label>-----" line whose label ends with suffix. */
static bool _has_block(const char *pem, const char *suffix)
{
    size_t sl = strlen(suffix);
    for (const char *p = pem; (p = strstr(p, "-----BEGIN ")) != NULL; p += 11) {
        const char *label = p + 11;
        const char *end = strstr(label, "-----");
        if (!end) return false;
        size_t ll = (size_t)(end - label);
        if (ll >= sl && memcmp(end - sl, suffix, sl) == 0 && !memchr(label, '\n', ll))
            return strstr(end + 5, "-----END ") != NULL;
    }
    return false;
}

bool http_tls_load(const char *cert_file, const char *key_file, http_tls *out, ts_err *err)
{
    memset(out, 0, sizeof(*out));
    bool cert = cert_file && *cert_file, key = key_file && *key_file;
    if (!cert && !key) return true;
    if (!cert || !key) {
        ts_err_set(err, "%s is set but %s is not: TLS needs both (or neither, for plain HTTP)",
                   cert ? "http.tls_cert" : "http.tls_key",
                   cert ? "http.tls_key" : "http.tls_cert");
        return false;
    }
    out->cert_pem = _read_pem("http.tls_cert", cert_file, err);
    if (!out->cert_pem) return false;
    if (!_has_block(out->cert_pem, "CERTIFICATE")) {
        ts_err_set(err, "http.tls_cert %s: no PEM certificate in it (-----BEGIN CERTIFICATE-----)",
                   cert_file);
        http_tls_free(out);
        return false;
    }
    out->key_pem = _read_pem("http.tls_key", key_file, err);
    if (!out->key_pem) {
        http_tls_free(out);
        return false;
    }
    if (!_has_block(out->key_pem, "PRIVATE KEY")) {
        ts_err_set(err,
                   "http.tls_key %s: no PEM private key in it (-----BEGIN [EC |RSA ]PRIVATE "
                   "KEY-----)",
                   key_file);
        http_tls_free(out);
        return false;
    }
    if (_has_block(out->key_pem, "ENCRYPTED PRIVATE KEY")) {
        ts_err_set(err,
                   "http.tls_key %s: the key is encrypted (a passphrase); the service needs it "
                   "unencrypted, readable by its user only (openssl pkey -in KEY -out KEY.plain)",
                   key_file);
        http_tls_free(out);
        return false;
    }
    return true;
}

void http_tls_free(http_tls *t)
{
    if (!t) return;
    if (t->key_pem) {
        explicit_bzero(t->key_pem, strlen(t->key_pem));
        free(t->key_pem);
    }
    free(t->cert_pem);
    t->cert_pem = t->key_pem = NULL;
}

bool http_tls_hello_byte(unsigned char first)
{
    return first == 0x16; /* TLS record type handshake (RFC 8446 5.1) */
}
