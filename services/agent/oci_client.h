/* oci_client.h: an OCI registry client: the Docker Registry HTTP API v2 (OCI
 * distribution) over libcurl, what a puller needs: image references,
 * manifests (OCI and Docker v2, indexes and manifest lists), blobs streamed
 * to a file while hashed.
 *
 * Authentication as registries do it: a request answered 401 with
 * "WWW-Authenticate: Bearer realm=...,service=...,scope=..." gets a token from
 * the realm (anonymously, or with the configured user and password as HTTP
 * basic), and is sent again with "Authorization: Bearer <token>"; tokens are
 * kept per repository until they expire. A "Basic" challenge is answered with
 * the credentials directly.
 *
 * Transient failures (no connection, timeouts, HTTP 429 and 5xx) are retried
 * with exponential backoff; then the call fails with "registry unreachable:
 * <host>: <curl error>" (or the last HTTP status). An oci_client may be used by
 * several threads at once (connections are shared under a lock). */
#ifndef AGENT_OCI_CLIENT_H
#define AGENT_OCI_CLIENT_H

#include "libcommon/common.h"
#include "libcommon/image_ref.h"

/* Media types */
#define MT_OCI_MANIFEST "application/vnd.oci.image.manifest.v1+json"
#define MT_OCI_INDEX "application/vnd.oci.image.index.v1+json"
#define MT_DOCKER_MANIFEST "application/vnd.docker.distribution.manifest.v2+json"
#define MT_DOCKER_LIST "application/vnd.docker.distribution.manifest.list.v2+json"

typedef struct oci_client_opts {
    const char *host;     /* api host[:port] */
    bool insecure_http;   /* http:// instead of https:// */
    int timeout_ms;       /* connect timeout, and the longest a transfer may stall */
    int retries;          /* extra attempts after the first for transient failures */
    int backoff_ms;       /* first retry delay (0: 250 ms), doubling, at most 5 s */
    const char *username; /* optional credentials (token realm or Basic) */
    const char *password;
} oci_client_opts;

typedef struct oci_client oci_client;

oci_client *oci_client_new(const oci_client_opts *opts);
/* The CA certificates (PEM file) every client trusts for https:// registries
 * instead of the system's (agent.registry_ca_file); NULL or "" = the
 * system's. Set once at start-up, before any pull; false when the file cannot
 * be read. */
bool oci_client_set_ca_file(const char *path, ts_err *err) TS_MUST_CHECK;
void oci_client_free(oci_client *c);

typedef struct oci_manifest {
    char *body; /* as served, NUL-terminated */
    size_t len;
    char *media_type; /* Content-Type, or the body's mediaType */
    char *digest;     /* sha256 of the body */
} oci_manifest;

/* GET /v2/<repo>/manifests/<tag-or-digest>. A reference by digest is verified
 * against the body; so is a Docker-Content-Digest header. *status gets the
 * final HTTP status (404: not found; err then says so). */
bool oci_client_get_manifest(oci_client *c, const char *repo, const char *ref, oci_manifest *out,
                             long *status, ts_err *err) TS_MUST_CHECK;
void oci_manifest_free(oci_manifest *m);

/* Called with the bytes received since the last call; negative after a retry
 * restarted a transfer. From the calling thread. */
typedef void (*oci_bytes_fn)(int64_t delta, void *ctx);

/* GET /v2/<repo>/blobs/<digest> into a temporary file in tmp_dir, hashing on
 * the way; renamed to dest_path only when digest (and size, if >= 0) match.
 * what names the blob in errors: "digest mismatch for <what> sha256:...". */
bool oci_client_fetch_blob(oci_client *c, const char *repo, const char *digest, int64_t size,
                           const char *what, const char *dest_path, const char *tmp_dir,
                           oci_bytes_fn progress, void *ctx, ts_err *err) TS_MUST_CHECK;

/* Parse one WWW-Authenticate value: scheme ("Bearer", "Basic") and its
 * realm/service/scope parameters (heap strings or NULL). Exposed for tests. */
typedef struct oci_challenge {
    char scheme[16];
    char *realm;
    char *service;
    char *scope;
} oci_challenge;
bool oci_challenge_parse(const char *header, oci_challenge *out) TS_MUST_CHECK;
void oci_challenge_free(oci_challenge *ch);

#endif
