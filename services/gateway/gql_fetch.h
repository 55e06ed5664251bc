/* gql_fetch.h: how the GraphQL resolvers (gql_query.c, gql_mutation.c)
 * read the services: REST calls as the caller (proxy_fetch_json, so the
 * services scope what the caller sees), query strings, the services' paged
 * lists read page by page, Relay connections over a page, and the users
 * read once per request for the fields that name a user's e-mail. A REST
 * refusal (403, 404, a 400 naming a bad filter) becomes the field's GraphQL
 * error with the service's message. */
#ifndef GATEWAY_GQL_FETCH_H
#define GATEWAY_GQL_FETCH_H

#include "gateway.h"
#include "gql_types.h"
#include "identity.h"

#include "libcommon/buf.h"

#define GQL_PAGE_MAX 1000 /* the services' largest page */

/* The resolvers' context: the request being answered and its caller. */
typedef struct gql_ctx {
    gateway *gw;
    http_req *req;
    const gw_identity *id;
    json_t *users;       /* id -> user object, read once when a field needs it */
    int64_t deadline_ms; /* ts_now_mono_ms() by which the request must be done */
} gql_ctx;

/* How long a request may take in all (its resolvers' calls together). */
#define GQL_REQUEST_TIME_MS 60000

/* The time a call may take: want_ms, or less as the request's deadline
 * nears; 0 after a GraphQL error when the deadline has passed. */
int64_t gql_time_left(gql_exec *ex, int64_t want_ms);

/* The computed fields naming a user's e-mail and full name (gql_schema.c's
 * types): from the hidden "_user" id, the users read once per request. */
json_t *gql_get_user_email(gql_exec *ex, const json_t *src);
json_t *gql_get_full_name(gql_exec *ex, const json_t *src);

/* An item shaped into an object keyed by the reference's names (gql_shapes.h). */
typedef json_t *(*gql_shape_fn)(gql_exec *ex, const json_t *item);

/* GET target from upstream u: the answer (any JSON), or NULL after an error. */
json_t *gql_get(gql_exec *ex, upstream_id u, const char *target);
/* o[key] as a string, or NULL. */
const char *gql_str(const json_t *o, const char *key);

/* Query strings: "?a=1&b=x" built in b (value NULL: nothing added). */
void gql_qs(ts_buf *b, const char *key, const char *value);
void gql_qs_int(ts_buf *b, const char *key, json_int_t n);
void gql_qs_bool(ts_buf *b, const char *key, const json_t *v); /* a JSON boolean, else nothing */
/* path + b's text (b is freed). Heap. */
char *gql_target(const char *path, ts_buf *b);

/* One page of a {"items", "total"} list (q: its filters, freed), limit
 * clipped to the services' page size (0: no items, the total only); NULL
 * after an error. */
json_t *gql_page(gql_exec *ex, upstream_id u, const char *path, ts_buf *q, json_int_t limit,
                 json_int_t offset);
/* Every item of a paged list (the reference's non-paginated lists), with
 * the filters built in filters (gql_qs; freed, may be empty). */
json_t *gql_all(gql_exec *ex, upstream_id u, const char *path, ts_buf *filters);
/* The same, shaped. */
json_t *gql_all_shaped(gql_exec *ex, upstream_id u, const char *path, ts_buf *filters,
                       gql_shape_fn shape);
/* GET path/<escaped key>, shaped; NULL after an error. */
json_t *gql_one(gql_exec *ex, upstream_id u, const char *path, const char *key, gql_shape_fn shape);
/* Items shaped one by one (a new array). */
json_t *gql_shape_each(gql_exec *ex, const json_t *items, gql_shape_fn shape);
/* {"items": shaped, "total_count"} from a page answer (consumed; NULL: NULL). */
json_t *gql_list(gql_exec *ex, json_t *page, gql_shape_fn shape);

/* Relay: a global id, base64("<Type>:<id>"); the window a connection's
 * arguments ask for (first, after, offset; false after an error: last and
 * before are refused); a connection over one page answer (consumed). */
json_t *gql_global_id(const char *type, const char *id);
bool gql_relay_window(gql_exec *ex, const json_t *args, json_int_t *offset,
                      json_int_t *count) TS_MUST_CHECK;
json_t *gql_connection(gql_exec *ex, json_t *page, json_int_t offset, gql_shape_fn node);

/* The id of the user with that e-mail address among those the caller sees
 * (heap). NULL with *missing when there is none; NULL without after an
 * error. */
char *gql_user_id_by_email(gql_exec *ex, const char *email, bool *missing);

#endif
