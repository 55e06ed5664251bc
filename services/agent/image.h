/* image.h: OCI images on this node: an image as the runtime needs it
 * (image_info), described from the node's cache (image_store.h), or found
 * there by reference without network access. Pulling: image_pull.h. */
#ifndef AGENT_IMAGE_H
#define AGENT_IMAGE_H

#include "services/agent/image_store.h"

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

/* The cached image without network access, or NULL (err says why). */
image_info *image_lookup(image_store *s, const char *reference, ts_err *err);
void image_info_free(image_info *info);

/* The image whose manifest (already verified) is cached under digest, with
 * every layer unpacked; NULL (err set) otherwise. */
image_info *image_describe(image_store *s, const char *reference, const char *digest, ts_err *err);
/* The manifest digest an index digest resolves to from the cache (or the
 * digest itself when it is a manifest), heap; NULL when not cached. */
char *image_resolve_cached(image_store *s, const char *digest, const char *reference, ts_err *err);

#endif
