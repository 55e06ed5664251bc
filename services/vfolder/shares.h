/* shares.h: who a folder's owner shares it with, and changing that, in
 * Backend.AI's shape (docs/vfolders.md "Sharing"):
 *
 *   GET  /v1/folders/_/shared[?vfolder_id=]
 *        {"shared": [{vfolder_id, vfolder_name, status, owner, type,
 *        shared_to: {uuid, email}, perm}]}: the users holding a permission of
 *        their own (an accepted invitation, a project folder's override) on
 *        the caller's own user folders, or on the folder vfolder_id (its
 *        owner or an admin of its domain; others 404, invitees 403)
 *   POST /v1/folders/_/shared {vfolder, user, perm}
 *        change that user's permission (ro|rw|wd); perm null or absent
 *        removes it (the user loses the folder). Owner or admin; 404 when
 *        the user holds none. Answer {"msg": ...}; VfolderShared published.
 *
 * Invitations themselves (invite, accept, ...) are sharing.h's. */
#ifndef VFOLDER_SHARES_H
#define VFOLDER_SHARES_H

#include "libcommon/svc.h"

void vf_h_shared_list(http_req *req, http_resp *resp, void *ctx);
void vf_h_shared_update(http_req *req, http_resp *resp, void *ctx);

#endif
