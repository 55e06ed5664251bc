/* announcement.h: the platform's announcement, Backend.AI's
 * /manager/announcement, one row of auth.announcement:
 *   GET  /v1/manager/announcement -> {enabled, message} (every signed caller:
 *        the console shows it as a banner)
 *   POST /v1/manager/announcement {enabled, message} -> 204 (superadmins)
 * A message has up to ANNOUNCEMENT_MAX bytes; enabling needs one. */
#ifndef AUTH_ANNOUNCEMENT_H
#define AUTH_ANNOUNCEMENT_H

#include "libcommon/svc.h"

#define ANNOUNCEMENT_MAX 8192

void announcement_routes(svc *s);

#endif
