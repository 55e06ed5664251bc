/* image_pull.c: pulling an image into the node's cache (image_pull.h). */
#include "services/agent/image_pull.h"

#include <jansson.h>
#include <pthread.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "libcommon/log.h"
#include "services/agent/digest.h"
#include "services/agent/image_manifest.h"
#include "services/agent/oci_client.h"

#define PROGRESS_INTERVAL_MS 100

/* ---- the registry ------------------------------------------------------------------ */

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

static oci_client *_client(const image_store *s, const image_ref *r)
{
    char *user, *pass;
    _creds(s, r->registry, &user, &pass);
    oci_client_opts o = {.host = r->api_host,
                         .insecure_http = s->insecure_http,
                         .timeout_ms = s->timeout_ms,
                         .retries = s->retries,
                         .backoff_ms = s->backoff_ms,
                         .username = user,
                         .password = pass};
    oci_client *c = oci_client_new(&o);
    free(user);
    if (pass) sodium_memzero(pass, strlen(pass));
    free(pass);
    return c;
}

/* ---- pulling ----------------------------------------------------------------------- */

typedef struct pull {
    image_store *s;
    oci_client *rc;
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
    char *dir = image_store_layer_path(s, l->diff_id);
    char *blob = image_store_blob_path(s, l->digest);
    bool ok = true;
    if (image_store_exists(dir)) goto out;
    if (!image_store_exists(blob)) {
        TLOG_DEBUG("fetching layer", "digest=%s size=%lld", l->digest, (long long)l->size);
        ok = oci_client_fetch_blob(p->rc, p->repo, l->digest, l->size, "layer", blob, s->tmp_dir,
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
static json_t *_manifest_by_digest(image_store *s, oci_client *rc, const image_ref *r,
                                   const char *digest, const char *reference, ts_err *err)
{
    char *path = image_store_blob_path(s, digest);
    if (!image_store_exists(path)) {
        oci_manifest m;
        long status;
        if (!oci_client_get_manifest(rc, r->repository, digest, &m, &status, err)) {
            if (status == 404)
                ts_err_set(err, "image not found: %s (manifest %s)", reference, digest);
            free(path);
            return NULL;
        }
        bool ok = image_store_write(s, path, m.body, m.len, err);
        oci_manifest_free(&m);
        if (!ok) {
            free(path);
            return NULL;
        }
    }
    free(path);
    return image_store_blob_json(s, digest, err);
}

/* Long: the four steps of a pull, numbered below; they share the manifest, the progress callback
 * and one cleanup. */
image_info *image_pull(image_store *s, const char *reference, image_progress_fn progress, void *ctx,
                       ts_err *err)
{
    image_ref r;
    if (!image_ref_parse(reference, s->default_registry, &r, err)) return NULL;
    int64_t t0 = ts_now_mono_ms();
    oci_client *rc = _client(s, &r);
    image_info *info = NULL;
    json_t *man = NULL, *cfg = NULL;
    char *digest = NULL;
    layer_desc *layers = NULL;
    int n = 0;

    /* 1. the manifest: by digest from the cache when possible, else asked for */
    if (r.digest) {
        ts_err cerr = {{0}};
        digest = image_resolve_cached(s, r.digest, reference, &cerr);
    }
    if (!digest) {
        oci_manifest m;
        long status = 0;
        const char *want = r.digest ? r.digest : r.tag;
        if (!oci_client_get_manifest(rc, r.repository, want, &m, &status, err)) {
            if (status == 404) ts_err_set(err, "image not found: %s", reference);
            goto out;
        }
        json_error_t je;
        json_t *j = json_loadb(m.body, m.len, 0, &je);
        const char *mt = j ? image_manifest_type(j, m.media_type) : NULL;
        if (!j || !json_is_object(j)) {
            ts_err_set(err, "image %s: the manifest is not JSON", reference);
        } else if (json_integer_value(json_object_get(j, "schemaVersion")) != 2) {
            ts_err_set(err, "image %s: unsupported manifest schema version %lld (only 2)",
                       reference,
                       (long long)json_integer_value(json_object_get(j, "schemaVersion")));
        } else if (!image_manifest_is_index(mt) && !image_manifest_is_manifest(mt)) {
            ts_err_set(err, "image %s: unsupported manifest media type %s", reference,
                       mt ? mt : "(none)");
        } else {
            char *path = image_store_blob_path(s, m.digest);
            bool stored =
                image_store_exists(path) || image_store_write(s, path, m.body, m.len, err);
            free(path);
            if (stored && image_manifest_is_index(mt)) {
                const char *d = image_manifest_pick(j, s->architecture, reference, err);
                if (d) {
                    json_t *sub = _manifest_by_digest(s, rc, &r, d, reference, err);
                    if (sub && !image_manifest_is_manifest(image_manifest_type(sub, NULL)))
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
        oci_manifest_free(&m);
        if (!digest) goto out;
    }
    man = image_store_blob_json(s, digest, err);
    if (!man) goto out;

    /* 2. the config */
    json_t *cdesc = json_object_get(man, "config");
    const char *cfg_digest = json_string_value(json_object_get(cdesc, "digest"));
    if (!cfg_digest || !digest_valid(cfg_digest, err)) {
        ts_err_prefix(err, "image %s: manifest config", reference);
        goto out;
    }
    char *cfg_path = image_store_blob_path(s, cfg_digest);
    bool have_cfg = image_store_exists(cfg_path);
    if (!have_cfg) {
        json_t *sz = json_object_get(cdesc, "size");
        have_cfg = oci_client_fetch_blob(rc, r.repository, cfg_digest,
                                         json_is_integer(sz) ? json_integer_value(sz) : -1,
                                         "config", cfg_path, s->tmp_dir, NULL, NULL, err);
    }
    free(cfg_path);
    if (!have_cfg) goto out;
    cfg = image_store_blob_json(s, cfg_digest, err);
    if (!cfg || !image_manifest_layers(man, cfg, &layers, &n, reference, err)) goto out;
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
        char *dir = image_store_layer_path(s, layers[i].diff_id);
        char *blob = image_store_blob_path(s, layers[i].digest);
        if (image_store_exists(dir) || image_store_exists(blob)) p.done += sz;
        if (!image_store_exists(dir)) need++;
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
    char *rec = image_store_ref_path(s, &r);
    json_t *j =
        json_pack("{s:s, s:s, s:s, s:I}", "reference", reference, "digest", digest, "architecture",
                  s->architecture, "pulled_at_ms", (json_int_t)ts_now_wall_ms());
    char *text = json_dumps(j, JSON_COMPACT);
    bool ok = image_store_write(s, rec, text, strlen(text), err);
    free(text);
    json_decref(j);
    free(rec);
    if (!ok) goto out;
    info = image_describe(s, reference, digest, err);
    if (info)
        TLOG_INFO("image pulled", "reference=%s digest=%s layers=%d unpacked_layers=%d ms=%lld",
                  reference, digest, n, need, (long long)(ts_now_mono_ms() - t0));
out:
    free(layers);
    json_decref(cfg);
    json_decref(man);
    free(digest);
    oci_client_free(rc);
    image_ref_free(&r);
    return info;
}
