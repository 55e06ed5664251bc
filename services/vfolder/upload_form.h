/* upload_form.h: Backend.AI's legacy upload (docs/vfolders.md "Legacy
 * upload"), through the gateway:
 *
 *   POST /v1/folders/{name}/upload   multipart/form-data, rw, upload-file
 *
 * Every part is a form field `src` whose filename is the file's path in the
 * folder (a relative path; "a/b.txt" makes the directory a). The body is
 * buffered, so the gateway's and this service's http.max_body (1 MiB by
 * default) bound the whole request: larger files go through request-upload
 * and tus (tus.h). All the parts' bytes are reserved against the quota at
 * once (412: nothing written); each file is staged on its volume, then
 * renamed into place as a tus upload's last byte is (transfer.h
 * vf_xfer_place), replacing a file of that name. Answer 201
 * {"uploaded": [{"path", "size"}]}. Refused (400): no `src` part, another
 * field, a part without a filename, a path that is empty, absolute, has a
 * ".." component or leads outside the folder; 415 for another media type;
 * 413 (the server) for a body over http.max_body. A part that fails after
 * others were placed: those stay (the answer is the problem; their bytes
 * stay counted), the rest is given back. */
#ifndef VFOLDER_UPLOAD_FORM_H
#define VFOLDER_UPLOAD_FORM_H

#include "libcommon/svc.h"

void vf_h_upload_form(http_req *req, http_resp *resp, void *ctx);

#endif
