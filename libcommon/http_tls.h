/* http_tls.h: the HTTP server's TLS material (http.tls_cert, http.tls_key).
 *
 * Both files set: the server's listener speaks TLS only (TLS 1.2 and 1.3,
 * HTTP_TLS_PRIORITIES, GnuTLS through libmicrohttpd); both empty: plain
 * HTTP. One without the other, a file that cannot be read, or one that holds
 * no PEM certificate (cert) or no PEM private key (key) is refused with a
 * message naming the option and the file. That the key belongs to the
 * certificate is libmicrohttpd's check at start (http_server.c says so). */
#ifndef TESSERA_HTTP_TLS_H
#define TESSERA_HTTP_TLS_H

#include "libcommon/common.h"

/* GnuTLS priority string: its defaults without anything older than TLS 1.2. */
#define HTTP_TLS_PRIORITIES "NORMAL:-VERS-ALL:+VERS-TLS1.3:+VERS-TLS1.2"
/* A PEM file larger than this is not a certificate chain or a key. */
#define HTTP_TLS_MAX_FILE (1024 * 1024)

typedef struct http_tls {
    char *cert_pem; /* NULL: no TLS */
    char *key_pem;
} http_tls;

/* Read and check the two files (NULL or "" = unset) into *out (zeroed
 * first). True with out->cert_pem NULL when both are unset. */
bool http_tls_load(const char *cert_file, const char *key_file, http_tls *out,
                   ts_err *err) TS_MUST_CHECK;
/* Wipe the key and free both. */
void http_tls_free(http_tls *t);

/* The first byte a client sent on a TLS listener: true when it opens a TLS
 * record (a handshake, 0x16); false for anything else, such as the first
 * letter of a plain HTTP request. */
bool http_tls_hello_byte(unsigned char first) TS_MUST_CHECK;

#endif
