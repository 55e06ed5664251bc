/* pgjson.c: connections, queries, rows as JSON, paging and field checks for
 * HTTP handlers on PostgreSQL (see pgjson.h). */
#include "libcommon/pgjson.h"

#include "libcommon/pg.h"

#include "libcommon/deps.h"

#include "libcommon/log.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Type OIDs (pg_type.h; stable across PostgreSQL versions). */
enum {
    OID_BOOL = 16,
    OID_INT8 = 20,
    OID_INT2 = 21,
    OID_INT4 = 23,
    OID_JSON = 114,
    OID_FLOAT4 = 700,
    OID_FLOAT8 = 701,
    OID_TEXT_ARRAY = 1009,
    OID_TIMESTAMPTZ = 1184,
    OID_NUMERIC = 1700,
    OID_JSONB = 3802,
};

/* ---- connections ------------------------------------------------------- */

PGconn *pgjson_get(svc *s, http_resp *resp)
{
    pg_pool *pool = svc_pg(s);
    if (!pool) {
        http_problem(resp, 503, "service-unavailable", NULL, "the database is not connected yet");
        return NULL;
    }
    ts_err err = {{0}};
    PGconn *conn = pg_pool_get(pool, 5000, &err);
    if (!conn) {
        TLOG_WARN("no database connection", "error=\"%s\"", err.msg);
        pgjson_unavailable(resp, "database busy or unreachable");
    }
    return conn;
}

void pgjson_put(svc *s, PGconn *conn)
{
    if (conn) pg_pool_put(svc_pg(s), conn);
}

/* ---- queries ----------------------------------------------------------- */

const char *pgjson_sqlstate(const PGresult *r)
{
    const char *st = r ? PQresultErrorField(r, PG_DIAG_SQLSTATE) : NULL;
    return st ? st : "";
}

void pgjson_unavailable(http_resp *resp, const char *what)
{
    http_problem(resp, 503, "service-unavailable", NULL,
                 "%s: the database is unreachable; try again shortly", what);
    char secs[16];
    snprintf(secs, sizeof(secs), "%d", DEPS_RETRY_AFTER_S);
    http_set_header(resp, "Retry-After", secs);
}

void pgjson_problem(http_resp *resp, const PGresult *r, const char *what)
{
    const char *st = pgjson_sqlstate(r);
    const char *constraint = r ? PQresultErrorField(r, PG_DIAG_CONSTRAINT_NAME) : NULL;
    if (!constraint) constraint = "";
    if (strncmp(st, "08", 2) == 0 || strncmp(st, "57P0", 4) == 0 || strcmp(st, "53300") == 0) {
        pgjson_unavailable(resp, what);
    } else if (strcmp(st, "23505") == 0) {
        http_problem(resp, 409, "already-exists", NULL, "%s: already exists (%s)", what,
                     constraint);
    } else if (strcmp(st, "23503") == 0) {
        http_problem(resp, 400, "invalid-api-params", NULL,
                     "%s: a referenced object does not exist or is still in use (%s)", what,
                     constraint);
    } else if (strcmp(st, "23514") == 0 || strcmp(st, "23502") == 0) {
        http_problem(resp, 400, "invalid-api-params", NULL, "%s: a value is out of range (%s)",
                     what, constraint);
    } else if (st[0] == '2' && st[1] == '2') {
        http_problem(resp, 400, "invalid-api-params", NULL, "%s: invalid value", what);
    } else {
        char q[600];
        TLOG_ERROR("database error", "what=\"%s\" sqlstate=%s error=%s", what, st,
                   tlog_quote(q, sizeof(q), r ? PQresultErrorMessage(r) : "no result"));
        http_problem(resp, 500, "internal-server-error", NULL, "%s: database error", what);
    }
}

PGresult *pgjson_query(PGconn *conn, http_resp *resp, const char *what, const char *sql,
                       int n_params, const char *const *params)
{
    PGresult *r = pg_exec_cached(conn, sql, n_params, params);
    ExecStatusType st = PQresultStatus(r);
    if (st == PGRES_TUPLES_OK || st == PGRES_COMMAND_OK) return r;
    if (resp && pg_unavailable(conn, r))
        pgjson_unavailable(resp, what);
    else if (resp)
        pgjson_problem(resp, r, what);
    PQclear(r);
    return NULL;
}

static bool simple(PGconn *conn, http_resp *resp, const char *sql)
{
    PGresult *r = pgjson_query(conn, resp, sql, sql, 0, NULL);
    if (!r) return false;
    PQclear(r);
    return true;
}

bool pgjson_begin(PGconn *conn, http_resp *resp)
{
    return simple(conn, resp, "BEGIN");
}

bool pgjson_commit(PGconn *conn, http_resp *resp)
{
    if (simple(conn, resp, "COMMIT")) return true;
    pg_rollback(conn);
    return false;
}

/* ---- rows as JSON ------------------------------------------------------ */

/* "2026-01-02 03:04:05.123+00" -> "2026-01-02T03:04:05.123+00:00" */
static json_t *timestamp_json(const char *v)
{
    char buf[64];
    size_t n = ts_strlcpy(buf, v, sizeof(buf) - 4);
    if (n >= sizeof(buf) - 4) return json_string(v);
    char *sp = strchr(buf, ' ');
    if (sp) *sp = 'T';
    /* A zone offset of only hours gets its minutes. */
    char *sign = strrchr(buf, '+');
    if (!sign) {
        char *t = strchr(buf, 'T');
        sign = t ? strrchr(t, '-') : NULL;
    }
    if (sign && strlen(sign) == 3) strcat(buf, ":00");
    return json_string(buf);
}

/* A PostgreSQL text[] literal: {a,"b c",NULL} -> ["a", "b c", null]. */
static json_t *text_array_json(const char *v)
{
    json_t *arr = json_array();
    if (*v != '{') return arr;
    const char *p = v + 1;
    char *buf = ts_malloc(strlen(v) + 1);
    while (*p && *p != '}') {
        size_t n = 0;
        bool quoted = false;
        if (*p == '"') {
            quoted = true;
            p++;
            while (*p && *p != '"') {
                if (*p == '\\' && p[1]) p++;
                buf[n++] = *p++;
            }
            if (*p == '"') p++;
        } else {
            while (*p && *p != ',' && *p != '}')
                buf[n++] = *p++;
        }
        buf[n] = '\0';
        if (!quoted && strcmp(buf, "NULL") == 0)
            json_array_append_new(arr, json_null());
        else
            json_array_append_new(arr, json_string(buf));
        if (*p == ',') p++;
    }
    free(buf);
    return arr;
}

const char *pgjson_str(const json_t *obj, const char *key)
{
    const char *v = json_string_value(json_object_get(obj, key));
    return v ? v : "";
}

json_t *pgjson_cell_json(const PGresult *r, int row, int col)
{
    if (PQgetisnull(r, row, col)) return json_null();
    const char *v = PQgetvalue(r, row, col);
    switch (PQftype(r, col)) {
    case OID_BOOL:
        return json_boolean(v[0] == 't');
    case OID_INT2:
    case OID_INT4:
    case OID_INT8:
        return json_integer(strtoll(v, NULL, 10));
    case OID_FLOAT4:
    case OID_FLOAT8:
    case OID_NUMERIC:
        return json_real(strtod(v, NULL));
    case OID_JSON:
    case OID_JSONB: {
        json_t *j = json_loads(v, JSON_DECODE_ANY, NULL);
        return j ? j : json_string(v);
    }
    case OID_TIMESTAMPTZ:
        return timestamp_json(v);
    case OID_TEXT_ARRAY:
        return text_array_json(v);
    default:
        return json_string(v);
    }
}

json_t *pgjson_row_json(const PGresult *r, int row)
{
    json_t *o = json_object();
    int nf = PQnfields(r);
    for (int c = 0; c < nf; c++)
        json_object_set_new(o, PQfname(r, c), pgjson_cell_json(r, row, c));
    return o;
}

json_t *pgjson_rows_json(const PGresult *r)
{
    json_t *a = json_array();
    int n = PQntuples(r);
    for (int i = 0; i < n; i++)
        json_array_append_new(a, pgjson_row_json(r, i));
    return a;
}

/* ---- paging ------------------------------------------------------------ */

static bool parse_ll(const char *s, long long *out)
{
    if (!s || !*s) return false;
    for (const char *p = s; *p; p++)
        if (*p < '0' || *p > '9') return false;
    errno = 0;
    char *end;
    long long v = strtoll(s, &end, 10);
    if (errno || *end) return false;
    *out = v;
    return true;
}

bool pgjson_page_parse(http_req *req, http_resp *resp, pgjson_page *out)
{
    out->limit = 50;
    out->offset = 0;
    const char *l = http_query_arg(req, "limit");
    const char *o = http_query_arg(req, "offset");
    if (l && (!parse_ll(l, &out->limit) || out->limit < 1 || out->limit > 1000)) {
        http_problem(resp, 400, "invalid-api-params", NULL, "limit must be an integer 1..1000");
        return false;
    }
    if (o && (!parse_ll(o, &out->offset) || out->offset > 1000000000LL)) {
        http_problem(resp, 400, "invalid-api-params", NULL,
                     "offset must be a non-negative integer");
        return false;
    }
    snprintf(out->limit_s, sizeof(out->limit_s), "%lld", out->limit);
    snprintf(out->offset_s, sizeof(out->offset_s), "%lld", out->offset);
    return true;
}

json_t *pgjson_page_json(json_t *items, long long total, const pgjson_page *p)
{
    return json_pack("{s:o, s:I, s:I, s:I}", "items", items, "total", (json_int_t)total, "limit",
                     (json_int_t)p->limit, "offset", (json_int_t)p->offset);
}

void pgjson_reply_page(PGconn *conn, http_resp *resp, const char *what, const char *count_sql,
                       const char *page_sql, int n, const char *const *filters,
                       const pgjson_page *p)
{
    const char *params[16];
    if (n < 0 || n > 14) ts_panic("pgjson_reply_page: %d filters (at most 14)", n);
    for (int i = 0; i < n; i++)
        params[i] = filters[i];
    params[n] = p->limit_s;
    params[n + 1] = p->offset_s;
    PGresult *count = pgjson_query(conn, resp, what, count_sql, n, params);
    if (!count) return;
    long long total = atoll(PQgetvalue(count, 0, 0));
    PQclear(count);
    PGresult *r = pgjson_query(conn, resp, what, page_sql, n + 2, params);
    if (!r) return;
    http_reply_json(resp, 200, pgjson_page_json(pgjson_rows_json(r), total, p));
    PQclear(r);
}

/* ---- JSON field validation -------------------------------------------- */

size_t pgjson_utf8_len(const char *s)
{
    size_t n = 0;
    for (; *s; s++)
        if (((unsigned char)*s & 0xC0) != 0x80) n++;
    return n;
}

bool pgjson_only_keys(json_t *obj, const char *const *allowed, http_resp *resp)
{
    const char *key;
    json_t *v;
    json_object_foreach(obj, key, v)
    {
        bool ok = false;
        for (const char *const *a = allowed; *a; a++)
            if (strcmp(*a, key) == 0) ok = true;
        if (!ok) {
            char q[80];
            ts_strlcpy(q, key, sizeof(q));
            http_problem(resp, 400, "invalid-api-params", NULL, "unknown field \"%s\"", q);
            return false;
        }
    }
    return true;
}

static json_t *field(json_t *obj, const char *key, bool required, http_resp *resp, bool *ok)
{
    json_t *v = json_object_get(obj, key);
    *ok = true;
    if (!v || json_is_null(v)) {
        if (required) {
            http_problem(resp, 400, "invalid-api-params", NULL, "\"%s\" is required", key);
            *ok = false;
        }
        return NULL;
    }
    return v;
}

bool pgjson_field_str(json_t *obj, const char *key, bool required, size_t min, size_t max,
                      const char **out, http_resp *resp)
{
    bool ok;
    *out = NULL;
    json_t *v = field(obj, key, required, resp, &ok);
    if (!v) return ok;
    if (!json_is_string(v)) {
        http_problem(resp, 400, "invalid-api-params", NULL, "\"%s\" must be a string", key);
        return false;
    }
    const char *s = json_string_value(v);
    if (strlen(s) != json_string_length(v)) {
        http_problem(resp, 400, "invalid-api-params", NULL, "\"%s\" must not contain NUL", key);
        return false;
    }
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p < 0x20 || *p == 0x7f) {
            http_problem(resp, 400, "invalid-api-params", NULL,
                         "\"%s\" must not contain control characters", key);
            return false;
        }
    }
    size_t n = pgjson_utf8_len(s);
    if (n < min || n > max) {
        http_problem(resp, 400, "invalid-api-params", NULL,
                     "\"%s\" must be %zu to %zu characters long (got %zu)", key, min, max, n);
        return false;
    }
    *out = s;
    return true;
}

bool pgjson_field_int(json_t *obj, const char *key, bool required, long long min, long long max,
                      long long *out, bool *present, http_resp *resp)
{
    bool ok;
    *present = false;
    json_t *v = field(obj, key, required, resp, &ok);
    if (!v) return ok;
    if (!json_is_integer(v) || json_integer_value(v) < min || json_integer_value(v) > max) {
        http_problem(resp, 400, "invalid-api-params", NULL, "\"%s\" must be an integer %lld..%lld",
                     key, min, max);
        return false;
    }
    *out = json_integer_value(v);
    *present = true;
    return true;
}

bool pgjson_field_bool(json_t *obj, const char *key, bool required, bool *out, bool *present,
                       http_resp *resp)
{
    bool ok;
    *present = false;
    json_t *v = field(obj, key, required, resp, &ok);
    if (!v) return ok;
    if (!json_is_boolean(v)) {
        http_problem(resp, 400, "invalid-api-params", NULL, "\"%s\" must be true or false", key);
        return false;
    }
    *out = json_is_true(v);
    *present = true;
    return true;
}

bool pgjson_field_enum(json_t *obj, const char *key, bool required, const char *choices,
                       const char **out, http_resp *resp)
{
    if (!pgjson_field_str(obj, key, required, 1, 64, out, resp)) return false;
    if (!*out) return true;
    size_t n = strlen(*out);
    for (const char *p = choices; *p;) {
        size_t len = strcspn(p, "|");
        if (len == n && strncmp(p, *out, n) == 0) return true;
        p += len;
        if (*p == '|') p++;
    }
    http_problem(resp, 400, "invalid-api-params", NULL, "\"%s\" must be one of %s", key, choices);
    *out = NULL;
    return false;
}

bool pgjson_field_uuid(json_t *obj, const char *key, bool required, const char **out,
                       http_resp *resp)
{
    if (!pgjson_field_str(obj, key, required, 36, 36, out, resp)) {
        if (json_is_string(json_object_get(obj, key)))
            http_problem(resp, 400, "invalid-api-params", NULL, "\"%s\" must be a UUID", key);
        return false;
    }
    if (*out && !ts_uuid_valid(*out)) {
        http_problem(resp, 400, "invalid-api-params", NULL, "\"%s\" must be a UUID", key);
        *out = NULL;
        return false;
    }
    return true;
}

void pgjson_reply_one(http_resp *resp, PGresult *r, int status, const char *fmt, ...)
{
    if (PQntuples(r) == 1) {
        http_reply_json(resp, status, pgjson_row_json(r, 0));
    } else {
        char msg[512];
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(msg, sizeof(msg), fmt, ap);
        va_end(ap);
        http_problem(resp, 404, "not-found", NULL, "%s", msg);
    }
    PQclear(r);
}

json_t *pgjson_query_one(PGconn *conn, http_resp *resp, const char *what, const char *sql,
                         int n_params, const char *const *params, const char *missing)
{
    PGresult *r = pgjson_query(conn, resp, what, sql, n_params, params);
    if (!r) return NULL;
    json_t *row = PQntuples(r) == 1 ? pgjson_row_json(r, 0) : NULL;
    PQclear(r);
    if (!row) http_problem(resp, 404, "not-found", NULL, "%s", missing);
    return row;
}
