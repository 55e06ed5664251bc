/* images.h: the images sessions may use.
 *
 * Admin API (superadmins write, administrators read):
 *   GET    /v1/admin/images?limit=&offset=
 *   GET    /v1/admin/images/{reference}      (percent-encode '/': %2F)
 *   POST   /v1/admin/images {"reference"}    read from its OCI registry and
 *          register (or refresh); with "architecture", "labels", "digest" or
 *          "command" in the body it is registered as given, without the OCI
 *          registry ("source": "manual")
 *   DELETE /v1/admin/images/{reference}
 *   POST   /v1/admin/images/scan {"registry"?}  every repository:tag of the
 *          registry's /v2/_catalog; answers {"registered": [...], "failed":
 *          [{"reference", "error"}]}; with ?background=true: 202
 *          {"task_id"} at once, the scan running as a background task
 *          (bgtasks.h; progress: images done / total)
 * Labels understood (Backend.AI's): ai.backend.service-ports
 * ("name:proto:port,..."), ai.backend.resource.min.<slot> (minimum slots),
 * ai.backend.runtime-type, ai.backend.runtime-path; overrides of them set
 * through the config store (image_config.h) win and survive a rescan. "labels"
 * in the answers is the image's labels with the overrides applied;
 * "label_overrides" and "max_slots" are shown too.
 * A scan without "registry" covers the built-in registry (oci.registry) and
 * every registered one (container_registries.h); with one, that registry. */
#ifndef REGISTRY_IMAGES_H
#define REGISTRY_IMAGES_H

#include "libcommon/svc.h"

typedef struct image_info {
    char architecture[32];
    char digest[80];
    json_t *min_slots;     /* {"cpu": "1", ...} */
    json_t *service_ports; /* stored array */
    json_t *max_slots;     /* {"cpu": "4", ...}: none above (image_config.h) */
} image_info;

/* Find a registered image; when absent and registry.auto_register_images is
 * on, resolve it from its OCI registry and register it. *found false when it
 * is neither registered nor (with auto-registration) found in its registry;
 * false with err on a database or registry failure. */
bool images_find(PGconn *conn, const char *reference, image_info *out, bool *found,
                 ts_err *err) TS_MUST_CHECK;
void image_info_free(image_info *im);

/* Store a registered image again from its stored labels and its label
 * overrides (after an override changed): service ports, minimum slots and
 * runtime come from the labels with the overrides applied. *found false when
 * the image is not registered; false with *bad (err says which label) when
 * the labels do not parse, with err on a database error. */
bool images_restore(PGconn *conn, const char *ref, bool *found, bool *bad,
                    ts_err *err) TS_MUST_CHECK;

void images_routes(svc *s);

#endif
