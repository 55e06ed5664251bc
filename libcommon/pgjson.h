/* pgjson.h: helpers for the HTTP handlers of services on PostgreSQL
 * (tessera-auth, tessera-registry): pooled connections with problem answers,
 * queries whose failures become the right problem JSON, result rows as JSON, paging, and typed
 * validation of JSON request fields. Every function that can answer the request sends the problem
 * itself and returns false/NULL: the handler then cleans up and returns without replying again. */
#ifndef TESSERA_PGJSON_H
#define TESSERA_PGJSON_H

#include "libcommon/svc.h"

/* ---- connections ------------------------------------------------------- */

/* A pooled connection (waits up to 5 s), or NULL after a 503 problem (not
 * connected yet, or pool exhausted). Give it back with pgjson_put. */
PGconn *pgjson_get(svc *s, http_resp *resp);
void pgjson_put(svc *s, PGconn *conn);

/* ---- queries ----------------------------------------------------------- */

/* PQexecParams with text parameters (NULL entries are SQL NULL). Returns the
 * result when it is PGRES_TUPLES_OK or PGRES_COMMAND_OK, else clears it,
 * sends the problem that pgjson_problem chooses and returns NULL. `what` names the
 * operation for messages ("create user"). */
PGresult *pgjson_query(PGconn *conn, http_resp *resp, const char *what, const char *sql,
                       int n_params, const char *const *params);

/* The problem for a failed result, by SQLSTATE: 23505 unique violation ->
 * 409 already-exists; 23503 foreign key -> 400 invalid-api-params (names the
 * constraint: "a referenced object does not exist"); 23514 check and 22xxx
 * data errors -> 400 invalid-api-params; 08xxx, 57P01-03, 53300 (server
 * unreachable or refusing work) -> 503 with Retry-After; anything else ->
 * 500 (logged). */
void pgjson_problem(http_resp *resp, const PGresult *r, const char *what);

/* 503 service-unavailable with Retry-After: the database cannot be reached
 * (pg_unavailable, pg.h). pgjson_query and pgjson_problem choose it
 * themselves; handlers that run statements another way call it when
 * pg_unavailable says so. */
void pgjson_unavailable(http_resp *resp, const char *what);

/* The SQLSTATE of a failed result ("" when none). */
const char *pgjson_sqlstate(const PGresult *r);

/* Run "BEGIN" / "COMMIT" answering 500 on failure (ROLLBACK is pg_rollback). */
bool pgjson_begin(PGconn *conn, http_resp *resp) TS_MUST_CHECK;
bool pgjson_commit(PGconn *conn, http_resp *resp) TS_MUST_CHECK;

/* ---- rows as JSON ------------------------------------------------------ */

/* Row `row` as an object keyed by column name, typed by column type OID:
 * bool -> true/false, int2/int4/int8 -> integer, float4/float8/numeric ->
 * real, json/jsonb -> the parsed value, timestamptz -> ISO-8601 text
 * ("2026-01-02T03:04:05.123456+00:00"), text[] -> array of strings, SQL NULL
 * -> null, anything else -> string. Use column aliases in SQL to name keys. */
json_t *pgjson_row_json(const PGresult *r, int row);
/* Every row, as an array of pgjson_row_json objects. */
json_t *pgjson_rows_json(const PGresult *r);
/* The value of one cell as JSON, by the same rules. */
json_t *pgjson_cell_json(const PGresult *r, int row, int col);
/* The string member key of obj, or "" when obj has none (missing, null, not
 * a string, obj not an object): for reading rows and building messages
 * whose strings are never NULL. */
const char *pgjson_str(const json_t *obj, const char *key);

/* ---- paging ------------------------------------------------------------ */

typedef struct pgjson_page {
    long long limit;  /* 1..1000, default 50 */
    long long offset; /* >= 0, default 0 */
    char limit_s[24]; /* the same as text, for query parameters */
    char offset_s[24];
} pgjson_page;

/* ?limit=&offset= from the query; false after a 400 problem when malformed
 * or out of range. */
bool pgjson_page_parse(http_req *req, http_resp *resp, pgjson_page *out) TS_MUST_CHECK;
/* {"items": items, "total": total, "limit": L, "offset": O}; steals items. */
json_t *pgjson_page_json(json_t *items, long long total, const pgjson_page *p);
/* One page of a list, answered: count_sql over the filters $1..$n gives the
 * total, page_sql takes the same filters and the page's limit and offset as
 * $n+1 and $n+2. Answers 200 with the pgjson_page_json envelope of page_sql's
 * rows, or the problem of the query that failed. n is at most 14. */
void pgjson_reply_page(PGconn *conn, http_resp *resp, const char *what, const char *count_sql,
                       const char *page_sql, int n, const char *const *filters,
                       const pgjson_page *p);

/* ---- JSON field validation -------------------------------------------- */

/* Reject keys of obj that are not in allowed (NULL-terminated): 400 naming
 * the first unknown key. */
bool pgjson_only_keys(json_t *obj, const char *const *allowed, http_resp *resp) TS_MUST_CHECK;

/* A string field of 'min'..'max' characters (UTF-8 code points; jansson has
 * already checked the encoding) without control characters. Absent or null:
 * *out = NULL, and a 400 when required. Otherwise *out points into obj. */
bool pgjson_field_str(json_t *obj, const char *key, bool required, size_t min, size_t max,
                      const char **out, http_resp *resp) TS_MUST_CHECK;
/* An integer field in [min, max] (JSON integers only, not strings). Absent or
 * null: *present = false (400 when required). */
bool pgjson_field_int(json_t *obj, const char *key, bool required, long long min, long long max,
                      long long *out, bool *present, http_resp *resp) TS_MUST_CHECK;
/* A boolean field. Absent or null: *present = false (400 when required). */
bool pgjson_field_bool(json_t *obj, const char *key, bool required, bool *out, bool *present,
                       http_resp *resp) TS_MUST_CHECK;
/* A string field that must be one of choices ("a|b|c"). */
bool pgjson_field_enum(json_t *obj, const char *key, bool required, const char *choices,
                       const char **out, http_resp *resp) TS_MUST_CHECK;
/* A UUID string field (canonical text form). */
bool pgjson_field_uuid(json_t *obj, const char *key, bool required, const char **out,
                       http_resp *resp) TS_MUST_CHECK;

/* Code points in a UTF-8 string (counts lead bytes). */
size_t pgjson_utf8_len(const char *s);

/* Run a query expected to return one row: that row as JSON, or NULL after a
 * problem answer (the query's error, or 404 not-found saying `missing`). */
json_t *pgjson_query_one(PGconn *conn, http_resp *resp, const char *what, const char *sql,
                         int n_params, const char *const *params, const char *missing);

/* Answer the single row of r as JSON with status, or 404 not-found with the
 * formatted message when r has no row; clears r. */
void pgjson_reply_one(http_resp *resp, PGresult *r, int status, const char *fmt, ...)
    TS_PRINTF(4, 5);

#endif
