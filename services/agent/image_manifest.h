/* image_manifest.h: reading OCI image manifests and indexes (and Docker's
 * v2 manifests and manifest lists) for the image store (image.h): their
 * media types, this node's entry of an index, and the layers of a manifest
 * checked against its config (digests valid, one diff id per layer, a layer
 * media type the unpacker reads). */
#ifndef AGENT_IMAGE_MANIFEST_H
#define AGENT_IMAGE_MANIFEST_H

#include <jansson.h>

#include "libcommon/common.h"

bool image_manifest_is_index(const char *media_type) TS_MUST_CHECK;
bool image_manifest_is_manifest(const char *media_type) TS_MUST_CHECK;
/* The media type of a manifest: the body's mediaType, else the served type,
 * else guessed from the shape. */
const char *image_manifest_type(json_t *j, const char *served);
/* The digest of the linux/<architecture> manifest of an index (a pointer
 * into it), or NULL with err naming what the index has (ref names the image). */
const char *image_manifest_pick(json_t *index, const char *architecture, const char *ref,
                                ts_err *err);

typedef struct layer_desc {
    const char *digest; /* blob */
    int64_t size;
    const char *diff_id; /* from the config */
} layer_desc;

/* Check a manifest and its config; *out: the layer descriptors (heap array
 * of pointers into the JSON), *n_out of them. */
bool image_manifest_layers(json_t *man, json_t *cfg, layer_desc **out, int *n_out, const char *ref,
                           ts_err *err) TS_MUST_CHECK;

#endif
