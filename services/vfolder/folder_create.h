/* folder_create.h: making folders (docs/vfolders.md "Folders"):
 *
 *   POST /v1/folders               {name, host, group|group_id, usage_mode,
 *                                   permission, cloneable, quota} -> 201 info
 *   POST /v1/folders/{name}/clone  {target_name, target_host, usage_mode,
 *                                   permission, cloneable, quota} -> 201 info
 *
 * A user folder is its creator's; a project folder (group) is made by an
 * admin of the domain. The owner's policy bounds the count of its folders
 * (checked under a per-owner lock, so replicas never overshoot) and the
 * quota; the caller's policies name the hosts it may create on. A clone
 * copies the source's tree (status 'cloning' meanwhile) and charges its
 * bytes to the new folder's quota; past it, nothing is left behind. Each
 * publishes VfolderCreated. */
#ifndef VFOLDER_FOLDER_CREATE_H
#define VFOLDER_FOLDER_CREATE_H

#include "libcommon/svc.h"

void vf_h_create(http_req *req, http_resp *resp, void *ctx);
void vf_h_clone(http_req *req, http_resp *resp, void *ctx);

#endif
