/* mounts.c: POST /v1/mounts/resolve (mounts.h): which folders a new
 * session mounts, where, and how. */
#include "mounts.h"

#include "caller.h"
#include "folders.h"
#include "libcommon/log.h"
#include "libcommon/pgjson.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A mount path from mount_map: absolute under /home/work/, or relative to it;
 * no "." or ".." segments, no empty segments, not under a home-directory
 * name a mount would shadow (the reserved names of vf_name_ok). Heap, or
 * NULL with *why when invalid. */
static char *_mount_path(const char *name, const char *mapped, const char **why)
{
    static const char *const reserved[] = {".ssh",       ".jupyter", ".terminfo",
                                           ".tmux.conf", ".bashrc",  ".bash_profile",
                                           ".zshrc",     ".vimrc",   ".local/bin"};
    *why = NULL;
    if (!mapped) return ts_asprintf("/home/work/%s", name);
    const char *rel = mapped;
    if (mapped[0] == '/') {
        if (strncmp(mapped, "/home/work/", 11) != 0) {
            *why = "absolute paths must be under /home/work/";
            return NULL;
        }
        rel = mapped + 11;
    }
    if (!*rel || strlen(rel) > 1024) {
        *why = "a path of 1 to 1024 bytes below /home/work is needed";
        return NULL;
    }
    for (const char *seg = rel; seg;) {
        const char *end = strchr(seg, '/');
        size_t n = end ? (size_t)(end - seg) : strlen(seg);
        if (n == 0 || (n == 1 && seg[0] == '.') || (n == 2 && seg[0] == '.' && seg[1] == '.')) {
            *why = "no empty, . or .. segments allowed";
            return NULL;
        }
        seg = end ? end + 1 : NULL;
    }
    for (const unsigned char *p = (const unsigned char *)rel; *p; p++)
        if (*p < 0x20) {
            *why = "no control characters allowed";
            return NULL;
        }
    for (size_t i = 0; i < TS_ARRAY_LEN(reserved); i++) {
        size_t n = strlen(reserved[i]);
        if (strncmp(rel, reserved[i], n) == 0 && (rel[n] == 0 || rel[n] == '/')) {
            *why = "reserved path (a mount there would shadow the session's own files)";
            return NULL;
        }
    }
    return ts_asprintf("/home/work/%s", rel);
}

/* Answer prob (taken) with status, its `vfolder` member naming the folder. */
static void _reply_named(http_resp *resp, int status, json_t *prob, const char *name)
{
    json_object_set_new(prob, "vfolder", json_string(name));
    char *text = json_dumps(prob, JSON_COMPACT);
    http_reply(resp, status, "application/problem+json", text, strlen(text));
    free(text);
    json_decref(prob);
}

/* A 4xx problem whose `vfolder` member names the folder. */
static void _mount_problem(http_resp *resp, int status, const char *kind, const char *name,
                           const char *fmt, ...) TS_PRINTF(5, 6);
static void _mount_problem(http_resp *resp, int status, const char *kind, const char *name,
                           const char *fmt, ...)
{
    char msg[1200];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    _reply_named(resp, status,
                 http_problem_json(kind, status == 403 ? "Forbidden" : "Bad Request", msg), name);
}

/* The problem already answered (vf_resolve's 404 or 403), its `vfolder`
 * member naming the folder too. */
static void _name_problem(http_resp *resp, const char *name)
{
    size_t len = 0;
    const char *b = http_resp_body(resp, &len);
    json_t *prob = b ? json_loadb(b, len, 0, NULL) : NULL;
    if (prob) _reply_named(resp, http_resp_status(resp), prob, name);
}

/* The body's "names" (1..64 distinct strings) and "mount_map" ({name: path}
 * or absent). False after a 400. */
static bool _names_ok(const json_t *names, const json_t *map, http_resp *resp)
{
    if (!json_is_array(names) || json_array_size(names) > 64) {
        http_problem(resp, 400, "invalid-api-params", NULL,
                     "names must be an array of at most 64 vfolder names or ids");
        return false;
    }
    if (map && !json_is_null(map) && !json_is_object(map)) {
        http_problem(resp, 400, "invalid-api-params", NULL,
                     "mount_map must be an object {name: path}");
        return false;
    }
    size_t i;
    json_t *n;
    json_array_foreach(names, i, n)
    {
        const char *name = json_string_value(n);
        if (!name || !*name) {
            http_problem(resp, 400, "invalid-api-params", NULL, "names[%zu] must be a string", i);
            return false;
        }
        for (size_t j = 0; j < i; j++)
            if (json_equal(json_array_get(names, j), n)) {
                http_problem(resp, 400, "invalid-api-params", NULL, "vfolder %s is named twice",
                             name);
                return false;
            }
    }
    return true;
}

/* May the caller mount f (its own, shared with it or its project's; not
 * through admin rights alone), where the policies allow mounting from its
 * host? False after a 403 naming it. */
static bool _mountable(const ts_caller *c, const vf_folder *f, const char *name, http_resp *resp)
{
    if (f->via_admin) {
        _mount_problem(resp, 403, "forbidden", name,
                       "vfolder %s is not yours and not shared with you: "
                       "administrators cannot mount other users' folders",
                       name);
        return false;
    }
    if (!vf_caller_host_allows(c, vf_folder_project_hosts(c, f), f->host, VF_HOST_MOUNT)) {
        _mount_problem(resp, 403, "forbidden", name,
                       "vfolder %s: your policies do not allow mounting from host %s", name,
                       f->host);
        return false;
    }
    return true;
}

/* Where f mounts (mv: its mount_map entry, may be NULL), not the same as or
 * nested with a mount already in out. Heap; NULL after a 400 naming it. */
static char *_mount_at(const vf_folder *f, const char *name, const json_t *mv, const json_t *out,
                       http_resp *resp)
{
    if (mv && !json_is_string(mv)) {
        _mount_problem(resp, 400, "invalid-api-params", name,
                       "mount_map[%s]: must be a path (a string)", name);
        return NULL;
    }
    const char *why = NULL;
    char *mp = _mount_path(f->name, json_string_value(mv), &why);
    if (!mp) {
        _mount_problem(resp, 400, "invalid-api-params", name,
                       "mount_map[%s]: bad mount path '%s': %s", name, json_string_value(mv), why);
        return NULL;
    }
    size_t k;
    json_t *prev;
    json_array_foreach(out, k, prev)
    {
        const char *pp = json_string_value(json_object_get(prev, "mount_path"));
        const char *other = json_string_value(json_object_get(prev, "name"));
        size_t a = strlen(pp), b = strlen(mp), m = a < b ? a : b;
        if (strcmp(pp, mp) == 0) {
            _mount_problem(resp, 400, "invalid-api-params", name,
                           "vfolders %s and %s would both mount at %s", other, name, mp);
            free(mp);
            return NULL;
        }
        if (strncmp(pp, mp, m) == 0 && (a > b ? pp : mp)[m] == '/') {
            _mount_problem(resp, 400, "invalid-api-params", name,
                           "vfolders %s (%s) and %s (%s) would be mounted one inside the other",
                           other, pp, name, mp);
            free(mp);
            return NULL;
        }
    }
    return mp;
}

void vf_h_mounts_resolve(http_req *req, http_resp *resp, void *ctx)
{
    svc *s = ctx;
    json_t *body = http_json_body(req, resp);
    if (!body) return;
    static const char *const keys[] = {"access_key", "names", "mount_map", NULL};
    const char *ak = NULL;
    json_t *names = json_object_get(body, "names");
    json_t *map = json_object_get(body, "mount_map");
    ts_caller c = {0};
    json_t *out = NULL;
    if (!pgjson_only_keys(body, keys, resp) ||
        !pgjson_field_str(body, "access_key", true, 20, 20, &ak, resp) ||
        !_names_ok(names, map, resp) || !vf_caller_for_key(s, req, resp, ak, &c))
        goto done;
    tlog_ctx_user(c.user_id);
    out = json_array();
    size_t i;
    json_t *n;
    json_array_foreach(names, i, n)
    {
        const char *name = json_string_value(n);
        vf_folder f;
        if (!vf_resolve(s, &c, name, VF_PERM_RO, &f, resp)) {
            _name_problem(resp, name);
            goto done;
        }
        tlog_ctx_entity("folder", f.id);
        char *mp = NULL;
        if (!_mountable(&c, &f, name, resp) ||
            !(mp = _mount_at(&f, name, json_object_get(map, name), out, resp)))
            goto done;
        /* A project member's effective permission may be the folder's wd/rw/ro;
         * wd mounts read-write (deletes are writes to the kernel). */
        json_array_append_new(out, json_pack("{s:s, s:s, s:s, s:s, s:s, s:s}", "vfolder_id", f.id,
                                             "name", f.name, "host", f.host, "host_path",
                                             f.host_path, "mount_path", mp, "permission",
                                             f.perm == VF_PERM_RO ? "ro" : "rw"));
        free(mp);
    }
    http_reply_json(resp, 200, out);
    out = NULL;
done:
    json_decref(out);
    json_decref(body);
    caller_free(&c);
}
