/* listing.c: see listing.h. */
#include "listing.h"

#include "caller.h"
#include "libcommon/log.h"
#include "libcommon/pgjson.h"

#include <stdlib.h>

json_t *listing_row_json(const PGresult *r, int row)
{
    json_t *item = pgjson_row_json(r, row);
    json_object_del(item, "total");
    return item;
}

static void reply_rows(http_resp *resp, const PGresult *r, const pgjson_page *pg, const listing *l)
{
    listing_row_fn row = l->row ? l->row : listing_row_json;
    if (l->missing) {
        if (PQntuples(r) == 1)
            http_reply_json(resp, 200, row(r, 0));
        else
            http_problem(resp, 404, "not-found", NULL, "%s", l->missing);
        return;
    }
    long long total = PQntuples(r) ? atoll(PQgetvalue(r, 0, PQnfields(r) - 1)) : 0;
    json_t *items = json_array();
    for (int i = 0; i < PQntuples(r); i++)
        json_array_append_new(items, row(r, i));
    http_reply_json(resp, 200, pgjson_page_json(items, total, pg));
}

void listing_reply(svc *s, http_req *req, http_resp *resp, const listing *l)
{
    pgjson_page pg;
    if (!pgjson_page_parse(req, resp, &pg)) return;
    PGconn *conn = pgjson_get(s, resp);
    if (!conn) return;
    const char *p[TS_ARRAY_LEN(l->params) + 2];
    int n = 0;
    for (; n < l->n_params && n < (int)TS_ARRAY_LEN(l->params); n++)
        p[n] = l->params[n];
    p[n++] = pg.limit_s;
    p[n++] = pg.offset_s;
    PGresult *r = pgjson_query(conn, resp, l->what, l->sql, n, p);
    if (r) {
        reply_rows(resp, r, &pg, l);
        PQclear(r);
    }
    pgjson_put(s, conn);
}

void listing_reply_one(http_resp *resp, PGconn *conn, const listing_one *q, const char *key,
                       int status)
{
    const char *p[] = {key};
    PGresult *r = pgjson_query(conn, resp, q->what, q->sql, 1, p);
    if (r) pgjson_reply_one(resp, r, status, "%s %s", q->missing, key);
}

void listing_admin_get(svc *s, http_req *req, http_resp *resp, const char *what,
                       const listing_one *q, const char *param, bool everyone)
{
    ts_caller c;
    if (everyone ? !caller_get(req, resp, NULL, &c) : !caller_get_admin(req, resp, false, what, &c))
        return;
    const char *key = http_param(req, param);
    tlog_ctx_entity(q->entity, key);
    PGconn *conn = pgjson_get(s, resp);
    if (conn) listing_reply_one(resp, conn, q, key, 200);
    pgjson_put(s, conn);
    caller_free(&c);
}

void listing_admin_delete(svc *s, http_req *req, http_resp *resp, const char *what,
                          const listing_one *q, const char *param)
{
    ts_caller c;
    if (!caller_get_admin(req, resp, true, what, &c)) return;
    const char *p[] = {http_param(req, param)};
    tlog_ctx_entity(q->entity, p[0]);
    PGconn *conn = pgjson_get(s, resp);
    PGresult *r = conn ? pgjson_query(conn, resp, q->what, q->sql, 1, p) : NULL;
    if (r && atoi(PQcmdTuples(r)) == 1) {
        TLOG_INFO("deleted", "what=\"%s\" by=%s", what, c.access_key);
        http_reply_json(resp, 200, json_pack("{s:b}", "deleted", 1));
    } else if (r) {
        http_problem(resp, 404, "not-found", NULL, "%s %s", q->missing, p[0]);
    }
    PQclear(r);
    pgjson_put(s, conn);
    caller_free(&c);
}
