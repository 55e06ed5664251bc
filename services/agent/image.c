/* image.c: images in the node's cache (see image.h): describe one, find one
 * by reference without the network. */
#include "services/agent/image.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "services/agent/digest.h"
#include "services/agent/image_manifest.h"

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

image_info *image_describe(image_store *s, const char *reference, const char *digest, ts_err *err)
{
    json_t *man = image_store_blob_json(s, digest, err);
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
    cfg = image_store_blob_json(s, cfg_digest, err);
    if (!cfg || !image_manifest_layers(man, cfg, &layers, &n, reference, err)) goto out;
    info = ts_calloc(1, sizeof(*info));
    info->reference = ts_strdup(reference);
    info->digest = ts_strdup(digest);
    const char *arch = json_string_value(json_object_get(cfg, "architecture"));
    info->architecture = ts_strdup(arch && *arch ? arch : s->architecture);
    info->layer_dirs = ts_calloc((size_t)n + 1, sizeof(char *)); /* NULL-terminated too */
    for (int i = 0; i < n; i++) {
        char *dir = image_store_layer_path(s, layers[i].diff_id);
        if (!image_store_exists(dir)) {
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

char *image_resolve_cached(image_store *s, const char *digest, const char *reference, ts_err *err)
{
    json_t *j = image_store_blob_json(s, digest, err);
    if (!j) return NULL;
    char *out = NULL;
    if (image_manifest_is_index(image_manifest_type(j, NULL))) {
        const char *d = image_manifest_pick(j, s->architecture, reference, err);
        char *p = d ? image_store_blob_path(s, d) : NULL;
        if (d && image_store_exists(p))
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
        digest = image_resolve_cached(s, r.digest, reference, err);
    } else {
        char *rec = image_store_ref_path(s, &r);
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
    if (digest) info = image_describe(s, reference, digest, err);
    if (!info) ts_err_prefix(err, "image %s not available offline", reference);
    free(digest);
    image_ref_free(&r);
    return info;
}
