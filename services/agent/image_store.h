/* image_store.h: the node's image cache on disk (image.h), shared by every
 * pull and lookup:
 *
 *   <cache>/blobs/sha256/<hex>          verified blobs (manifests, configs, layers)
 *   <cache>/layers/sha256/<diffid-hex>/ one unpacked layer (a directory), shared
 *                                        by every image that has it
 *   <cache>/layers-<base>-<count>/sha256/<diffid-hex>/
 *                                        the same with owners shifted for a user
 *                                        namespace (layer_id_base, layer_id_count)
 *   <cache>/images/<ref-hash>.json       resolved reference -> manifest digest
 *
 * The layer directories of one shift are a cache of their own: a store with
 * another shift (or none) neither finds nor uses them, and unpacks its layers
 * again from the cached blobs (no download). Blobs and references are shared.
 * A layer directory is complete only once renamed into place (unpack into a
 * temporary directory, then rename), so a crash never leaves half a layer. */
#ifndef AGENT_IMAGE_STORE_H
#define AGENT_IMAGE_STORE_H

#include <jansson.h>

#include "libcommon/common.h"
#include "libcommon/image_ref.h"
#include "services/agent/unpack.h"

typedef struct image_store image_store;

typedef struct image_store_opts {
    const char *cache_dir;    /* agent.state_dir + "/images" */
    const char *architecture; /* OCI name of this node's architecture: "amd64", "arm64" */
    int max_parallel_layers;  /* concurrent layer downloads (>= 1) */
    int timeout_ms;           /* per HTTP request (connect + idle) */
    int retries;              /* per blob, with backoff; then the pull fails */
    bool insecure_http;       /* registries reached over plain HTTP (dev registry) */
    /* Optional (zero = off): */
    const char *default_registry; /* "host:port" for references without one; NULL: an error */
    const char *auth_file;        /* Docker-style config.json: {"auths": {"host:port":
                                     {"auth": base64("user:password")} or {"username", "password"}}} */
    int retry_backoff_ms;         /* first retry delay (0: 250 ms), doubling, at most 5 s */
    /* Owner shift of unpacked layers for the containers' user namespace
     * (userns.h): ids 0..count-1 of a layer are base.. on disk; count 0:
     * owners as the layer says. */
    uint32_t layer_id_base;
    uint32_t layer_id_count;
} image_store_opts;

image_store *image_store_new(const image_store_opts *opts, ts_err *err);
void image_store_free(image_store *s);

struct image_store {
    char *cache_dir;
    char *blobs_dir;  /* <cache>/blobs/sha256 */
    char *layers_dir; /* <cache>/layers/sha256, or layers-<base>-<count>/sha256 */
    unpack_ids ids;   /* the owner shift of those layers */
    char *images_dir; /* <cache>/images */
    char *tmp_dir;    /* <cache>/tmp: same file system, for rename */
    char *architecture;
    int max_parallel;
    int timeout_ms;
    int retries;
    int backoff_ms;
    bool insecure_http;
    char *default_registry;
    json_t *auths; /* "auths" of the auth file, or NULL */
};

/* ---- the cache's files (image.c, image_pull.c) ---- */

bool image_store_exists(const char *path) TS_MUST_CHECK;
/* <blobs>/<hex> of a blob digest, <layers>/<hex> of a layer's diff id (heap). */
char *image_store_blob_path(const image_store *s, const char *digest);
char *image_store_layer_path(const image_store *s, const char *diff_id);
/* Write data to path atomically (temporary file in tmp/, fsync, rename). */
bool image_store_write(const image_store *s, const char *path, const void *data, size_t len,
                       ts_err *err) TS_MUST_CHECK;
/* A cached blob that is a JSON object (at most 8 MiB), or NULL with err set. */
json_t *image_store_blob_json(const image_store *s, const char *digest, ts_err *err);
/* images/<hash>.json: what a reference resolved to (heap path). */
char *image_store_ref_path(const image_store *s, const image_ref *r);

#endif
