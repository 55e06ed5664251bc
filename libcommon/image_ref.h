/* image_ref.h: container image references, by the OCI distribution grammar
 * (github.com/distribution/reference), strictly: the registry checks the
 * references it is given (image registration, session create) with it before
 * any network fetch, and the agent parses the ones it pulls with it.
 *
 *   reference := [host[:port]/]path[:tag][@digest]
 *   host      := component ("." component)* | "[" IPv6 hex ":" "]", component
 *                [A-Za-z0-9]([A-Za-z0-9-]*[A-Za-z0-9])?; port 1..65535
 *   path      := part ("/" part)*, part [a-z0-9]+(sep[a-z0-9]+)*,
 *                sep "." | "_" | "__" | "-"+; host and path at most 255 bytes as written
 *   tag       := [A-Za-z0-9_][A-Za-z0-9_.-]{0,127}
 *   digest    := sha256:<64 lowercase hex> (the only algorithm served)
 * The first part is the host when it has a "." or ":", is "[...]" or is
 * "localhost"; otherwise the default registry is used. A reference is at
 * most IMAGE_REF_MAX bytes of printable ASCII. */
#ifndef TESSERA_IMAGE_REF_H
#define TESSERA_IMAGE_REF_H

#include "libcommon/common.h"

#define IMAGE_REF_MAX 1024

/* "host[:port]/repo/name[:tag][@sha256:...]" */
typedef struct image_ref {
    char *registry;   /* as written: "127.0.0.1:5000", "docker.io" */
    char *api_host;   /* where the API is: registry, or registry-1.docker.io for docker.io */
    char *repository; /* "tessera/busybox" ("library/x" for docker.io/x) */
    char *tag;        /* "latest" when neither tag nor digest was given; NULL with a digest only */
    char *digest;     /* "sha256:..." or NULL */
} image_ref;

/* A reference without a registry host uses default_registry (NULL or "":
 * then it is an error saying so). err says what is wrong, for the caller. */
bool image_ref_parse(const char *text, const char *default_registry, image_ref *out,
                     ts_err *err) TS_MUST_CHECK;
void image_ref_free(image_ref *r);

/* The grammar alone (a reference without a host is fine): for names that are
 * stored before they are resolved. */
bool image_ref_valid(const char *text, ts_err *err) TS_MUST_CHECK;

/* A registry host[:port] alone (as image scans take it). */
bool image_ref_host_valid(const char *host) TS_MUST_CHECK;

#endif
