/* http_api.h: tessera-vfolder's internal HTTP API (docs/vfolders.md): the
 * table of routes to the handlers of each module. */
#ifndef VFOLDER_HTTP_API_H
#define VFOLDER_HTTP_API_H

#include "libcommon/svc.h"

/* Register every route (the metadata ones, then vf_files_routes). */
void vf_http_routes(svc *s);

#endif
