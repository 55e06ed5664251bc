/* image.c: the node's image store (see image.h): resolve a reference to a
 * manifest (through an index for this architecture), fetch the config and the
 * layers that are not cached yet (concurrently, digests verified), unpack each
 * layer once into layers/sha256/<diff_id>, and describe the image. */
#include "services/agent/image.h"
#include "libcommon/log.h"
#include "services/agent/digest.h"
#include "services/agent/registry_client.h"
#include "services/agent/unpack.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <pthread.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <unistd.h>

#define BLOB_JSON_MAX ((size_t)8 * 1024 * 1024)
#define PROGRESS_INTERVAL_MS 100

struct image_store {
    char *cache_dir;
    char *blobs_dir;  /* <cache>/blobs/sha256 */
    char *layers_dir; /* <cache>/layers/sha256, or layers-<base>-<count>/sha256 */
    unpack_ids ids;   /* the owner shift of those layers */
    char *images_dir; /* <cache>/images */
    char *tmp_dir;    /* <cache>/tmp: same file system, for rename */
    char *architecture;
    int max_parallel;
    int timeout_ms;
    int retries;
    int backoff_ms;
    bool insecure_http;
    char *default_registry;
    json_t *auths; /* "auths" of the auth file, or NULL */
};

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

static bool _exists(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0;
}

static char *_blob_path(const image_store *s, const char *digest)
{
    return ts_asprintf("%s/%s", s->blobs_dir, digest_hex(digest));
}

static char *_layer_path(const image_store *s, const char *diff_id)
{
    return ts_asprintf("%s/%s", s->layers_dir, digest_hex(diff_id));
}

/* Write data to path atomically (temporary file, fsync, rename). */
static bool _write_atomic(const image_store *s, const char *path, const void *data, size_t len,
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

static json_t *_load_blob_json(const image_store *s, const char *digest, ts_err *err)
{
    char *path = _blob_path(s, digest);
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

/* ---- store ---------------------------------------------------------------------------- */

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

/* Credentials for a registry from the auth file (heap strings, or NULLs). */
static void _creds(const image_store *s, const char *registry, char **user, char **pass)
{
    *user = *pass = NULL;
    json_t *a = s->auths ? json_object_get(s->auths, registry) : NULL;
    if (!a) return;
    const char *u = json_string_value(json_object_get(a, "username"));
    const char *p = json_string_value(json_object_get(a, "password"));
    if (u) {
        *user = ts_strdup(u);
        *pass = ts_strdup(p ? p : "");
        return;
    }
    const char *b64 = json_string_value(json_object_get(a, "auth"));
    if (!b64) return;
    size_t cap = strlen(b64), n = 0;
    unsigned char *bin = ts_malloc(cap + 1);
    if (sodium_base642bin(bin, cap, b64, strlen(b64), NULL, &n, NULL,
                          sodium_base64_VARIANT_ORIGINAL) == 0) {
        bin[n] = '\0';
        char *colon = strchr((char *)bin, ':');
        if (colon) {
            *colon = '\0';
            *user = ts_strdup((char *)bin);
            *pass = ts_strdup(colon + 1);
        }
    }
    sodium_memzero(bin, cap + 1);
    free(bin);
}

static regclient *_client(const image_store *s, const image_ref *r)
{
    char *user, *pass;
    _creds(s, r->registry, &user, &pass);
    regclient_opts o = {.host = r->api_host,
                        .insecure_http = s->insecure_http,
                        .timeout_ms = s->timeout_ms,
                        .retries = s->retries,
                        .backoff_ms = s->backoff_ms,
                        .username = user,
                        .password = pass};
    regclient *c = regclient_new(&o);
    free(user);
    if (pass) sodium_memzero(pass, strlen(pass));
    free(pass);
    return c;
}

/* ---- manifests --------------------------------------------------------------------------- */

static bool _is_index(const char *mt)
{
    return mt && (strcmp(mt, MT_OCI_INDEX) == 0 || strcmp(mt, MT_DOCKER_LIST) == 0);
}

static bool _is_manifest(const char *mt)
{
    return mt && (strcmp(mt, MT_OCI_MANIFEST) == 0 || strcmp(mt, MT_DOCKER_MANIFEST) == 0);
}

/* The media type of a manifest: the body's mediaType, else the served type,
 * else guessed from the shape. */
static const char *_manifest_type(json_t *j, const char *served)
{
    const char *mt = json_string_value(json_object_get(j, "mediaType"));
    if (_is_index(mt) || _is_manifest(mt)) return mt;
    if (_is_index(served) || _is_manifest(served)) return served;
    if (json_is_array(json_object_get(j, "manifests"))) return MT_OCI_INDEX;
    if (json_is_array(json_object_get(j, "layers"))) return MT_OCI_MANIFEST;
    return mt ? mt : served;
}

/* Pick this node's manifest from an index. */
static const char *_pick_platform(const image_store *s, json_t *index, const char *ref, ts_err *err)
{
    json_t *ms = json_object_get(index, "manifests");
    size_t i;
    json_t *m;
    char avail[256] = "";
    json_array_foreach(ms, i, m)
    {
        json_t *p = json_object_get(m, "platform");
        const char *arch = json_string_value(json_object_get(p, "architecture"));
        const char *os = json_string_value(json_object_get(p, "os"));
        const char *mt = json_string_value(json_object_get(m, "mediaType"));
        if (!arch || !os) continue;
        if (mt && !_is_manifest(mt)) continue;
        if (strcmp(os, "linux") == 0 && strcmp(arch, s->architecture) == 0) {
            const char *d = json_string_value(json_object_get(m, "digest"));
            if (d && digest_valid(d, NULL)) return d;
        }
        if (strcmp(os, "unknown") != 0 &&
            strlen(avail) + strlen(os) + strlen(arch) + 4 < sizeof(avail))
            snprintf(avail + strlen(avail), sizeof(avail) - strlen(avail), "%s%s/%s",
                     *avail ? ", " : "", os, arch);
    }
    ts_err_set(err, "image %s has no manifest for linux/%s (available: %s)", ref, s->architecture,
               *avail ? avail : "none");
    return NULL;
}

static bool _layer_type_ok(const char *mt)
{
    if (!mt) return true;
    static const char *const ok[] = {
        "application/vnd.oci.image.layer.v1.tar",
        "application/vnd.oci.image.layer.v1.tar+gzip",
        "application/vnd.oci.image.layer.v1.tar+zstd",
        "application/vnd.oci.image.layer.nondistributable.v1.tar",
        "application/vnd.oci.image.layer.nondistributable.v1.tar+gzip",
        "application/vnd.oci.image.layer.nondistributable.v1.tar+zstd",
        "application/vnd.docker.image.rootfs.diff.tar.gzip",
        "application/vnd.docker.image.rootfs.foreign.diff.tar.gzip",
    };
    for (size_t i = 0; i < TS_ARRAY_LEN(ok); i++)
        if (strcmp(mt, ok[i]) == 0) return true;
    return false;
}

typedef struct layer_desc {
    const char *digest; /* blob */
    int64_t size;
    const char *diff_id; /* from the config */
} layer_desc;

/* Check a manifest and its config; fill the layer descriptors (pointers into
 * the JSON). */
static bool _check_manifest(json_t *man, json_t *cfg, layer_desc **out, int *n_out, const char *ref,
                            ts_err *err)
{
    json_t *layers = json_object_get(man, "layers");
    json_t *diff_ids = json_object_get(json_object_get(cfg, "rootfs"), "diff_ids");
    if (!json_is_array(layers) || !json_is_array(diff_ids)) {
        ts_err_set(err, "image %s: manifest without layers or config without rootfs.diff_ids", ref);
        return false;
    }
    if (json_array_size(layers) != json_array_size(diff_ids)) {
        ts_err_set(err, "image %s: %zu layers but %zu diff_ids in the config", ref,
                   json_array_size(layers), json_array_size(diff_ids));
        return false;
    }
    int n = (int)json_array_size(layers);
    layer_desc *l = ts_calloc((size_t)(n ? n : 1), sizeof(*l));
    for (int i = 0; i < n; i++) {
        json_t *d = json_array_get(layers, (size_t)i);
        const char *mt = json_string_value(json_object_get(d, "mediaType"));
        l[i].digest = json_string_value(json_object_get(d, "digest"));
        l[i].size = json_is_integer(json_object_get(d, "size"))
                        ? json_integer_value(json_object_get(d, "size"))
                        : -1;
        l[i].diff_id = json_string_value(json_array_get(diff_ids, (size_t)i));
        ts_err derr = {{0}};
        if (!digest_valid(l[i].digest, &derr) || !digest_valid(l[i].diff_id, &derr)) {
            ts_err_set(err, "image %s: layer %d: %s", ref, i, derr.msg);
            free(l);
            return false;
        }
        if (!_layer_type_ok(mt)) {
            ts_err_set(err, "image %s: layer %s has the unsupported media type %s", ref,
                       l[i].digest, mt);
            free(l);
            return false;
        }
    }
    *out = l;
    *n_out = n;
    return true;
}

/* ---- describing a cached image ----------------------------------------------------------------
 */

static char **_strv(json_t *a)
{
    if (!json_is_array(a)) return NULL;
    size_t n = json_array_size(a);
    char **v = ts_calloc(n + 1, sizeof(char *));
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        const char *x = json_string_value(json_array_get(a, i));
        if (x) v[k++] = ts_strdup(x);
    }
    return v;
}

static char *_nonempty(json_t *j)
{
    const char *s = json_string_value(j);
    return s && *s ? ts_strdup(s) : NULL;
}

void image_info_free(image_info *info)
{
    if (!info) return;
    free(info->reference);
    free(info->digest);
    free(info->architecture);
    for (int i = 0; i < info->n_layers; i++)
        free(info->layer_dirs[i]);
    free(info->layer_dirs);
    char **vs[] = {info->env, info->entrypoint, info->cmd};
    for (size_t k = 0; k < TS_ARRAY_LEN(vs); k++) {
        for (char **p = vs[k]; p && *p; p++)
            free(*p);
        free(vs[k]);
    }
    free(info->workdir);
    free(info->user);
    free(info->labels_json);
    free(info);
}

/* The image whose manifest (already verified) is cached under digest, with
 * every layer unpacked; NULL (err set) otherwise. */
static image_info *_describe(image_store *s, const char *reference, const char *digest, ts_err *err)
{
    json_t *man = _load_blob_json(s, digest, err);
    if (!man) return NULL;
    image_info *info = NULL;
    layer_desc *layers = NULL;
    int n = 0;
    json_t *cfg = NULL;
    const char *cfg_digest =
        json_string_value(json_object_get(json_object_get(man, "config"), "digest"));
    if (!cfg_digest || !digest_valid(cfg_digest, err)) {
        ts_err_prefix(err, "image %s: manifest config", reference);
        goto out;
    }
    cfg = _load_blob_json(s, cfg_digest, err);
    if (!cfg || !_check_manifest(man, cfg, &layers, &n, reference, err)) goto out;
    info = ts_calloc(1, sizeof(*info));
    info->reference = ts_strdup(reference);
    info->digest = ts_strdup(digest);
    const char *arch = json_string_value(json_object_get(cfg, "architecture"));
    info->architecture = ts_strdup(arch && *arch ? arch : s->architecture);
    info->layer_dirs = ts_calloc((size_t)n + 1, sizeof(char *)); /* NULL-terminated too */
    for (int i = 0; i < n; i++) {
        char *dir = _layer_path(s, layers[i].diff_id);
        if (!_exists(dir)) {
            ts_err_set(err, "image %s: layer %s is not unpacked in the cache", reference,
                       layers[i].diff_id);
            free(dir);
            image_info_free(info);
            info = NULL;
            goto out;
        }
        info->layer_dirs[info->n_layers++] = dir;
    }
    json_t *c = json_object_get(cfg, "config");
    info->env = _strv(json_object_get(c, "Env"));
    if (!info->env) info->env = ts_calloc(1, sizeof(char *));
    info->entrypoint = _strv(json_object_get(c, "Entrypoint"));
    info->cmd = _strv(json_object_get(c, "Cmd"));
    info->workdir = _nonempty(json_object_get(c, "WorkingDir"));
    info->user = _nonempty(json_object_get(c, "User"));
    json_t *labels = json_object_get(c, "Labels");
    info->labels_json = json_is_object(labels) ? json_dumps(labels, JSON_COMPACT | JSON_SORT_KEYS)
                                               : ts_strdup("{}");
out:
    free(layers);
    json_decref(cfg);
    json_decref(man);
    return info;
}

/* images/<hash>.json: resolved reference -> manifest digest */
static char *_ref_record_path(const image_store *s, const image_ref *r)
{
    char *canon = ts_asprintf("%s/%s:%s@%s", r->registry, r->repository, r->tag ? r->tag : "",
                              r->digest ? r->digest : "");
    char d[DIGEST_STRLEN];
    digest_buf(canon, strlen(canon), d);
    free(canon);
    return ts_asprintf("%s/%s.json", s->images_dir, digest_hex(d));
}

/* The manifest digest an index digest resolves to from the cache (or the
 * digest itself when it is a manifest); NULL when not cached. */
static char *_resolve_cached(image_store *s, const char *digest, const char *reference, ts_err *err)
{
    json_t *j = _load_blob_json(s, digest, err);
    if (!j) return NULL;
    char *out = NULL;
    if (_is_index(_manifest_type(j, NULL))) {
        const char *d = _pick_platform(s, j, reference, err);
        char *p = d ? _blob_path(s, d) : NULL;
        if (d && _exists(p))
            out = ts_strdup(d);
        else if (d)
            ts_err_set(err, "manifest %s is not in the cache", d);
        free(p);
    } else {
        out = ts_strdup(digest);
    }
    json_decref(j);
    return out;
}

image_info *image_lookup(image_store *s, const char *reference, ts_err *err)
{
    image_ref r;
    if (!image_ref_parse(reference, s->default_registry, &r, err)) return NULL;
    image_info *info = NULL;
    char *digest = NULL;
    if (r.digest) {
        digest = _resolve_cached(s, r.digest, reference, err);
    } else {
        char *rec = _ref_record_path(s, &r);
        json_error_t je;
        json_t *j = json_load_file(rec, 0, &je);
        const char *d = json_string_value(json_object_get(j, "digest"));
        if (d && digest_valid(d, NULL))
            digest = ts_strdup(d);
        else
            ts_err_set(err, "image %s is not in the cache", reference);
        json_decref(j);
        free(rec);
    }
    if (digest) info = _describe(s, reference, digest, err);
    if (!info) ts_err_prefix(err, "image %s not available offline", reference);
    free(digest);
    image_ref_free(&r);
    return info;
}

/* ---- pulling -----------------------------------------------------------------------------------
 */

typedef struct pull {
    image_store *s;
    regclient *rc;
    const char *repo;
    layer_desc *layers;
    int n;
    pthread_mutex_t mu;
    int next;
    bool failed;
    ts_err err;
    int64_t done, total;
    int layers_done;
    int64_t last_report_ms;
    image_progress_fn progress;
    void *ctx;
} pull;

static void _report(pull *p, bool force)
{
    /* with p->mu held */
    if (!p->progress) return;
    int64_t now = ts_now_mono_ms();
    if (!force && now - p->last_report_ms < PROGRESS_INTERVAL_MS) return;
    p->last_report_ms = now;
    image_progress pr = {.bytes_done = p->done,
                         .bytes_total = p->total,
                         .layers_done = p->layers_done,
                         .layers_total = p->n};
    p->progress(&pr, p->ctx);
}

static void _on_bytes(int64_t delta, void *ctx)
{
    pull *p = ctx;
    pthread_mutex_lock(&p->mu);
    p->done += delta;
    _report(p, false);
    pthread_mutex_unlock(&p->mu);
}

static bool _pull_layer(pull *p, const layer_desc *l, ts_err *err)
{
    image_store *s = p->s;
    char *dir = _layer_path(s, l->diff_id);
    char *blob = _blob_path(s, l->digest);
    bool ok = true;
    if (_exists(dir)) goto out;
    if (!_exists(blob)) {
        TLOG_DEBUG("fetching layer", "digest=%s size=%lld", l->digest, (long long)l->size);
        ok = regclient_fetch_blob(p->rc, p->repo, l->digest, l->size, "layer", blob, s->tmp_dir,
                                  _on_bytes, p, err);
        if (!ok) goto out;
    }
    unpack_stats st;
    int64_t t0 = ts_now_mono_ms();
    ok = unpack_layer(blob, dir, s->tmp_dir, l->diff_id, &s->ids, &st, err);
    if (!ok) {
        ts_err_prefix(err, "layer %s", l->digest);
        goto out;
    }
    if (st.entries == 0 && st.uncompressed_bytes == 0) goto out; /* another pull unpacked it */
    TLOG_INFO("layer unpacked",
              "digest=%s diff_id=%s entries=%lld bytes=%lld id_base=%u id_count=%u ms=%lld",
              l->digest, l->diff_id, (long long)st.entries, (long long)st.uncompressed_bytes,
              s->ids.base, s->ids.count, (long long)(ts_now_mono_ms() - t0));
out:
    free(dir);
    free(blob);
    return ok;
}

static void *_worker(void *arg)
{
    pull *p = arg;
    for (;;) {
        pthread_mutex_lock(&p->mu);
        if (p->failed || p->next >= p->n) {
            pthread_mutex_unlock(&p->mu);
            return NULL;
        }
        int i = p->next++;
        pthread_mutex_unlock(&p->mu);
        ts_err err = {{0}};
        if (!_pull_layer(p, &p->layers[i], &err)) {
            pthread_mutex_lock(&p->mu);
            if (!p->failed) {
                p->failed = true;
                p->err = err;
            }
            pthread_mutex_unlock(&p->mu);
        } else {
            pthread_mutex_lock(&p->mu);
            p->layers_done++;
            _report(p, true);
            pthread_mutex_unlock(&p->mu);
        }
    }
}

/* Fetch (when not cached) and store a manifest by digest; returns its JSON. */
static json_t *_manifest_by_digest(image_store *s, regclient *rc, const image_ref *r,
                                   const char *digest, const char *reference, ts_err *err)
{
    char *path = _blob_path(s, digest);
    if (!_exists(path)) {
        reg_manifest m;
        long status;
        if (!regclient_get_manifest(rc, r->repository, digest, &m, &status, err)) {
            if (status == 404)
                ts_err_set(err, "image not found: %s (manifest %s)", reference, digest);
            free(path);
            return NULL;
        }
        bool ok = _write_atomic(s, path, m.body, m.len, err);
        reg_manifest_free(&m);
        if (!ok) {
            free(path);
            return NULL;
        }
    }
    free(path);
    return _load_blob_json(s, digest, err);
}

image_info *image_pull(image_store *s, const char *reference, image_progress_fn progress, void *ctx,
                       ts_err *err)
{
    image_ref r;
    if (!image_ref_parse(reference, s->default_registry, &r, err)) return NULL;
    int64_t t0 = ts_now_mono_ms();
    regclient *rc = _client(s, &r);
    image_info *info = NULL;
    json_t *man = NULL, *cfg = NULL;
    char *digest = NULL;
    layer_desc *layers = NULL;
    int n = 0;

    /* 1. the manifest: by digest from the cache when possible, else asked for */
    if (r.digest) {
        ts_err cerr = {{0}};
        digest = _resolve_cached(s, r.digest, reference, &cerr);
    }
    if (!digest) {
        reg_manifest m;
        long status = 0;
        const char *want = r.digest ? r.digest : r.tag;
        if (!regclient_get_manifest(rc, r.repository, want, &m, &status, err)) {
            if (status == 404) ts_err_set(err, "image not found: %s", reference);
            goto out;
        }
        json_error_t je;
        json_t *j = json_loadb(m.body, m.len, 0, &je);
        const char *mt = j ? _manifest_type(j, m.media_type) : NULL;
        if (!j || !json_is_object(j)) {
            ts_err_set(err, "image %s: the manifest is not JSON", reference);
        } else if (json_integer_value(json_object_get(j, "schemaVersion")) != 2) {
            ts_err_set(err, "image %s: unsupported manifest schema version %lld (only 2)",
                       reference,
                       (long long)json_integer_value(json_object_get(j, "schemaVersion")));
        } else if (!_is_index(mt) && !_is_manifest(mt)) {
            ts_err_set(err, "image %s: unsupported manifest media type %s", reference,
                       mt ? mt : "(none)");
        } else {
            char *path = _blob_path(s, m.digest);
            bool stored = _exists(path) || _write_atomic(s, path, m.body, m.len, err);
            free(path);
            if (stored && _is_index(mt)) {
                const char *d = _pick_platform(s, j, reference, err);
                if (d) {
                    json_t *sub = _manifest_by_digest(s, rc, &r, d, reference, err);
                    if (sub && !_is_manifest(_manifest_type(sub, NULL)))
                        ts_err_set(err, "image %s: the index entry %s is not an image manifest",
                                   reference, d);
                    else if (sub)
                        digest = ts_strdup(d);
                    json_decref(sub);
                }
            } else if (stored) {
                digest = ts_strdup(m.digest);
            }
        }
        json_decref(j);
        reg_manifest_free(&m);
        if (!digest) goto out;
    }
    man = _load_blob_json(s, digest, err);
    if (!man) goto out;

    /* 2. the config */
    json_t *cdesc = json_object_get(man, "config");
    const char *cfg_digest = json_string_value(json_object_get(cdesc, "digest"));
    if (!cfg_digest || !digest_valid(cfg_digest, err)) {
        ts_err_prefix(err, "image %s: manifest config", reference);
        goto out;
    }
    char *cfg_path = _blob_path(s, cfg_digest);
    bool have_cfg = _exists(cfg_path);
    if (!have_cfg) {
        json_t *sz = json_object_get(cdesc, "size");
        have_cfg = regclient_fetch_blob(rc, r.repository, cfg_digest,
                                        json_is_integer(sz) ? json_integer_value(sz) : -1, "config",
                                        cfg_path, s->tmp_dir, NULL, NULL, err);
    }
    free(cfg_path);
    if (!have_cfg) goto out;
    cfg = _load_blob_json(s, cfg_digest, err);
    if (!cfg || !_check_manifest(man, cfg, &layers, &n, reference, err)) goto out;
    const char *os = json_string_value(json_object_get(cfg, "os"));
    const char *arch = json_string_value(json_object_get(cfg, "architecture"));
    if ((os && *os && strcmp(os, "linux") != 0) ||
        (arch && *arch && strcmp(arch, s->architecture) != 0)) {
        ts_err_set(err, "image %s is for %s/%s; this node runs linux/%s", reference, os ? os : "?",
                   arch ? arch : "?", s->architecture);
        goto out;
    }

    /* 3. the layers, concurrently */
    pull p = {.s = s,
              .rc = rc,
              .repo = r.repository,
              .layers = layers,
              .n = n,
              .progress = progress,
              .ctx = ctx};
    pthread_mutex_init(&p.mu, NULL);
    int need = 0;
    for (int i = 0; i < n; i++) {
        int64_t sz = layers[i].size > 0 ? layers[i].size : 0;
        p.total += sz;
        char *dir = _layer_path(s, layers[i].diff_id);
        char *blob = _blob_path(s, layers[i].digest);
        if (_exists(dir) || _exists(blob)) p.done += sz;
        if (!_exists(dir)) need++;
        free(dir);
        free(blob);
    }
    pthread_mutex_lock(&p.mu);
    _report(&p, true);
    pthread_mutex_unlock(&p.mu);
    int nthreads = need < s->max_parallel ? need : s->max_parallel;
    if (nthreads <= 1) {
        if (need) _worker(&p);
    } else {
        pthread_t *th = ts_calloc((size_t)nthreads, sizeof(pthread_t));
        int started = 0;
        for (int i = 0; i < nthreads; i++)
            if (pthread_create(&th[i], NULL, _worker, &p) == 0)
                started++;
            else
                break;
        if (started == 0) _worker(&p);
        for (int i = 0; i < started; i++)
            pthread_join(th[i], NULL);
        free(th);
    }
    pthread_mutex_destroy(&p.mu);
    if (p.failed) {
        *err = p.err;
        goto out;
    }
    if (progress) {
        image_progress pr = {
            .bytes_done = p.total, .bytes_total = p.total, .layers_done = n, .layers_total = n};
        progress(&pr, ctx);
    }

    /* 4. remember what the reference resolved to, and describe the image */
    char *rec = _ref_record_path(s, &r);
    json_t *j =
        json_pack("{s:s, s:s, s:s, s:I}", "reference", reference, "digest", digest, "architecture",
                  s->architecture, "pulled_at_ms", (json_int_t)ts_now_wall_ms());
    char *text = json_dumps(j, JSON_COMPACT);
    bool ok = _write_atomic(s, rec, text, strlen(text), err);
    free(text);
    json_decref(j);
    free(rec);
    if (!ok) goto out;
    info = _describe(s, reference, digest, err);
    if (info)
        TLOG_INFO("image pulled", "reference=%s digest=%s layers=%d unpacked_layers=%d ms=%lld",
                  reference, digest, n, need, (long long)(ts_now_mono_ms() - t0));
out:
    free(layers);
    json_decref(cfg);
    json_decref(man);
    free(digest);
    regclient_free(rc);
    image_ref_free(&r);
    return info;
}
