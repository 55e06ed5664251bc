/* folder_routes.h: reading folders, renaming them and their options (docs/vfolders.md):
 *
 *   GET  /v1/folders[?all=true][&group_id=]   the folders the caller sees
 *   GET  /v1/folders/{name}                   one folder, with its quota scope
 *   GET  /v1/folders/_/hosts                  the volumes the caller may use
 *   GET  /v1/folders/_/volumes                capacity and accounting (admins)
 *   POST /v1/folders/{name}/rename {new_name} owner, modify-vfolder on its host
 *   POST /v1/folders/{name}/update-options {permission?, cloneable?}
 *        owner (or admin), modify-vfolder: the folder's own permission (what
 *        project members get) and whether it may be cloned; {"msg": ""} with
 *        the id and the values now in force
 *   GET  /v1/folders/_/allowed_types          ["user"], and "group" for the
 *        administrators who may create project folders
 *   GET  /v1/folders/_/id {name} (or ?name=)  {id, name}: Backend.AI's
 *        lookup its Python client makes first; readable or trashed folders
 *   GET  /v1/folders/_/all-hosts (all_hosts)  superadmins: as _/hosts
 *
 * The answers come from the model (folders.h); creating is
 * folder_create.h's, deleting trash.h's. */
#ifndef VFOLDER_FOLDER_ROUTES_H
#define VFOLDER_FOLDER_ROUTES_H

#include "libcommon/svc.h"

void vf_h_list(http_req *req, http_resp *resp, void *ctx);
void vf_h_hosts(http_req *req, http_resp *resp, void *ctx);
void vf_h_volumes(http_req *req, http_resp *resp, void *ctx);
void vf_h_info(http_req *req, http_resp *resp, void *ctx);
void vf_h_rename(http_req *req, http_resp *resp, void *ctx);
void vf_h_update_options(http_req *req, http_resp *resp, void *ctx);
void vf_h_allowed_types(http_req *req, http_resp *resp, void *ctx);
void vf_h_id(http_req *req, http_resp *resp, void *ctx);
void vf_h_all_hosts(http_req *req, http_resp *resp, void *ctx);

#endif
