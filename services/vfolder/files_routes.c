/* files_routes.c: the files/transfer half of tessera-vfolder plugged into
 * folders.h: its options, its routes, its background work, and the file
 * operation handlers (list, mkdir, rename, move, delete), each one confined
 * to the folder by files.c.
 *
 * Through the gateway (/folders/... -> /v1/folders/...), caller checked:
 *   GET    /v1/folders/{name}/files?path=          ro   {"items": [...]}
 *   POST   /v1/folders/{name}/mkdir                rw   {path, parents, exist_ok}
 *   POST   /v1/folders/{name}/rename_file          rw   {target_path, new_name}
 *   POST   /v1/folders/{name}/move_file (and move) rw   {src, dst}
 *   DELETE /v1/folders/{name}/delete_files (POST too) wd {files, recursive}
 *   POST   /v1/folders/{name}/request-upload       rw   (tus.c)
 *   POST   /v1/folders/{name}/request-download     ro   (transfer.c)
 * Client-facing, token-authorized: /v1/transfer/upload... (tus.c) and
 * /v1/transfer/download (transfer.c). */
#include "caller.h"
#include "files.h"
#include "libcommon/log.h"
#include "libcommon/pgjson.h"
#include "transfer.h"
#include "tus.h"
#include "volumes.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

const cfg_option vf_files_options[] = {
    {"vfolder.token_secret", CFG_STRING, &vf_xcfg.token_secret, NULL, 0, 0, NULL, false, NULL,
     "HMAC key of transfer tokens (>= 16 characters; unset: one is generated at first start and "
     "kept in PostgreSQL, shared by every replica)"},
    {"vfolder.public_url", CFG_STRING, &vf_xcfg.public_url, NULL, 0, 0, NULL, true, NULL,
     "base URL clients reach this replica's transfer endpoints at (unset: http://<Host of the "
     "request>)"},
    {"vfolder.upload_token_ttl", CFG_DURATION, &vf_xcfg.upload_ttl_ms, "6h", 60000, 604800000.0,
     NULL, true, NULL, "how long an upload can be continued (its token's lifetime)"},
    {"vfolder.download_token_ttl", CFG_DURATION, &vf_xcfg.download_ttl_ms, "15m", 10000, 86400000.0,
     NULL, true, NULL,
     "how long a download token can start downloads (a started one runs to its end)"},
    {"vfolder.upload_max_size", CFG_BYTES, &vf_xcfg.upload_max, "1024g", 0, 0, NULL, true, NULL,
     "largest single upload (0: no limit beyond the quota)"},
    {"vfolder.zip_max_entries", CFG_INT, &vf_xcfg.zip_max_entries, "1000000", 1, 100000000, NULL,
     true, NULL, "most entries a directory download archives"},
    {"vfolder.upload_fsync", CFG_BOOL, &vf_xcfg.upload_fsync, "true", 0, 0, NULL, true, NULL,
     "fsync a completed upload before it is renamed into place"},
    {NULL},
};

/* ---- common steps ------------------------------------------------------------------------ */

/* Caller, folder (with at least need), root fd, JSON body (when want_body).
 * False after the problem (everything released). */
typedef struct op {
    vf_caller c;
    vf_folder f;
    int root;
    json_t *body;
} op;

static bool _op_begin(svc *s, http_req *req, http_resp *resp, vf_perm need, bool want_body, op *o)
{
    memset(o, 0, sizeof(*o));
    o->root = -1;
    if (!vf_caller_get(s, req, resp, &o->c)) return false;
    if (!vf_resolve(s, &o->c, http_param(req, "name"), need, &o->f, resp)) goto fail;
    if (want_body && !(o->body = http_json_body(req, resp))) goto fail;
    o->root = vf_fs_open_root(o->f.host_path);
    if (o->root < 0) {
        vf_fs_problem(resp, o->root, "open the folder", "");
        goto fail;
    }
    return true;
fail:
    json_decref(o->body);
    vf_caller_free(&o->c);
    return false;
}

static void _op_end(op *o)
{
    if (o->root >= 0) close(o->root);
    json_decref(o->body);
    vf_caller_free(&o->c);
}

/* ---- handlers ------------------------------------------------------------------------------ */

static void h_files(http_req *req, http_resp *resp, void *ctx)
{
    op o;
    if (!_op_begin(ctx, req, resp, VF_PERM_RO, false, &o)) return;
    const char *path = http_query_arg(req, "path");
    if (!path) path = "";
    json_t *items = NULL;
    int rc = vf_fs_list(o.root, path, &items);
    if (rc < 0)
        vf_fs_problem(resp, rc, "list files", path);
    else
        http_reply_json(resp, 200, json_pack("{s:o}", "items", items));
    _op_end(&o);
}

static void h_mkdir(http_req *req, http_resp *resp, void *ctx)
{
    op o;
    if (!_op_begin(ctx, req, resp, VF_PERM_RW, true, &o)) return;
    static const char *const keys[] = {"path", "parents", "exist_ok", NULL};
    const char *path;
    bool parents = false, exist_ok = false, present;
    if (pgjson_only_keys(o.body, keys, resp) &&
        pgjson_field_str(o.body, "path", true, 1, 4096, &path, resp) &&
        pgjson_field_bool(o.body, "parents", false, &parents, &present, resp) &&
        pgjson_field_bool(o.body, "exist_ok", false, &exist_ok, &present, resp)) {
        int rc = vf_fs_mkdir(o.root, path, parents, exist_ok);
        if (rc < 0)
            vf_fs_problem(resp, rc, "mkdir", path);
        else
            http_reply_json(resp, 201, json_pack("{s:s}", "path", path));
    }
    _op_end(&o);
}

static void h_rename_file(http_req *req, http_resp *resp, void *ctx)
{
    op o;
    if (!_op_begin(ctx, req, resp, VF_PERM_RW, true, &o)) return;
    static const char *const keys[] = {"target_path", "new_name", "is_dir", NULL};
    const char *target, *name;
    if (pgjson_only_keys(o.body, keys, resp) &&
        pgjson_field_str(o.body, "target_path", true, 1, 4096, &target, resp) &&
        pgjson_field_str(o.body, "new_name", true, 1, 255, &name, resp)) {
        int rc = vf_fs_rename(o.root, target, name);
        if (rc < 0)
            vf_fs_problem(resp, rc, "rename_file", rc == -EEXIST ? name : target);
        else
            http_reply_json(resp, 200,
                            json_pack("{s:s, s:s}", "target_path", target, "new_name", name));
    }
    _op_end(&o);
}

static void h_move_file(http_req *req, http_resp *resp, void *ctx)
{
    op o;
    if (!_op_begin(ctx, req, resp, VF_PERM_RW, true, &o)) return;
    static const char *const keys[] = {"src", "dst", NULL};
    const char *src, *dst;
    if (pgjson_only_keys(o.body, keys, resp) &&
        pgjson_field_str(o.body, "src", true, 1, 4096, &src, resp) &&
        pgjson_field_str(o.body, "dst", true, 1, 4096, &dst, resp)) {
        int rc = vf_fs_move(o.root, src, dst);
        if (rc < 0)
            vf_fs_problem(resp, rc, "move_file", rc == -EEXIST ? dst : src);
        else
            http_reply_json(resp, 200, json_pack("{s:s, s:s}", "src", src, "dst", dst));
    }
    _op_end(&o);
}

static void h_delete_files(http_req *req, http_resp *resp, void *ctx)
{
    svc *s = ctx;
    op o;
    if (!_op_begin(s, req, resp, VF_PERM_WD, true, &o)) return;
    static const char *const keys[] = {"files", "recursive", NULL};
    bool recursive = false, present;
    json_t *files = json_object_get(o.body, "files");
    if (!pgjson_only_keys(o.body, keys, resp) ||
        !pgjson_field_bool(o.body, "recursive", false, &recursive, &present, resp))
        goto out;
    if (!json_is_array(files) || json_array_size(files) == 0 || json_array_size(files) > 10000) {
        http_problem(resp, 400, "invalid-api-params", NULL,
                     "files: a list of 1..10000 paths is required");
        goto out;
    }
    size_t i;
    json_t *v;
    json_array_foreach(files, i, v)
    {
        if (!json_is_string(v) || !vf_fs_path_ok(json_string_value(v)) || !*json_string_value(v)) {
            http_problem(resp, 400, "invalid-api-params", NULL,
                         "files[%zu]: a non-empty path string is required", i);
            goto out;
        }
    }
    int64_t freed_total = 0;
    json_t *deleted = json_array();
    int failed = 0;
    json_array_foreach(files, i, v)
    {
        int64_t freed = 0;
        int rc = vf_fs_delete(o.root, json_string_value(v), recursive, &freed);
        freed_total += freed;
        if (rc < 0 && !failed) {
            failed = rc;
            vf_fs_problem(resp, rc, "delete_files", json_string_value(v));
        } else if (rc == 0) {
            json_array_append(deleted, v);
        }
    }
    if (freed_total > 0) vf_quota_release(s, &o.f, freed_total);
    TLOG_INFO("files deleted", "vfolder=%s count=%zu freed=%lld failed=%d", o.f.id,
              json_array_size(deleted), (long long)freed_total, failed);
    if (!failed)
        http_reply_json(
            resp, 200,
            json_pack("{s:o, s:I}", "deleted", deleted, "freed_bytes", (json_int_t)freed_total));
    else
        json_decref(deleted);
out:
    _op_end(&o);
}

/* ---- wiring -------------------------------------------------------------------------------- */

void vf_files_routes(svc *s)
{
    http_router *r = svc_router(s);
    http_route(r, "GET", "/v1/folders/{name}/files", h_files, s);
    http_route(r, "POST", "/v1/folders/{name}/mkdir", h_mkdir, s);
    http_route(r, "POST", "/v1/folders/{name}/rename_file", h_rename_file, s);
    http_route(r, "POST", "/v1/folders/{name}/move_file", h_move_file, s);
    http_route(r, "POST", "/v1/folders/{name}/move", h_move_file, s);
    http_route(r, "DELETE", "/v1/folders/{name}/delete_files", h_delete_files, s);
    http_route(r, "POST", "/v1/folders/{name}/delete_files", h_delete_files, s);
    http_route(r, "POST", "/v1/folders/{name}/request-upload", vf_h_request_upload, s);
    http_route(r, "POST", "/v1/folders/{name}/request-download", vf_h_request_download, s);
    http_route(r, "GET", "/v1/transfer/download", vf_h_download, s);
    vf_tus_routes(s);
}

static pthread_t g_sweeper;
static atomic_bool g_stop;
static bool g_started;

static void *_sweeper(void *arg)
{
    svc *s = arg;
    int64_t next = ts_now_mono_ms() + 5000;
    while (!atomic_load(&g_stop)) {
        if (ts_now_mono_ms() >= next) {
            vf_tus_sweep(s);
            next = ts_now_mono_ms() +
                   (vf_cfg.sweep_interval_ms > 0 ? vf_cfg.sweep_interval_ms : 60000);
        }
        struct timespec ts = {0, 200 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    return NULL;
}

bool vf_files_start(svc *s, ts_err *err)
{
    if (!vf_xfer_db_init(s, err)) return false;
    for (size_t i = 0; i < vf_volume_count(); i++) {
        int fd = vf_xfer_staging_dir(vf_volume_at(i)->name);
        if (fd < 0) {
            ts_err_set(err, "volume %s: upload staging directory %s/%s: %s", vf_volume_at(i)->name,
                       vf_volume_at(i)->path, VF_STAGING_DIR, strerror(-fd));
            return false;
        }
        close(fd);
    }
    atomic_store(&g_stop, false);
    if (pthread_create(&g_sweeper, NULL, _sweeper, s) != 0) {
        ts_err_set(err, "could not start the upload sweeper");
        return false;
    }
    g_started = true;
    return true;
}

void vf_files_stop(svc *s)
{
    (void)s;
    atomic_store(&g_stop, true);
    if (g_started) pthread_join(g_sweeper, NULL);
    g_started = false;
}
