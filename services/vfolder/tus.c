/* tus.c: request-upload and the tus 1.0 endpoints (tus.h). */
#include "tus.h"

#include "cors.h"
#include "files.h"
#include "libcommon/log.h"
#include "libcommon/pgjson.h"
#include "quota.h"
#include "request.h"
#include "transfer.h"
#include "volumes.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#define TUS_VERSION "1.0.0"
#define WRITE_BUF ((size_t)1024 * 1024)
/* With fsync on, start the write-back every this many bytes, so that the
 * final fsync finds little left to do and the disk works while bytes arrive. */
#define WRITEBACK_STEP ((int64_t)8 * 1024 * 1024)

static void _tus_headers(http_resp *resp)
{
    http_set_header(resp, "Tus-Resumable", TUS_VERSION);
    http_set_header(resp, "Cache-Control", "no-store");
}

static void _set_i64(http_resp *resp, const char *name, int64_t v)
{
    char buf[32];
    snprintf(buf, sizeof(buf), "%" PRId64, v);
    http_set_header(resp, name, buf);
}

/* Tus-Resumable must name our version (412 with Tus-Version otherwise). */
static bool _tus_version_ok(http_req *req, http_resp *resp)
{
    const char *v = http_header(req, "Tus-Resumable");
    if (v && strcmp(v, TUS_VERSION) == 0) return true;
    http_set_header(resp, "Tus-Version", TUS_VERSION);
    http_problem(resp, 412, "precondition-failed", NULL,
                 "Tus-Resumable: " TUS_VERSION " is required (got %s)", v ? v : "none");
    return false;
}

static bool _parse_i64(const char *s, int64_t *out)
{
    if (!s || !*s || strspn(s, "0123456789") != strlen(s) || strlen(s) > 18) return false;
    *out = strtoll(s, NULL, 10);
    return true;
}

/* ---- the upload row ------------------------------------------------------------------ */

typedef struct up_row {
    char status[16];
    int64_t size;
} up_row;

/* The row of upload id; false after a problem (404 unknown, 503/500). */
static bool _row(svc *s, http_resp *resp, const char *id, up_row *out)
{
    PGconn *conn = pgjson_get(s, resp);
    if (!conn) return false;
    const char *p[] = {id};
    PGresult *r =
        pgjson_query(conn, resp, "upload state",
                     "SELECT status, size FROM vfolder.uploads WHERE id = $1::uuid", 1, p);
    bool ok = r != NULL;
    if (ok && PQntuples(r) != 1) {
        http_problem(resp, 404, "not-found", NULL, "no such upload");
        ok = false;
    } else if (ok) {
        ts_strlcpy(out->status, PQgetvalue(r, 0, 0), sizeof(out->status));
        out->size = strtoll(PQgetvalue(r, 0, 1), NULL, 10);
    }
    PQclear(r);
    pgjson_put(s, conn);
    return ok;
}

/* The staged length of upload id on volume host (0 when nothing arrived
 * yet); false with the errno value. */
static bool _staged_len(const char *host, const char *id, int64_t *len, int *errnum)
{
    int staging;
    *len = 0;
    if (!vf_xfer_staging_dir(host, &staging, errnum)) return false;
    struct stat st;
    if (fstatat(staging, id, &st, AT_SYMLINK_NOFOLLOW) == 0)
        *len = st.st_size;
    else if (errno != ENOENT)
        *errnum = errno;
    close(staging);
    return *errnum == 0;
}

/* The staging directory of volume host (*staging, -1 when it cannot be
 * opened) and in it upload id's staged file (*fd, -1 when nothing arrived
 * yet), locked against a PATCH of it. False when a PATCH holds it. The
 * caller closes both. */
static bool _lock_staged(const char *host, const char *id, int *staging, int *fd)
{
    int err;
    if (!vf_xfer_staging_dir(host, staging, &err)) *staging = -1;
    *fd = *staging < 0 ? -1 : openat(*staging, id, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    return *fd < 0 || flock(*fd, LOCK_EX | LOCK_NB) == 0;
}

/* Mark an open upload done or aborted; true when this call changed it. */
static bool _finish_row(svc *s, const char *id, const char *status, ts_err *err)
{
    pg_pool *pool = svc_pg(s);
    PGconn *conn = pool ? pg_pool_get(pool, 5000, err) : NULL;
    if (!conn) return false;
    const char *p[] = {id, status};
    PGresult *r = PQexecParams(conn,
                               "UPDATE vfolder.uploads SET status = $2, finished_at = now()"
                               " WHERE id = $1::uuid AND status = 'open'",
                               2, NULL, p, NULL, NULL, 0);
    bool changed = PQresultStatus(r) == PGRES_COMMAND_OK && atoi(PQcmdTuples(r)) == 1;
    if (PQresultStatus(r) != PGRES_COMMAND_OK) ts_err_set(err, "%s", PQresultErrorMessage(r));
    PQclear(r);
    pg_pool_put(pool, conn);
    return changed;
}

/* ---- request-upload ------------------------------------------------------------------- */

/* Record the upload t (its quota reserved); false after a problem. */
static bool _record(vf_req *x, const vf_token *t)
{
    char size_s[24], exp_s[24];
    snprintf(size_s, sizeof(size_s), "%" PRId64, t->size);
    snprintf(exp_s, sizeof(exp_s), "%" PRId64, t->exp);
    const char *p[] = {t->id, x->f.id, x->f.host, t->path, size_s, x->c.user_id, exp_s};
    return vf_req_exec(x, "record the upload",
                       "INSERT INTO vfolder.uploads (id, vfolder_id, host, path, size, user_id,"
                       " expires_at) VALUES ($1::uuid, $2::uuid, $3, $4, $5::bigint, $6::uuid,"
                       " to_timestamp($7::bigint))",
                       7, p);
}

void vf_h_request_upload(http_req *req, http_resp *resp, void *ctx)
{
    vf_req x;
    if (!vf_req_begin(&x, ctx, req, resp)) return;
    int pfd = -1, err;
    char *leaf = NULL;
    static const char *const keys[] = {"path", "size", NULL};
    const char *path;
    long long size;
    bool present;
    long long max = vf_xcfg.upload_max > 0 ? vf_xcfg.upload_max : INT64_MAX / 2;
    if (!vf_req_folder(&x, VF_PERM_RW) ||
        !vf_req_host_allows(&x, VF_HOST_UPLOAD, true, "uploading to") || !vf_req_body(&x, keys) ||
        !pgjson_field_str(x.fr.body, "path", true, 1, 4096, &path, resp) ||
        !pgjson_field_int(x.fr.body, "size", true, 0, max, &size, &present, resp))
        goto out;
    if (!vf_fs_path_ok(path)) {
        vf_fs_problem(resp, EINVAL, "request-upload", path);
        goto out;
    }
    /* Parents now (confined), so that what is checked here is what the
     * upload lands in. */
    if (!vf_req_root(&x, "request-upload") ||
        !vf_xfer_parents(x.root, path, "request-upload", resp))
        goto out;
    if (!vf_fs_open_parent(x.root, path, &pfd, &leaf, &err)) {
        vf_fs_problem(resp, err, "request-upload", path);
        goto out;
    }
    struct stat st;
    if (fstatat(pfd, leaf, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(st.st_mode)) {
        vf_fs_problem(resp, EISDIR, "request-upload", path);
        goto out;
    }
    ts_err qerr = {{0}};
    if (size > 0) {
        vf_quota_scope_refresh(x.fr.s, &x.c, &x.f); /* the owner's policy may have changed */
        vf_quota_rc q = vf_quota_reserve(x.fr.s, &x.f, size, &qerr);
        if (q != VF_QUOTA_OK) {
            vf_quota_problem(resp, q, &x.f, size, &qerr);
            goto out;
        }
    }
    vf_token t;
    vf_xfer_token_for(&t, &x, VF_TOKEN_UPLOAD, path, size, vf_xcfg.upload_ttl_ms);
    if (!_record(&x, &t)) { /* the problem was sent */
        if (size > 0) vf_quota_release(x.fr.s, &x.f, size);
        goto out;
    }
    char url_path[64];
    snprintf(url_path, sizeof(url_path), "/v1/transfer/upload/%s", t.id);
    vf_xfer_issue(&x, &t, url_path);
    TLOG_INFO("upload requested", "upload=%s size=%lld", t.id, size);
out:
    free(leaf);
    if (pfd >= 0) close(pfd);
    vf_req_end(&x);
}

/* ---- OPTIONS, creation, HEAD, DELETE ------------------------------------------------------ */

/* tus discovery and the browsers' CORS preflight: neither token nor
 * Tus-Resumable needed. */
static void h_options(http_req *req, http_resp *resp, void *ctx)
{
    (void)ctx;
    vf_cors_preflight(req, resp);
    http_set_header(resp, "Tus-Resumable", TUS_VERSION);
    http_set_header(resp, "Tus-Version", TUS_VERSION);
    http_set_header(resp, "Tus-Extension", "creation,termination");
    if (vf_xcfg.upload_max > 0) _set_i64(resp, "Tus-Max-Size", vf_xcfg.upload_max);
    http_reply(resp, 204, NULL, "", 0);
}

/* What every tus request about an upload begins with: the headers every
 * answer carries (tus, CORS), Tus-Resumable, the token (for the route's upload {id},
 * when it has one). False after the problem. */
static bool _tus_begin(http_req *req, http_resp *resp, vf_token *t)
{
    vf_cors_actual(req, resp);
    _tus_headers(resp);
    return _tus_version_ok(req, resp) &&
           vf_xfer_token(req, resp, VF_TOKEN_UPLOAD, http_param(req, "id"), t);
}

/* The row of an upload still open, and its folder. False after the problem
 * (409 done, 410 aborted, 404 folder gone). */
static bool _open_upload(svc *s, http_resp *resp, const vf_token *t, up_row *row, vf_folder *f)
{
    if (!_row(s, resp, t->id, row)) return false;
    if (strcmp(row->status, "open") != 0) {
        bool done = strcmp(row->status, "done") == 0;
        if (done) _set_i64(resp, "Upload-Offset", row->size);
        http_problem(resp, done ? 409 : 410, "invalid-request", NULL, "the upload is %s",
                     row->status);
        return false;
    }
    ts_err err = {{0}};
    if (vf_folder_by_id(s, t->fid, f, &err)) return true;
    vf_xfer_folder_gone(resp, &err);
    return false;
}

/* POST /v1/transfer/upload?token=: the upload exists already (request-upload);
 * this answers where it is, for tus clients that begin with creation. */
static void h_create(http_req *req, http_resp *resp, void *ctx)
{
    (void)ctx;
    vf_token t;
    if (!_tus_begin(req, resp, &t)) return;
    int64_t len = -1;
    if (!_parse_i64(http_header(req, "Upload-Length"), &len) || len != t.size) {
        http_problem(resp, 400, "invalid-api-params", NULL,
                     "Upload-Length must be the size given to request-upload (%" PRId64 ")",
                     t.size);
    } else {
        char *base = vf_xfer_base_url(req);
        char *loc = ts_asprintf("%s/v1/transfer/upload/%s?%s", base, t.id, req->query);
        http_set_header(resp, "Location", loc);
        free(base);
        free(loc);
        http_reply(resp, 201, NULL, "", 0);
    }
    vf_token_free(&t);
}

static void h_head(http_req *req, http_resp *resp, void *ctx)
{
    svc *s = ctx;
    vf_token t;
    if (!_tus_begin(req, resp, &t)) return;
    up_row row;
    vf_folder f;
    ts_err err = {{0}};
    int errnum;
    if (!_row(s, resp, t.id, &row)) goto out;
    if (strcmp(row.status, "aborted") == 0) {
        http_problem(resp, 410, "gone", NULL, "the upload was aborted");
        goto out;
    }
    int64_t off = row.size;
    if (strcmp(row.status, "open") == 0) {
        if (!vf_folder_by_id(s, t.fid, &f, &err)) {
            vf_xfer_folder_gone(resp, &err);
            goto out;
        }
        if (!_staged_len(f.host, t.id, &off, &errnum)) {
            vf_fs_problem(resp, errnum, "upload state", "");
            goto out;
        }
    }
    _set_i64(resp, "Upload-Offset", off);
    _set_i64(resp, "Upload-Length", row.size);
    http_reply(resp, 200, NULL, "", 0);
out:
    vf_token_free(&t);
}

/* Abort an open upload: row, staged bytes, reservation. */
static bool _abort(svc *s, const char *id, const char *fid, const char *host, int64_t size,
                   int staging, ts_err *err)
{
    if (!_finish_row(s, id, "aborted", err)) return false;
    if (staging >= 0 && unlinkat(staging, id, 0) != 0 && errno != ENOENT)
        TLOG_WARN("staged upload not removed", "upload=%s host=%s error=\"%s\"", id, host,
                  strerror(errno));
    vf_folder f;
    ts_err ferr = {{0}};
    if (size > 0 && vf_folder_by_id(s, fid, &f, &ferr)) vf_quota_release(s, &f, size);
    TLOG_INFO("upload aborted", "upload=%s size=%" PRId64, id, size);
    return true;
}

static void h_terminate(http_req *req, http_resp *resp, void *ctx)
{
    svc *s = ctx;
    vf_token t;
    if (!_tus_begin(req, resp, &t)) return;
    vf_folder f;
    ts_err err = {{0}};
    up_row row;
    int staging = -1, fd = -1;
    if (!_open_upload(s, resp, &t, &row, &f)) goto out;
    if (!_lock_staged(f.host, t.id, &staging, &fd)) {
        http_problem(resp, 409, "invalid-request", NULL, "a PATCH of this upload is in progress");
        goto out;
    }
    if (!_abort(s, t.id, t.fid, f.host, row.size, staging, &err) && err.msg[0]) {
        http_problem(resp, 500, "internal-server-error", NULL, "abort upload: %s", err.msg);
        goto out;
    }
    http_reply(resp, 204, NULL, "", 0);
out:
    if (fd >= 0) close(fd);
    if (staging >= 0) close(staging);
    vf_token_free(&t);
}

/* ---- PATCH (streamed) -------------------------------------------------------------------- */

typedef struct patch {
    svc *s;
    vf_token t;
    vf_folder f;
    int staging, fd;
    int64_t offset; /* bytes on disk + in buf */
    int64_t size;
    int64_t writeback_from; /* sync_file_range started up to here */
    char *buf;
    size_t buf_len;
    bool failed;
} patch;

static bool _flush(patch *p, http_resp *resp)
{
    size_t done = 0;
    int64_t at = p->offset - (int64_t)p->buf_len;
    while (done < p->buf_len) {
        ssize_t n = pwrite(p->fd, p->buf + done, p->buf_len - done, (off_t)(at + (int64_t)done));
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) {
            int e = n < 0 ? errno : EIO;
            /* Keep the file at what was written: the offset stays truthful. */
            p->offset = at + (int64_t)done;
            if (ftruncate(p->fd, (off_t)p->offset) != 0) { /* best effort */
            }
            p->buf_len = 0;
            p->failed = true;
            if (resp) vf_fs_problem(resp, e, "upload", p->t.path);
            TLOG_WARN("upload write failed", "upload=%s error=\"%s\"", p->t.id, strerror(e));
            return false;
        }
        done += (size_t)n;
    }
    p->buf_len = 0;
    if (vf_xcfg.upload_fsync && p->offset - p->writeback_from >= WRITEBACK_STEP) {
        (void)sync_file_range(p->fd, p->writeback_from, p->offset - p->writeback_from,
                              SYNC_FILE_RANGE_WRITE);
        p->writeback_from = p->offset;
    }
    return true;
}

/* The staged file joins the folder's project on XFS (transfer.h). */
static bool _join_project(patch *p, http_resp *resp)
{
    ts_err err = {{0}};
    if (vf_xfer_join_project(&p->f, p->fd, &err)) return true;
    TLOG_ERROR("upload staging", "upload=%s error=\"%s\"", p->t.id, err.msg);
    http_problem(resp, 500, "internal-server-error", NULL, "upload staging: %s", err.msg);
    return false;
}

static void *patch_begin(http_req *req, http_resp *resp, void *ctx)
{
    svc *s = ctx;
    patch *p = ts_calloc(1, sizeof(*p));
    p->s = s;
    p->staging = p->fd = -1;
    if (!_tus_begin(req, resp, &p->t)) return p;
    char media[64];
    const char *ct = http_header(req, "Content-Type");
    size_t ml = ct ? strcspn(ct, "; \t") : 0;
    snprintf(media, sizeof(media), "%.*s", (int)ml, ct ? ct : "");
    if (strcasecmp(media, "application/offset+octet-stream") != 0) {
        http_problem(resp, 415, "unsupported-media-type", NULL,
                     "PATCH needs Content-Type: application/offset+octet-stream");
        return p;
    }
    int64_t offset;
    if (!_parse_i64(http_header(req, "Upload-Offset"), &offset)) {
        http_problem(resp, 400, "invalid-api-params", NULL,
                     "Upload-Offset (a non-negative integer) is required");
        return p;
    }
    up_row row;
    if (!_open_upload(s, resp, &p->t, &row, &p->f)) return p;
    p->size = row.size;
    int err;
    if (!vf_xfer_staging_dir(p->f.host, &p->staging, &err)) {
        vf_fs_problem(resp, err, "upload staging", "");
        return p;
    }
    p->fd = openat(p->staging, p->t.id, O_WRONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (p->fd < 0) {
        vf_fs_problem(resp, errno, "upload staging", "");
        return p;
    }
    if (flock(p->fd, LOCK_EX | LOCK_NB) != 0) {
        http_problem(resp, 409, "invalid-request", NULL,
                     "another PATCH of this upload is in progress");
        return p;
    }
    if (!_join_project(p, resp)) return p;
    struct stat st;
    if (fstat(p->fd, &st) != 0) {
        vf_fs_problem(resp, errno, "upload staging", "");
        return p;
    }
    if (st.st_size != offset) {
        _set_i64(resp, "Upload-Offset", st.st_size);
        http_problem(resp, 409, "invalid-request", NULL,
                     "Upload-Offset %" PRId64 " does not match the upload's offset %" PRId64,
                     offset, (int64_t)st.st_size);
        return p;
    }
    p->offset = p->writeback_from = offset;
    int64_t cl;
    if (_parse_i64(http_header(req, "Content-Length"), &cl) && offset + cl > p->size) {
        http_problem(resp, 413, "request-too-large", NULL,
                     "%" PRId64 " bytes at offset %" PRId64 " pass the upload's length %" PRId64,
                     cl, offset, p->size);
        return p;
    }
    p->buf = ts_malloc(WRITE_BUF);
    return p;
}

/* The server gives body() and end() a fresh response (what begin() set is
 * gone): the headers every tus answer carries, again. */
static void _answer_headers(http_req *req, http_resp *resp)
{
    vf_cors_actual(req, resp);
    _tus_headers(resp);
}

static bool patch_body(http_req *req, http_resp *resp, void *state, const char *data, size_t len)
{
    patch *p = state;
    if (p->offset + (int64_t)len > p->size) {
        _answer_headers(req, resp);
        _flush(p, NULL);
        _set_i64(resp, "Upload-Offset", p->offset);
        http_problem(resp, 413, "request-too-large", NULL,
                     "the body passes the upload's length %" PRId64 " (the quota reserved for it)",
                     p->size);
        p->failed = true;
        return false;
    }
    while (len) {
        size_t n = WRITE_BUF - p->buf_len < len ? WRITE_BUF - p->buf_len : len;
        memcpy(p->buf + p->buf_len, data, n);
        p->buf_len += n;
        p->offset += (int64_t)n;
        data += n;
        len -= n;
        if (p->buf_len == WRITE_BUF && !_flush(p, resp)) {
            _answer_headers(req, resp);
            return false;
        }
    }
    return true;
}

/* The last byte is in: into the folder, atomically. */
static bool _complete(patch *p, http_resp *resp)
{
    int64_t old = 0;
    if (!vf_xfer_place(&p->f, p->staging, p->t.id, p->fd, p->t.path, "upload", &old, resp))
        return false;
    ts_err ferr = {{0}};
    if (!_finish_row(p->s, p->t.id, "done", &ferr) && ferr.msg[0])
        TLOG_WARN("upload done but not recorded", "upload=%s error=\"%s\"", p->t.id, ferr.msg);
    if (old > 0) vf_quota_release(p->s, &p->f, old);
    TLOG_INFO("upload complete", "upload=%s size=%" PRId64 " replaced=%" PRId64, p->t.id, p->size,
              old);
    return true;
}

static void patch_end(http_req *req, http_resp *resp, void *state)
{
    patch *p = state;
    _answer_headers(req, resp);
    if (!_flush(p, resp)) return;
    if (p->offset == p->size && !_complete(p, resp)) return;
    _set_i64(resp, "Upload-Offset", p->offset);
    http_reply(resp, 204, NULL, "", 0);
}

static void patch_done(void *state, bool completed)
{
    (void)completed;
    patch *p = state;
    if (!p) return;
    if (p->fd >= 0 && p->buf_len) _flush(p, NULL); /* cut off mid-way: keep what arrived */
    if (p->fd >= 0) close(p->fd);
    if (p->staging >= 0) close(p->staging);
    free(p->buf);
    vf_token_free(&p->t);
    free(p);
}

static const http_stream_handler PATCH_HANDLER = {patch_begin, patch_body, patch_end, patch_done};

void vf_tus_routes(svc *s)
{
    http_router *r = svc_router(s);
    http_route(r, "OPTIONS", "/v1/transfer/upload", h_options, s);
    http_route(r, "OPTIONS", "/v1/transfer/upload/{id}", h_options, s);
    http_route(r, "POST", "/v1/transfer/upload", h_create, s);
    http_route(r, "HEAD", "/v1/transfer/upload/{id}", h_head, s);
    http_route(r, "DELETE", "/v1/transfer/upload/{id}", h_terminate, s);
    http_route_stream(r, "PATCH", "/v1/transfer/upload/{id}", &PATCH_HANDLER, s);
}

/* ---- the sweeper ---------------------------------------------------------------------------- */

void vf_tus_sweep(svc *s)
{
    pg_pool *pool = svc_pg(s);
    ts_err err = {{0}};
    PGconn *conn = pool ? pg_pool_get(pool, 5000, &err) : NULL;
    if (!conn) return;
    PGresult *r = PQexec(conn, "SELECT id::text, vfolder_id::text, host, size FROM vfolder.uploads"
                               " WHERE status = 'open' AND expires_at < now() - interval '1 minute'"
                               " ORDER BY expires_at LIMIT 200");
    /* Old finished rows go too (a week is plenty for a client's HEAD). */
    PQclear(PQexec(conn, "DELETE FROM vfolder.uploads WHERE status <> 'open'"
                         " AND finished_at < now() - interval '7 days'"));
    pg_pool_put(pool, conn);
    if (PQresultStatus(r) != PGRES_TUPLES_OK) {
        TLOG_WARN("upload sweep failed", "error=\"%s\"", PQresultErrorMessage(r));
        PQclear(r);
        return;
    }
    for (int i = 0; i < PQntuples(r); i++) {
        const char *id = PQgetvalue(r, i, 0), *fid = PQgetvalue(r, i, 1),
                   *host = PQgetvalue(r, i, 2);
        int64_t size = strtoll(PQgetvalue(r, i, 3), NULL, 10);
        tlog_ctx_entity("folder", fid);
        int staging, fd;
        ts_err e = {{0}};
        /* Held by a PATCH still running: the next sweep. Another replica's
         * sweep took it first: nothing to say. */
        if (_lock_staged(host, id, &staging, &fd) && !_abort(s, id, fid, host, size, staging, &e) &&
            e.msg[0])
            TLOG_WARN("expired upload not aborted", "upload=%s error=\"%s\"", id, e.msg);
        if (fd >= 0) close(fd);
        if (staging >= 0) close(staging);
    }
    tlog_ctx_entity("folder", NULL);
    PQclear(r);
}
