/* image_config.c: see image_config.h. */
#include "image_config.h"

#include "images.h"
#include "libcommon/log.h"
#include "libcommon/pgjson.h"

#include <stdlib.h>
#include <string.h>

#define LABEL_MIN_PREFIX "ai.backend.resource.min."

enum part { P_IMAGE, P_RESOURCE, P_SLOT, P_BOUND, P_LABELS, P_LABEL };

typedef struct image_key {
    char ref[1100];
    enum part part;
    const char *slot, *bound, *label;
} image_key;

/* "%2F" -> "/", "%3A" -> ":" (as the SDK writes them), into out. */
static void decode_into(char *out, size_t size, const char *in)
{
    size_t o = strlen(out);
    for (const char *p = in; *p && o + 1 < size; p++) {
        if (p[0] == '%' && (strncasecmp(p + 1, "2F", 2) == 0 || strncasecmp(p + 1, "3A", 2) == 0)) {
            out[o++] = (p[2] == 'F' || p[2] == 'f') ? '/' : ':';
            p += 2;
        } else {
            out[o++] = *p;
        }
    }
    out[o] = '\0';
}

static bool is(const char *a, const char *b)
{
    return strcmp(a, b) == 0;
}

static bool parse(char **segs, int n, image_key *k, http_resp *resp)
{
    memset(k, 0, sizeof(*k));
    int end = n;
    k->part = P_IMAGE;
    if (n >= 7 && is(segs[n - 3], "resource") &&
        (is(segs[n - 1], "min") || is(segs[n - 1], "max"))) {
        k->part = P_BOUND, k->slot = segs[n - 2], k->bound = segs[n - 1], end = n - 3;
    } else if (n >= 6 && is(segs[n - 2], "resource")) {
        k->part = P_SLOT, k->slot = segs[n - 1], end = n - 2;
    } else if (n >= 5 && is(segs[n - 1], "resource")) {
        k->part = P_RESOURCE, end = n - 1;
    } else if (n >= 6 && is(segs[n - 2], "labels")) {
        k->part = P_LABEL, k->label = segs[n - 1], end = n - 2;
    } else if (n >= 5 && is(segs[n - 1], "labels")) {
        k->part = P_LABELS, end = n - 1;
    }
    if (end < 4) {
        http_problem(resp, 400, "invalid-api-params", NULL,
                     "an image key is images/<registry>/<name>/<tag>[/resource/<slot>/min|max | "
                     "/labels/<label>]");
        return false;
    }
    decode_into(k->ref, sizeof(k->ref), segs[1]);
    for (int i = 2; i < end - 1; i++) {
        decode_into(k->ref, sizeof(k->ref), "/");
        decode_into(k->ref, sizeof(k->ref), segs[i]);
    }
    decode_into(k->ref, sizeof(k->ref), ":");
    decode_into(k->ref, sizeof(k->ref), segs[end - 1]);
    return true;
}

/* The image's config subtree, or NULL after a 404. */
static json_t *image_tree(PGconn *conn, const image_key *k, http_resp *resp)
{
    const char *p[] = {k->ref};
    PGresult *r = pgjson_query(conn, resp, "read image",
                               "SELECT digest, architecture, (labels || label_overrides)::text,"
                               " min_slots::text, max_slots::text FROM registry.images"
                               " WHERE reference = $1",
                               1, p);
    if (!r) return NULL;
    if (PQntuples(r) != 1) {
        PQclear(r);
        http_problem(resp, 404, "not-found", NULL, "unknown image %s (register or scan it first)",
                     k->ref);
        return NULL;
    }
    json_t *labels = json_loads(PQgetvalue(r, 0, 2), 0, NULL);
    json_t *min = json_loads(PQgetvalue(r, 0, 3), 0, NULL);
    json_t *max = json_loads(PQgetvalue(r, 0, 4), 0, NULL);
    json_t *res = json_object();
    const char *slot;
    json_t *v;
    for (int pass = 0; pass < 2; pass++) {
        json_object_foreach(pass ? max : min, slot, v)
        {
            json_t *e = json_object_get(res, slot);
            if (!e) json_object_set_new(res, slot, e = json_object());
            json_object_set(e, pass ? "max" : "min", v);
        }
    }
    json_t *t =
        json_pack("{s:s, s:s, s:o, s:o}", "", PQgetvalue(r, 0, 0), "architecture",
                  PQgetvalue(r, 0, 1), "labels", labels ? labels : json_object(), "resource", res);
    json_decref(min);
    json_decref(max);
    PQclear(r);
    return t;
}

json_t *image_config_get(PGconn *conn, char **segs, int n, http_resp *resp)
{
    image_key k;
    if (!parse(segs, n, &k, resp)) return NULL;
    json_t *t = image_tree(conn, &k, resp);
    if (!t) return NULL;
    json_t *node = t;
    if (k.part != P_IMAGE) node = json_object_get(t, k.part >= P_LABELS ? "labels" : "resource");
    if (k.part == P_SLOT || k.part == P_BOUND) node = json_object_get(node, k.slot);
    if (k.part == P_BOUND) node = json_object_get(node, k.bound);
    if (k.part == P_LABEL) node = json_object_get(node, k.label);
    json_t *out = node ? json_incref(node) : json_null();
    json_decref(t);
    return out;
}

static bool run(PGconn *conn, http_resp *resp, const char *sql, int np, const char *const *p,
                bool *hit)
{
    PGresult *r = pgjson_query(conn, resp, "change image", sql, np, p);
    if (!r) return false;
    if (hit) *hit = atoi(PQcmdTuples(r)) > 0;
    PQclear(r);
    return true;
}

/* Derived columns again from the labels, then min <= max per slot. */
static bool restore(PGconn *conn, const image_key *k, http_resp *resp)
{
    bool found = false, bad = false;
    ts_err err = {{0}};
    if (!images_restore(conn, k->ref, &found, &bad, &err)) {
        if (bad)
            http_problem(resp, 400, "invalid-api-params", NULL, "image %s: %s", k->ref, err.msg);
        else
            http_problem(resp, 500, "internal-server-error", NULL, "image %s: %s", k->ref, err.msg);
        return false;
    }
    if (!found) {
        http_problem(resp, 404, "not-found", NULL, "unknown image %s (register or scan it first)",
                     k->ref);
        return false;
    }
    const char *p[] = {k->ref};
    PGresult *r = pgjson_query(conn, resp, "check image limits",
                               "SELECT m.key FROM registry.images i, jsonb_each_text(i.min_slots) m"
                               " WHERE i.reference = $1 AND i.max_slots ? m.key"
                               " AND m.value::numeric > (i.max_slots->>m.key)::numeric",
                               1, p);
    if (!r) return false;
    bool ok = PQntuples(r) == 0;
    if (!ok)
        http_problem(resp, 400, "invalid-api-params", NULL,
                     "image %s: the minimum of %s would be above its maximum", k->ref,
                     PQgetvalue(r, 0, 0));
    PQclear(r);
    return ok;
}

bool image_config_set(PGconn *conn, char **segs, int n, const char *value, http_resp *resp)
{
    image_key k;
    if (!parse(segs, n, &k, resp)) return false;
    const char *p[3] = {k.ref, NULL, NULL};
    bool hit = false;
    if (k.part == P_BOUND) {
        slots_t s;
        slots_clear(&s);
        ts_err err = {{0}};
        if (!slots_set(&s, k.slot, value, &err)) {
            http_problem(resp, 400, "invalid-api-params", NULL, "images/.../resource/%s/%s: %s",
                         k.slot, k.bound, err.msg);
            return false;
        }
        char amount[SLOT_FMT_MAX], label[128];
        int id = slot_find(k.slot);
        slot_format(id, slots_get(&s, id), amount, sizeof(amount));
        snprintf(label, sizeof(label), LABEL_MIN_PREFIX "%s", k.slot);
        p[1] = is(k.bound, "min") ? label : k.slot;
        p[2] = amount;
        if (!run(conn, resp,
                 is(k.bound, "min")
                     ? "UPDATE registry.images SET label_overrides = label_overrides ||"
                       " jsonb_build_object($2::text, $3::text) WHERE reference = $1"
                     : "UPDATE registry.images SET max_slots = max_slots ||"
                       " jsonb_build_object($2::text, $3::text) WHERE reference = $1",
                 3, p, &hit))
            return false;
    } else if (k.part == P_LABEL) {
        p[1] = k.label;
        p[2] = value;
        if (!run(conn, resp,
                 "UPDATE registry.images SET label_overrides = label_overrides ||"
                 " jsonb_build_object($2::text, $3::text) WHERE reference = $1",
                 3, p, &hit))
            return false;
    } else {
        http_problem(resp, 400, "invalid-api-params", NULL,
                     "image %s: set resource/<slot>/min, resource/<slot>/max or labels/<label>",
                     k.ref);
        return false;
    }
    if (!hit) {
        http_problem(resp, 404, "not-found", NULL, "unknown image %s (register or scan it first)",
                     k.ref);
        return false;
    }
    if (!restore(conn, &k, resp)) return false;
    TLOG_INFO("image config set", "image=%s part=%s", k.ref, k.part == P_LABEL ? k.label : k.bound);
    return true;
}

#define DROP_MINS                                                                                  \
    "(SELECT coalesce(jsonb_object_agg(e.key, e.value), '{}'::jsonb)"                              \
    " FROM jsonb_each(label_overrides) e WHERE e.key NOT LIKE 'ai.backend.resource.min.%')"

bool image_config_delete(PGconn *conn, char **segs, int n, bool prefix, http_resp *resp)
{
    image_key k;
    if (!parse(segs, n, &k, resp)) return false;
    char label[128];
    snprintf(label, sizeof(label), LABEL_MIN_PREFIX "%s", k.slot ? k.slot : "");
    const char *p[3] = {k.ref, k.slot ? k.slot : k.label, label};
    const char *sql = NULL;
    switch (k.part) {
    case P_IMAGE:
        http_problem(resp, 400, "invalid-api-params", NULL,
                     "image %s: forget an image with DELETE /admin/images/{reference}", k.ref);
        return false;
    case P_RESOURCE:
        sql = "UPDATE registry.images SET max_slots = '{}'::jsonb, label_overrides = " DROP_MINS
              " WHERE reference = $1 AND $2::text IS NULL AND $3::text IS NOT NULL";
        break;
    case P_SLOT:
        sql = "UPDATE registry.images SET max_slots = max_slots - $2, label_overrides ="
              " label_overrides - $3 WHERE reference = $1";
        break;
    case P_BOUND:
        sql = is(k.bound, "max") ? "UPDATE registry.images SET max_slots = max_slots - $2"
                                   " WHERE reference = $1 AND $3::text IS NOT NULL"
                                 : "UPDATE registry.images SET label_overrides ="
                                   " label_overrides - $3 WHERE reference = $1 AND $2::text"
                                   " IS NOT NULL";
        break;
    case P_LABELS:
        sql = "UPDATE registry.images SET label_overrides = '{}'::jsonb"
              " WHERE reference = $1 AND $2::text IS NULL AND $3::text IS NOT NULL";
        break;
    case P_LABEL:
        sql = "UPDATE registry.images SET label_overrides = label_overrides - $2"
              " WHERE reference = $1 AND label_overrides ? $2 AND $3::text IS NOT NULL";
        break;
    }
    (void)prefix;
    bool hit = false;
    if (!run(conn, resp, sql, 3, p, &hit)) return false;
    if (!hit) {
        if (k.part == P_LABEL)
            http_problem(resp, 404, "not-found", NULL,
                         "image %s has no override of label %s (the image's own labels are "
                         "overridden, not deleted)",
                         k.ref, k.label);
        else
            http_problem(resp, 404, "not-found", NULL, "unknown image %s", k.ref);
        return false;
    }
    return restore(conn, &k, resp);
}
