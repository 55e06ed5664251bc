/* image_pull.h: pulling OCI images to this node from any OCI distribution
 * registry (Docker Registry HTTP API v2, oci_client.h) into the node's
 * content-addressed cache (image_store.h):
 *   1. the manifest: by digest from the cache when it is there, else asked
 *      for (an index resolved to this node's linux/<arch> entry);
 *   2. the config;
 *   3. the layers, concurrently (image_store_opts.max_parallel_layers), each
 *      blob fetched unless cached and unpacked unless unpacked;
 *   4. what the reference resolved to recorded, and the image described.
 * Registry credentials come from the store's auth file. */
#ifndef AGENT_IMAGE_PULL_H
#define AGENT_IMAGE_PULL_H

#include "services/agent/image.h"

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

#endif
