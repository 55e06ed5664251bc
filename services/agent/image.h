/* image.h: OCI images on this node. Pulls from any OCI distribution registry
 * (Docker Registry HTTP API v2) over libcurl into a content-addressed cache:
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
#ifndef AGENT_IMAGE_H
#define AGENT_IMAGE_H

#include "libcommon/common.h"

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

/* What the runtime needs from an image. */
typedef struct image_info {
    char *reference; /* as requested: "127.0.0.1:5000/tessera/busybox:latest" */
    char *digest;    /* manifest digest "sha256:..." (after index resolution) */
    char *architecture;
    char **layer_dirs; /* unpacked layers, lowest first (overlayfs lowerdir order reversed by the
                          caller); also NULL-terminated */
    int n_layers;
    char **env;        /* config Env, "K=V", NULL-terminated */
    char **entrypoint; /* NULL-terminated or NULL */
    char **cmd;        /* NULL-terminated or NULL */
    char *workdir;     /* or NULL */
    char *user;        /* or NULL */
    char *labels_json; /* config Labels as a JSON object text ("{}" when none) */
} image_info;

/* Progress of a pull: bytes of blobs fetched so far out of the total known,
 * and layers ready (fetched and unpacked, or already in the cache) out of
 * the image's. */
typedef struct image_progress {
    int64_t bytes_done, bytes_total;
    int layers_done, layers_total;
} image_progress;
typedef void (*image_progress_fn)(const image_progress *pr, void *ctx);

/* Resolve reference, fetch what is missing (layers concurrently, each digest
 * verified), unpack layers (OCI whiteouts and opaque dirs, hard links, symlinks,
 * modes; entries escaping the layer root are refused), and describe the image.
 * Errors say what failed in words a user understands: "image not found:
 * <ref>", "digest mismatch for layer sha256:...", "registry unreachable: ...",
 * "layer sha256:...: entry '../x' escapes the layer root". */
image_info *image_pull(image_store *s, const char *reference, image_progress_fn progress, void *ctx,
                       ts_err *err);
/* The cached image without network access, or NULL (err says why). */
image_info *image_lookup(image_store *s, const char *reference, ts_err *err);
void image_info_free(image_info *info);

#endif
