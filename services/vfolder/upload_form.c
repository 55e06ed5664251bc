/* upload_form.c: Backend.AI's legacy multipart upload (upload_form.h). */
#include "upload_form.h"

#include "files.h"
#include "libcommon/log.h"
#include "libcommon/multipart.h"
#include "quota.h"
#include "request.h"
#include "transfer.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* A part's filename as a path in the folder: relative, without ".."
 * components. False after a 400 naming the part. */
static bool _path_ok(const mp_part *part, size_t i, http_resp *resp)
{
    const char *path = part->filename;
    if (!path || !*path) {
        http_problem(resp, 400, "invalid-api-params", NULL,
                     "upload: part %zu (src) needs a filename: the file's path in the folder",
                     i + 1);
        return false;
    }
    bool ok = vf_fs_path_ok(path) && path[0] != '/';
    for (const char *c = path; ok && *c; c += strcspn(c, "/"), c += *c == '/') {
        size_t n = strcspn(c, "/");
        if (n == 2 && c[0] == '.' && c[1] == '.') ok = false;
    }
    if (!ok)
        http_problem(resp, 400, "invalid-api-params", NULL,
                     "upload: part %zu: the path must be relative, inside the folder, without "
                     "\"..\" or control characters",
                     i + 1);
    return ok;
}

/* The parts: 1..MP_MAX_PARTS fields named src with a path. False after
 * a problem (415, 400). */
static bool _parts(vf_req *x, mp_part *parts, size_t *n, int64_t *total)
{
    char why[160];
    mp_rc rc = mp_parse(http_header(x->fr.req, "Content-Type"), x->fr.req->body,
                        x->fr.req->body_len, parts, MP_MAX_PARTS, n, why, sizeof(why));
    if (rc != MP_OK) {
        http_problem(x->fr.resp, rc == MP_NOT_MULTIPART ? 415 : 400,
                     rc == MP_NOT_MULTIPART ? "unsupported-media-type" : "invalid-api-params", NULL,
                     "upload: %s", why);
        return false;
    }
    if (*n == 0) {
        http_problem(x->fr.resp, 400, "invalid-api-params", NULL,
                     "upload: no file: send one or more src parts");
        return false;
    }
    *total = 0;
    for (size_t i = 0; i < *n; i++) {
        if (strcmp(parts[i].name, "src") != 0) {
            http_problem(x->fr.resp, 400, "invalid-api-params", NULL,
                         "upload: unexpected form field %.64s (files are src parts)",
                         parts[i].name);
            return false;
        }
        if (!_path_ok(&parts[i], i, x->fr.resp)) return false;
        *total += (int64_t)parts[i].len;
    }
    return true;
}

/* One part staged on the folder's volume and placed at its path; *replaced
 * as vf_xfer_place. False after a problem (nothing left staged). */
static bool _store(vf_req *x, int staging, const mp_part *part, int64_t *replaced)
{
    char staged[TS_UUID_STRLEN];
    ts_uuid4(staged);
    int fd = openat(staging, staged, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0) {
        vf_fs_problem(x->fr.resp, errno, "upload (staging)", part->filename);
        return false;
    }
    bool ok = false;
    ts_err err = {{0}};
    if (!vf_xfer_join_project(&x->f, fd, &err)) {
        TLOG_ERROR("upload staging", "error=\"%s\"", err.msg);
        http_problem(x->fr.resp, 500, "internal-server-error", NULL, "upload staging: %s", err.msg);
        goto out;
    }
    for (size_t done = 0; done < part->len;) {
        ssize_t w = write(fd, part->data + done, part->len - done);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) {
            vf_fs_problem(x->fr.resp, w < 0 ? errno : EIO, "upload", part->filename);
            goto out;
        }
        done += (size_t)w;
    }
    ok = vf_xfer_place(&x->f, staging, staged, fd, part->filename, "upload", replaced, x->fr.resp);
out:
    close(fd);
    if (!ok) (void)unlinkat(staging, staged, 0);
    return ok;
}

void vf_h_upload_form(http_req *req, http_resp *resp, void *ctx)
{
    vf_req x;
    if (!vf_req_begin(&x, ctx, req, resp)) return;
    mp_part parts[MP_MAX_PARTS];
    size_t n = 0;
    int64_t total = 0, reserved = 0;
    int staging = -1, err;
    json_t *done = json_array();
    if (!vf_req_folder(&x, VF_PERM_RW) ||
        !vf_req_host_allows(&x, VF_HOST_UPLOAD, true, "uploading to") ||
        !_parts(&x, parts, &n, &total) || !vf_req_root(&x, "upload"))
        goto out;
    if (vf_xcfg.upload_max > 0 && total > vf_xcfg.upload_max) {
        http_problem(resp, 413, "request-too-large", NULL,
                     "upload: %" PRId64 " bytes pass vfolder.upload_max_size", total);
        goto out;
    }
    if (!vf_xfer_staging_dir(x.f.host, &staging, &err)) {
        vf_fs_problem(resp, err, "upload staging", "");
        goto out;
    }
    ts_err qerr = {{0}};
    if (total > 0) {
        vf_quota_scope_refresh(x.fr.s, &x.c, &x.f);
        vf_quota_rc q = vf_quota_reserve(x.fr.s, &x.f, total, &qerr);
        if (q != VF_QUOTA_OK) {
            vf_quota_problem(resp, q, &x.f, total, &qerr);
            goto out;
        }
        reserved = total;
    }
    int64_t replaced_total = 0;
    for (size_t i = 0; i < n; i++) {
        int64_t replaced = 0;
        if (!_store(&x, staging, &parts[i], &replaced)) break;
        reserved -= (int64_t)parts[i].len;
        replaced_total += replaced;
        json_array_append_new(done, json_pack("{s:s, s:I}", "path", parts[i].filename, "size",
                                              (json_int_t)parts[i].len));
    }
    /* What was replaced, and what a failed part had reserved, go back. */
    if (replaced_total + reserved > 0) vf_quota_release(x.fr.s, &x.f, replaced_total + reserved);
    TLOG_INFO("legacy upload", "files=%zu of=%zu bytes=%" PRId64 " replaced=%" PRId64,
              json_array_size(done), n, total - reserved, replaced_total);
    if (json_array_size(done) == n)
        http_reply_json(resp, 201, json_pack("{s:O}", "uploaded", done));
out:
    json_decref(done);
    if (staging >= 0) close(staging);
    mp_free(parts, n);
    vf_req_end(&x);
}
