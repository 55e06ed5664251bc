/* listing.h: rows answered as the registry's API shows them.
 *
 * Paged lists (GET /v1/sessions, /v1/admin/agents, /v1/admin/images,
 * /v1/admin/resource-groups): ?limit=&offset=
 * (pgjson_page_parse: 1..1000, default 50), one query whose last two
 * parameters are the LIMIT and the OFFSET and whose last column is
 * count(*) OVER () AS total, answered 200 {"items", "total", "limit",
 * "offset"} (pgjson_page_json). The caller checks who calls first. */
#ifndef REGISTRY_LISTING_H
#define REGISTRY_LISTING_H

#include "libcommon/svc.h"

#include <jansson.h>

/* One item of a row of the query. */
typedef json_t *(*listing_row_fn)(const PGresult *r, int row);

typedef struct listing {
    const char *what;      /* the query's name in a problem answer: "list images" */
    const char *sql;       /* $1..$n_params, then LIMIT and OFFSET */
    const char *params[8]; /* the filters (NULL: SQL NULL) */
    int n_params;
    listing_row_fn row;  /* NULL: listing_row_json */
    const char *missing; /* set: one item is asked for (a filter names it): answered
                          * alone, or 404 not-found saying this */
} listing;

/* Run the query on a pooled connection and answer (a problem answer when the
 * page parameters are malformed or the database fails). */
void listing_reply(svc *s, http_req *req, http_resp *resp, const listing *l);

/* A row as pgjson_row_json makes it, without the total column. */
json_t *listing_row_json(const PGresult *r, int row);

/* One row by its key (an image, a resource group). */
typedef struct listing_one {
    const char *what;    /* the query's name in a problem answer: "read image" */
    const char *sql;     /* $1: the key */
    const char *missing; /* 404 not-found "<missing> <key>" when no row: "unknown image" */
    const char *entity;  /* the key's name in the log context: "image" */
} listing_one;

/* Answer the row (pgjson_row_json) with status, or 404. */
void listing_reply_one(http_resp *resp, PGconn *conn, const listing_one *q, const char *key,
                       int status);

/* GET of one row by administrators: caller_get_admin (reading what, e.g.
 * "agents"), then the row keyed by the route parameter param (named in the
 * thread's log context). With everyone, any caller (caller_get) may read it
 * (images: every user picks one to start a session from). */
void listing_admin_get(svc *s, http_req *req, http_resp *resp, const char *what,
                       const listing_one *q, const char *param, bool everyone);

/* DELETE of one row by superadmins: caller_get_admin (changing what), then
 * q->sql (a DELETE of the row keyed by the route parameter param): 200
 * {"deleted": true}, or 404 "<missing> <key>"; logged with the caller. */
void listing_admin_delete(svc *s, http_req *req, http_resp *resp, const char *what,
                          const listing_one *q, const char *param);

#endif
