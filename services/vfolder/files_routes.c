/* files_routes.c: the files/transfer half of tessera-vfolder
 * (files_routes.h): its options, its routes, its background work, and the file
 * operation handlers (list, mkdir, rename, move, delete), each one confined
 * to the folder by files.c.
 *
 * Through the gateway (/folders/... -> /v1/folders/...), caller checked:
 *   GET    /v1/folders/{name}/files?path=          ro   {"items": [...], "files": legacy}
 *   POST   /v1/folders/{name}/mkdir                rw   {path (or a list), parents, exist_ok}
 *   POST   /v1/folders/{name}/rename_file          rw   {target_path, new_name}
 *   POST   /v1/folders/{name}/move_file (and move) rw   {src, dst}
 *   DELETE /v1/folders/{name}/delete_files (POST too) wd {files, recursive}
 *   (each also with a hyphen, rename-file ..., as Backend.AI 24.09 names them)
 *   POST   /v1/folders/{name}/request-upload       rw   (tus.c)
 *   POST   /v1/folders/{name}/request-download     ro   (transfer.c)
 *   POST   /v1/folders/{name}/upload               rw   multipart (upload_form.c)
 *   GET    /v1/folders/_/download_with_token?token=     302 to the download (transfer.c)
 * Client-facing, token-authorized: /v1/transfer/upload... (tus.c) and
 * /v1/transfer/download (transfer.c), with CORS for browsers (cors.c). */
#include "files_routes.h"

#include "cors.h"
#include "files.h"
#include "libcommon/log.h"
#include "libcommon/pgjson.h"
#include "libcommon/sign.h"
#include "quota.h"
#include "request.h"
#include "sweeper.h"
#include "transfer.h"
#include "tus.h"
#include "upload_form.h"
#include "volumes.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

const cfg_option vf_files_options[] = {
    {.name = "vfolder.token_secret",
     .type = CFG_STRING,
     .dst = &vf_xcfg.token_secret,
     .help = "HMAC key of transfer tokens (>= 16 characters; unset: one is generated at first "
             "start and kept in PostgreSQL, shared by every replica)"},
    {.name = "vfolder.public_url",
     .type = CFG_STRING,
     .dst = &vf_xcfg.public_url,
     .reloadable = true,
     .help = "base URL clients reach this replica's transfer endpoints at (unset: http://<Host of "
             "the request>)"},
    {.name = "vfolder.cors_origins",
     .type = CFG_STRING,
     .dst = &vf_cors_origins,
     .help = "origins (comma-separated, e.g. https://console.example.com) browsers may use the "
             "transfer endpoints from (CORS); unset: any origin (*), safe as transfers use the "
             "token in the query, no cookies"},
    {.name = "vfolder.upload_token_ttl",
     .type = CFG_DURATION,
     .dst = &vf_xcfg.upload_ttl_ms,
     .def = "6h",
     .min = 60000,
     .max = 604800000.0,
     .reloadable = true,
     .help = "how long an upload can be continued (its token's lifetime)"},
    {.name = "vfolder.download_token_ttl",
     .type = CFG_DURATION,
     .dst = &vf_xcfg.download_ttl_ms,
     .def = "15m",
     .min = 10000,
     .max = 86400000.0,
     .reloadable = true,
     .help = "how long a download token can start downloads (a started one runs to its end)"},
    {.name = "vfolder.upload_max_size",
     .type = CFG_BYTES,
     .dst = &vf_xcfg.upload_max,
     .def = "1024g",
     .reloadable = true,
     .help = "largest single upload (0: no limit beyond the quota)"},
    {.name = "vfolder.zip_max_entries",
     .type = CFG_INT,
     .dst = &vf_xcfg.zip_max_entries,
     .def = "1000000",
     .min = 1,
     .max = 100000000,
     .reloadable = true,
     .help = "most entries a directory download archives"},
    {.name = "vfolder.upload_fsync",
     .type = CFG_BOOL,
     .dst = &vf_xcfg.upload_fsync,
     .def = "true",
     .reloadable = true,
     .help = "fsync a completed upload before it is renamed into place"},
    {0},
};

/* ---- handlers ------------------------------------------------------------------------------ */

/* Caller, folder (with at least need), the JSON body with keys (NULL: no
 * body), the folder's directory. False after the problem. */
static bool _op_begin(vf_req *x, void *ctx, http_req *req, http_resp *resp, vf_perm need,
                      const char *const *keys)
{
    return vf_req_begin(x, ctx, req, resp) && vf_req_folder(x, need) &&
           (!keys || vf_req_body(x, keys)) && vf_req_root(x, "open the folder");
}

/* Backend.AI's legacy form of a listing, which its Python CLI still reads:
 * "files", the JSON text of [{filename, size, mode ("drwxr-xr-x"), ctime,
 * atime (0), mtime}] with times in Unix seconds. */
static json_t *_legacy_files(const json_t *items)
{
    json_t *out = json_array();
    size_t i;
    json_t *it;
    json_array_foreach(items, i, it)
    {
        const char *type = json_string_value(json_object_get(it, "type"));
        unsigned long mode = strtoul(json_string_value(json_object_get(it, "mode")), NULL, 8);
        char fm[11] = "----------";
        fm[0] = strcmp(type, "DIRECTORY") == 0 ? 'd' : strcmp(type, "SYMLINK") == 0 ? 'l' : '-';
        for (int b = 0; b < 9; b++)
            if (mode & (1ul << (8 - b))) fm[1 + b] = "rwxrwxrwx"[b];
        time_t c = 0, m = 0;
        if (!sign_parse_date(json_string_value(json_object_get(it, "created")), &c)) c = 0;
        if (!sign_parse_date(json_string_value(json_object_get(it, "modified")), &m)) m = 0;
        json_array_append_new(out, json_pack("{s:O, s:O, s:s, s:I, s:i, s:I}", "filename",
                                             json_object_get(it, "name"), "size",
                                             json_object_get(it, "size"), "mode", fm, "ctime",
                                             (json_int_t)c, "atime", 0, "mtime", (json_int_t)m));
    }
    char *text = json_dumps(out, JSON_COMPACT);
    json_decref(out);
    json_t *s = json_string(text ? text : "[]");
    free(text);
    return s;
}

static void h_files(http_req *req, http_resp *resp, void *ctx)
{
    vf_req x;
    const char *path = http_query_arg(req, "path");
    if (!path) path = "";
    json_t *items = NULL;
    int err;
    if (_op_begin(&x, ctx, req, resp, VF_PERM_RO, NULL)) {
        if (!vf_fs_list(x.root, path, &items, &err))
            vf_fs_problem(resp, err, "list files", path);
        else
            http_reply_json(resp, 200,
                            json_pack("{s:o, s:o}", "files", _legacy_files(items), "items", items));
    }
    vf_req_end(&x);
}

/* mkdir of a list of paths (Backend.AI 24.09; at most 50): Backend.AI's
 * {"results": {"success": [{item, msg}], "failed": [...]}}, 200 when all
 * were made, 207 when some were; the first failure's problem when none. */
static void _mkdir_list(vf_req *x, const json_t *paths, bool parents, bool exist_ok)
{
    if (json_array_size(paths) == 0 || json_array_size(paths) > 50) {
        http_problem(x->fr.resp, 400, "invalid-api-params", NULL, "path: 1 to 50 paths");
        return;
    }
    size_t i;
    json_t *p;
    json_array_foreach(paths, i, p) if (!json_is_string(p) || !*json_string_value(p) ||
                                        strlen(json_string_value(p)) > 4096)
    {
        http_problem(x->fr.resp, 400, "invalid-api-params", NULL,
                     "path[%zu]: a non-empty path of at most 4096 bytes", i);
        return;
    }
    json_t *ok = json_array(), *failed = json_array();
    int first_err = 0;
    const char *first_path = NULL;
    json_array_foreach(paths, i, p)
    {
        int err;
        const char *path = json_string_value(p);
        if (vf_fs_mkdir(x->root, path, parents, exist_ok, &err)) {
            json_array_append_new(ok, json_pack("{s:s, s:n}", "item", path, "msg"));
            continue;
        }
        if (!first_err) {
            first_err = err;
            first_path = path;
        }
        json_array_append_new(failed, json_pack("{s:s, s:s}", "item", path, "msg", strerror(err)));
    }
    if (json_array_size(ok) == 0) {
        vf_fs_problem(x->fr.resp, first_err, "mkdir", first_path);
        json_decref(ok);
        json_decref(failed);
        return;
    }
    int status = json_array_size(failed) ? 207 : 200;
    http_reply_json(x->fr.resp, status,
                    json_pack("{s:{s:o, s:o}}", "results", "success", ok, "failed", failed));
}

static void h_mkdir(http_req *req, http_resp *resp, void *ctx)
{
    vf_req x;
    static const char *const keys[] = {"path", "parents", "exist_ok", NULL};
    const char *path;
    bool parents = false, exist_ok = false, present;
    int err;
    if (!_op_begin(&x, ctx, req, resp, VF_PERM_RW, keys) ||
        !pgjson_field_bool(x.fr.body, "parents", false, &parents, &present, resp) ||
        !pgjson_field_bool(x.fr.body, "exist_ok", false, &exist_ok, &present, resp))
        goto out;
    if (json_is_array(json_object_get(x.fr.body, "path"))) {
        _mkdir_list(&x, json_object_get(x.fr.body, "path"), parents, exist_ok);
    } else if (pgjson_field_str(x.fr.body, "path", true, 1, 4096, &path, resp)) {
        if (!vf_fs_mkdir(x.root, path, parents, exist_ok, &err))
            vf_fs_problem(resp, err, "mkdir", path);
        else
            http_reply_json(resp, 201,
                            json_pack("{s:s, s:{s:[{s:s, s:n}], s:[]}}", "path", path, "results",
                                      "success", "item", path, "msg", "failed"));
    }
out:
    vf_req_end(&x);
}

static void h_rename_file(http_req *req, http_resp *resp, void *ctx)
{
    vf_req x;
    static const char *const keys[] = {"target_path", "new_name", "is_dir", NULL};
    const char *target, *name;
    int err;
    if (_op_begin(&x, ctx, req, resp, VF_PERM_RW, keys) &&
        pgjson_field_str(x.fr.body, "target_path", true, 1, 4096, &target, resp) &&
        pgjson_field_str(x.fr.body, "new_name", true, 1, 255, &name, resp)) {
        if (!vf_fs_rename(x.root, target, name, &err))
            vf_fs_problem(resp, err, "rename_file", err == EEXIST ? name : target);
        else
            http_reply_json(resp, 200,
                            json_pack("{s:s, s:s}", "target_path", target, "new_name", name));
    }
    vf_req_end(&x);
}

static void h_move_file(http_req *req, http_resp *resp, void *ctx)
{
    vf_req x;
    static const char *const keys[] = {"src", "dst", NULL};
    const char *src, *dst;
    int err;
    if (_op_begin(&x, ctx, req, resp, VF_PERM_RW, keys) &&
        pgjson_field_str(x.fr.body, "src", true, 1, 4096, &src, resp) &&
        pgjson_field_str(x.fr.body, "dst", true, 1, 4096, &dst, resp)) {
        if (!vf_fs_move(x.root, src, dst, &err))
            vf_fs_problem(resp, err, "move_file", err == EEXIST ? dst : src);
        else
            http_reply_json(resp, 200, json_pack("{s:s, s:s}", "src", src, "dst", dst));
    }
    vf_req_end(&x);
}

/* The body's "files": 1..10000 non-empty paths. False after a 400. */
static bool _files_ok(const json_t *files, http_resp *resp)
{
    if (!json_is_array(files) || json_array_size(files) == 0 || json_array_size(files) > 10000) {
        http_problem(resp, 400, "invalid-api-params", NULL,
                     "files: a list of 1..10000 paths is required");
        return false;
    }
    size_t i;
    json_t *v;
    json_array_foreach(files, i, v)
    {
        if (!json_is_string(v) || !vf_fs_path_ok(json_string_value(v)) || !*json_string_value(v)) {
            http_problem(resp, 400, "invalid-api-params", NULL,
                         "files[%zu]: a non-empty path string is required", i);
            return false;
        }
    }
    return true;
}

static void h_delete_files(http_req *req, http_resp *resp, void *ctx)
{
    vf_req x;
    static const char *const keys[] = {"files", "recursive", NULL};
    bool recursive = false, present;
    if (!_op_begin(&x, ctx, req, resp, VF_PERM_WD, keys) ||
        !pgjson_field_bool(x.fr.body, "recursive", false, &recursive, &present, resp) ||
        !_files_ok(json_object_get(x.fr.body, "files"), resp))
        goto out;
    int64_t freed_total = 0;
    json_t *deleted = json_array();
    int failed = 0;
    size_t i;
    json_t *v;
    json_array_foreach(json_object_get(x.fr.body, "files"), i, v)
    {
        int64_t freed = 0;
        int err;
        bool ok = vf_fs_delete(x.root, json_string_value(v), recursive, &freed, &err);
        freed_total += freed;
        if (!ok && !failed) {
            failed = err;
            vf_fs_problem(resp, err, "delete_files", json_string_value(v));
        } else if (ok) {
            json_array_append(deleted, v);
        }
    }
    if (freed_total > 0) vf_quota_release(x.fr.s, &x.f, freed_total);
    TLOG_INFO("files deleted", "count=%zu freed=%lld failed_errno=%d", json_array_size(deleted),
              (long long)freed_total, failed);
    if (!failed)
        http_reply_json(
            resp, 200,
            json_pack("{s:o, s:I}", "deleted", deleted, "freed_bytes", (json_int_t)freed_total));
    else
        json_decref(deleted);
out:
    vf_req_end(&x);
}

/* ---- wiring -------------------------------------------------------------------------------- */

void vf_files_routes(svc *s)
{
    http_router *r = svc_router(s);
    http_route(r, "GET", "/v1/folders/{name}/files", h_files, s);
    http_route(r, "POST", "/v1/folders/{name}/mkdir", h_mkdir, s);
    /* Backend.AI 24.09 names them with hyphens, older releases with
     * underscores: both are served */
    http_route(r, "POST", "/v1/folders/{name}/rename_file", h_rename_file, s);
    http_route(r, "POST", "/v1/folders/{name}/rename-file", h_rename_file, s);
    http_route(r, "POST", "/v1/folders/{name}/move_file", h_move_file, s);
    http_route(r, "POST", "/v1/folders/{name}/move-file", h_move_file, s);
    http_route(r, "POST", "/v1/folders/{name}/move", h_move_file, s);
    http_route(r, "DELETE", "/v1/folders/{name}/delete_files", h_delete_files, s);
    http_route(r, "POST", "/v1/folders/{name}/delete_files", h_delete_files, s);
    http_route(r, "DELETE", "/v1/folders/{name}/delete-files", h_delete_files, s);
    http_route(r, "POST", "/v1/folders/{name}/delete-files", h_delete_files, s);
    http_route(r, "POST", "/v1/folders/{name}/request-upload", vf_h_request_upload, s);
    http_route(r, "POST", "/v1/folders/{name}/request-download", vf_h_request_download, s);
    http_route(r, "POST", "/v1/folders/{name}/upload", vf_h_upload_form, s);
    http_route(r, "GET", "/v1/folders/_/download_with_token", vf_h_download_with_token, s);
    http_route(r, "GET", "/v1/transfer/download", vf_h_download, s);
    http_route(r, "OPTIONS", "/v1/transfer/download", vf_cors_h_options, s);
    vf_tus_routes(s);
}

/* Aborts uploads whose token expired. */
static vf_sweeper g_uploads = {.name = "upload",
                               .job = vf_tus_sweep,
                               .first_ms = 5000,
                               .interval_ms = &vf_cfg.sweep_interval_ms};

bool vf_files_start(svc *s, ts_err *err)
{
    if (!vf_xfer_db_init(s, err)) return false;
    for (size_t i = 0; i < vf_volume_count(); i++) {
        int fd, errnum;
        if (!vf_xfer_staging_dir(vf_volume_at(i)->name, &fd, &errnum)) {
            ts_err_set(err, "volume %s: upload staging directory %s/%s: %s", vf_volume_at(i)->name,
                       vf_volume_at(i)->path, VF_STAGING_DIR, strerror(errnum));
            return false;
        }
        close(fd);
    }
    return vf_sweeper_start(&g_uploads, s, err);
}

void vf_files_stop(svc *s)
{
    (void)s;
    vf_sweeper_stop(&g_uploads);
}
