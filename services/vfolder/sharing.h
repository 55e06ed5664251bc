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
 * The handlers are declared in http_api.h (vf_h_invite, vf_h_invitations,
 * vf_h_accept, vf_h_reject, vf_h_leave, vf_h_share, vf_h_unshare). */
#ifndef VFOLDER_SHARING_H
#define VFOLDER_SHARING_H

#include "folders.h"

#endif
