/* transfer.h: the files/transfer half of tessera-vfolder: its settings, the
 * transfer-token check shared by the client-facing endpoints, the token
 * secret and upload tables in PostgreSQL, the staging directories, and
 * downloads.
 *
 * Client-facing endpoints (no gateway in between; the token authorizes):
 *   GET|HEAD /v1/transfer/download?token=   a file (Range: bytes=a-b, 206) or
 *                                           a directory as a streamed zip
 *   tus 1.0 under /v1/transfer/upload       (tus.h)
 *   OPTIONS of both: CORS preflight         (cors.h)
 * Through the gateway (caller checked, then a token is issued):
 *   POST /v1/folders/{name}/request-download {file, archive} -> {token, url}
 *   POST /v1/folders/{name}/request-upload   {path, size}    -> {token, url}
 *   GET  /v1/folders/_/download_with_token?token=  302 to the download URL
 *        (the token is the authority: the gateway forwards it unsigned too)
 *
 * Uploads are staged in <volume>/.tessera-uploads/<upload id> (same file
 * system as the folders, outside every folder) and renamed into place when
 * complete. Their state is the row in vfolder.uploads plus the staged file's
 * length, so any replica that sees the volume can continue one. */
#ifndef VFOLDER_TRANSFER_H
#define VFOLDER_TRANSFER_H

#include "libcommon/svc.h"
#include "request.h"
#include "tokens.h"

#define VF_STAGING_DIR ".tessera-uploads"

typedef struct vf_xfer_config {
    char *token_secret;
    char *public_url;
    int64_t upload_ttl_ms;
    int64_t download_ttl_ms;
    int64_t upload_max;
    int64_t zip_max_entries;
    bool upload_fsync;
} vf_xfer_config;
extern vf_xfer_config vf_xcfg;

/* The ?token= of req, verified for op (and, for uploads, for upload_id when
 * given). False after the problem: 401 auth-failed (missing, malformed,
 * signed with another secret, expired), 403 forbidden (a token for another
 * operation or upload), 503 (secret not loaded yet). */
bool vf_xfer_token(http_req *req, http_resp *resp, vf_token_op op, const char *upload_id,
                   vf_token *out) TS_MUST_CHECK;

/* "http://host:port" clients use to reach this replica (vfolder.public_url,
 * else the Host the request came with). Heap. */
char *vf_xfer_base_url(http_req *req);

/* A token for x's folder (vf_req_folder) and caller: op, path (borrowed),
 * size (-1 for a download), valid ttl_ms from now, a fresh id. */
void vf_xfer_token_for(vf_token *t, const vf_req *x, vf_token_op op, const char *path, int64_t size,
                       int64_t ttl_ms);
/* Sign t and answer 200 {token, url: the base URL + url_path, expires_at}
 * (and upload_id for an upload). */
void vf_xfer_issue(vf_req *x, const vf_token *t, const char *url_path);

/* Load or create the token secret (at start; the tables come from
 * migrations/0002_transfer_tables.sql). */
bool vf_xfer_db_init(svc *s, ts_err *err) TS_MUST_CHECK;

/* The staging directory of a volume, opened O_PATH into *fd (created when
 * missing); false with the errno value (ENOENT: no such volume). */
bool vf_xfer_staging_dir(const char *host, int *fd, int *errnum) TS_MUST_CHECK;

/* The problem (404) for the folder of a token (vf_xfer_token put it in the
 * log context) that is gone or not ready; err: why (may be NULL). */
void vf_xfer_folder_gone(http_resp *resp, const ts_err *err);

/* Make the parent directories of path in the folder root (confined; what:
 * the operation, for the problem). False after a problem. */
bool vf_xfer_parents(int root, const char *path, const char *what, http_resp *resp) TS_MUST_CHECK;

/* On XFS, the staged file fd joins folder f's project: its bytes count
 * against the folder's hard limit while they arrive, and XFS lets it be
 * renamed into the folder (a rename into a project directory from outside
 * the project is refused with EXDEV). Elsewhere nothing to do. False with
 * err. */
bool vf_xfer_join_project(const vf_folder *f, int fd, ts_err *err) TS_MUST_CHECK;

/* The complete staged file `staged` (a name in its volume's staging
 * directory, open as staging; the file open as fd) into folder f at path,
 * atomically: owned by vfolder.file_owner, 0644, fsynced when
 * vfolder.upload_fsync, the parents made, replacing a file of that name
 * (*replaced: its bytes, for the caller to release from the quota). False
 * after a problem (what: the operation; a directory at path: 400), nothing
 * moved. */
bool vf_xfer_place(const vf_folder *f, int staging, const char *staged, int fd, const char *path,
                   const char *what, int64_t *replaced, http_resp *resp) TS_MUST_CHECK;

/* Handlers (transfer.c). */
void vf_h_request_download(http_req *req, http_resp *resp, void *ctx);
void vf_h_download(http_req *req, http_resp *resp, void *ctx);
/* GET /v1/folders/_/download_with_token?token= (Backend.AI's route, reached
 * through the gateway): the token checked as a download's, then 302 to
 * /v1/transfer/download?token= at this replica's base URL, where the bytes
 * come from (the gateway stays out of the data path). */
void vf_h_download_with_token(http_req *req, http_resp *resp, void *ctx);

/* What a Range header value asks of a file of size bytes. */
typedef enum vf_range {
    VF_RANGE_ALL = 0,           /* everything (absent, not bytes, several ranges) */
    VF_RANGE_PART = 1,          /* one satisfiable range: (start, len) */
    VF_RANGE_UNSATISFIABLE = 2, /* 416 */
} vf_range;
vf_range vf_xfer_parse_range(const char *value, uint64_t size, uint64_t *start, uint64_t *len);

#endif
