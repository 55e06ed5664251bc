/* gql_fetch.c: how the GraphQL resolvers read the services (gql_fetch.h). */
#include "gql_fetch.h"

#include "proxy.h"

#include "libcommon/httpc.h"

#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define RESOLVE_TIMEOUT_MS 15000
#define LEGACY_LIST_MAX 10000 /* the non-paginated lists read at most this many */

/* ---- REST calls ----------------------------------------------------------- */

/* GET target from upstream u; the answer (any JSON) or NULL after an error. */
int64_t gql_time_left(gql_exec *ex, int64_t want_ms)
{
    gql_ctx *c = gql_user(ex);
    int64_t left = c->deadline_ms - ts_now_mono_ms();
    if (left <= 0) {
        gql_error(ex, "The request ran out of time (%d s for all its fields).",
                  GQL_REQUEST_TIME_MS / 1000);
        return 0;
    }
    return left < want_ms ? left : want_ms;
}

json_t *gql_get(gql_exec *ex, upstream_id u, const char *target)
{
    int64_t timeout_ms = gql_time_left(ex, RESOLVE_TIMEOUT_MS);
    if (!timeout_ms) return NULL;
    gql_ctx *c = gql_user(ex);
    long status;
    json_t *out;
    ts_err err = {{0}};
    if (!proxy_fetch_json(&c->gw->up[u], timeout_ms, "GET", c->req, target, c->id, NULL, &status,
                          &out, &err)) {
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
void gql_qs(ts_buf *b, const char *key, const char *value)
{
    if (!value) return;
    char *v = httpc_escape(value);
    ts_buf_append_str(b, b->len ? "&" : "?");
    ts_buf_append_str(b, key);
    ts_buf_append_str(b, "=");
    ts_buf_append_str(b, v);
    free(v);
}

void gql_qs_int(ts_buf *b, const char *key, json_int_t n)
{
    char v[32];
    snprintf(v, sizeof(v), "%lld", (long long)n);
    gql_qs(b, key, v);
}

void gql_qs_bool(ts_buf *b, const char *key, const json_t *v)
{
    if (json_is_boolean(v)) gql_qs(b, key, json_is_true(v) ? "true" : "false");
}

/* path + the query (b's text; b is freed). Heap. */
char *gql_target(const char *path, ts_buf *b)
{
    char *t = ts_asprintf("%s%.*s", path, (int)b->len, b->data ? b->data : "");
    ts_buf_free(b);
    return t;
}

const char *gql_str(const json_t *o, const char *key)
{
    return json_string_value(json_object_get(o, key));
}

/* One page of a {"items", "total"} list: the answer, or NULL after an
 * error. */
json_t *gql_page(gql_exec *ex, upstream_id u, const char *path, ts_buf *q, json_int_t limit,
                 json_int_t offset)
{
    if (limit < 0 || offset < 0) {
        ts_buf_free(q);
        gql_error(ex, "limit and offset must not be negative");
        return NULL;
    }
    gql_qs_int(q, "limit", limit < 1 ? 1 : limit > GQL_PAGE_MAX ? GQL_PAGE_MAX : limit);
    gql_qs_int(q, "offset", offset);
    char *t = gql_target(path, q);
    json_t *a = gql_get(ex, u, t);
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
json_t *gql_all(gql_exec *ex, upstream_id u, const char *path, ts_buf *filters)
{
    /* the filters' text once ("?a=b&c=d" or ""), copied for each page */
    char *query = gql_target("", filters);
    json_t *all = json_array();
    for (json_int_t offset = 0; offset < LEGACY_LIST_MAX; offset += GQL_PAGE_MAX) {
        ts_buf q = {0};
        ts_buf_append_str(&q, query);
        json_t *a = gql_page(ex, u, path, &q, GQL_PAGE_MAX, offset);
        if (!a) {
            json_decref(all);
            all = NULL;
            break;
        }
        json_array_extend(all, json_object_get(a, "items"));
        json_int_t total = json_integer_value(json_object_get(a, "total"));
        json_decref(a);
        if ((json_int_t)json_array_size(all) >= total) break;
    }
    free(query);
    return all;
}

/* Items shaped one by one (a new array). */
json_t *gql_shape_each(gql_exec *ex, const json_t *items, gql_shape_fn shape)
{
    json_t *out = json_array();
    size_t i;
    json_t *it;
    json_array_foreach(items, i, it) json_array_append_new(out, shape(ex, it));
    return out;
}

/* {"items": shaped, "total_count": total} from a page answer (consumed). */
json_t *gql_list(gql_exec *ex, json_t *page, gql_shape_fn shape)
{
    if (!page) return NULL;
    json_t *out =
        json_pack("{s:o, s:O}", "items", gql_shape_each(ex, json_object_get(page, "items"), shape),
                  "total_count", json_object_get(page, "total"));
    json_decref(page);
    return out;
}

/* ---- Relay ---------------------------------------------------------------- */

static char *_b64(const char *s)
{
    size_t n = strlen(s), cap = sodium_base64_ENCODED_LEN(n, sodium_base64_VARIANT_ORIGINAL);
    char *out = ts_malloc(cap);
    sodium_bin2base64(out, cap, (const unsigned char *)s, n, sodium_base64_VARIANT_ORIGINAL);
    return out;
}

/* Relay's global id: base64("<Type>:<id>"). */
json_t *gql_global_id(const char *type, const char *id)
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
    if (sodium_base642bin((unsigned char *)raw, sizeof(raw) - 1, cursor, len, NULL, &n, NULL,
                          sodium_base64_VARIANT_ORIGINAL) != 0)
        return -1;
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
bool gql_relay_window(gql_exec *ex, const json_t *args, json_int_t *offset, json_int_t *count)
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
    const char *after = gql_str(args, "after");
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
json_t *gql_connection(gql_exec *ex, json_t *page, json_int_t offset,
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
    json_t *out =
        json_pack("{s:o, s:{s:b, s:b, s:o, s:o}, s:I}", "edges", edges, "pageInfo", "hasNextPage",
                  offset + n<total, "hasPreviousPage", offset> 0, "startCursor", first_cursor,
                  "endCursor", last_cursor, "count", (json_int_t)total);
    json_decref(page);
    return out;
}

/* ---- users, read once per request ------------------------------------------ */

static const json_t *_user_of(gql_exec *ex, const json_t *src)
{
    gql_ctx *c = gql_user(ex);
    const char *id = gql_str(src, "_user");
    if (!id) return NULL;
    if (!c->users) {
        c->users = json_object();
        ts_buf none = {0};
        json_t *all = gql_all(ex, UPSTREAM_AUTH, "/v1/admin/users", &none);
        size_t i;
        json_t *u;
        json_array_foreach(all, i, u)
        {
            const char *uid = gql_str(u, "id");
            if (uid) json_object_set(c->users, uid, u);
        }
        json_decref(all);
    }
    return json_object_get(c->users, id);
}

json_t *gql_get_user_email(gql_exec *ex, const json_t *src)
{
    const char *known = gql_str(src, "_email");
    if (known) return json_string(known);
    const json_t *u = _user_of(ex, src);
    return u ? json_incref(json_object_get(u, "email")) : NULL;
}

json_t *gql_get_full_name(gql_exec *ex, const json_t *src)
{
    const json_t *u = _user_of(ex, src);
    return u ? json_incref(json_object_get(u, "full_name")) : NULL;
}

/* GET path/<escaped key> shaped, or NULL after an error. */
json_t *gql_one(gql_exec *ex, upstream_id u, const char *path, const char *key, gql_shape_fn shape)
{
    char *esc = httpc_escape(key);
    char *t = ts_asprintf("%s/%s", path, esc);
    json_t *v = gql_get(ex, u, t);
    free(esc);
    free(t);
    if (!v) return NULL;
    json_t *o = shape(ex, v);
    json_decref(v);
    return o;
}

/* A whole list from path, shaped. */
json_t *gql_all_shaped(gql_exec *ex, upstream_id u, const char *path, ts_buf *filters,
                       gql_shape_fn shape)
{
    json_t *all = gql_all(ex, u, path, filters);
    if (!all) return NULL;
    json_t *out = gql_shape_each(ex, all, shape);
    json_decref(all);
    return out;
}

char *gql_user_id_by_email(gql_exec *ex, const char *email, bool *missing)
{
    *missing = false;
    ts_buf q = {0};
    gql_qs(&q, "q", email ? email : "");
    json_t *page = gql_page(ex, UPSTREAM_AUTH, "/v1/admin/users", &q, GQL_PAGE_MAX, 0);
    if (!page) return NULL;
    char *id = NULL;
    size_t i;
    json_t *u;
    json_array_foreach(json_object_get(page, "items"), i, u)
    {
        const char *e = gql_str(u, "email");
        if (email && e && strcasecmp(e, email) == 0 && gql_str(u, "id"))
            id = ts_strdup(gql_str(u, "id"));
    }
    json_decref(page);
    *missing = !id;
    return id;
}
