/* http_api.h: tessera-vfolder's internal HTTP API (docs/vfolders.md): route
 * registration, and what the handler files (folders.c, sharing.c) share. */
#ifndef VFOLDER_HTTP_API_H
#define VFOLDER_HTTP_API_H

#include "folders.h"

/* Register every route (the metadata ones, then vf_files_routes). */
void vf_http_routes(svc *s);

/* ---- folders.c ----------------------------------------------------------- */
void vf_h_create(http_req *req, http_resp *resp, void *ctx);
void vf_h_list(http_req *req, http_resp *resp, void *ctx);
void vf_h_hosts(http_req *req, http_resp *resp, void *ctx);
void vf_h_volumes(http_req *req, http_resp *resp, void *ctx);
void vf_h_info(http_req *req, http_resp *resp, void *ctx);
void vf_h_delete(http_req *req, http_resp *resp, void *ctx);
void vf_h_rename(http_req *req, http_resp *resp, void *ctx);
void vf_h_clone(http_req *req, http_resp *resp, void *ctx);
void vf_h_purge(http_req *req, http_resp *resp, void *ctx);
void vf_h_restore(http_req *req, http_resp *resp, void *ctx);
void vf_h_mounts_resolve(http_req *req, http_resp *resp, void *ctx);

/* Purge trashed folders older than vfolder.trash_retention (the sweeper). */
void vf_sweep_trash(svc *s);

/* ---- sharing.c ----------------------------------------------------------- */
void vf_h_invite(http_req *req, http_resp *resp, void *ctx);
void vf_h_invitations(http_req *req, http_resp *resp, void *ctx);
void vf_h_accept(http_req *req, http_resp *resp, void *ctx);
void vf_h_reject(http_req *req, http_resp *resp, void *ctx);
void vf_h_leave(http_req *req, http_resp *resp, void *ctx);
void vf_h_share(http_req *req, http_resp *resp, void *ctx);
void vf_h_unshare(http_req *req, http_resp *resp, void *ctx);

/* ---- shared helpers (folders.c) -------------------------------------------- */
/* A folder name (1..64 code points; no '/', '\\', control characters,
 * "."/"..", "_", edge spaces or reserved home-directory names). False after
 * a 400 naming field. */
bool vf_name_ok(const char *name, const char *field, http_resp *resp) TS_MUST_CHECK;
/* The caller's projects as a PostgreSQL uuid[] literal "{a,b}" (heap). */
char *vf_caller_projects_literal(const vf_caller *c);

#endif
