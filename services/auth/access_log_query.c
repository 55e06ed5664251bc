/* access_log_query.c: GET /v1/admin/access-log (see access_log_query.h). */
#include "access_log_query.h"

#include "admin.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The caller's scope: $8 a domain (a domain admin's: its users but
 * superadmins), $9 a user id (a user's own records), both NULL for a
 * superadmin. The scope's user ids and their access keys, each computed once
 * per query. */
#define SCOPE_USERS                                                                                \
    "ARRAY(SELECT u.id::text FROM auth.users u WHERE (u.domain_name = $8"                          \
    " AND u.role <> 'superadmin') OR u.id = $9::uuid)"
#define SCOPE_KEYS                                                                                 \
    "ARRAY(SELECT k.access_key FROM auth.keypairs k JOIN auth.users u ON u.id = k.user_id"         \
    " WHERE (u.domain_name = $8 AND u.role <> 'superadmin') OR u.id = $9::uuid)"
#define UNSCOPED "($8::text IS NULL AND $9::text IS NULL)"

/* Filters $1..$7 (NULL: any) and the scope. The view auth.access_log
 * unnests auth.access_blocks; the conditions on its block_* columns skip
 * whole blocks (by time range, and the access keys and user ids they hold)
 * before their records are read. */
#define FILTER                                                                                     \
    " FROM auth.access_log a WHERE ($1::text IS NULL OR a.access_key = $1)"                        \
    " AND ($1::text IS NULL OR $1 = ANY(a.block_access_keys))"                                     \
    " AND ($2::text IS NULL OR a.user_id = $2)"                                                    \
    " AND ($2::text IS NULL OR $2 = ANY(a.block_user_ids))"                                        \
    " AND ($6::timestamptz IS NULL OR a.block_last_at >= $6::timestamptz)"                         \
    " AND ($7::timestamptz IS NULL OR a.block_first_at < $7::timestamptz)"                         \
    " AND (" UNSCOPED " OR a.block_user_ids && " SCOPE_USERS                                       \
    "   OR a.block_access_keys && " SCOPE_KEYS ")"                                                 \
    " AND ($3::text IS NULL OR a.method = $3)"                                                     \
    " AND ($4::text IS NULL OR starts_with(a.path, $4))"                                           \
    " AND ($5::int IS NULL OR a.status = $5::int)"                                                 \
    " AND ($6::timestamptz IS NULL OR a.occurred_at >= $6::timestamptz)"                           \
    " AND ($7::timestamptz IS NULL OR a.occurred_at < $7::timestamptz)"                            \
    " AND (" UNSCOPED " OR a.user_id = ANY(" SCOPE_USERS ")"                                       \
    "   OR a.access_key = ANY(" SCOPE_KEYS "))"

#define COLUMNS                                                                                    \
    "SELECT a.event_id, a.occurred_at, a.access_key, a.user_id, a.client_addr, a.method, a.path,"  \
    " a.status, a.latency_us, a.request_id"
#define ORDER " ORDER BY a.occurred_at DESC, a.event_id DESC"

static const char count_sql[] = "SELECT count(*)" FILTER;
static const char page_sql[] = COLUMNS FILTER ORDER " LIMIT $10::bigint OFFSET $11::bigint";

/* A superadmin's query with no filter but one access key or one user id
 * (or none: the admin's first look) is answered from the blocks' summaries:
 * how many records of a block match is records, key_counts[] or
 * user_counts[] (MATCHED), and a block holding none is skipped (IN_BLOCK).
 * The total is their sum. For the page, take matching blocks newest last_at
 * first until they hold K = limit + offset matching records (each matching
 * block holds at least one, so the K newest are enough); m, the earliest
 * first_at among them, is then at most the time of the K-th newest matching
 * record, so every record of the page is in a block with last_at >= m (ties
 * included), and only those blocks are read. $1 the access key, $2 the user
 * id (NULL: any; not both), $3 limit, $4 offset. */
#define MATCHED                                                                                    \
    "CASE WHEN $1::text IS NOT NULL THEN key_counts[array_position(keys_seen, $1)]"                \
    " WHEN $2::text IS NOT NULL THEN user_counts[array_position(users_seen, $2)]"                  \
    " ELSE records END"
#define IN_BLOCK                                                                                   \
    "($1::text IS NULL OR $1 = ANY(keys_seen)) AND ($2::text IS NULL OR $2 = ANY(users_seen))"
#define NEWEST_BOUND                                                                               \
    "(SELECT coalesce(min(first_at), '-infinity') FROM (SELECT first_at,"                          \
    " sum(n) OVER (ORDER BY last_at DESC ROWS UNBOUNDED PRECEDING) - n AS before"                  \
    " FROM (SELECT first_at, last_at, " MATCHED " AS n FROM auth.access_blocks WHERE " IN_BLOCK    \
    " ORDER BY last_at DESC LIMIT $3::bigint + $4::bigint) newest) t"                              \
    " WHERE before < $3::bigint + $4::bigint)"
static const char summed_count_sql[] =
    "SELECT coalesce(sum(" MATCHED "), 0) FROM auth.access_blocks WHERE " IN_BLOCK;
static const char summed_page_sql[] =
    COLUMNS " FROM auth.access_log a WHERE ($1::text IS NULL OR a.access_key = $1)"
            " AND ($1::text IS NULL OR $1 = ANY(a.block_access_keys))"
            " AND ($2::text IS NULL OR a.user_id = $2)"
            " AND ($2::text IS NULL OR $2 = ANY(a.block_user_ids))"
            " AND a.block_last_at >= " NEWEST_BOUND ORDER " LIMIT $3::bigint OFFSET $4::bigint";

/* ---- times ----------------------------------------------------------------- */

static bool digits(const char *p, int n)
{
    for (int i = 0; i < n; i++)
        if (!isdigit((unsigned char)p[i])) return false;
    return true;
}

static int num(const char *p, int n)
{
    int v = 0;
    for (int i = 0; i < n; i++)
        v = v * 10 + (p[i] - '0');
    return v;
}

bool access_log_query_time(const char *in, char *out, size_t size)
{
    const char *p = in;
    /* YYYY-MM-DD */
    if (!digits(p, 4) || p[4] != '-' || !digits(p + 5, 2) || p[7] != '-' || !digits(p + 8, 2))
        return false;
    int month = num(p + 5, 2), day = num(p + 8, 2);
    if (month < 1 || month > 12 || day < 1 || day > 31) return false;
    p += 10;
    if (!*p) return snprintf(out, size, "%sT00:00:00+00:00", in) < (int)size;
    /* [T ]HH:MM[:SS[.fraction]] */
    if ((*p != 'T' && *p != 't' && *p != ' ') || !digits(p + 1, 2) || p[3] != ':' ||
        !digits(p + 4, 2))
        return false;
    if (num(p + 1, 2) > 23 || num(p + 4, 2) > 59) return false;
    p += 6;
    if (*p == ':') {
        if (!digits(p + 1, 2) || num(p + 1, 2) > 60) return false;
        p += 3;
        if (*p == '.') {
            size_t nf = strspn(p + 1, "0123456789");
            if (nf < 1 || nf > 9) return false;
            p += 1 + nf;
        }
    }
    size_t time_len = (size_t)(p - in);
    /* Z, or +hh:mm / -hh:mm / +hhmm / +hh ('+' may arrive as ' ' from a query). */
    char zone[8] = "+00:00";
    if (*p == 'Z' || *p == 'z') {
        p++;
    } else if (*p == '+' || *p == '-' || *p == ' ') {
        if (!digits(p + 1, 2)) return false;
        int hh = num(p + 1, 2), mm = 0;
        const char *q = p + 3;
        if (*q == ':') q++;
        if (digits(q, 2)) {
            mm = num(q, 2);
            q += 2;
        } else if (q != p + 3) {
            return false;
        }
        if (hh > 23 || mm > 59) return false;
        snprintf(zone, sizeof(zone), "%c%02d:%02d", *p == '-' ? '-' : '+', hh, mm);
        p = q;
    }
    if (*p) return false;
    int n = snprintf(out, size, "%.10sT%.*s%s", in, (int)(time_len - 11), in + 11, zone);
    return n > 0 && (size_t)n < size;
}

/* ---- the query --------------------------------------------------------------- */

static bool printable_ascii(const char *s, size_t min, size_t max)
{
    size_t n = strlen(s);
    if (n < min || n > max) return false;
    for (const char *p = s; *p; p++)
        if (*p <= 0x20 || *p >= 0x7f) return false;
    return true;
}

/* The query's filters as $1..$7; false after a 400. */
typedef struct log_filters {
    const char *v[7];
    char method[17], since[64], until[64], status[8], user_id[TS_UUID_STRLEN];
} log_filters;

static bool parse_filters(http_req *req, log_filters *f, http_resp *resp)
{
    static const char *const names[] = {"access_key", "user_id", "method", "path_prefix",
                                        "status",     "since",   "until"};
    for (int i = 0; i < 7; i++) {
        const char *v = http_query_arg(req, names[i]);
        f->v[i] = v && *v ? v : NULL;
    }
    const char *why = NULL;
    if (f->v[0] && !printable_ascii(f->v[0], 1, 64))
        why = "access_key must be 1 to 64 printable ASCII characters";
    if (f->v[1] && !ts_uuid_valid(f->v[1])) why = "user_id must be a UUID";
    if (f->v[1] && !why) {
        ts_strlcpy(f->user_id, f->v[1], sizeof(f->user_id));
        for (char *p = f->user_id; *p; p++)
            *p = (char)tolower((unsigned char)*p);
        f->v[1] = f->user_id;
    }
    if (f->v[2]) {
        size_t n = strlen(f->v[2]);
        bool ok = n >= 1 && n < sizeof(f->method);
        for (size_t i = 0; ok && i < n; i++) {
            ok = isalpha((unsigned char)f->v[2][i]);
            f->method[i] = (char)toupper((unsigned char)f->v[2][i]);
        }
        f->method[ok ? n : 0] = '\0';
        if (!ok) why = "method must be 1 to 16 letters";
        f->v[2] = f->method;
    }
    if (f->v[3]) {
        json_t *utf8 = json_string(f->v[3]); /* NULL for invalid UTF-8 */
        if (f->v[3][0] != '/' || strlen(f->v[3]) > 1024 || !utf8)
            why = "path_prefix must start with '/' and be up to 1024 bytes of UTF-8";
        json_decref(utf8);
    }
    if (f->v[4]) {
        bool ok = strlen(f->v[4]) == 3 && isdigit((unsigned char)f->v[4][0]) &&
                  isdigit((unsigned char)f->v[4][1]) && isdigit((unsigned char)f->v[4][2]);
        int st = ok ? atoi(f->v[4]) : 0;
        if (st < 100 || st > 599) why = "status must be an HTTP status (100..599)";
        snprintf(f->status, sizeof(f->status), "%d", st);
        f->v[4] = f->status;
    }
    if (f->v[5] && !access_log_query_time(f->v[5], f->since, sizeof(f->since)))
        why = "since must be an ISO-8601 time";
    else if (f->v[5])
        f->v[5] = f->since;
    if (f->v[6] && !access_log_query_time(f->v[6], f->until, sizeof(f->until)))
        why = "until must be an ISO-8601 time";
    else if (f->v[6])
        f->v[6] = f->until;
    if (why) http_problem(resp, 400, "invalid-api-params", NULL, "%s", why);
    return why == NULL;
}

static void h_query(http_req *req, http_resp *resp, void *ctx)
{
    pgjson_page pg;
    log_filters f = {{0}};
    admin_req a;
    if (!pgjson_page_parse(req, resp, &pg) || !parse_filters(req, &f, resp) ||
        !admin_begin(&a, ctx, req, resp, REQ_ANY, NULL))
        return;
    bool super = caller_is_superadmin(&a.c), admin = caller_is_admin(&a.c);
    const char *filters[] = {f.v[0],
                             f.v[1],
                             f.v[2],
                             f.v[3],
                             f.v[4],
                             f.v[5],
                             f.v[6],
                             super || !admin ? NULL : a.c.domain_name,
                             admin ? NULL : a.c.user_id};
    /* The blocks' summaries answer a superadmin's query by one key or user. */
    bool summed = super && !(f.v[0] && f.v[1]);
    for (int i = 2; i < 7; i++)
        summed = summed && !f.v[i];
    if (summed)
        admin_reply_page(&a, "query access log", summed_count_sql, summed_page_sql, 2, filters,
                         &pg);
    else
        admin_reply_page(&a, "query access log", count_sql, page_sql, 9, filters, &pg);
    admin_end(&a);
}

void access_log_query_routes(svc *s)
{
    http_route(svc_router(s), "GET", "/v1/admin/access-log", h_query, s);
}
