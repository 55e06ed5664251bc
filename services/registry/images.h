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
 * ai.backend.runtime-type, ai.backend.runtime-path. */
#ifndef REGISTRY_IMAGES_H
#define REGISTRY_IMAGES_H

#include "libcommon/svc.h"

typedef struct image_info {
    char architecture[32];
    char digest[80];
    json_t *min_slots;     /* {"cpu": "1", ...} */
    json_t *service_ports; /* stored array */
} image_info;

/* Find a registered image; when absent and registry.auto_register_images is
 * on, resolve it from its OCI registry and register it. *found false when it
 * is neither registered nor (with auto-registration) found in its registry;
 * false with err on a database or registry failure. */
bool images_find(PGconn *conn, const char *reference, image_info *out, bool *found,
                 ts_err *err) TS_MUST_CHECK;
void image_info_free(image_info *im);

void images_routes(svc *s);

#endif
