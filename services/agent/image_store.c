/* image_store.c: the node's image cache on disk (image_store.h). */
#include "services/agent/image_store.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "services/agent/digest.h"

#define BLOB_JSON_MAX ((size_t)8 * 1024 * 1024)

/* ---- files ----------------------------------------------------------------------- */

static bool _mkdirs(const char *path, ts_err *err)
{
    char *p = ts_strdup(path);
    for (char *s = p + 1; *s; s++) {
        if (*s != '/') continue;
        *s = '\0';
        if (mkdir(p, 0755) != 0 && errno != EEXIST) goto fail;
        *s = '/';
    }
    if (mkdir(p, 0755) != 0 && errno != EEXIST) goto fail;
    free(p);
    return true;
fail:
    ts_err_set(err, "cannot create %s: %s", p, strerror(errno));
    free(p);
    return false;
}

bool image_store_exists(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0;
}

char *image_store_blob_path(const image_store *s, const char *digest)
{
    return ts_asprintf("%s/%s", s->blobs_dir, digest_hex(digest));
}

char *image_store_layer_path(const image_store *s, const char *diff_id)
{
    return ts_asprintf("%s/%s", s->layers_dir, digest_hex(diff_id));
}

/* Write data to path atomically (temporary file, fsync, rename). */
bool image_store_write(const image_store *s, const char *path, const void *data, size_t len,
                       ts_err *err)
{
    char *tmp = ts_asprintf("%s/write-XXXXXX", s->tmp_dir);
    int fd = mkostemp(tmp, O_CLOEXEC);
    if (fd < 0) {
        ts_err_set(err, "cannot create a temporary file in %s: %s", s->tmp_dir, strerror(errno));
        free(tmp);
        return false;
    }
    bool ok = fchmod(fd, 0644) == 0;
    const char *p = data;
    size_t left = len;
    while (ok && left > 0) {
        ssize_t w = write(fd, p, left);
        if (w < 0 && errno == EINTR) continue;
        if (w < 0)
            ok = false;
        else {
            p += w;
            left -= (size_t)w;
        }
    }
    ok = ok && fsync(fd) == 0;
    close(fd);
    ok = ok && rename(tmp, path) == 0;
    if (!ok) {
        ts_err_set(err, "cannot write %s: %s", path, strerror(errno));
        unlink(tmp);
    }
    free(tmp);
    return ok;
}

static char *_read_file(const char *path, size_t max, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    char *buf = ts_malloc(max + 1);
    size_t n = fread(buf, 1, max + 1, f);
    fclose(f);
    if (n > max) {
        free(buf);
        errno = EFBIG;
        return NULL;
    }
    buf[n] = '\0';
    if (len) *len = n;
    return buf;
}

json_t *image_store_blob_json(const image_store *s, const char *digest, ts_err *err)
{
    char *path = image_store_blob_path(s, digest);
    size_t len = 0;
    char *buf = _read_file(path, BLOB_JSON_MAX, &len);
    if (!buf) {
        ts_err_set(err, "blob %s is not in the cache", digest);
        free(path);
        return NULL;
    }
    json_error_t je;
    json_t *j = json_loadb(buf, len, 0, &je);
    if (!j || !json_is_object(j)) {
        ts_err_set(err, "blob %s is not a JSON object: %s", digest, j ? "wrong type" : je.text);
        json_decref(j);
        j = NULL;
    }
    free(buf);
    free(path);
    return j;
}

/* images/<hash>.json: resolved reference -> manifest digest */
char *image_store_ref_path(const image_store *s, const image_ref *r)
{
    char *canon = ts_asprintf("%s/%s:%s@%s", r->registry, r->repository, r->tag ? r->tag : "",
                              r->digest ? r->digest : "");
    char d[DIGEST_STRLEN];
    digest_buf(canon, strlen(canon), d);
    free(canon);
    return ts_asprintf("%s/%s.json", s->images_dir, digest_hex(d));
}

/* ---- the store -------------------------------------------------------------------- */

static const char *_host_arch(void)
{
    struct utsname u;
    if (uname(&u) != 0) return "amd64";
    if (strcmp(u.machine, "x86_64") == 0) return "amd64";
    if (strcmp(u.machine, "aarch64") == 0) return "arm64";
    if (strncmp(u.machine, "armv7", 5) == 0) return "arm";
    if (strcmp(u.machine, "ppc64le") == 0) return "ppc64le";
    if (strcmp(u.machine, "s390x") == 0) return "s390x";
    if (strcmp(u.machine, "riscv64") == 0) return "riscv64";
    return "amd64";
}

image_store *image_store_new(const image_store_opts *o, ts_err *err)
{
    if (!o->cache_dir || !*o->cache_dir) {
        ts_err_set(err, "image store: no cache directory");
        return NULL;
    }
    image_store *s = ts_calloc(1, sizeof(*s));
    s->cache_dir = ts_strdup(o->cache_dir);
    s->blobs_dir = ts_asprintf("%s/blobs/sha256", o->cache_dir);
    s->ids = (unpack_ids){.base = o->layer_id_base, .count = o->layer_id_count};
    s->layers_dir = s->ids.count ? ts_asprintf("%s/layers-%u-%u/sha256", o->cache_dir, s->ids.base,
                                               s->ids.count)
                                 : ts_asprintf("%s/layers/sha256", o->cache_dir);
    s->images_dir = ts_asprintf("%s/images", o->cache_dir);
    s->tmp_dir = ts_asprintf("%s/tmp", o->cache_dir);
    s->architecture =
        ts_strdup(o->architecture && *o->architecture ? o->architecture : _host_arch());
    s->max_parallel = o->max_parallel_layers > 0 ? o->max_parallel_layers : 1;
    s->timeout_ms = o->timeout_ms > 0 ? o->timeout_ms : 30000;
    s->retries = o->retries >= 0 ? o->retries : 0;
    s->backoff_ms = o->retry_backoff_ms;
    s->insecure_http = o->insecure_http;
    s->default_registry =
        o->default_registry && *o->default_registry ? ts_strdup(o->default_registry) : NULL;
    if (!_mkdirs(s->blobs_dir, err) || !_mkdirs(s->layers_dir, err) ||
        !_mkdirs(s->images_dir, err) || !_mkdirs(s->tmp_dir, err)) {
        ts_err_prefix(err, "image store");
        image_store_free(s);
        return NULL;
    }
    /* Leftovers of pulls that a crash interrupted. */
    if (!unpack_remove_tree(s->tmp_dir) || !_mkdirs(s->tmp_dir, err)) {
        ts_err_set(err, "image store: cannot clean %s", s->tmp_dir);
        image_store_free(s);
        return NULL;
    }
    if (o->auth_file && *o->auth_file) {
        json_error_t je;
        json_t *j = json_load_file(o->auth_file, 0, &je);
        if (!j) {
            ts_err_set(err, "image store: auth file %s: %s", o->auth_file, je.text);
            image_store_free(s);
            return NULL;
        }
        s->auths = json_incref(json_object_get(j, "auths"));
        json_decref(j);
    }
    return s;
}

void image_store_free(image_store *s)
{
    if (!s) return;
    free(s->cache_dir);
    free(s->blobs_dir);
    free(s->layers_dir);
    free(s->images_dir);
    free(s->tmp_dir);
    free(s->architecture);
    free(s->default_registry);
    json_decref(s->auths);
    free(s);
}
