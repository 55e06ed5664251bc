/* image_manifest.c: reading OCI manifests and indexes (image_manifest.h). */
#include "services/agent/image_manifest.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "services/agent/digest.h"
#include "services/agent/oci_client.h"

bool image_manifest_is_index(const char *mt)
{
    return mt && (strcmp(mt, MT_OCI_INDEX) == 0 || strcmp(mt, MT_DOCKER_LIST) == 0);
}

bool image_manifest_is_manifest(const char *mt)
{
    return mt && (strcmp(mt, MT_OCI_MANIFEST) == 0 || strcmp(mt, MT_DOCKER_MANIFEST) == 0);
}

const char *image_manifest_type(json_t *j, const char *served)
{
    const char *mt = json_string_value(json_object_get(j, "mediaType"));
    if (image_manifest_is_index(mt) || image_manifest_is_manifest(mt)) return mt;
    if (image_manifest_is_index(served) || image_manifest_is_manifest(served)) return served;
    if (json_is_array(json_object_get(j, "manifests"))) return MT_OCI_INDEX;
    if (json_is_array(json_object_get(j, "layers"))) return MT_OCI_MANIFEST;
    return mt ? mt : served;
}

const char *image_manifest_pick(json_t *index, const char *architecture, const char *ref,
                                ts_err *err)
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
        if (mt && !image_manifest_is_manifest(mt)) continue;
        if (strcmp(os, "linux") == 0 && strcmp(arch, architecture) == 0) {
            const char *d = json_string_value(json_object_get(m, "digest"));
            if (d && digest_valid(d, NULL)) return d;
        }
        if (strcmp(os, "unknown") != 0 &&
            strlen(avail) + strlen(os) + strlen(arch) + 4 < sizeof(avail))
            snprintf(avail + strlen(avail), sizeof(avail) - strlen(avail), "%s%s/%s",
                     *avail ? ", " : "", os, arch);
    }
    ts_err_set(err, "image %s has no manifest for linux/%s (available: %s)", ref, architecture,
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

bool image_manifest_layers(json_t *man, json_t *cfg, layer_desc **out, int *n_out, const char *ref,
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
