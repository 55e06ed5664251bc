/* folders.h: the public virtual folder API (api-compat.md "Virtual folders";
 * docs/vfolders.md), forwarded to tessera-vfolder (vfolder.url).
 *
 * Every route but one is signed (verify.c). /folders[/...] (up to four more
 * segments, any method) goes to /v1/folders[/...] with the raw path and
 * query as the client sent them; tessera-vfolder validates and answers, and
 * its status and body are relayed (proxy.c). A clone copies a tree and may
 * take long: it gets FOLDERS_CLONE_TIMEOUT_MS. The folder a route names (its
 * first segment) goes into the log context. The exception: GET
 * /folders/_/download_with_token?token= is authorized by its transfer token
 * alone (tessera-vfolder checks it and redirects to the download), signed
 * or not. */
#ifndef GATEWAY_FOLDERS_H
#define GATEWAY_FOLDERS_H

#include "gateway.h"

#define FOLDERS_TIMEOUT_MS 30000
#define FOLDERS_CLONE_TIMEOUT_MS 600000

/* Register the routes on gw's router (the handlers' context is gw). */
void folders_routes(gateway *gw);

#endif
