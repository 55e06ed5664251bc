/* transfer.c: transfer tokens at the client-facing endpoints, the token
 * secret and the upload table, staging directories, and downloads (a file
 * with Range support, a directory as a streamed zip). See transfer.h. */
#include "transfer.h"

#include "cors.h"
#include "files.h"
#include "libcommon/log.h"
#include "libcommon/pgjson.h"
#include "request.h"
#include "volumes.h"
#include "xfs_quota.h"
#include "zipstream.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

vf_xfer_config vf_xcfg;

/* ---- tokens at the door ------------------------------------------------------------ */

bool vf_xfer_token(http_req *req, http_resp *resp, vf_token_op op, const char *upload_id,
                   vf_token *out)
{
    memset(out, 0, sizeof(*out));
    if (!vf_token_has_secret()) {
        http_problem(resp, 503, "service-unavailable", NULL, "transfer tokens are not ready yet");
        return false;
    }
    const char *text = http_query_arg(req, "token");
    if (!text || !*text) {
        http_problem(resp, 401, "auth-failed", NULL,
                     "a transfer token is required (?token= from request-upload or "
                     "request-download)");
        return false;
    }
    switch (vf_token_verify(text, ts_now_wall_ms() / 1000, out)) {
    case VF_TOKEN_OK:
        break;
    case VF_TOKEN_EXPIRED:
        http_problem(resp, 401, "auth-failed", NULL,
                     "the transfer token has expired: request a new one");
        return false;
    default:
        http_problem(resp, 401, "auth-failed", NULL, "the transfer token is not valid");
        return false;
    }
    if (out->op != op || (upload_id && strcmp(upload_id, out->id) != 0)) {
        http_problem(resp, 403, "forbidden", NULL, "the transfer token is for another %s",
                     out->op != op ? "operation" : "upload");
        vf_token_free(out);
        return false;
    }
    tlog_ctx_user(out->uid);
    tlog_ctx_entity("folder", out->fid);
    return true;
}

char *vf_xfer_base_url(http_req *req)
{
    if (vf_xcfg.public_url && *vf_xcfg.public_url) {
        size_t n = strlen(vf_xcfg.public_url);
        while (n && vf_xcfg.public_url[n - 1] == '/')
            n--;
        return ts_strndup(vf_xcfg.public_url, n);
    }
    const char *host = http_header(req, "Host");
    bool sane = host && *host && strlen(host) < 256 && strcspn(host, "/?#@ \t\r\n") == strlen(host);
    return ts_asprintf("http://%s", sane ? host : "127.0.0.1:8095");
}

void vf_xfer_folder_gone(http_resp *resp, const ts_err *err)
{
    TLOG_INFO("transfer: folder not available", "error=\"%s\"", err ? err->msg : "");
    http_problem(resp, 404, "vfolder-not-found", NULL,
                 "the folder of this transfer is gone or not ready");
}

/* ---- the secret (its table: migrations/0002_transfer_tables.sql) ---------------------- */

bool vf_xfer_db_init(svc *s, ts_err *err)
{
    pg_pool *pool = svc_pg(s);
    PGconn *conn = pool ? pg_pool_get(pool, 10000, err) : NULL;
    if (!conn) {
        ts_err_prefix(err, "transfer tables");
        return false;
    }
    bool ok = pg_begin(conn, err);
    char *secret = NULL;
    bool configured = vf_xcfg.token_secret && *vf_xcfg.token_secret;
    if (ok && configured) {
        if (strlen(vf_xcfg.token_secret) < VF_TOKEN_SECRET_MIN) {
            ts_err_set(err, "vfolder.token_secret: at least %d characters", VF_TOKEN_SECRET_MIN);
            ok = false;
        } else {
            secret = ts_strdup(vf_xcfg.token_secret);
        }
    } else if (ok) {
        char *fresh = vf_token_new_secret();
        const char *p[] = {fresh};
        PGresult *r = PQexecParams(conn,
                                   "INSERT INTO vfolder.transfer_secrets (name, secret)"
                                   " VALUES ('token', $1) ON CONFLICT (name) DO NOTHING",
                                   1, NULL, p, NULL, NULL, 0);
        ok = PQresultStatus(r) == PGRES_COMMAND_OK;
        if (!ok) ts_err_set(err, "%s", PQresultErrorMessage(r));
        PQclear(r);
        free(fresh);
        if (ok) {
            r = PQexec(conn, "SELECT secret FROM vfolder.transfer_secrets WHERE name = 'token'");
            ok = PQresultStatus(r) == PGRES_TUPLES_OK && PQntuples(r) == 1;
            if (ok)
                secret = ts_strdup(PQgetvalue(r, 0, 0));
            else
                ts_err_set(err, "token secret missing after insert: %s", PQresultErrorMessage(r));
            PQclear(r);
        }
    }
    if (ok) ok = pg_commit(conn, err);
    if (!ok) pg_rollback(conn);
    pg_pool_put(pool, conn);
    if (!ok) {
        ts_err_prefix(err, "transfer tables");
        free(secret);
        return false;
    }
    vf_token_set_secret(secret);
    free(secret);
    TLOG_INFO("transfer tokens ready", "secret_from=%s", configured ? "config" : "postgresql");
    return true;
}

bool vf_xfer_staging_dir(const char *host, int *fd, int *errnum)
{
    *fd = -1;
    const vf_volume *v = vf_volume_find(host);
    if (!v) {
        *errnum = ENOENT;
        return false;
    }
    char path[VF_PATH_MAX + 32];
    snprintf(path, sizeof(path), "%s/%s", v->path, VF_STAGING_DIR);
    *fd = open(path, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (*fd < 0 && errno == ENOENT) {
        if (mkdir(path, 0700) != 0 && errno != EEXIST) {
            *errnum = errno;
            return false;
        }
        *fd = open(path, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    }
    *errnum = *fd < 0 ? errno : 0;
    return *fd >= 0;
}

/* ---- staged files into place ------------------------------------------------------- */

bool vf_xfer_parents(int root, const char *path, const char *what, http_resp *resp)
{
    const char *slash = strrchr(path, '/');
    if (!slash || slash == path) return true;
    char *parent = ts_strndup(path, (size_t)(slash - path));
    int err;
    bool ok = vf_fs_mkdir(root, parent, true, true, &err);
    free(parent);
    if (!ok) vf_fs_problem(resp, err, what, path);
    return ok;
}

bool vf_xfer_join_project(const vf_folder *f, int fd, ts_err *err)
{
    const vf_volume *v = vf_volume_find(f->host);
    if (!v || strcmp(v->fs_type, "xfs") != 0) return true;
    /* Not vf_fs_open_root: the ioctl needs a real descriptor, not O_PATH. */
    int dir = open(f->host_path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (dir < 0) {
        ts_err_set(err, "open the folder: %s", strerror(errno));
        return false;
    }
    uint32_t projid = vf_xfs_project_of(dir);
    close(dir);
    return vf_xfs_project_adopt(fd, projid, err);
}

bool vf_xfer_place(const vf_folder *f, int staging, const char *staged, int fd, const char *path,
                   const char *what, int64_t *replaced, http_resp *resp)
{
    *replaced = 0;
    /* the sessions' root owns it, readable as a file made with umask 022
     * (volumes.h, vfolder.file_owner); staged, it was 0600 */
    vf_own_fd(fd);
    if (fchmod(fd, 0644) != 0) {
        vf_fs_problem(resp, errno, what, path);
        return false;
    }
    if (vf_xcfg.upload_fsync && fsync(fd) != 0) {
        vf_fs_problem(resp, errno, what, path);
        return false;
    }
    int root, pfd = -1, err;
    if (!vf_fs_open_root(f->host_path, &root, &err)) {
        vf_fs_problem(resp, err, what, "");
        return false;
    }
    bool ok = false;
    char *leaf = NULL;
    /* the parents may have been removed meanwhile */
    if (!vf_xfer_parents(root, path, what, resp)) goto out;
    if (!vf_fs_open_parent(root, path, &pfd, &leaf, &err)) {
        vf_fs_problem(resp, err, what, path);
        goto out;
    }
    struct stat st;
    if (fstatat(pfd, leaf, &st, AT_SYMLINK_NOFOLLOW) == 0) {
        if (S_ISDIR(st.st_mode)) {
            vf_fs_problem(resp, EISDIR, what, path);
            goto out;
        }
        if (S_ISREG(st.st_mode)) *replaced = st.st_size;
    }
    if (renameat(staging, staged, pfd, leaf) != 0) {
        *replaced = 0;
        vf_fs_problem(resp, errno, what, path);
        goto out;
    }
    ok = true;
out:
    free(leaf);
    if (pfd >= 0) close(pfd);
    close(root);
    return ok;
}

/* ---- issuing tokens ------------------------------------------------------------------ */

void vf_xfer_token_for(vf_token *t, const vf_req *x, vf_token_op op, const char *path, int64_t size,
                       int64_t ttl_ms)
{
    memset(t, 0, sizeof(*t));
    t->op = op;
    t->path = (char *)path;
    t->size = size;
    t->exp = ts_now_wall_ms() / 1000 + ttl_ms / 1000;
    ts_strlcpy(t->fid, x->f.id, sizeof(t->fid));
    ts_strlcpy(t->host, x->f.host, sizeof(t->host));
    ts_strlcpy(t->uid, x->c.user_id, sizeof(t->uid));
    ts_uuid4(t->id);
}

void vf_xfer_issue(vf_req *x, const vf_token *t, const char *url_path)
{
    char *token = vf_token_sign(t);
    char *base = vf_xfer_base_url(x->fr.req);
    char *url = ts_asprintf("%s%s", base, url_path);
    json_t *o =
        json_pack("{s:s, s:s, s:I}", "token", token, "url", url, "expires_at", (json_int_t)t->exp);
    if (t->op == VF_TOKEN_UPLOAD) json_object_set_new(o, "upload_id", json_string(t->id));
    http_reply_json(x->fr.resp, 200, o);
    free(token);
    free(base);
    free(url);
}

/* ---- request-download --------------------------------------------------------------- */

void vf_h_request_download(http_req *req, http_resp *resp, void *ctx)
{
    vf_req x;
    if (!vf_req_begin(&x, ctx, req, resp)) return;
    /* "path": Backend.AI 24.09's name for it, "file" older releases' */
    static const char *const keys[] = {"file", "path", "archive", NULL};
    const char *file = NULL;
    bool archive = false, present;
    int fd = -1, err;
    struct stat st;
    if (!vf_req_folder(&x, VF_PERM_RO) ||
        !vf_req_host_allows(&x, VF_HOST_DOWNLOAD, true, "downloading from") ||
        !vf_req_body(&x, keys) ||
        !pgjson_field_str(x.fr.body, "path", false, 0, 4096, &file, resp) ||
        (!file && !pgjson_field_str(x.fr.body, "file", true, 0, 4096, &file, resp)) ||
        !pgjson_field_bool(x.fr.body, "archive", false, &archive, &present, resp) ||
        !vf_req_root(&x, "request-download"))
        goto out;
    if (!vf_fs_open(x.root, file, O_PATH, 0, &fd, &err)) {
        vf_fs_problem(resp, err, "request-download", file);
        goto out;
    }
    if (fstat(fd, &st) != 0 || (!S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode))) {
        http_problem(resp, 400, "invalid-api-params", NULL,
                     "request-download: not a regular file or a directory: %s", file);
        goto out;
    }
    if (S_ISDIR(st.st_mode) && !archive) {
        http_problem(resp, 400, "invalid-api-params", NULL,
                     "request-download: %s is a directory: set \"archive\": true for a zip", file);
        goto out;
    }
    vf_token t;
    vf_xfer_token_for(&t, &x, VF_TOKEN_DOWNLOAD, file, -1, vf_xcfg.download_ttl_ms);
    t.archive = S_ISDIR(st.st_mode);
    vf_xfer_issue(&x, &t, "/v1/transfer/download");
    TLOG_INFO("download token issued", "archive=%d", t.archive);
out:
    if (fd >= 0) close(fd);
    vf_req_end(&x);
}

/* ---- download ------------------------------------------------------------------------ */

vf_range vf_xfer_parse_range(const char *value, uint64_t size, uint64_t *start, uint64_t *len)
{
    if (!value) return VF_RANGE_ALL;
    while (*value == ' ')
        value++;
    if (strncmp(value, "bytes=", 6) != 0) return VF_RANGE_ALL;
    const char *p = value + 6;
    if (strchr(p, ',')) return VF_RANGE_ALL; /* several ranges: the whole body instead */
    char *end;
    if (*p == '-') { /* the last N bytes */
        errno = 0;
        unsigned long long n = strtoull(p + 1, &end, 10);
        if (end == p + 1 || *end || errno) return VF_RANGE_ALL;
        if (n == 0 || size == 0) return VF_RANGE_UNSATISFIABLE;
        if (n > size) n = size;
        *start = size - n;
        *len = n;
        return VF_RANGE_PART;
    }
    if (*p < '0' || *p > '9') return VF_RANGE_ALL;
    errno = 0;
    unsigned long long a = strtoull(p, &end, 10);
    if (errno || *end != '-') return VF_RANGE_ALL;
    const char *q = end + 1;
    unsigned long long b = size ? size - 1 : 0;
    if (*q) {
        if (*q < '0' || *q > '9') return VF_RANGE_ALL;
        b = strtoull(q, &end, 10);
        if (errno || *end) return VF_RANGE_ALL;
        if (b < a) return VF_RANGE_ALL; /* invalid: ignored (RFC 9110) */
        if (b >= size) b = size ? size - 1 : 0;
    }
    if (a >= size) return VF_RANGE_UNSATISFIABLE;
    *start = a;
    *len = b - a + 1;
    return VF_RANGE_PART;
}

/* attachment; filename="ascii"; filename*=UTF-8''percent-encoded */
static void _disposition(http_resp *resp, const char *name)
{
    static const char hex[] = "0123456789ABCDEF";
    size_t n = strlen(name);
    char *ascii = ts_malloc(n + 1), *enc = ts_malloc(n * 3 + 1), *e = enc;
    for (size_t i = 0; i < n; i++) {
        unsigned char ch = (unsigned char)name[i];
        ascii[i] = (ch < 0x20 || ch >= 0x7f || ch == '"' || ch == '\\') ? '_' : (char)ch;
        if ((ch >= 'A' && ch <= 'Z') || (ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') ||
            strchr("!#$&+-.^_`|~", ch)) {
            *e++ = (char)ch;
        } else {
            *e++ = '%';
            *e++ = hex[ch >> 4];
            *e++ = hex[ch & 15];
        }
    }
    ascii[n] = '\0';
    *e = '\0';
    char *v = ts_asprintf("attachment; filename=\"%s\"; filename*=UTF-8''%s", ascii, enc);
    http_set_header(resp, "Content-Disposition", v);
    free(v);
    free(ascii);
    free(enc);
}

static const char *_basename(const char *path, const char *fallback)
{
    size_t n = strlen(path);
    while (n && path[n - 1] == '/')
        n--;
    static _Thread_local char buf[512];
    size_t start = n;
    while (start && path[start - 1] != '/')
        start--;
    size_t len = n - start;
    if (len == 0 || len >= sizeof(buf) || (len == 1 && path[start] == '.') ||
        (len == 2 && path[start] == '.' && path[start + 1] == '.'))
        return fallback;
    memcpy(buf, path + start, len);
    buf[len] = '\0';
    return buf;
}

/* The reader of http_reply_reader: > 0 bytes, 0 at the end, -1 on an error. */
static long _zip_read(void *cls, uint64_t pos, char *buf, size_t max)
{
    (void)pos;
    size_t n = 0;
    return vf_zip_read(cls, buf, max, &n) ? (long)n : -1;
}

static void _zip_release(void *cls)
{
    vf_zip_free(cls);
}

static void _send_file(http_req *req, http_resp *resp, int fd, const struct stat *st,
                       const char *name)
{
    char etag[96], lm[64];
    snprintf(etag, sizeof(etag), "\"%" PRIx64 "-%" PRIx64 "-%" PRIx64 "%09ld\"",
             (uint64_t)st->st_ino, (uint64_t)st->st_size, (uint64_t)st->st_mtim.tv_sec,
             st->st_mtim.tv_nsec);
    struct tm tm;
    gmtime_r(&st->st_mtime, &tm);
    strftime(lm, sizeof(lm), "%a, %d %b %Y %H:%M:%S GMT", &tm);
    http_set_header(resp, "Accept-Ranges", "bytes");
    http_set_header(resp, "ETag", etag);
    http_set_header(resp, "Last-Modified", lm);
    _disposition(resp, name);
    uint64_t size = (uint64_t)st->st_size, start = 0, len = size;
    const char *range = http_header(req, "Range");
    const char *if_range = http_header(req, "If-Range");
    if (range && if_range && strcmp(if_range, etag) != 0 && strcmp(if_range, lm) != 0)
        range = NULL; /* the file changed since the client's copy: all of it */
    vf_range r = vf_xfer_parse_range(range, size, &start, &len);
    if (r == VF_RANGE_UNSATISFIABLE) {
        char cr[64];
        snprintf(cr, sizeof(cr), "bytes */%" PRIu64, size);
        http_set_header(resp, "Content-Range", cr);
        http_problem(resp, 416, "range-not-satisfiable", NULL,
                     "range %s is outside the file (%" PRIu64 " bytes)", range, size);
        close(fd);
        return;
    }
    if (r == VF_RANGE_PART) {
        char cr[96];
        snprintf(cr, sizeof(cr), "bytes %" PRIu64 "-%" PRIu64 "/%" PRIu64, start, start + len - 1,
                 size);
        http_set_header(resp, "Content-Range", cr);
    }
    http_reply_fd(req, resp, r == VF_RANGE_PART ? 206 : 200, "application/octet-stream", fd, start,
                  len);
}

void vf_h_download(http_req *req, http_resp *resp, void *ctx)
{
    (void)ctx;
    vf_cors_actual(req, resp);
    vf_token t;
    if (!vf_xfer_token(req, resp, VF_TOKEN_DOWNLOAD, NULL, &t)) return;
    int root = -1;
    /* The folder's directory follows from its volume and id: no database
     * round trip per download. A folder moved to the trash (or purged) since
     * the token was issued has no directory there any more: 404. */
    const vf_volume *v = vf_volume_find(t.host);
    char dir[VF_PATH_MAX];
    if (!v) {
        ts_err err;
        ts_err_set(&err, "volume %s is not configured here", t.host);
        vf_xfer_folder_gone(resp, &err);
        goto out;
    }
    vf_volume_folder_path(v, t.fid, dir);
    int err, fd = -1;
    if (!vf_fs_open_root(dir, &root, &err) && err == ENOENT) {
        vf_xfer_folder_gone(resp, NULL);
        goto out;
    }
    /* O_NONBLOCK: a FIFO planted under the name must not hang the worker. */
    if (root < 0 || !vf_fs_open(root, t.path, O_RDONLY | O_NONBLOCK, 0, &fd, &err)) {
        vf_fs_problem(resp, err, "download", t.path);
        goto out;
    }
    struct stat st;
    if (fstat(fd, &st) != 0) {
        vf_fs_problem(resp, errno, "download", t.path);
        close(fd);
        goto out;
    }
    if (S_ISREG(st.st_mode)) {
        _send_file(req, resp, fd, &st, _basename(t.path, "folder"));
    } else if (S_ISDIR(st.st_mode) && t.archive) {
        vf_zip *z = vf_zip_new(fd, (size_t)vf_xcfg.zip_max_entries, &err);
        if (!z) {
            if (err == E2BIG)
                http_problem(resp, 413, "request-too-large", NULL,
                             "the directory has more than %lld entries to archive",
                             (long long)vf_xcfg.zip_max_entries);
            else
                vf_fs_problem(resp, err, "download (archive)", t.path);
            goto out;
        }
        char *zname = ts_asprintf("%s.zip", _basename(t.path, "folder"));
        _disposition(resp, zname);
        free(zname);
        TLOG_INFO("zip download", "entries=%zu bytes=%" PRIu64, vf_zip_entries(z),
                  vf_zip_file_bytes(z));
        http_reply_reader(req, resp, 200, "application/zip", HTTP_SIZE_UNKNOWN, _zip_read,
                          _zip_release, z);
    } else {
        close(fd);
        http_problem(resp, 409, "invalid-api-params", NULL,
                     "download: %s is no longer what the token was issued for", t.path);
    }
out:
    if (root >= 0) close(root);
    vf_token_free(&t);
}

/* ---- Backend.AI's download_with_token ----------------------------------------------- */

void vf_h_download_with_token(http_req *req, http_resp *resp, void *ctx)
{
    (void)ctx;
    vf_token t;
    if (!vf_xfer_token(req, resp, VF_TOKEN_DOWNLOAD, NULL, &t)) return;
    /* A verified token is base64url and a dot: safe in a query as it is. */
    char *base = vf_xfer_base_url(req);
    char *url = ts_asprintf("%s/v1/transfer/download?token=%s", base, http_query_arg(req, "token"));
    http_set_header(resp, "Location", url);
    http_set_header(resp, "Cache-Control", "no-store");
    http_reply(resp, 302, NULL, "", 0);
    TLOG_INFO("download_with_token redirected", "");
    free(url);
    free(base);
    vf_token_free(&t);
}
