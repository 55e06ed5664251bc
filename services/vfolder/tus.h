/* tus.h: resumable uploads over tus 1.0 (https://tus.io/protocols/resumable-upload)
 * on tessera-vfolder's client-facing side, authorized by transfer tokens.
 *
 *   POST /v1/folders/{name}/request-upload {path, size} (through the gateway):
 *       checks rw permission and the upload-file host permission, creates the
 *       parent directories (confined), reserves size bytes of quota (412 when
 *       that would pass it: nothing is created), records the upload in
 *       vfolder.uploads and answers {token, url, upload_id, expires_at}.
 *   OPTIONS /v1/transfer/upload[/{id}]  Tus-Version, Tus-Extension, Tus-Max-Size
 *   POST    /v1/transfer/upload?token=   creation: Upload-Length must be the
 *                                        token's size; 201 Location
 *   HEAD    /v1/transfer/upload/{id}?token=   Upload-Offset, Upload-Length
 *   PATCH   /v1/transfer/upload/{id}?token=   Upload-Offset, Content-Type
 *           application/offset+octet-stream; the body is streamed to the
 *           staged file (never past the declared length: 413); 204 with the
 *           new Upload-Offset. The last byte in: fsync, then rename into the
 *           folder atomically (replacing a file of that name, whose bytes go
 *           back to the quota).
 *   DELETE  /v1/transfer/upload/{id}?token=   termination: the staged bytes
 *           and the reservation are released.
 * One PATCH at a time per upload (flock on the staged file: 409 otherwise).
 * The offset is the staged file's length, so a PATCH cut off mid-way keeps
 * what arrived and any replica continues from there. Uploads whose token
 * expired are swept: staged file removed, reservation released. */
#ifndef VFOLDER_TUS_H
#define VFOLDER_TUS_H

#include "libcommon/svc.h"

void vf_h_request_upload(http_req *req, http_resp *resp, void *ctx);
/* The client-facing tus routes. */
void vf_tus_routes(svc *s);
/* Abort expired uploads (called periodically). */
void vf_tus_sweep(svc *s);

#endif
