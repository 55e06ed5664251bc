/* db_util.h: tessera-auth's names for the shared handler helpers in
 * libcommon/pgjson.h (pooled connections with problem answers, queries whose
 * failures become problem JSON, rows as JSON, paging, JSON field checks).
 * The helpers moved there so that tessera-registry uses the same code; the
 * db_* names stay so auth's handlers read as before. See pgjson.h for the
 * contract of each. */
#ifndef AUTH_DB_UTIL_H
#define AUTH_DB_UTIL_H

#include "libcommon/pgjson.h"

typedef pgjson_page db_page;

static inline PGconn *db_get(svc *s, http_resp *resp)
{
    return pgjson_get(s, resp);
}
static inline void db_put(svc *s, PGconn *conn)
{
    pgjson_put(s, conn);
}
static inline PGresult *db_query(PGconn *conn, http_resp *resp, const char *what, const char *sql,
                                 int n_params, const char *const *params)
{
    return pgjson_query(conn, resp, what, sql, n_params, params);
}
static inline void db_problem(http_resp *resp, const PGresult *r, const char *what)
{
    pgjson_problem(resp, r, what);
}
static inline const char *db_sqlstate(const PGresult *r)
{
    return pgjson_sqlstate(r);
}
static inline TS_MUST_CHECK bool db_begin(PGconn *conn, http_resp *resp)
{
    return pgjson_begin(conn, resp);
}
static inline TS_MUST_CHECK bool db_commit(PGconn *conn, http_resp *resp)
{
    return pgjson_commit(conn, resp);
}
static inline json_t *db_row_json(const PGresult *r, int row)
{
    return pgjson_row_json(r, row);
}
static inline json_t *db_rows_json(const PGresult *r)
{
    return pgjson_rows_json(r);
}
static inline json_t *db_cell_json(const PGresult *r, int row, int col)
{
    return pgjson_cell_json(r, row, col);
}
static inline TS_MUST_CHECK bool db_page_parse(http_req *req, http_resp *resp, db_page *out)
{
    return pgjson_page_parse(req, resp, out);
}
static inline json_t *db_page_json(json_t *items, long long total, const db_page *p)
{
    return pgjson_page_json(items, total, p);
}
static inline TS_MUST_CHECK bool db_only_keys(json_t *obj, const char *const *allowed,
                                              http_resp *resp)
{
    return pgjson_only_keys(obj, allowed, resp);
}
static inline TS_MUST_CHECK bool db_field_str(json_t *obj, const char *key, bool required,
                                              size_t min, size_t max, const char **out,
                                              http_resp *resp)
{
    return pgjson_field_str(obj, key, required, min, max, out, resp);
}
static inline TS_MUST_CHECK bool db_field_int(json_t *obj, const char *key, bool required,
                                              long long min, long long max, long long *out,
                                              bool *present, http_resp *resp)
{
    return pgjson_field_int(obj, key, required, min, max, out, present, resp);
}
static inline TS_MUST_CHECK bool db_field_bool(json_t *obj, const char *key, bool required,
                                               bool *out, bool *present, http_resp *resp)
{
    return pgjson_field_bool(obj, key, required, out, present, resp);
}
static inline TS_MUST_CHECK bool db_field_enum(json_t *obj, const char *key, bool required,
                                               const char *choices, const char **out,
                                               http_resp *resp)
{
    return pgjson_field_enum(obj, key, required, choices, out, resp);
}
static inline TS_MUST_CHECK bool db_field_uuid(json_t *obj, const char *key, bool required,
                                               const char **out, http_resp *resp)
{
    return pgjson_field_uuid(obj, key, required, out, resp);
}
static inline size_t db_utf8_len(const char *s)
{
    return pgjson_utf8_len(s);
}

#endif
