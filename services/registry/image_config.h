/* image_config.h: an image's keys in Backend.AI's config store
 * (config_store.h), kept in registry.images:
 *
 *   images/<registry>/<name>/<tag>                     the image: {"": digest,
 *                                                      "architecture", "labels", "resource"}
 *   images/.../resource/<slot>/min                     minimum per kernel: an override of
 *                                                      the label ai.backend.resource.min.<slot>
 *   images/.../resource/<slot>/max                     maximum per kernel (images.max_slots)
 *   images/.../labels/<label>                          a label override (images.label_overrides)
 *
 * <registry> is the image reference's host[:port] (":" may be "%3A"), <name>
 * its repository ("/" as is or as "%2F"), <tag> its tag. A session create
 * refuses a request below a minimum or above a maximum (session_create.c);
 * the overrides win over the image's own labels for new sessions (service
 * ports, runtime, minimums; the agent gets them with CreateKernel) and
 * survive rescans. */
#ifndef REGISTRY_IMAGE_CONFIG_H
#define REGISTRY_IMAGE_CONFIG_H

#include "registry.h"

/* segs: the key's segments ("images", registry, ...), n of them. */

/* The value at the key: a JSON string or object (owned), or NULL after a
 * problem answer (400 bad key, 404 unknown image). */
json_t *image_config_get(PGconn *conn, char **segs, int n, http_resp *resp);

/* Set one leaf (value as text). False after a problem answer. */
bool image_config_set(PGconn *conn, char **segs, int n, const char *value,
                      http_resp *resp) TS_MUST_CHECK;

/* Delete the key (an override, a maximum, or all of them under resource or
 * labels). False after a problem answer. */
bool image_config_delete(PGconn *conn, char **segs, int n, bool prefix,
                         http_resp *resp) TS_MUST_CHECK;

#endif
