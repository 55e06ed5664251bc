/* oci.h: read images from an OCI distribution registry (Docker Registry HTTP
 * API v2) with libcurl: what the registry needs to register an image (its
 * digest, architecture, labels and command) and the catalog for a scan. No
 * authentication yet (the development registry and plain internal registries).
 *
 * A reference is "host[:port]/repository[:tag][@sha256:...]"; without a host
 * (the first component has no '.' or ':' and is not "localhost") the
 * configured oci.registry is used. A registered container registry's URL
 * says http:// or https:// (container_registries.h); any other host follows
 * oci.plain_http. An index (multi-architecture image) resolves to its linux/amd64
 * entry, else its first; the digest kept is the one the tag points to. */
#ifndef REGISTRY_OCI_H
#define REGISTRY_OCI_H

#include "libcommon/svc.h"

typedef struct oci_image {
    char *digest;       /* sha256:... of what the reference points to */
    char *architecture; /* as agents report it: x86_64, aarch64, ... */
    json_t *labels;     /* config.Labels (object) */
    json_t *command;    /* Entrypoint + Cmd (array) */
} oci_image;

/* *not_found true (and false returned) when the registry says 404. conn: the
 * caller's, for the registered registries' URLs (container_registries.h). */
bool oci_resolve(PGconn *conn, const char *reference, oci_image *out, bool *not_found,
                 ts_err *err) TS_MUST_CHECK;
void oci_image_free(oci_image *im);

/* Every "host/repository:tag" of the registry host (NULL: oci.registry), as a
 * JSON array of strings. */
bool oci_catalog(PGconn *conn, const char *host, json_t **refs, ts_err *err) TS_MUST_CHECK;

/* amd64 -> x86_64, arm64 -> aarch64; others unchanged. */
const char *oci_arch_name(const char *oci_arch);

#endif
