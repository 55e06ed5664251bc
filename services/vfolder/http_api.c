/* http_api.c: tessera-vfolder's routes (docs/vfolders.md). The gateway
 * forwards the public /folders/... to /v1/folders/... here; the registry
 * calls /v1/mounts/resolve. Exact segments beat {name}, so "_",
 * "invitations" and "purge" are not folder names in these positions. */
#include "http_api.h"

#include "files_routes.h"
#include "folder_create.h"
#include "folder_routes.h"
#include "mounts.h"
#include "shares.h"
#include "sharing.h"
#include "trash.h"

#pragma weak vf_files_routes

void vf_http_routes(svc *s)
{
    http_router *r = svc_router(s);
    http_route(r, "POST", "/v1/folders", vf_h_create, s);
    http_route(r, "GET", "/v1/folders", vf_h_list, s);
    http_route(r, "GET", "/v1/folders/_/hosts", vf_h_hosts, s);
    http_route(r, "GET", "/v1/folders/_/volumes", vf_h_volumes, s);
    http_route(r, "GET", "/v1/folders/_/allowed_types", vf_h_allowed_types, s);
    http_route(r, "GET", "/v1/folders/_/allowed-types", vf_h_allowed_types, s);
    http_route(r, "GET", "/v1/folders/_/shared", vf_h_shared_list, s);
    http_route(r, "POST", "/v1/folders/_/shared", vf_h_shared_update, s);
    http_route(r, "DELETE", "/v1/folders", vf_h_delete_by_id, s);
    http_route(r, "GET", "/v1/folders/_/id", vf_h_id, s);
    http_route(r, "GET", "/v1/folders/_/all-hosts", vf_h_all_hosts, s);
    http_route(r, "GET", "/v1/folders/_/all_hosts", vf_h_all_hosts, s);
    http_route(r, "POST", "/v1/folders/purge", vf_h_purge, s);
    http_route(r, "POST", "/v1/folders/restore-from-trash", vf_h_restore, s);
    /* Backend.AI 24.09's trash bin: restore, and removal (one step here) */
    http_route(r, "POST", "/v1/folders/restore-from-trash-bin", vf_h_restore, s);
    http_route(r, "POST", "/v1/folders/delete-from-trash-bin", vf_h_purge, s);
    http_route(r, "GET", "/v1/folders/invitations/list", vf_h_invitations, s);
    http_route(r, "POST", "/v1/folders/invitations/accept", vf_h_accept, s);
    http_route(r, "DELETE", "/v1/folders/invitations/delete", vf_h_reject, s);
    http_route(r, "POST", "/v1/folders/invitations/delete", vf_h_reject, s);
    http_route(r, "GET", "/v1/folders/{name}", vf_h_info, s);
    http_route(r, "DELETE", "/v1/folders/{name}", vf_h_delete, s);
    http_route(r, "POST", "/v1/folders/{name}/rename", vf_h_rename, s);
    http_route(r, "POST", "/v1/folders/{name}/clone", vf_h_clone, s);
    http_route(r, "POST", "/v1/folders/{name}/update-options", vf_h_update_options, s);
    http_route(r, "POST", "/v1/folders/{name}/invite", vf_h_invite, s);
    http_route(r, "POST", "/v1/folders/{name}/leave", vf_h_leave, s);
    http_route(r, "POST", "/v1/folders/{name}/share", vf_h_share, s);
    http_route(r, "DELETE", "/v1/folders/{name}/unshare", vf_h_unshare, s);
    http_route(r, "POST", "/v1/folders/{name}/unshare", vf_h_unshare, s);
    http_route(r, "POST", "/v1/mounts/resolve", vf_h_mounts_resolve, s);
    /* Files and transfers (files_routes.c), when that half is built in. */
    if (vf_files_routes) vf_files_routes(s);
}
