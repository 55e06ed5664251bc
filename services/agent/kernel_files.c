/* kernel_files.c: files in and out of a running kernel's /home/work
 * (kernel_files.h), every path beneath its home dir (home_fs.h). */
#include "services/agent/kernel_files.h"

#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "libcommon/log.h"
#include "libcommon/multipart.h"
#include "libcommon/token.h"
#include "services/agent/home_fs.h"
#include "services/agent/http_api.h"

#define LIST_MAX_ENTRIES 10000

/* The running kernel of the path with its home dir open, or false after a
 * problem answer (404 unknown, 409 not running). */
static bool _home(const http_api_agent *a, http_req *req, http_resp *resp, home_fs *h)
{
    const char *id = http_param(req, "id");
    kernel_view v;
    if (!id || !kernels_get(a->ks, id, &v)) {
        http_problem(resp, 404, "kernel-not-found", "Kernel not found",
                     "no kernel '%s' on this agent", id ? id : "");
        return false;
    }
    tlog_ctx_session(v.session_id);
    if (strcmp(v.status, "running") != 0) {
        http_problem(resp, 409, "kernel-not-running", "Kernel not running", "kernel %s is %s",
                     v.kernel_id, v.status);
        return false;
    }
    char *dir = runtime_home_dir(a->rt, v.kernel_id);
    ts_err err = {{0}};
    bool ok = home_fs_open(h, dir, &err);
    free(dir);
    if (!ok) {
        TLOG_WARN("home dir unavailable", "error=\"%s\"", err.msg);
        http_problem(resp, 409, "kernel-not-running", "Kernel not running",
                     "kernel %s has no home directory on this agent", v.kernel_id);
    }
    return ok;
}

/* A problem for errno e of an operation on the user's path. */
static void _fs_problem(http_resp *resp, int e, const char *path)
{
    const char *type;
    int status = home_fs_status(e, &type);
    const char *why = e == EXDEV || e == ELOOP ? "a symlink on the way leads outside /home/work "
                                                 "or is not followed here"
                      : e == E2BIG             ? "the answer would exceed the agent's limit of "
                                                 "16 MiB"
                      : e == ENAMETOOLONG      ? "a name is too long"
                      : e == EISDIR            ? "it is a directory"
                      : e == EINVAL            ? "it is not a regular file"
                                               : strerror(e);
    http_problem(resp, status, type, NULL, "%.300s: %s", path, why);
}

/* ---- upload ----------------------------------------------------------------------- */

static bool _write_all(int fd, const char *p, size_t n)
{
    while (n) {
        ssize_t w = write(fd, p, n);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) return false;
        p += w;
        n -= (size_t)w;
    }
    return true;
}

/* POST /v1/kernels/{id}/files/upload: multipart/form-data; each part with a
 * filename is written to that path under /home/work. All paths are checked
 * before anything is written. 204. */
static void h_upload(http_req *req, http_resp *resp, void *ctx)
{
    const http_api_agent *a = http_api_agent_of(req, resp, ctx);
    if (!a) return;
    mp_part parts[MP_MAX_PARTS];
    size_t n = 0;
    char why[160];
    mp_rc rc = mp_parse(http_header(req, "Content-Type"), req->body, req->body_len, parts,
                        MP_MAX_PARTS, &n, why, sizeof(why));
    if (rc != MP_OK) {
        http_problem(resp, rc == MP_NOT_MULTIPART ? 415 : 400,
                     rc == MP_NOT_MULTIPART ? "unsupported-media-type" : "invalid-api-params", NULL,
                     "%s", why);
        return;
    }
    char(*rel)[HOME_FS_PATH_MAX] = ts_malloc((n ? n : 1) * sizeof(*rel));
    size_t nfiles = 0;
    bool ok = true;
    for (size_t i = 0; ok && i < n; i++) {
        if (!parts[i].filename) continue;
        ts_err err = {{0}};
        ok = home_fs_path(parts[i].filename, rel[i], sizeof(rel[i]), &err);
        if (ok && strcmp(rel[i], ".") == 0) {
            ts_err_set(&err, "part %zu names no file", i + 1);
            ok = false;
        }
        if (!ok) http_problem(resp, 400, "invalid-api-params", NULL, "%s", err.msg);
        nfiles++;
    }
    if (ok && nfiles == 0) {
        http_problem(resp, 400, "invalid-api-params", NULL,
                     "no file: upload needs parts (named src) with a filename, the path under "
                     "/home/work");
        ok = false;
    }
    home_fs h = {.fd = -1};
    if (ok) ok = _home(a, req, resp, &h);
    int64_t total = 0;
    for (size_t i = 0; ok && i < n; i++) {
        if (!parts[i].filename) continue;
        int fd = home_fs_write_open(&h, rel[i]);
        if (fd < 0) {
            _fs_problem(resp, errno, parts[i].filename);
            ok = false;
            break;
        }
        bool wrote = _write_all(fd, parts[i].data, parts[i].len);
        int e = errno;
        close(fd);
        if (!wrote) {
            _fs_problem(resp, e, parts[i].filename);
            ok = false;
        }
        total += (int64_t)parts[i].len;
    }
    home_fs_close(&h);
    if (ok) {
        TLOG_INFO("files uploaded", "files=%zu bytes=%" PRId64, nfiles, total);
        http_reply(resp, 204, NULL, NULL, 0);
    }
    free(rel);
    mp_free(parts, n);
}

/* ---- download --------------------------------------------------------------------- */

static int _hex(char c)
{
    return c >= '0' && c <= '9'   ? c - '0'
           : c >= 'a' && c <= 'f' ? c - 'a' + 10
           : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                  : -1;
}

/* Every value of the query's key (or key[]), decoded, into a JSON array. */
static void _query_all(const char *q, const char *key, json_t *out)
{
    size_t kl = strlen(key);
    while (*q) {
        size_t n = strcspn(q, "&");
        size_t nl = strcspn(q, "=&");
        bool match = (nl == kl && strncmp(q, key, kl) == 0) ||
                     (nl == kl + 2 && strncmp(q, key, kl) == 0 && strncmp(q + kl, "[]", 2) == 0);
        if (match && q[nl] == '=') {
            const char *v = q + nl + 1;
            size_t vl = n - nl - 1;
            char *d = ts_malloc(vl + 1);
            size_t k = 0;
            for (size_t i = 0; i < vl; i++) {
                if (v[i] == '%' && i + 2 < vl && _hex(v[i + 1]) >= 0 && _hex(v[i + 2]) >= 0) {
                    d[k++] = (char)(_hex(v[i + 1]) * 16 + _hex(v[i + 2]));
                    i += 2;
                } else {
                    d[k++] = v[i] == '+' ? ' ' : v[i];
                }
            }
            json_t *j = json_stringn(d, k);
            json_array_append_new(out, j ? j : json_string(""));
            free(d);
        }
        q += n;
        if (*q == '&') q++;
    }
}

/* The paths asked for: the query's key (repeated), or the JSON body's key
 * (a string or a list of strings). NULL after a 400. */
static json_t *_asked(http_req *req, http_resp *resp, const char *key)
{
    json_t *list = json_array();
    _query_all(req->query, key, list);
    if (json_array_size(list) == 0 && req->body_len) {
        json_t *body = http_json_body(req, resp);
        if (!body) {
            json_decref(list);
            return NULL;
        }
        json_t *v = json_object_get(body, key);
        if (json_is_string(v)) json_array_append(list, v);
        size_t i;
        json_t *e;
        json_array_foreach(v, i, e) if (json_is_string(e)) json_array_append(list, e);
        json_decref(body);
    }
    if (json_array_size(list) == 0) {
        http_problem(resp, 400, "invalid-api-params", NULL,
                     "%s is required (the query's %s=..., or a JSON body {\"%s\": ...})", key, key,
                     key);
        json_decref(list);
        return NULL;
    }
    return list;
}

/* GET|POST /v1/kernels/{id}/files/download?files=a&files=b: a ustar of them. */
static void h_download(http_req *req, http_resp *resp, void *ctx)
{
    const http_api_agent *a = http_api_agent_of(req, resp, ctx);
    if (!a) return;
    json_t *files = _asked(req, resp, "files");
    if (!files) return;
    if (json_array_size(files) > KERNEL_FILES_MAX_PATHS) {
        http_problem(resp, 400, "invalid-api-params", NULL, "at most %d files at once",
                     KERNEL_FILES_MAX_PATHS);
        json_decref(files);
        return;
    }
    size_t i;
    json_t *f;
    char rel[HOME_FS_PATH_MAX];
    json_array_foreach(files, i, f)
    {
        ts_err err = {{0}};
        if (!home_fs_path(json_string_value(f), rel, sizeof(rel), &err)) {
            http_problem(resp, 400, "invalid-api-params", NULL, "%s", err.msg);
            json_decref(files);
            return;
        }
    }
    home_fs h;
    if (!_home(a, req, resp, &h)) {
        json_decref(files);
        return;
    }
    /* POST: Backend.AI 24.09's answer, multipart/mixed with one part per
     * file, each a ustar of that file (its Python client reads that);
     * GET: one ustar of them all */
    bool multipart = strcmp(req->method, "POST") == 0;
    char boundary[TS_TOKEN_LEN + 1], line[160];
    ts_token_new(boundary);
    ts_buf tar = {0}, out = {0};
    bool ok = true;
    json_array_foreach(files, i, f)
    {
        ts_err err = {{0}};
        size_t left = out.len < KERNEL_FILES_MAX_DOWNLOAD ? KERNEL_FILES_MAX_DOWNLOAD - out.len : 0;
        if (!home_fs_path(json_string_value(f), rel, sizeof(rel), &err) ||
            !home_fs_tar(&h, rel, &tar, multipart ? left : KERNEL_FILES_MAX_DOWNLOAD)) {
            _fs_problem(resp, errno, json_string_value(f));
            ok = false;
            break;
        }
        if (!multipart) continue;
        home_fs_tar_end(&tar);
        snprintf(line, sizeof(line),
                 "--%s\r\nContent-Type: application/x-tar\r\nContent-Encoding: identity\r\n\r\n",
                 boundary);
        ts_buf_append_str(&out, line);
        ts_buf_append(&out, tar.data, tar.len);
        ts_buf_append_str(&out, "\r\n");
        ts_buf_free(&tar);
    }
    home_fs_close(&h);
    if (ok && multipart) {
        snprintf(line, sizeof(line), "--%s--\r\n", boundary);
        ts_buf_append_str(&out, line);
        char ct[96];
        snprintf(ct, sizeof(ct), "multipart/mixed; boundary=%s", boundary);
        TLOG_INFO("files downloaded", "paths=%zu bytes=%zu parts=multipart", json_array_size(files),
                  out.len);
        http_reply(resp, 200, ct, out.data, out.len);
    } else if (ok) {
        home_fs_tar_end(&tar);
        TLOG_INFO("files downloaded", "paths=%zu bytes=%zu", json_array_size(files), tar.len);
        http_reply(resp, 200, "application/x-tar", tar.data, tar.len);
        http_set_header(resp, "Content-Disposition", "attachment; filename=\"files.tar\"");
    }
    ts_buf_free(&tar);
    ts_buf_free(&out);
    json_decref(files);
}

/* GET|POST /v1/kernels/{id}/files/download_single?file=a: its bytes. */
static void h_download_single(http_req *req, http_resp *resp, void *ctx)
{
    const http_api_agent *a = http_api_agent_of(req, resp, ctx);
    if (!a) return;
    json_t *files = _asked(req, resp, "file");
    if (!files) return;
    const char *path = json_string_value(json_array_get(files, 0));
    char rel[HOME_FS_PATH_MAX];
    ts_err err = {{0}};
    home_fs h;
    if (!home_fs_path(path, rel, sizeof(rel), &err)) {
        http_problem(resp, 400, "invalid-api-params", NULL, "%s", err.msg);
    } else if (_home(a, req, resp, &h)) {
        int fd = home_fs_open_at(&h, rel, O_RDONLY | O_NONBLOCK, 0);
        struct stat st;
        int e = errno;
        if (fd >= 0 && fstat(fd, &st) == 0 && !S_ISREG(st.st_mode))
            e = S_ISDIR(st.st_mode) ? EISDIR : EINVAL;
        else if (fd >= 0 && st.st_size > KERNEL_FILES_MAX_DOWNLOAD)
            e = E2BIG;
        else if (fd >= 0)
            e = 0;
        if (e) {
            _fs_problem(resp, e, path);
        } else {
            char *data = ts_malloc((size_t)st.st_size + 1);
            size_t got = 0;
            while (got < (size_t)st.st_size) {
                ssize_t r = read(fd, data + got, (size_t)st.st_size - got);
                if (r < 0 && errno == EINTR) continue;
                if (r <= 0) break;
                got += (size_t)r;
            }
            const char *base = strrchr(rel, '/') ? strrchr(rel, '/') + 1 : rel;
            char *disp = ts_asprintf("attachment; filename=\"%s\"", base);
            for (char *c = disp + 22; *c && c[1]; c++)
                if (*c == '"' || *c == '\\') *c = '_';
            http_reply(resp, 200, "application/octet-stream", data, got);
            http_set_header(resp, "Content-Disposition", disp);
            free(disp);
            free(data);
        }
        if (fd >= 0) close(fd);
        home_fs_close(&h);
    }
    json_decref(files);
}

/* ---- list ------------------------------------------------------------------------- */

static void _filemode(mode_t m, char out[11])
{
    out[0] = S_ISDIR(m)    ? 'd'
             : S_ISLNK(m)  ? 'l'
             : S_ISREG(m)  ? '-'
             : S_ISFIFO(m) ? 'p'
             : S_ISSOCK(m) ? 's'
             : S_ISCHR(m)  ? 'c'
                           : 'b';
    const char *rwx = "rwxrwxrwx";
    for (int i = 0; i < 9; i++)
        out[1 + i] = (m & (0400 >> i)) ? rwx[i] : '-';
    out[10] = '\0';
}

/* GET /v1/kernels/{id}/files?path=dir: {files: "<JSON text of the entries>",
 * abspath, errors}, as Backend.AI answers. */
static void h_list(http_req *req, http_resp *resp, void *ctx)
{
    const http_api_agent *a = http_api_agent_of(req, resp, ctx);
    if (!a) return;
    const char *path = http_query_arg(req, "path");
    char rel[HOME_FS_PATH_MAX];
    ts_err err = {{0}};
    if (!home_fs_path(path ? path : ".", rel, sizeof(rel), &err)) {
        http_problem(resp, 400, "invalid-api-params", NULL, "%s", err.msg);
        return;
    }
    home_fs h;
    if (!_home(a, req, resp, &h)) return;
    int fd = home_fs_open_at(&h, rel, O_RDONLY | O_DIRECTORY, 0);
    home_fs_close(&h);
    DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
    if (!d) {
        _fs_problem(resp, errno, path ? path : ".");
        if (fd >= 0) close(fd);
        return;
    }
    json_t *entries = json_array();
    json_t *errors = json_array();
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0) continue;
        if (json_array_size(entries) >= LIST_MAX_ENTRIES) {
            json_array_append_new(errors, json_sprintf("more than %d entries: the rest is left out",
                                                       LIST_MAX_ENTRIES));
            break;
        }
        struct stat st;
        if (fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0) {
            json_array_append_new(errors, json_sprintf("%s: %s", de->d_name, strerror(errno)));
            continue;
        }
        char mode[11];
        _filemode(st.st_mode, mode);
        json_t *name = json_string(de->d_name);
        if (!name) continue; /* not UTF-8 */
        const char *type = S_ISDIR(st.st_mode)   ? "directory"
                           : S_ISREG(st.st_mode) ? "file"
                           : S_ISLNK(st.st_mode) ? "symlink"
                                                 : "other";
        json_array_append_new(
            entries, json_pack("{s:o, s:s, s:I, s:s, s:f, s:f, s:f}", "filename", name, "type",
                               type, "size", (json_int_t)st.st_size, "mode", mode, "mtime",
                               (double)st.st_mtim.tv_sec + st.st_mtim.tv_nsec / 1e9, "ctime",
                               (double)st.st_ctim.tv_sec + st.st_ctim.tv_nsec / 1e9, "atime",
                               (double)st.st_atim.tv_sec + st.st_atim.tv_nsec / 1e9));
    }
    closedir(d);
    char *text = json_dumps(entries, JSON_COMPACT);
    char *abspath =
        strcmp(rel, ".") == 0 ? ts_strdup(HOME_FS_MOUNT) : ts_asprintf(HOME_FS_MOUNT "/%s", rel);
    http_reply_json(resp, 200,
                    json_pack("{s:s, s:s, s:o}", "files", text ? text : "[]", "abspath", abspath,
                              "errors", errors));
    free(text);
    free(abspath);
    json_decref(entries);
}

void kernel_files_routes(http_router *r, void *src)
{
    http_route(r, "POST", "/v1/kernels/{id}/files/upload", h_upload, src);
    http_route(r, "GET", "/v1/kernels/{id}/files/download", h_download, src);
    http_route(r, "POST", "/v1/kernels/{id}/files/download", h_download, src);
    http_route(r, "GET", "/v1/kernels/{id}/files/download_single", h_download_single, src);
    http_route(r, "POST", "/v1/kernels/{id}/files/download_single", h_download_single, src);
    http_route(r, "GET", "/v1/kernels/{id}/files", h_list, src);
}
