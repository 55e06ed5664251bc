/* oci.c: see oci.h. */
#include "oci.h"

#include "container_registries.h"
#include "context.h"
#include "libcommon/httpc.h"
#include "libcommon/image_ref.h"

#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ACCEPT_MANIFESTS                                                                           \
    "Accept: application/vnd.oci.image.manifest.v1+json, "                                         \
    "application/vnd.oci.image.index.v1+json, "                                                    \
    "application/vnd.docker.distribution.manifest.v2+json, "                                       \
    "application/vnd.docker.distribution.manifest.list.v2+json"

static __thread httpc *t_client;

static httpc *client(void)
{
    if (!t_client) {
        t_client = httpc_new((int)reg_settings.oci_timeout_ms);
        httpc_use_ca_file(t_client, reg_settings.oci_ca_file);
    }
    return t_client;
}

const char *oci_arch_name(const char *a)
{
    if (!a) return "";
    if (strcmp(a, "amd64") == 0) return "x86_64";
    if (strcmp(a, "arm64") == 0) return "aarch64";
    return a;
}

typedef struct ref_parts {
    char host[256], repo[256], tag[129], digest[80];
} ref_parts;

/* The reference by the OCI grammar (libcommon/image_ref.h): a malformed one
 * never becomes a URL. */
static bool parse_ref(const char *ref, ref_parts *p, ts_err *err)
{
    memset(p, 0, sizeof(*p));
    image_ref r;
    if (!image_ref_parse(ref, reg_settings.oci_registry, &r, err)) return false;
    ts_strlcpy(p->host, r.api_host, sizeof(p->host));
    ts_strlcpy(p->repo, r.repository, sizeof(p->repo));
    ts_strlcpy(p->tag, r.tag ? r.tag : "", sizeof(p->tag));
    ts_strlcpy(p->digest, r.digest ? r.digest : "", sizeof(p->digest));
    image_ref_free(&r);
    return true;
}

static bool get(const char *url, const char *accept, httpc_resp *out, ts_err *err)
{
    const char *headers[] = {accept, NULL};
    memset(out, 0, sizeof(*out));
    return httpc_request(client(), "GET", url, accept ? headers : NULL, NULL, 0, NULL, out, err);
}

/* http or https: a registered registry's URL says which (container_registries.h). */
static char *base_url(PGconn *conn, const char *host, ts_err *err)
{
    bool plain = false;
    if (!creg_plain_http(conn, host, &plain, err)) return NULL;
    return ts_asprintf("%s://%s", plain ? "http" : "https", host);
}

static void sha256_hex(const char *body, size_t len, char out[72])
{
    unsigned char h[crypto_hash_sha256_BYTES];
    crypto_hash_sha256(h, (const unsigned char *)body, len);
    strcpy(out, "sha256:");
    for (size_t i = 0; i < sizeof(h); i++)
        sprintf(out + 7 + 2 * i, "%02x", h[i]);
}

static json_t *get_json(const char *url, const char *accept, long *status, char digest[72],
                        ts_err *err)
{
    httpc_resp r;
    if (!get(url, accept, &r, err)) return NULL;
    *status = r.status;
    json_t *j = NULL;
    if (r.status == 200) {
        if (digest) sha256_hex(r.body, r.body_len, digest);
        j = json_loadb(r.body, r.body_len, 0, NULL);
        if (!j) ts_err_set(err, "%s: not JSON", url);
    } else {
        ts_err_set(err, "%s: HTTP %ld", url, r.status);
    }
    httpc_resp_free(&r);
    return j;
}

bool oci_resolve(PGconn *conn, const char *reference, oci_image *out, bool *not_found, ts_err *err)
{
    memset(out, 0, sizeof(*out));
    *not_found = false;
    ref_parts p;
    if (!parse_ref(reference, &p, err)) return false;
    char *base = base_url(conn, p.host, err);
    if (!base) return false;
    char *url = ts_asprintf("%s/v2/%s/manifests/%s", base, p.repo, p.digest[0] ? p.digest : p.tag);
    long status = 0;
    char digest[72] = "";
    json_t *m = get_json(url, ACCEPT_MANIFESTS, &status, digest, err);
    free(url);
    json_t *cfg = NULL;
    bool ok = false;
    if (!m) {
        *not_found = status == 404;
        goto out;
    }
    out->digest = ts_strdup(digest);
    json_t *list = json_object_get(m, "manifests");
    if (json_is_array(list)) {
        json_t *pick = json_array_get(list, 0);
        size_t i;
        json_t *e;
        json_array_foreach(list, i, e)
        {
            json_t *plat = json_object_get(e, "platform");
            const char *a = json_string_value(json_object_get(plat, "architecture"));
            if (a && strcmp(a, "amd64") == 0) {
                pick = e;
                break;
            }
        }
        const char *d = json_string_value(json_object_get(pick, "digest"));
        if (!d) {
            ts_err_set(err, "image index of %s has no manifests", reference);
            goto out;
        }
        url = ts_asprintf("%s/v2/%s/manifests/%s", base, p.repo, d);
        json_decref(m);
        m = get_json(url, ACCEPT_MANIFESTS, &status, NULL, err);
        free(url);
        if (!m) goto out;
    }
    const char *cd = json_string_value(json_object_get(json_object_get(m, "config"), "digest"));
    if (!cd) {
        ts_err_set(err, "the manifest of %s has no config", reference);
        goto out;
    }
    url = ts_asprintf("%s/v2/%s/blobs/%s", base, p.repo, cd);
    cfg = get_json(url, NULL, &status, NULL, err);
    free(url);
    if (!cfg) goto out;
    out->architecture =
        ts_strdup(oci_arch_name(json_string_value(json_object_get(cfg, "architecture"))));
    json_t *c = json_object_get(cfg, "config");
    json_t *labels = json_object_get(c, "Labels");
    out->labels = json_is_object(labels) ? json_incref(labels) : json_object();
    out->command = json_array();
    if (json_is_array(json_object_get(c, "Entrypoint")))
        json_array_extend(out->command, json_object_get(c, "Entrypoint"));
    if (json_is_array(json_object_get(c, "Cmd")))
        json_array_extend(out->command, json_object_get(c, "Cmd"));
    ok = true;
out:
    json_decref(m);
    json_decref(cfg);
    free(base);
    if (!ok) {
        ts_err_prefix(err, "image %s", reference);
        oci_image_free(out);
    }
    return ok;
}

void oci_image_free(oci_image *im)
{
    free(im->digest);
    free(im->architecture);
    json_decref(im->labels);
    json_decref(im->command);
    memset(im, 0, sizeof(*im));
}

bool oci_catalog(PGconn *conn, const char *host, json_t **refs, ts_err *err)
{
    *refs = NULL;
    if (!host || !*host) host = reg_settings.oci_registry;
    if (!host || !*host) {
        ts_err_set(err, "no registry given and oci.registry is not set");
        return false;
    }
    char *base = base_url(conn, host, err);
    if (!base) return false;
    char *url = ts_asprintf("%s/v2/_catalog?n=1000", base);
    long status = 0;
    json_t *cat = get_json(url, NULL, &status, NULL, err);
    free(url);
    if (!cat) {
        free(base);
        return false;
    }
    json_t *out = json_array();
    size_t i;
    json_t *repo;
    json_array_foreach(json_object_get(cat, "repositories"), i, repo)
    {
        const char *r = json_string_value(repo);
        if (!r) continue;
        url = ts_asprintf("%s/v2/%s/tags/list", base, r);
        ts_err e;
        json_t *tags = get_json(url, NULL, &status, NULL, &e);
        free(url);
        size_t j;
        json_t *t;
        json_array_foreach(json_object_get(tags, "tags"), j, t)
        {
            if (json_is_string(t))
                json_array_append_new(out, json_sprintf("%s/%s:%s", host, r, json_string_value(t)));
        }
        json_decref(tags);
    }
    json_decref(cat);
    free(base);
    *refs = out;
    return true;
}
