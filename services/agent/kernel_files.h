/* kernel_files.h: files in and out of a running kernel's /home/work, for
 * Backend.AI's session upload, download, download_single and files
 * (docs/sessions.md, "Files"; docs/agent.md, "Files"):
 *
 *   POST     /v1/kernels/{id}/files/upload           multipart/form-data; 204
 *   GET|POST /v1/kernels/{id}/files/download         ?files=a&files=b: ustar
 *   GET|POST /v1/kernels/{id}/files/download_single  ?file=a: its bytes
 *   GET      /v1/kernels/{id}/files                  ?path=dir: {files, abspath, errors}
 *
 * Paths are relative to /home/work (or absolute under it) and never leave
 * it (home_fs.h). An upload is bounded by http.max_body; an answer by
 * KERNEL_FILES_MAX_DOWNLOAD (413 beyond). 404: no such kernel here; 409:
 * the kernel is not running. */
#ifndef AGENT_KERNEL_FILES_H
#define AGENT_KERNEL_FILES_H

#include "libcommon/http.h"

#define KERNEL_FILES_MAX_DOWNLOAD (16 * 1024 * 1024) /* the gateway relays up to 16 MiB */
#define KERNEL_FILES_MAX_PATHS 100

/* src: the http_api_source the agent's other routes use. */
void kernel_files_routes(http_router *r, void *src);

#endif
