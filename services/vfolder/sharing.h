/* sharing.h: who else may use a folder (docs/vfolders.md "Sharing").
 *
 * User folders: the owner (or an admin of its domain) invites users of the
 * same domain by email with ro, rw or wd; an invitation is pending until the
 * invitee accepts (a permission row, source "invitation") or rejects it, or
 * the inviter cancels it (DELETE /folders/invitations/delete answers for
 * both); an invitee may leave later. Project folders: every member of the
 * project has the folder's own permission; share sets a per-member override
 * (source "share"), unshare removes it. Each accepted invitation, share,
 * unshare and leave publishes VfolderShared after its commit.
 *
 *   POST   /v1/folders/{name}/invite {perm, emails}   owner, invite-others
 *          (also Backend.AI's names: permission; user_ids or userIDs: emails)
 *   GET    /v1/folders/invitations/list               the caller's pending ones
 *   POST   /v1/folders/invitations/accept {inv_id}
 *   DELETE /v1/folders/invitations/delete {inv_id}    reject or cancel
 *   POST   /v1/folders/{name}/leave
 *   POST   /v1/folders/{name}/share {permission, emails}   project folders
 *   DELETE /v1/folders/{name}/unshare {emails} */
#ifndef VFOLDER_SHARING_H
#define VFOLDER_SHARING_H

#include "libcommon/svc.h"

void vf_h_invite(http_req *req, http_resp *resp, void *ctx);
void vf_h_invitations(http_req *req, http_resp *resp, void *ctx);
void vf_h_accept(http_req *req, http_resp *resp, void *ctx);
void vf_h_reject(http_req *req, http_resp *resp, void *ctx);
void vf_h_leave(http_req *req, http_resp *resp, void *ctx);
void vf_h_share(http_req *req, http_resp *resp, void *ctx);
void vf_h_unshare(http_req *req, http_resp *resp, void *ctx);

#endif
