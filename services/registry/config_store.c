/* config_store.c: see config_store.h. */
#include "config_store.h"

#include "caller.h"
#include "container_registries.h"
#include "image_config.h"
#include "libcommon/log.h"
#include "libcommon/pgjson.h"

#include <stdlib.h>
#include <string.h>

static const char FAMILIES[] = "keys start with config/ (settings; config/docker/registry/<name>: "
                               "container registries) or images/ (image limits and labels)";

bool config_key_split(const char *key, char *buf, size_t size, char **segs, int *n, ts_err *err)
{
    *n = 0;
    size_t len = strlen(key);
    if (len > 0 && key[len - 1] == '/') len--; /* "images/.../resource/" as the SDK sends it */
    if (len == 0) {
        ts_err_set(err, "the key is empty");
        return false;
    }
    if (len > CONFIG_KEY_MAX || len >= size) {
        ts_err_set(err, "the key is longer than %d bytes", CONFIG_KEY_MAX);
        return false;
    }
    for (size_t i = 0; i < len; i++)
        if ((unsigned char)key[i] <= 0x20 || (unsigned char)key[i] >= 0x7f) {
            ts_err_set(err, "the key must be printable ASCII without spaces (byte %zu is not)", i);
            return false;
        }
    memcpy(buf, key, len);
    buf[len] = '\0';
    char *p = buf;
    for (;;) {
        char *slash = strchr(p, '/');
        if (slash) *slash = '\0';
        if (!*p) {
            ts_err_set(err, "the key has an empty segment (\"//\" or a leading \"/\")");
            return false;
        }
        if (*n >= CONFIG_SEGMENTS_MAX) {
            ts_err_set(err, "the key has more than %d segments", CONFIG_SEGMENTS_MAX);
            return false;
        }
        segs[(*n)++] = p;
        if (!slash) break;
        p = slash + 1;
    }
    if (strcmp(segs[0], "config") != 0 && strcmp(segs[0], "images") != 0) {
        ts_err_set(err, "unknown key %s: %s", segs[0], FAMILIES);
        return false;
    }
    /* a registry's name as the SDK's registry.add writes it (encodeURIComponent) */
    if (*n >= 4 && strcmp(segs[0], "config") == 0 && strcmp(segs[1], "docker") == 0 &&
        strcmp(segs[2], "registry") == 0) {
        char *o = segs[3];
        for (char *q = segs[3]; *q; q++) {
            if (q[0] == '%' && strncasecmp(q + 1, "3A", 2) == 0) {
                *o++ = ':';
                q += 2;
            } else {
                *o++ = *q;
            }
        }
        *o = '\0';
    }
    return true;
}

/* The segments joined again (a split key: at most CONFIG_KEY_MAX bytes). */
static void join(char **segs, int n, char out[CONFIG_KEY_MAX + 2])
{
    size_t o = 0;
    for (int i = 0; i < n; i++) {
        size_t l = strlen(segs[i]);
        if (i) out[o++] = '/';
        memcpy(out + o, segs[i], l);
        o += l;
    }
    out[o] = '\0';
}

static bool is_registry_key(char **segs, int n)
{
    return n >= 3 && strcmp(segs[0], "config") == 0 && strcmp(segs[1], "docker") == 0 &&
           strcmp(segs[2], "registry") == 0;
}

/* Whether one of the paths is an ancestor of (or is) the other. */
static bool related(char **segs, int n, const char *const *other, int m)
{
    for (int i = 0; i < n && i < m; i++)
        if (strcmp(segs[i], other[i]) != 0) return false;
    return true;
}

/* ---- the caller and the body ------------------------------------------------------------ */

typedef struct creq {
    reg_req x; /* the caller, x.fr.body, x.fr.conn */
    const char *key;
    bool prefix;
    char buf[CONFIG_KEY_MAX + 2];
    char *segs[CONFIG_SEGMENTS_MAX];
    int n;
} creq;

static bool open_req(svc *s, http_req *req, http_resp *resp, creq *q, const char *const *keys)
{
    memset(q, 0, sizeof(*q));
    if (!reg_req_begin(&q->x, s, req, resp, REQ_SUPERADMIN,
                       "only superadmins may read or change the configuration store"))
        return false;
    bool present = false;
    if (!req_frame_body(&q->x.fr, keys) ||
        !pgjson_field_str(q->x.fr.body, "key", true, 1, 4096, &q->key, resp))
        return false;
    if (json_object_get(q->x.fr.body, "prefix") &&
        !pgjson_field_bool(q->x.fr.body, "prefix", false, &q->prefix, &present, resp))
        return false;
    ts_err err = {{0}};
    if (!config_key_split(q->key, q->buf, sizeof(q->buf), q->segs, &q->n, &err)) {
        http_problem(resp, 400, "invalid-api-params", NULL, "\"key\": %s", err.msg);
        return false;
    }
    return req_frame_conn(&q->x.fr);
}

static void close_req(creq *q)
{
    reg_req_end(&q->x);
}

static void reply_ok(http_resp *resp)
{
    http_reply_json(resp, 200, json_pack("{s:s}", "result", "ok"));
}

/* ---- get ---------------------------------------------------------------------------- */

/* tree[path] = value; a string met on the way becomes {"": string}. */
static void tree_put(json_t *tree, char **segs, int n, json_t *value)
{
    json_t *node = tree;
    for (int i = 0; i < n; i++) {
        json_t *next = json_object_get(node, segs[i]);
        if (i == n - 1) {
            if (json_is_object(next) && json_is_string(value))
                json_object_set(next, "", value);
            else
                json_object_set(node, segs[i], value);
            break;
        }
        if (!next) {
            json_object_set_new(node, segs[i], next = json_object());
        } else if (json_is_string(next)) {
            json_t *o = json_pack("{s:O}", "", next);
            json_object_set_new(node, segs[i], o);
            next = o;
        }
        node = next;
    }
}

static const char *const REGISTRY_PATH[] = {"config", "docker", "registry"};

/* Everything under the key's path, as a tree from the root. NULL after a problem. */
static json_t *config_tree(creq *q, http_resp *resp)
{
    json_t *tree = json_object();
    char key[CONFIG_KEY_MAX + 2];
    join(q->segs, q->n, key);
    const char *p[] = {key};
    PGresult *r = pgjson_query(q->x.fr.conn, resp, "read settings",
                               "SELECT key, value FROM registry.settings WHERE key = $1"
                               " OR left(key, length($1) + 1) = $1 || '/' ORDER BY key",
                               1, p);
    if (!r) {
        json_decref(tree);
        return NULL;
    }
    for (int i = 0; i < PQntuples(r); i++) {
        char buf[CONFIG_KEY_MAX + 2];
        char *segs[CONFIG_SEGMENTS_MAX];
        int n = 0;
        ts_err err;
        if (!config_key_split(PQgetvalue(r, i, 0), buf, sizeof(buf), segs, &n, &err)) continue;
        json_t *v = json_string(PQgetvalue(r, i, 1));
        tree_put(tree, segs, n, v);
        json_decref(v);
    }
    PQclear(r);
    if (related(q->segs, q->n, REGISTRY_PATH, 3)) {
        json_t *regs = creg_list(q->x.fr.conn, resp);
        if (!regs) {
            json_decref(tree);
            return NULL;
        }
        const char *name;
        json_t *fields;
        json_object_foreach(regs, name, fields)
        {
            const char *f;
            json_t *v;
            json_object_foreach(fields, f, v)
            {
                char *segs[5] = {"config", "docker", "registry", (char *)name, (char *)f};
                tree_put(tree, segs, *f ? 5 : 4, v);
            }
        }
        json_decref(regs);
    }
    return tree;
}

static void h_get(http_req *req, http_resp *resp, void *ctx)
{
    creq q;
    static const char *const keys[] = {"key", "prefix", NULL};
    json_t *tree = NULL, *node = NULL;
    if (!open_req(ctx, req, resp, &q, keys)) goto out;
    if (strcmp(q.segs[0], "images") == 0) {
        if (!(tree = image_config_get(q.x.fr.conn, q.segs, q.n, resp))) goto out;
        node = tree;
    } else {
        if (!(tree = config_tree(&q, resp))) goto out;
        node = tree;
        for (int i = 0; i < q.n && node; i++)
            node = json_object_get(node, q.segs[i]);
    }
    json_t *result;
    if (q.prefix)
        result = json_is_object(node)   ? json_incref(node)
                 : json_is_string(node) ? json_pack("{s:O}", "", node)
                                        : json_object();
    else
        result = json_is_string(node) ? json_incref(node)
                 : json_is_string(json_object_get(node, ""))
                     ? json_incref(json_object_get(node, ""))
                     : json_null();
    http_reply_json(resp, 200, json_pack("{s:o}", "result", result));
out:
    json_decref(tree);
    close_req(&q);
}

/* ---- set ---------------------------------------------------------------------------- */

/* Every leaf of value under key, as [[key, text], ...]; false with err. */
static bool flatten(const char *key, json_t *value, json_t *out, int depth, ts_err *err)
{
    if (depth > CONFIG_SEGMENTS_MAX) {
        ts_err_set(err, "\"value\" is nested too deeply");
        return false;
    }
    if (json_is_object(value)) {
        if (json_object_size(value) == 0) {
            ts_err_set(err, "\"value\" has an empty object at %s: it sets nothing", key);
            return false;
        }
        const char *k;
        json_t *v;
        json_object_foreach(value, k, v)
        {
            char *sub = *k ? ts_asprintf("%s/%s", key, k) : ts_strdup(key);
            bool ok = flatten(sub, v, out, depth + 1, err);
            free(sub);
            if (!ok) return false;
        }
        return true;
    }
    char *text = NULL;
    if (json_is_string(value))
        text = ts_strdup(json_string_value(value));
    else if (json_is_integer(value) || json_is_real(value) || json_is_boolean(value))
        text = json_dumps(value, JSON_ENCODE_ANY);
    if (!text) {
        ts_err_set(err, "\"value\" at %s must be a string, a number, a boolean or an object", key);
        return false;
    }
    json_array_append_new(out, json_pack("[s, s]", key, text));
    free(text);
    return true;
}

static bool set_setting(creq *q, char **segs, int n, const char *value, http_resp *resp)
{
    char key[CONFIG_KEY_MAX + 2];
    join(segs, n, key);
    const char *p[] = {key, value};
    PGresult *r = pgjson_query(q->x.fr.conn, resp, "set setting",
                               "INSERT INTO registry.settings (key, value) VALUES ($1, $2)"
                               " ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value,"
                               " updated_at = now()",
                               2, p);
    if (!r) return false;
    PQclear(r);
    return true;
}

static bool set_leaves(creq *q, json_t *leaves, http_resp *resp)
{
    json_t *regs = json_object(); /* name -> fields */
    bool ok = false;
    size_t i;
    json_t *leaf;
    json_array_foreach(leaves, i, leaf)
    {
        const char *key = json_string_value(json_array_get(leaf, 0));
        const char *value = json_string_value(json_array_get(leaf, 1));
        char buf[CONFIG_KEY_MAX + 2];
        char *segs[CONFIG_SEGMENTS_MAX];
        int n = 0;
        ts_err err = {{0}};
        if (!config_key_split(key, buf, sizeof(buf), segs, &n, &err)) {
            http_problem(resp, 400, "invalid-api-params", NULL, "key %.300s: %s", key, err.msg);
            goto out;
        }
        if (strlen(value) > CONFIG_VALUE_MAX) {
            http_problem(resp, 400, "invalid-api-params", NULL,
                         "the value of %s is longer than %d bytes", key, CONFIG_VALUE_MAX);
            goto out;
        }
        if (strcmp(segs[0], "images") == 0) {
            if (!image_config_set(q->x.fr.conn, segs, n, value, resp)) goto out;
        } else if (is_registry_key(segs, n)) {
            if (n < 4 || n > 5) {
                http_problem(resp, 400, "invalid-api-params", NULL,
                             "a container registry is config/docker/registry/<host[:port]> = "
                             "{\"\": url, \"type\", \"project\"}");
                goto out;
            }
            json_t *f = json_object_get(regs, segs[3]);
            if (!f) json_object_set_new(regs, segs[3], f = json_object());
            json_object_set_new(f, n == 5 ? segs[4] : "", json_string(value));
        } else if (!set_setting(q, segs, n, value, resp)) {
            goto out;
        }
    }
    const char *name;
    json_t *fields;
    json_object_foreach(regs, name, fields)
    {
        if (!creg_set(q->x.fr.conn, name, fields, resp)) goto out;
    }
    PGresult *r = pgjson_query(q->x.fr.conn, resp, "count settings",
                               "SELECT count(*), coalesce(sum(octet_length(value)), 0)"
                               " FROM registry.settings",
                               0, NULL);
    if (!r) goto out;
    long long count = atoll(PQgetvalue(r, 0, 0)), bytes = atoll(PQgetvalue(r, 0, 1));
    PQclear(r);
    if (count > CONFIG_SETTINGS_MAX || bytes > CONFIG_SETTINGS_BYTES_MAX) {
        http_problem(resp, 400, "invalid-api-params", NULL,
                     "the settings store holds at most %d keys and %d MiB of values",
                     CONFIG_SETTINGS_MAX, CONFIG_SETTINGS_BYTES_MAX >> 20);
        goto out;
    }
    ok = true;
out:
    json_decref(regs);
    return ok;
}

static void h_set(http_req *req, http_resp *resp, void *ctx)
{
    creq q;
    static const char *const keys[] = {"key", "value", NULL};
    json_t *leaves = json_array();
    if (!open_req(ctx, req, resp, &q, keys)) goto out;
    json_t *value = json_object_get(q.x.fr.body, "value");
    if (!value) {
        http_problem(resp, 400, "invalid-api-params", NULL, "\"value\" is required");
        goto out;
    }
    char *dump = json_dumps(value, JSON_COMPACT | JSON_ENCODE_ANY);
    size_t size = dump ? strlen(dump) : 0;
    free(dump);
    if (size > CONFIG_VALUE_MAX) {
        http_problem(resp, 400, "invalid-api-params", NULL, "\"value\" is larger than %d bytes",
                     CONFIG_VALUE_MAX);
        goto out;
    }
    char key[CONFIG_KEY_MAX + 2];
    join(q.segs, q.n, key);
    ts_err err = {{0}};
    if (!flatten(key, value, leaves, 0, &err)) {
        http_problem(resp, 400, "invalid-api-params", NULL, "%s", err.msg);
        goto out;
    }
    if (!pgjson_begin(q.x.fr.conn, resp)) goto out;
    if (!set_leaves(&q, leaves, resp)) {
        pg_rollback(q.x.fr.conn);
        goto out;
    }
    if (!pgjson_commit(q.x.fr.conn, resp)) goto out;
    TLOG_INFO("config set", "key=%s leaves=%zu", key, json_array_size(leaves));
    reply_ok(resp);
out:
    json_decref(leaves);
    close_req(&q);
}

/* ---- delete ------------------------------------------------------------------------- */

static void h_delete(http_req *req, http_resp *resp, void *ctx)
{
    creq q;
    static const char *const keys[] = {"key", "prefix", NULL};
    if (!open_req(ctx, req, resp, &q, keys)) goto out;
    if (strcmp(q.segs[0], "images") == 0) {
        if (!pgjson_begin(q.x.fr.conn, resp)) goto out;
        if (!image_config_delete(q.x.fr.conn, q.segs, q.n, q.prefix, resp)) {
            pg_rollback(q.x.fr.conn);
            goto out;
        }
        if (!pgjson_commit(q.x.fr.conn, resp)) goto out;
    } else if (is_registry_key(q.segs, q.n)) {
        if (q.n != 4) {
            http_problem(resp, 400, "invalid-api-params", NULL,
                         "delete one container registry at a time: "
                         "config/docker/registry/<host[:port]>");
            goto out;
        }
        if (!creg_delete(q.x.fr.conn, q.segs[3], resp)) goto out;
    } else {
        char key[CONFIG_KEY_MAX + 2];
        join(q.segs, q.n, key);
        const char *p[] = {key, q.prefix ? "t" : "f"};
        PGresult *r = pgjson_query(q.x.fr.conn, resp, "delete settings",
                                   "DELETE FROM registry.settings WHERE key = $1 OR ($2::bool"
                                   " AND left(key, length($1) + 1) = $1 || '/')",
                                   2, p);
        if (!r) goto out;
        TLOG_INFO("config deleted", "key=%s prefix=%d removed=%s", key, q.prefix, PQcmdTuples(r));
        PQclear(r);
    }
    reply_ok(resp);
out:
    close_req(&q);
}

void config_store_routes(svc *s)
{
    http_router *r = svc_router(s);
    http_route(r, "POST", "/v1/config/get", h_get, s);
    http_route(r, "POST", "/v1/config/set", h_set, s);
    http_route(r, "POST", "/v1/config/delete", h_delete, s);
    creg_routes(s);
}
