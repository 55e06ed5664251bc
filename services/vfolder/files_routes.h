/* files_routes.h: the files/transfer half of tessera-vfolder, as main.c and
 * http_api.c plug it in (both reference it weakly: the metadata half runs
 * without it): its options, its routes, its background work. */
#ifndef VFOLDER_FILES_ROUTES_H
#define VFOLDER_FILES_ROUTES_H

#include "libcommon/svc.h"

/* Registers /v1/folders/{name}/files, mkdir, rename_file, move_file,
 * delete_files, request-upload, request-download and the tus/download
 * endpoints. Called by http_api.c after the metadata routes. */
void vf_files_routes(svc *s);
/* Its config options (terminated by {0}); main.c appends them to the
 * service's table, so they appear in --help and in docs/configuration.md's
 * "tessera-vfolder" section. */
extern const cfg_option vf_files_options[];
/* Background work after the service connected: the transfer secret, the
 * staging directories, the sweeper of expired uploads. */
bool vf_files_start(svc *s, ts_err *err) TS_MUST_CHECK;
void vf_files_stop(svc *s);

#endif
