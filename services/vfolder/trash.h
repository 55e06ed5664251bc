/* trash.h: a folder's way out (docs/vfolders.md "Trash"):
 *
 *   DELETE /v1/folders/{name}              owner, delete-vfolder on its host;
 *                                          refused (409) while a live session
 *                                          mounts it (mount_guard.h); to the
 *                                          trash: status 'trash', its
 *                                          directory under <volume>/.trash
 *   DELETE /v1/folders {id}                the same, by id (Backend.AI 24.09)
 *   POST /v1/folders/purge {vfolder_id}    removed for good: directory, usage,
 *                                          pending invitations (also
 *                                          delete-from-trash-bin: Backend.AI
 *                                          24.09 takes two steps, Tessera one)
 *   POST /v1/folders/restore-from-trash {vfolder_id}   back to 'ready'
 *                                          (also restore-from-trash-bin)
 * Ids in bodies: "vfolder_id", "vfolderId" or "id", dashed or as 32 hex
 * digits (Backend.AI's clients send uuid.hex).
 *
 * vf_trash_sweep purges what stayed in the trash past
 * vfolder.trash_retention (main.c runs it every vfolder.sweep_interval).
 * Trashing and purging publish VfolderDeleted (purged false, then true). */
#ifndef VFOLDER_TRASH_H
#define VFOLDER_TRASH_H

#include "libcommon/svc.h"

void vf_h_delete(http_req *req, http_resp *resp, void *ctx);
void vf_h_delete_by_id(http_req *req, http_resp *resp, void *ctx);
void vf_h_purge(http_req *req, http_resp *resp, void *ctx);
void vf_h_restore(http_req *req, http_resp *resp, void *ctx);
/* Purge trashed folders older than vfolder.trash_retention (at most 100 a run). */
void vf_trash_sweep(svc *s);

#endif
