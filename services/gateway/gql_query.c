/* gql_query.c: the root query fields of Backend.AI's GraphQL schema
 * (gql_schema.h). Each resolver calls a service's REST API as the caller
 * (proxy_fetch_json: the caller headers the services scope by), then
 * shapes every item into an object keyed by the reference's field names.
 * A REST refusal (403, 404, a 400 naming a bad filter) becomes the field's
 * GraphQL error with the service's message. */
#include "gql_schema.h"

#include "proxy.h"

#include "libcommon/buf.h"
#include "libcommon/httpc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define RESOLVE_TIMEOUT_MS 15000
#define PAGE_MAX 1000     /* the services' largest page */
#define LEGACY_LIST_MAX 10000 /* the non-paginated lists read at most this many */

/* ---- REST calls ----------------------------------------------------------- */

/* GET target from upstream u; the answer (any JSON) or NULL after an error. */
static json_t *_rest(gql_exec *ex, upstream_id u, const char *target)
{
    gql_ctx *c = gql_user(ex);
    long status;
    json_t *out;
    ts_err err = {{0}};
    if (!proxy_fetch_json(&c->gw->up[u], RESOLVE_TIMEOUT_MS, "GET", c->req, target, c->id, NULL,
                          &status, &out, &err)) {
        gql_error(ex, "%s", err.msg);
        return NULL;
    }
    if (status >= 200 && status < 300 && out) return out;
    const char *msg = json_string_value(json_object_get(out, "msg"));
    const char *title = json_string_value(json_object_get(out, "title"));
    if (msg || title)
        gql_error(ex, "%s", msg ? msg : title);
    else
        gql_error(ex, "%s answered %ld", c->gw->up[u].service, status);
    json_decref(out);
    return NULL;
}

/* A query string under construction: "?a=1&b=x". */
static void _qs(ts_buf *b, const char *key, const char *value)
{
    if (!value) return;
    char *v = httpc_escape(value);
    ts_buf_append_str(b, b->len ? "&" : "?");
    ts_buf_append_str(b, key);
    ts_buf_append_str(b, "=");
    ts_buf_append_str(b, v);
    free(v);
}

static void _qs_int(ts_buf *b, const char *key, json_int_t n)
{
    char v[32];
    snprintf(v, sizeof(v), "%lld", (long long)n);
    _qs(b, key, v);
}

static void _qs_bool(ts_buf *b, const char *key, const json_t *v)
{
    if (json_is_boolean(v)) _qs(b, key, json_is_true(v) ? "true" : "false");
}

/* path + the query (b's text; b is freed). Heap. */
static char *_target(const char *path, ts_buf *b)
{
    char *t = ts_asprintf("%s%.*s", path, (int)b->len, b->data ? b->data : "");
    ts_buf_free(b);
    return t;
}

static const char *_str(const json_t *o, const char *key)
{
    return json_string_value(json_object_get(o, key));
}

/* One page of a {"items", "total"} list: the answer, or NULL after an
 * error. */
static json_t *_page(gql_exec *ex, upstream_id u, const char *path, ts_buf *q, json_int_t limit,
                     json_int_t offset)
{
    if (limit < 0 || offset < 0) {
        ts_buf_free(q);
        gql_error(ex, "limit and offset must not be negative");
        return NULL;
    }
    _qs_int(q, "limit", limit < 1 ? 1 : limit > PAGE_MAX ? PAGE_MAX : limit);
    _qs_int(q, "offset", offset);
    char *t = _target(path, q);
    json_t *a = _rest(ex, u, t);
    free(t);
    if (a && !json_is_array(json_object_get(a, "items"))) {
        gql_error(ex, "unexpected answer from the service");
        json_decref(a);
        return NULL;
    }
    if (a && limit < 1) json_array_clear(json_object_get(a, "items"));
    return a;
}

/* Every item of a paged list (up to LEGACY_LIST_MAX), for the reference's
 * non-paginated lists; query: the filters ("" or "a=b&c=d"). */
static json_t *_all(gql_exec *ex, upstream_id u, const char *path, const char *query)
{
    json_t *all = json_array();
    for (json_int_t offset = 0; offset < LEGACY_LIST_MAX; offset += PAGE_MAX) {
        ts_buf q = {0};
        if (*query) {
            ts_buf_append_str(&q, "?");
            ts_buf_append_str(&q, query);
        }
        json_t *a = _page(ex, u, path, &q, PAGE_MAX, offset);
        if (!a) {
            json_decref(all);
            return NULL;
        }
        json_array_extend(all, json_object_get(a, "items"));
        json_int_t total = json_integer_value(json_object_get(a, "total"));
        json_decref(a);
        if ((json_int_t)json_array_size(all) >= total) break;
    }
    return all;
}

/* Items shaped one by one (a new array). */
static json_t *_shape_all(gql_exec *ex, const json_t *items,
                          json_t *(*shape)(gql_exec *, const json_t *))
{
    json_t *out = json_array();
    size_t i;
    json_t *it;
    json_array_foreach(items, i, it) json_array_append_new(out, shape(ex, it));
    return out;
}

/* {"items": shaped, "total_count": total} from a page answer (consumed). */
static json_t *_list(gql_exec *ex, json_t *page, json_t *(*shape)(gql_exec *, const json_t *))
{
    if (!page) return NULL;
    json_t *out = json_pack("{s:o, s:O}", "items",
                            _shape_all(ex, json_object_get(page, "items"), shape), "total_count",
                            json_object_get(page, "total"));
    json_decref(page);
    return out;
}

/* ---- Relay ---------------------------------------------------------------- */

static const char B64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

static char *_b64(const char *s)
{
    size_t n = strlen(s);
    char *out = malloc(4 * ((n + 2) / 3) + 1);
    if (!out) ts_panic("out of memory");
    size_t o = 0;
    for (size_t i = 0; i < n; i += 3) {
        unsigned v = (unsigned char)s[i] << 16;
        if (i + 1 < n) v |= (unsigned char)s[i + 1] << 8;
        if (i + 2 < n) v |= (unsigned char)s[i + 2];
        out[o++] = B64[(v >> 18) & 63];
        out[o++] = B64[(v >> 12) & 63];
        out[o++] = i + 1 < n ? B64[(v >> 6) & 63] : '=';
        out[o++] = i + 2 < n ? B64[v & 63] : '=';
    }
    out[o] = 0;
    return out;
}

/* Relay's global id: base64("<Type>:<id>"). */
static json_t *_global_id(const char *type, const char *id)
{
    if (!id) return json_null();
    char *raw = ts_asprintf("%s:%s", type, id);
    char *enc = _b64(raw);
    json_t *v = json_string(enc);
    free(raw);
    free(enc);
    return v;
}

/* A cursor is the base64 of "cursor:<offset>"; -1 when malformed. */
static json_int_t _cursor_offset(const char *cursor)
{
    char raw[32];
    size_t n = 0, len = strlen(cursor);
    if (len == 0 || len % 4 || len > 28) return -1;
    for (size_t i = 0; i < len; i += 4) {
        unsigned v = 0;
        int pad = 0;
        for (size_t j = 0; j < 4; j++) {
            char ch = cursor[i + j];
            const char *at = ch ? strchr(B64, ch) : NULL;
            if (ch == '=' && i + 4 == len && j >= 2) {
                pad++;
                v <<= 6;
                continue;
            }
            if (!at || pad) return -1;
            v = (v << 6) | (unsigned)(at - B64);
        }
        raw[n++] = (char)(v >> 16);
        if (pad < 2) raw[n++] = (char)(v >> 8);
        if (pad < 1) raw[n++] = (char)v;
    }
    raw[n] = 0;
    if (strncmp(raw, "cursor:", 7) != 0 || !raw[7] || strlen(raw) != n) return -1;
    json_int_t off = 0;
    for (const char *p = raw + 7; *p; p++) {
        if (*p < '0' || *p > '9' || off > 100000000) return -1;
        off = off * 10 + (*p - '0');
    }
    return off;
}

/* The paging arguments of a connection: offset and count to read; false
 * after an error. */
static bool _relay_window(gql_exec *ex, const json_t *args, json_int_t *offset, json_int_t *count)
{
    if (json_object_get(args, "last") || json_object_get(args, "before")) {
        gql_error(ex, "last and before are not supported: page forward with first and after");
        return false;
    }
    if (json_object_get(args, "filter") || json_object_get(args, "order")) {
        gql_error(ex, "filter and order are not supported");
        return false;
    }
    *offset = json_integer_value(json_object_get(args, "offset"));
    const char *after = _str(args, "after");
    if (after) {
        json_int_t at = strlen(after) <= 32 ? _cursor_offset(after) : -1;
        if (at < 0) {
            gql_error(ex, "after: not a cursor of this connection");
            return false;
        }
        *offset = at + 1;
    }
    json_t *first = json_object_get(args, "first");
    *count = first ? json_integer_value(first) : 100;
    if (*count < 0 || *offset < 0) {
        gql_error(ex, "first and offset must not be negative");
        return false;
    }
    return true;
}

/* A connection over one page answer (consumed). */
static json_t *_connection(gql_exec *ex, json_t *page, json_int_t offset,
                           json_t *(*node)(gql_exec *, const json_t *))
{
    if (!page) return NULL;
    json_t *items = json_object_get(page, "items");
    json_int_t total = json_integer_value(json_object_get(page, "total"));
    json_t *edges = json_array();
    json_t *first_cursor = json_null(), *last_cursor = json_null();
    size_t i;
    json_t *it;
    json_array_foreach(items, i, it)
    {
        char *raw = ts_asprintf("cursor:%lld", (long long)(offset + (json_int_t)i));
        char *enc = _b64(raw);
        json_array_append_new(edges, json_pack("{s:o, s:s}", "node", node(ex, it), "cursor", enc));
        if (i == 0) {
            json_decref(first_cursor);
            first_cursor = json_string(enc);
        }
        json_decref(last_cursor);
        last_cursor = json_string(enc);
        free(raw);
        free(enc);
    }
    json_int_t n = (json_int_t)json_array_size(items);
    json_t *out = json_pack("{s:o, s:{s:b, s:b, s:o, s:o}, s:I}", "edges", edges, "pageInfo",
                            "hasNextPage", offset + n < total, "hasPreviousPage", offset > 0,
                            "startCursor", first_cursor, "endCursor", last_cursor, "count",
                            (json_int_t)total);
    json_decref(page);
    return out;
}

/* ---- users, read once per request ------------------------------------------ */

static const json_t *_user_of(gql_exec *ex, const json_t *src)
{
    gql_ctx *c = gql_user(ex);
    const char *id = _str(src, "_user");
    if (!id) return NULL;
    if (!c->users) {
        c->users = json_object();
        json_t *all = _all(ex, UPSTREAM_AUTH, "/v1/admin/users", "");
        size_t i;
        json_t *u;
        json_array_foreach(all, i, u)
        {
            const char *uid = _str(u, "id");
            if (uid) json_object_set(c->users, uid, u);
        }
        json_decref(all);
    }
    return json_object_get(c->users, id);
}

json_t *gql_get_user_email(gql_exec *ex, const json_t *src)
{
    const char *known = _str(src, "_email");
    if (known) return json_string(known);
    const json_t *u = _user_of(ex, src);
    return u ? json_incref(json_object_get(u, "email")) : NULL;
}

json_t *gql_get_full_name(gql_exec *ex, const json_t *src)
{
    const json_t *u = _user_of(ex, src);
    return u ? json_incref(json_object_get(u, "full_name")) : NULL;
}

/* ---- shapes ---------------------------------------------------------------- */

/* o[dst] = src[key] (null when absent). */
static void _copy(json_t *o, const char *dst, const json_t *src, const char *key)
{
    json_t *v = json_object_get(src, key);
    json_object_set(o, dst, v ? v : json_null());
}

/* The registry part of an image reference ("host:5000/a/b:t" -> "host:5000"),
 * or NULL for a Docker Hub name. Heap. */
static char *_image_registry(const char *ref)
{
    if (!ref) return NULL;
    const char *slash = strchr(ref, '/');
    if (!slash) return NULL;
    size_t n = (size_t)(slash - ref);
    if (!memchr(ref, '.', n) && !memchr(ref, ':', n) && strncmp(ref, "localhost", n) != 0)
        return NULL;
    return ts_strndup(ref, n);
}

static json_t *_container(const json_t *s, const json_t *k)
{
    json_t *o = json_object();
    _copy(o, "id", k, "id");
    _copy(o, "kernel_id", k, "id");
    _copy(o, "idx", k, "idx");
    _copy(o, "cluster_idx", k, "idx");
    _copy(o, "local_rank", k, "idx");
    _copy(o, "role", k, "role");
    _copy(o, "cluster_role", k, "role");
    char *host = ts_asprintf("%s%lld", _str(k, "role") ? _str(k, "role") : "main",
                             (long long)json_integer_value(json_object_get(k, "idx")) + 1);
    json_object_set_new(o, "hostname", json_string(host));
    json_object_set_new(o, "cluster_hostname", json_string(host));
    free(host);
    _copy(o, "session_id", s, "sessionUuid");
    _copy(o, "image", s, "image");
    _copy(o, "architecture", s, "architecture");
    char *reg = _image_registry(_str(s, "image"));
    json_object_set_new(o, "registry", reg ? json_string(reg) : json_null());
    free(reg);
    _copy(o, "status", k, "status");
    _copy(o, "status_info", k, "statusInfo");
    _copy(o, "created_at", s, "creationTime");
    _copy(o, "terminated_at", s, "terminationTime");
    _copy(o, "starts_at", s, "startsAt");
    _copy(o, "agent", k, "agent");
    _copy(o, "container_id", k, "containerId");
    _copy(o, "occupied_slots", s, "occupiedSlots");
    json_object_set_new(o, "preopen_ports", json_array());
    return o;
}

static json_t *_session(gql_exec *ex, const json_t *s)
{
    (void)ex;
    json_t *o = json_object();
    const char *names[] = {"id", "session_id", "row_id"};
    for (size_t i = 0; i < TS_ARRAY_LEN(names); i++) _copy(o, names[i], s, "sessionUuid");
    const char *nm[] = {"name", "session_name", "sess_id"};
    for (size_t i = 0; i < TS_ARRAY_LEN(nm); i++) _copy(o, nm[i], s, "sessionName");
    _copy(o, "type", s, "type");
    _copy(o, "priority", s, "priority");
    _copy(o, "image", s, "image");
    _copy(o, "lang", s, "image");
    _copy(o, "architecture", s, "architecture");
    char *reg = _image_registry(_str(s, "image"));
    json_object_set_new(o, "registry", reg ? json_string(reg) : json_null());
    free(reg);
    _copy(o, "cluster_mode", s, "clusterMode");
    _copy(o, "cluster_size", s, "clusterSize");
    _copy(o, "domain_name", s, "domainName");
    _copy(o, "group_name", s, "groupName");
    _copy(o, "group_id", s, "groupId");
    _copy(o, "project_id", s, "groupId");
    _copy(o, "user_id", s, "userId");
    _copy(o, "created_user_id", s, "userId");
    _copy(o, "_user", s, "userId");
    _copy(o, "access_key", s, "accessKey");
    _copy(o, "status", s, "status");
    _copy(o, "status_info", s, "statusInfo");
    _copy(o, "created_at", s, "creationTime");
    _copy(o, "terminated_at", s, "terminationTime");
    _copy(o, "starts_at", s, "startsAt");
    _copy(o, "status_changed", s, "statusChangedAt");
    _copy(o, "result", s, "result");
    _copy(o, "scaling_group", s, "scalingGroup");
    _copy(o, "service_ports", s, "servicePorts");
    _copy(o, "occupied_slots", s, "occupiedSlots");
    _copy(o, "occupying_slots", s, "occupiedSlots");
    _copy(o, "requested_slots", s, "requestedSlots");
    json_t *containers = json_array(), *agents = json_array();
    size_t i;
    json_t *k;
    json_array_foreach(json_object_get(s, "kernels"), i, k)
    {
        json_array_append_new(containers, _container(s, k));
        const char *agent = _str(k, "agent");
        bool seen = !agent;
        size_t j;
        json_t *a;
        json_array_foreach(agents, j, a) if (agent && strcmp(json_string_value(a), agent) == 0)
            seen = true;
        if (!seen) json_array_append_new(agents, json_string(agent));
        if (i == 0) {
            _copy(o, "main_kernel_id", k, "id");
            _copy(o, "main_kernel_role", k, "role");
        }
    }
    json_object_set_new(o, "containers", containers);
    json_object_set(o, "agent_ids", agents);
    json_object_set_new(o, "agents", agents);
    json_object_set_new(o, "image_references", json_pack("[O]", json_object_get(s, "image")));
    json_object_set_new(o, "mounts", json_array());
    json_object_set_new(o, "vfolder_mounts", json_array());
    json_object_set_new(o, "dependencies", json_array());
    json_object_set_new(o, "abusing_reports", json_array());
    json_object_set_new(o, "num_queries", json_integer(0));
    return o;
}

static json_t *_session_node(gql_exec *ex, const json_t *s)
{
    json_t *o = _session(ex, s);
    json_object_set_new(o, "id", _global_id("ComputeSessionNode", _str(s, "sessionUuid")));
    return o;
}

static json_t *_keypair(gql_exec *ex, const json_t *k)
{
    (void)ex;
    json_t *o = json_object();
    _copy(o, "id", k, "access_key");
    _copy(o, "access_key", k, "access_key");
    _copy(o, "is_active", k, "is_active");
    _copy(o, "is_admin", k, "is_admin");
    _copy(o, "resource_policy", k, "resource_policy");
    _copy(o, "created_at", k, "created_at");
    _copy(o, "last_used", k, "last_used");
    _copy(o, "rate_limit", k, "rate_limit");
    _copy(o, "user", k, "user_id");
    _copy(o, "_user", k, "user_id");
    json_object_set_new(o, "user_info", json_pack("{s:O}", "_user", json_object_get(k, "user_id")));
    json_object_set_new(o, "num_queries", json_integer(0));
    json_object_set_new(o, "projects", json_array());
    return o;
}

static json_t *_user_common(const json_t *u)
{
    json_t *o = json_object();
    const char *same[] = {"username", "email", "full_name", "description", "status", "created_at",
                          "modified_at", "domain_name", "role", "resource_policy"};
    for (size_t i = 0; i < TS_ARRAY_LEN(same); i++) _copy(o, same[i], u, same[i]);
    const char *status = _str(u, "status");
    json_object_set_new(o, "is_active", json_boolean(status && strcmp(status, "active") == 0));
    json_object_set_new(o, "need_password_change", json_false());
    json_object_set_new(o, "totp_activated", json_false());
    json_object_set_new(o, "sudo_session_enabled", json_false());
    return o;
}

static json_t *_user(gql_exec *ex, const json_t *u)
{
    (void)ex;
    json_t *o = _user_common(u);
    _copy(o, "id", u, "id");
    _copy(o, "uuid", u, "id");
    json_t *groups = json_array();
    size_t i;
    json_t *p;
    json_array_foreach(json_object_get(u, "projects"), i, p)
        json_array_append_new(groups, json_pack("{s:O, s:n}", "id", p, "name"));
    json_object_set_new(o, "groups", groups);
    return o;
}

static json_t *_user_node(gql_exec *ex, const json_t *u)
{
    (void)ex;
    json_t *o = _user_common(u);
    json_object_set_new(o, "id", _global_id("UserNode", _str(u, "id")));
    _copy(o, "row_id", u, "id");
    return o;
}

static json_t *_grouping(const json_t *g)
{
    json_t *o = json_object();
    const char *same[] = {"name", "description", "is_active", "created_at", "modified_at",
                          "total_resource_slots", "allowed_vfolder_hosts"};
    for (size_t i = 0; i < TS_ARRAY_LEN(same); i++) _copy(o, same[i], g, same[i]);
    return o;
}

static json_t *_group(gql_exec *ex, const json_t *g)
{
    (void)ex;
    json_t *o = _grouping(g);
    _copy(o, "id", g, "id");
    _copy(o, "domain_name", g, "domain_name");
    _copy(o, "resource_policy", g, "resource_policy");
    json_object_set_new(o, "type", json_string("GENERAL"));
    return o;
}

static json_t *_domain(gql_exec *ex, const json_t *d)
{
    (void)ex;
    json_t *o = _grouping(d);
    json_object_set_new(o, "allowed_docker_registries", json_array());
    return o;
}

static json_t *_kv_list(const json_t *obj)
{
    json_t *out = json_array();
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)obj, k, v)
        json_array_append_new(out, json_pack("{s:s, s:O}", "key", k, "value", v));
    return out;
}

static json_t *_image(gql_exec *ex, const json_t *im)
{
    (void)ex;
    json_t *o = json_object();
    const char *ref = _str(im, "reference");
    _copy(o, "humanized_name", im, "reference");
    _copy(o, "architecture", im, "architecture");
    _copy(o, "digest", im, "digest");
    _copy(o, "hash", im, "digest");
    char *reg = _image_registry(ref);
    json_object_set_new(o, "registry", reg ? json_string(reg) : json_null());
    /* name: the repository without the registry and the tag */
    const char *repo = ref ? ref + (reg ? strlen(reg) + 1 : 0) : NULL;
    free(reg);
    if (repo) {
        const char *at = strchr(repo, '@');
        size_t n = at ? (size_t)(at - repo) : strlen(repo);
        const char *colon = memchr(repo, ':', n);
        const char *tag = colon ? colon + 1 : "latest";
        size_t tag_n = colon ? n - (size_t)(colon - repo) - 1 : strlen(tag);
        if (colon) n = (size_t)(colon - repo);
        char *name = ts_strndup(repo, n), *t = ts_strndup(tag, tag_n);
        json_object_set_new(o, "name", json_string(name));
        json_object_set_new(o, "namespace", json_string(name));
        const char *base = strrchr(name, '/');
        json_object_set_new(o, "base_image_name", json_string(base ? base + 1 : name));
        json_object_set_new(o, "tag", json_string(t));
        free(name);
        free(t);
    }
    json_object_set_new(o, "labels", _kv_list(json_object_get(im, "labels")));
    json_t *limits = json_array();
    const char *slot;
    json_t *min;
    json_object_foreach(json_object_get(im, "min_slots"), slot, min)
        json_array_append_new(limits,
                              json_pack("{s:s, s:O, s:n}", "key", slot, "min", min, "max"));
    json_object_set_new(o, "resource_limits", limits);
    json_object_set_new(o, "tags", json_array());
    json_object_set_new(o, "aliases", json_array());
    json_object_set_new(o, "supported_accelerators", json_pack("[s]", "cuda"));
    json_object_set_new(o, "installed", json_true());
    json_object_set_new(o, "installed_agents", json_array());
    json_object_set_new(o, "is_local", json_false());
    json_object_set_new(o, "status", json_string("ALIVE"));
    return o;
}

/* A slot amount (decimal text) as a number, for the legacy *_slots fields. */
static json_t *_slot_number(const json_t *slots, const char *name)
{
    const char *v = _str(slots, name);
    return v ? json_real(strtod(v, NULL)) : json_real(0);
}

static json_t *_agent(gql_exec *ex, const json_t *a)
{
    (void)ex;
    json_t *o = json_object();
    const char *same[] = {"id", "status", "addr", "architecture", "first_contact", "version"};
    for (size_t i = 0; i < TS_ARRAY_LEN(same); i++) _copy(o, same[i], a, same[i]);
    _copy(o, "status_changed", a, "status_changed_at");
    _copy(o, "scaling_group", a, "resource_group");
    _copy(o, "available_slots", a, "slots");
    _copy(o, "occupied_slots", a, "occupied_slots");
    _copy(o, "container_count", a, "kernels");
    _copy(o, "hardware_metadata", a, "devices");
    json_object_set_new(o, "schedulable", json_boolean(strcmp(_str(a, "status") ? _str(a, "status") : "", "ALIVE") == 0));
    json_object_set_new(o, "auto_terminate_abusing_kernel", json_false());
    json_object_set_new(o, "compute_plugins", json_object());
    const json_t *cap = json_object_get(a, "slots"), *used = json_object_get(a, "occupied_slots");
    json_object_set_new(o, "cpu_slots", _slot_number(cap, "cpu"));
    json_object_set_new(o, "mem_slots", json_integer((json_int_t)json_real_value(_slot_number(cap, "mem"))));
    json_object_set_new(o, "gpu_slots", _slot_number(cap, "cuda.device"));
    json_object_set_new(o, "used_cpu_slots", _slot_number(used, "cpu"));
    json_object_set_new(o, "used_mem_slots", json_integer((json_int_t)json_real_value(_slot_number(used, "mem"))));
    json_object_set_new(o, "used_gpu_slots", _slot_number(used, "cuda.device"));
    return o;
}

static json_t *_scaling_group(gql_exec *ex, const json_t *g)
{
    (void)ex;
    json_t *o = json_object();
    const char *same[] = {"name", "description", "is_active", "created_at", "scheduler"};
    for (size_t i = 0; i < TS_ARRAY_LEN(same); i++) _copy(o, same[i], g, same[i]);
    json_object_set_new(o, "is_public", json_true());
    json_object_set_new(o, "driver", json_string("static"));
    json_object_set_new(o, "driver_opts", json_object());
    json_object_set_new(o, "use_host_network", json_false());
    json_object_set_new(o, "scheduler_opts",
                        json_pack("{s:O, s:O, s:O}", "agent_selector",
                                  json_object_get(g, "agent_selector"), "allowed_session_types",
                                  json_object_get(g, "allowed_session_types"), "pending_timeout",
                                  json_object_get(g, "pending_timeout")));
    return o;
}

/* The policies and presets keep the REST names, which are the reference's. */
static json_t *_as_is(gql_exec *ex, const json_t *p)
{
    (void)ex;
    return json_deep_copy(p);
}

static json_t *_keypair_policy(gql_exec *ex, const json_t *p)
{
    (void)ex;
    json_t *o = json_deep_copy(p);
    json_object_set_new(o, "default_for_unspecified", json_string("UNLIMITED"));
    return o;
}

static json_t *_preset(gql_exec *ex, const json_t *p)
{
    (void)ex;
    json_t *o = json_deep_copy(p);
    const char *shm = _str(p, "shared_memory");
    json_object_set_new(o, "shared_memory", shm ? json_integer(strtoll(shm, NULL, 10)) : json_null());
    return o;
}

static json_t *_volume(gql_exec *ex, const json_t *v)
{
    (void)ex;
    json_t *o = json_object();
    _copy(o, "id", v, "name");
    _copy(o, "name", v, "name");
    _copy(o, "backend", v, "fs_type");
    _copy(o, "path", v, "path");
    json_object_set_new(o, "proxy", json_string("tessera-vfolder"));
    json_object_set_new(o, "fsprefix", json_string("."));
    json_object_set_new(o, "capabilities",
                        json_pack("[s, s]", "vfolder", json_is_true(json_object_get(v, "xfs_quota")) ? "quota" : "metric"));
    json_object_set_new(o, "hardware_metadata", json_object());
    json_object_set_new(o, "performance_metric", json_object());
    json_object_set_new(o, "usage", json_pack("{s:O, s:O}", "capacity_bytes",
                                              json_object_get(v, "capacity_bytes"), "used_bytes",
                                              json_object_get(v, "used_bytes")));
    return o;
}

static json_t *_vfolder(gql_exec *ex, const json_t *f)
{
    (void)ex;
    json_t *o = json_object();
    const char *same[] = {"id", "host", "name", "user", "group", "usage_mode", "permission",
                          "ownership_type", "created_at", "cloneable", "status", "max_size"};
    for (size_t i = 0; i < TS_ARRAY_LEN(same); i++) _copy(o, same[i], f, same[i]);
    _copy(o, "user_email", f, "user_email");
    _copy(o, "group_name", f, "group_name");
    _copy(o, "creator", f, "creator");
    _copy(o, "quota_scope_id", f, "quota_scope_id");
    _copy(o, "cur_size", f, "used_bytes");
    _copy(o, "last_used", f, "last_used");
    json_object_set_new(o, "max_files", json_integer(0));
    return o;
}

/* ---- resolvers: sessions ----------------------------------------------------- */

static json_t *q_compute_session_list(gql_exec *ex, const json_t *args)
{
    if (json_object_get(args, "filter") || json_object_get(args, "order")) {
        gql_error(ex, "filter and order are not supported");
        return NULL;
    }
    ts_buf q = {0};
    _qs(&q, "all", "true");
    _qs(&q, "status", _str(args, "status"));
    _qs(&q, "owner_access_key", _str(args, "access_key"));
    _qs(&q, "group_id", _str(args, "group_id"));
    _qs(&q, "domain_name", _str(args, "domain_name"));
    json_t *page = _page(ex, UPSTREAM_REGISTRY, "/v1/sessions", &q,
                         json_integer_value(json_object_get(args, "limit")),
                         json_integer_value(json_object_get(args, "offset")));
    return _list(ex, page, _session);
}

static json_t *q_compute_session(gql_exec *ex, const json_t *args)
{
    char *id = httpc_escape(_str(args, "id"));
    char *t = ts_asprintf("/v1/sessions/%s", id);
    json_t *s = _rest(ex, UPSTREAM_REGISTRY, t);
    free(id);
    free(t);
    if (!s) return NULL;
    json_t *o = _session(ex, s);
    json_decref(s);
    return o;
}

static json_t *q_compute_session_nodes(gql_exec *ex, const json_t *args)
{
    json_int_t offset, count;
    if (!_relay_window(ex, args, &offset, &count)) return NULL;
    ts_buf q = {0};
    _qs(&q, "all", "true");
    const char *project = _str(args, "project_id");
    const char *scope = _str(args, "scope_id");
    if (scope && strncmp(scope, "project:", 8) == 0) project = scope + 8;
    _qs(&q, "group_id", project);
    json_t *page = _page(ex, UPSTREAM_REGISTRY, "/v1/sessions", &q, count, offset);
    return _connection(ex, page, offset, _session_node);
}

/* ---- resolvers: identity ----------------------------------------------------- */

/* The id of the user with that e-mail address (heap), or NULL after an
 * error (also when the caller may not see that user). */
static char *_user_id_by_email(gql_exec *ex, const char *email)
{
    ts_buf q = {0};
    _qs(&q, "q", email);
    json_t *page = _page(ex, UPSTREAM_AUTH, "/v1/admin/users", &q, PAGE_MAX, 0);
    if (!page) return NULL;
    char *id = NULL;
    size_t i;
    json_t *u;
    json_array_foreach(json_object_get(page, "items"), i, u)
    {
        const char *e = _str(u, "email");
        if (e && strcasecmp(e, email) == 0 && _str(u, "id")) id = ts_strdup(_str(u, "id"));
    }
    json_decref(page);
    if (!id) gql_error(ex, "no such user: %s", email);
    return id;
}

static json_t *q_keypair(gql_exec *ex, const json_t *args)
{
    gql_ctx *c = gql_user(ex);
    const char *ak = _str(args, "access_key");
    char *esc = httpc_escape(ak ? ak : c->id->access_key);
    char *t = ts_asprintf("/v1/admin/keypairs/%s", esc);
    json_t *k = _rest(ex, UPSTREAM_AUTH, t);
    free(esc);
    free(t);
    if (!k) return NULL;
    json_t *o = _keypair(ex, k);
    json_decref(k);
    return o;
}

/* The keypair list's filters; false after an error. */
static bool _keypair_filters(gql_exec *ex, const json_t *args, ts_buf *q)
{
    const char *email = _str(args, "email");
    if (email) {
        char *id = _user_id_by_email(ex, email);
        if (!id) return false;
        _qs(q, "user", id);
        free(id);
    }
    _qs_bool(q, "is_active", json_object_get(args, "is_active"));
    return true;
}

static json_t *q_keypair_list(gql_exec *ex, const json_t *args)
{
    ts_buf q = {0};
    if (!_keypair_filters(ex, args, &q)) {
        ts_buf_free(&q);
        return NULL;
    }
    json_t *page = _page(ex, UPSTREAM_AUTH, "/v1/admin/keypairs", &q,
                         json_integer_value(json_object_get(args, "limit")),
                         json_integer_value(json_object_get(args, "offset")));
    return _list(ex, page, _keypair);
}

static json_t *q_keypairs(gql_exec *ex, const json_t *args)
{
    ts_buf q = {0};
    if (!_keypair_filters(ex, args, &q)) {
        ts_buf_free(&q);
        return NULL;
    }
    char *query = _target("", &q);
    json_t *all = _all(ex, UPSTREAM_AUTH, "/v1/admin/keypairs", query[0] ? query + 1 : "");
    free(query);
    if (!all) return NULL;
    json_t *out = _shape_all(ex, all, _keypair);
    json_decref(all);
    return out;
}

static json_t *q_user(gql_exec *ex, const json_t *args)
{
    gql_ctx *c = gql_user(ex);
    const char *email = _str(args, "email");
    char *id = email ? _user_id_by_email(ex, email) : ts_strdup(c->id->user_id);
    if (!id) return NULL;
    char *t = ts_asprintf("/v1/admin/users/%s", id);
    json_t *u = _rest(ex, UPSTREAM_AUTH, t);
    free(t);
    free(id);
    if (!u) return NULL;
    json_t *o = _user(ex, u);
    json_decref(u);
    return o;
}

/* The user list's filters into q. */
static void _user_filters(const json_t *args, ts_buf *q)
{
    _qs(q, "domain", _str(args, "domain_name"));
    const char *status = _str(args, "status");
    json_t *active = json_object_get(args, "is_active");
    if (!status && json_is_true(active)) status = "active";
    _qs(q, "status", status);
}

static json_t *q_user_list(gql_exec *ex, const json_t *args)
{
    if (json_object_get(args, "filter") || json_object_get(args, "order") ||
        json_object_get(args, "group_id")) {
        gql_error(ex, "filter, order and group_id are not supported");
        return NULL;
    }
    ts_buf q = {0};
    _user_filters(args, &q);
    json_t *page = _page(ex, UPSTREAM_AUTH, "/v1/admin/users", &q,
                         json_integer_value(json_object_get(args, "limit")),
                         json_integer_value(json_object_get(args, "offset")));
    return _list(ex, page, _user);
}

static json_t *q_users(gql_exec *ex, const json_t *args)
{
    if (json_object_get(args, "group_id")) {
        gql_error(ex, "group_id is not supported");
        return NULL;
    }
    ts_buf q = {0};
    _user_filters(args, &q);
    char *query = _target("", &q);
    json_t *all = _all(ex, UPSTREAM_AUTH, "/v1/admin/users", query[0] ? query + 1 : "");
    free(query);
    if (!all) return NULL;
    json_t *out = _shape_all(ex, all, _user);
    json_decref(all);
    return out;
}

static json_t *q_user_nodes(gql_exec *ex, const json_t *args)
{
    json_int_t offset, count;
    if (!_relay_window(ex, args, &offset, &count)) return NULL;
    ts_buf q = {0};
    json_t *page = _page(ex, UPSTREAM_AUTH, "/v1/admin/users", &q, count, offset);
    return _connection(ex, page, offset, _user_node);
}

static json_t *q_groups(gql_exec *ex, const json_t *args)
{
    ts_buf q = {0};
    _qs(&q, "domain", _str(args, "domain_name"));
    _qs_bool(&q, "is_active", json_object_get(args, "is_active"));
    char *query = _target("", &q);
    json_t *all = _all(ex, UPSTREAM_AUTH, "/v1/admin/projects", query[0] ? query + 1 : "");
    free(query);
    if (!all) return NULL;
    json_t *out = _shape_all(ex, all, _group);
    json_decref(all);
    return out;
}

/* GET path/<escaped key> shaped, or NULL after an error. */
static json_t *_one(gql_exec *ex, upstream_id u, const char *path, const char *key,
                    json_t *(*shape)(gql_exec *, const json_t *))
{
    char *esc = httpc_escape(key);
    char *t = ts_asprintf("%s/%s", path, esc);
    json_t *v = _rest(ex, u, t);
    free(esc);
    free(t);
    if (!v) return NULL;
    json_t *o = shape(ex, v);
    json_decref(v);
    return o;
}

static json_t *q_group(gql_exec *ex, const json_t *args)
{
    return _one(ex, UPSTREAM_AUTH, "/v1/admin/projects", _str(args, "id"), _group);
}

static json_t *q_domains(gql_exec *ex, const json_t *args)
{
    ts_buf q = {0};
    _qs_bool(&q, "is_active", json_object_get(args, "is_active"));
    char *query = _target("", &q);
    json_t *all = _all(ex, UPSTREAM_AUTH, "/v1/admin/domains", query[0] ? query + 1 : "");
    free(query);
    if (!all) return NULL;
    json_t *out = _shape_all(ex, all, _domain);
    json_decref(all);
    return out;
}

static json_t *q_domain(gql_exec *ex, const json_t *args)
{
    gql_ctx *c = gql_user(ex);
    const char *name = _str(args, "name");
    return _one(ex, UPSTREAM_AUTH, "/v1/admin/domains", name ? name : c->id->domain, _domain);
}

/* A whole list from path, shaped. */
static json_t *_all_shaped(gql_exec *ex, upstream_id u, const char *path, const char *query,
                           json_t *(*shape)(gql_exec *, const json_t *))
{
    json_t *all = _all(ex, u, path, query);
    if (!all) return NULL;
    json_t *out = _shape_all(ex, all, shape);
    json_decref(all);
    return out;
}

static json_t *q_keypair_resource_policies(gql_exec *ex, const json_t *args)
{
    (void)args;
    return _all_shaped(ex, UPSTREAM_AUTH, "/v1/admin/keypair-resource-policies", "",
                       _keypair_policy);
}

static json_t *q_keypair_resource_policy(gql_exec *ex, const json_t *args)
{
    const char *name = _str(args, "name");
    json_t *mine = NULL;
    if (!name) { /* the caller's keypair's */
        gql_ctx *c = gql_user(ex);
        mine = _one(ex, UPSTREAM_AUTH, "/v1/admin/keypairs", c->id->access_key, _as_is);
        if (!mine) return NULL;
        name = _str(mine, "resource_policy");
    }
    json_t *o = _one(ex, UPSTREAM_AUTH, "/v1/admin/keypair-resource-policies",
                     name ? name : "default", _keypair_policy);
    json_decref(mine);
    return o;
}

static json_t *q_user_resource_policies(gql_exec *ex, const json_t *args)
{
    (void)args;
    return _all_shaped(ex, UPSTREAM_AUTH, "/v1/admin/user-resource-policies", "", _as_is);
}

static json_t *q_user_resource_policy(gql_exec *ex, const json_t *args)
{
    const char *name = _str(args, "name");
    return _one(ex, UPSTREAM_AUTH, "/v1/admin/user-resource-policies", name ? name : "default",
                _as_is);
}

static json_t *q_project_resource_policies(gql_exec *ex, const json_t *args)
{
    (void)args;
    return _all_shaped(ex, UPSTREAM_AUTH, "/v1/admin/project-resource-policies", "", _as_is);
}

static json_t *q_project_resource_policy(gql_exec *ex, const json_t *args)
{
    return _one(ex, UPSTREAM_AUTH, "/v1/admin/project-resource-policies", _str(args, "name"),
                _as_is);
}

/* ---- resolvers: resources ---------------------------------------------------- */

static json_t *q_images(gql_exec *ex, const json_t *args)
{
    (void)args; /* every image Tessera knows is launchable: agents pull on first use */
    return _all_shaped(ex, UPSTREAM_REGISTRY, "/v1/admin/images", "", _image);
}

static json_t *q_image(gql_exec *ex, const json_t *args)
{
    const char *ref = _str(args, "reference");
    if (!ref) ref = _str(args, "id");
    if (!ref) {
        gql_error(ex, "name the image by reference");
        return NULL;
    }
    return _one(ex, UPSTREAM_REGISTRY, "/v1/admin/images", ref, _image);
}

static void _agent_filters(const json_t *args, ts_buf *q)
{
    _qs(q, "status", _str(args, "status"));
    _qs(q, "resource_group", _str(args, "scaling_group"));
}

static json_t *q_agents(gql_exec *ex, const json_t *args)
{
    ts_buf q = {0};
    _agent_filters(args, &q);
    char *query = _target("", &q);
    json_t *out = _all_shaped(ex, UPSTREAM_REGISTRY, "/v1/admin/agents",
                              query[0] ? query + 1 : "", _agent);
    free(query);
    return out;
}

static json_t *q_agent_list(gql_exec *ex, const json_t *args)
{
    if (json_object_get(args, "filter") || json_object_get(args, "order")) {
        gql_error(ex, "filter and order are not supported");
        return NULL;
    }
    ts_buf q = {0};
    _agent_filters(args, &q);
    json_t *page = _page(ex, UPSTREAM_REGISTRY, "/v1/admin/agents", &q,
                         json_integer_value(json_object_get(args, "limit")),
                         json_integer_value(json_object_get(args, "offset")));
    return _list(ex, page, _agent);
}

static json_t *q_agent(gql_exec *ex, const json_t *args)
{
    return _one(ex, UPSTREAM_REGISTRY, "/v1/admin/agents", _str(args, "agent_id"), _agent);
}

static json_t *q_scaling_groups(gql_exec *ex, const json_t *args)
{
    ts_buf q = {0};
    _qs_bool(&q, "is_active", json_object_get(args, "is_active"));
    char *query = _target("", &q);
    json_t *all = _all_shaped(ex, UPSTREAM_REGISTRY, "/v1/admin/resource-groups",
                              query[0] ? query + 1 : "", _scaling_group);
    free(query);
    const char *name = _str(args, "name");
    if (all && name) {
        for (size_t i = json_array_size(all); i-- > 0;)
            if (strcmp(_str(json_array_get(all, i), "name"), name) != 0) json_array_remove(all, i);
    }
    return all;
}

static json_t *q_scaling_group(gql_exec *ex, const json_t *args)
{
    return _one(ex, UPSTREAM_REGISTRY, "/v1/admin/resource-groups", _str(args, "name"),
                _scaling_group);
}

static json_t *q_resource_presets(gql_exec *ex, const json_t *args)
{
    if (json_object_get(args, "filter") || json_object_get(args, "order")) {
        gql_error(ex, "filter and order are not supported");
        return NULL;
    }
    return _all_shaped(ex, UPSTREAM_REGISTRY, "/v1/admin/resource-presets", "", _preset);
}

static json_t *q_resource_preset(gql_exec *ex, const json_t *args)
{
    return _one(ex, UPSTREAM_REGISTRY, "/v1/admin/resource-presets", _str(args, "name"), _preset);
}

/* ---- resolvers: storage ------------------------------------------------------ */

static json_t *_volumes(gql_exec *ex)
{
    json_t *a = _rest(ex, UPSTREAM_VFOLDER, "/v1/folders/_/volumes");
    if (!a) return NULL;
    json_t *out = _shape_all(ex, json_object_get(a, "volumes"), _volume);
    json_decref(a);
    return out;
}

/* items[offset, offset + limit) of a whole list (consumed). */
static json_t *_slice(json_t *all, const json_t *args)
{
    json_int_t limit = json_integer_value(json_object_get(args, "limit"));
    json_int_t offset = json_integer_value(json_object_get(args, "offset"));
    json_t *items = json_array();
    for (json_int_t i = offset < 0 ? 0 : offset;
         i < (json_int_t)json_array_size(all) && i < offset + limit; i++)
        json_array_append(items, json_array_get(all, (size_t)i));
    json_t *out = json_pack("{s:o, s:I}", "items", items, "total_count",
                            (json_int_t)json_array_size(all));
    json_decref(all);
    return out;
}

static json_t *q_storage_volume_list(gql_exec *ex, const json_t *args)
{
    json_t *all = _volumes(ex);
    return all ? _slice(all, args) : NULL;
}

static json_t *q_storage_volume(gql_exec *ex, const json_t *args)
{
    json_t *all = _volumes(ex);
    if (!all) return NULL;
    const char *id = _str(args, "id");
    json_t *found = json_null();
    size_t i;
    json_t *v;
    json_array_foreach(all, i, v) if (id && strcmp(_str(v, "id"), id) == 0)
    {
        json_decref(found);
        found = json_incref(v);
    }
    json_decref(all);
    return found;
}

static json_t *_folders(gql_exec *ex, const json_t *args)
{
    gql_ctx *c = gql_user(ex);
    ts_buf q = {0};
    if (c->id->is_admin || strcmp(c->id->role, "user") != 0) _qs(&q, "all", "true");
    _qs(&q, "group_id", _str(args, "group_id"));
    char *t = _target("/v1/folders", &q);
    json_t *a = _rest(ex, UPSTREAM_VFOLDER, t);
    free(t);
    if (!a) return NULL;
    if (!json_is_array(a)) {
        json_decref(a);
        gql_error(ex, "unexpected answer from the service");
        return NULL;
    }
    json_t *out = _shape_all(ex, a, _vfolder);
    json_decref(a);
    return out;
}

static json_t *q_vfolder_list(gql_exec *ex, const json_t *args)
{
    if (json_object_get(args, "filter") || json_object_get(args, "order") ||
        json_object_get(args, "access_key")) {
        gql_error(ex, "filter, order and access_key are not supported");
        return NULL;
    }
    json_t *all = _folders(ex, args);
    if (!all) return NULL;
    const char *domain = _str(args, "domain_name");
    if (domain)
        for (size_t i = json_array_size(all); i-- > 0;) {
            const char *d = _str(json_array_get(all, i), "domain_name");
            if (d && strcmp(d, domain) != 0) json_array_remove(all, i);
        }
    return _slice(all, args);
}

static json_t *q_vfolder(gql_exec *ex, const json_t *args)
{
    json_t *all = _folders(ex, args);
    if (!all) return NULL;
    const char *id = _str(args, "id");
    json_t *found = json_null();
    size_t i;
    json_t *f;
    json_array_foreach(all, i, f) if (id && _str(f, "id") && strcmp(_str(f, "id"), id) == 0)
    {
        json_decref(found);
        found = json_incref(f);
    }
    json_decref(all);
    return found;
}

/* ---- the root ------------------------------------------------------------------ */

#define A(n, t) {n, t, false}
#define R(n, t) {n, t, true}
#define PAGED R("limit", GQL_INT), R("offset", GQL_INT), A("filter", GQL_STRING), A("order", GQL_STRING)
#define RELAY                                                                                      \
    A("filter", GQL_STRING), A("order", GQL_STRING), A("offset", GQL_INT),                       \
        A("before", GQL_STRING), A("after", GQL_STRING), A("first", GQL_INT),                     \
        A("last", GQL_INT)
#define END_ARGS {NULL, 0, false}

const gql_root_field gql_query_fields[] = {
    {"compute_session_list",
     (const gql_arg_def[]){PAGED, A("domain_name", GQL_STRING), A("group_id", GQL_STRING),
                           A("access_key", GQL_STRING), A("status", GQL_STRING), END_ARGS},
     &gql_t_compute_session_list, false, q_compute_session_list},
    {"compute_session", (const gql_arg_def[]){R("id", GQL_UUID), END_ARGS},
     &gql_t_compute_session, false, q_compute_session},
    {"compute_session_nodes",
     (const gql_arg_def[]){RELAY, A("scope_id", GQL_STRING), A("project_id", GQL_UUID),
                           A("permission", GQL_STRING), END_ARGS},
     &gql_t_compute_session_connection, false, q_compute_session_nodes},
    {"keypair",
     (const gql_arg_def[]){A("domain_name", GQL_STRING), A("access_key", GQL_STRING), END_ARGS},
     &gql_t_keypair, false, q_keypair},
    {"keypair_list",
     (const gql_arg_def[]){PAGED, A("domain_name", GQL_STRING), A("email", GQL_STRING),
                           A("is_active", GQL_BOOLEAN), END_ARGS},
     &gql_t_keypair_list, false, q_keypair_list},
    {"keypairs",
     (const gql_arg_def[]){A("domain_name", GQL_STRING), A("email", GQL_STRING),
                           A("is_active", GQL_BOOLEAN), END_ARGS},
     &gql_t_keypair, true, q_keypairs},
    {"user", (const gql_arg_def[]){A("domain_name", GQL_STRING), A("email", GQL_STRING), END_ARGS},
     &gql_t_user, false, q_user},
    {"user_list",
     (const gql_arg_def[]){PAGED, A("domain_name", GQL_STRING), A("group_id", GQL_UUID),
                           A("is_active", GQL_BOOLEAN), A("status", GQL_STRING), END_ARGS},
     &gql_t_user_list, false, q_user_list},
    {"users",
     (const gql_arg_def[]){A("domain_name", GQL_STRING), A("group_id", GQL_UUID),
                           A("is_active", GQL_BOOLEAN), A("status", GQL_STRING), END_ARGS},
     &gql_t_user, true, q_users},
    {"user_nodes", (const gql_arg_def[]){RELAY, END_ARGS}, &gql_t_user_connection, false,
     q_user_nodes},
    {"images",
     (const gql_arg_def[]){A("is_installed", GQL_BOOLEAN), A("is_operation", GQL_BOOLEAN),
                           A("filter_by_statuses", GQL_STRING_LIST),
                           A("load_filters", GQL_STRING_LIST), A("image_filters", GQL_STRING_LIST),
                           END_ARGS},
     &gql_t_image, true, q_images},
    {"image",
     (const gql_arg_def[]){A("id", GQL_STRING), A("reference", GQL_STRING),
                           A("architecture", GQL_STRING), END_ARGS},
     &gql_t_image, false, q_image},
    {"agents",
     (const gql_arg_def[]){A("scaling_group", GQL_STRING), A("status", GQL_STRING), END_ARGS},
     &gql_t_agent, true, q_agents},
    {"agent_list",
     (const gql_arg_def[]){PAGED, A("scaling_group", GQL_STRING), A("status", GQL_STRING),
                           END_ARGS},
     &gql_t_agent_list, false, q_agent_list},
    {"agent", (const gql_arg_def[]){R("agent_id", GQL_STRING), END_ARGS}, &gql_t_agent, false,
     q_agent},
    {"groups",
     (const gql_arg_def[]){A("domain_name", GQL_STRING), A("is_active", GQL_BOOLEAN),
                           A("type", GQL_STRING_LIST), END_ARGS},
     &gql_t_group, true, q_groups},
    {"group",
     (const gql_arg_def[]){R("id", GQL_UUID), A("domain_name", GQL_STRING),
                           A("type", GQL_STRING_LIST), END_ARGS},
     &gql_t_group, false, q_group},
    {"domains", (const gql_arg_def[]){A("is_active", GQL_BOOLEAN), END_ARGS}, &gql_t_domain, true,
     q_domains},
    {"domain", (const gql_arg_def[]){A("name", GQL_STRING), END_ARGS}, &gql_t_domain, false,
     q_domain},
    {"scaling_groups",
     (const gql_arg_def[]){A("name", GQL_STRING), A("is_active", GQL_BOOLEAN), END_ARGS},
     &gql_t_scaling_group, true, q_scaling_groups},
    {"scaling_group", (const gql_arg_def[]){A("name", GQL_STRING), END_ARGS},
     &gql_t_scaling_group, false, q_scaling_group},
    {"keypair_resource_policy", (const gql_arg_def[]){A("name", GQL_STRING), END_ARGS},
     &gql_t_keypair_policy, false, q_keypair_resource_policy},
    {"keypair_resource_policies", (const gql_arg_def[]){END_ARGS}, &gql_t_keypair_policy, true,
     q_keypair_resource_policies},
    {"user_resource_policy", (const gql_arg_def[]){A("name", GQL_STRING), END_ARGS},
     &gql_t_user_policy, false, q_user_resource_policy},
    {"user_resource_policies", (const gql_arg_def[]){END_ARGS}, &gql_t_user_policy, true,
     q_user_resource_policies},
    {"project_resource_policy", (const gql_arg_def[]){R("name", GQL_STRING), END_ARGS},
     &gql_t_project_policy, false, q_project_resource_policy},
    {"project_resource_policies", (const gql_arg_def[]){END_ARGS}, &gql_t_project_policy, true,
     q_project_resource_policies},
    {"resource_preset", (const gql_arg_def[]){A("name", GQL_STRING), END_ARGS},
     &gql_t_resource_preset, false, q_resource_preset},
    {"resource_presets",
     (const gql_arg_def[]){A("filter", GQL_STRING), A("order", GQL_STRING), END_ARGS},
     &gql_t_resource_preset, true, q_resource_presets},
    {"storage_volume", (const gql_arg_def[]){A("id", GQL_STRING), END_ARGS},
     &gql_t_storage_volume, false, q_storage_volume},
    {"storage_volume_list", (const gql_arg_def[]){PAGED, END_ARGS}, &gql_t_storage_volume_list,
     false, q_storage_volume_list},
    {"vfolder_list",
     (const gql_arg_def[]){PAGED, A("domain_name", GQL_STRING), A("group_id", GQL_UUID),
                           A("access_key", GQL_STRING), END_ARGS},
     &gql_t_vfolder_list, false, q_vfolder_list},
    {"vfolder", (const gql_arg_def[]){A("id", GQL_STRING), END_ARGS}, &gql_t_vfolder, false,
     q_vfolder},
    {NULL, NULL, NULL, false, NULL},
};
