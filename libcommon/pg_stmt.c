/* pg_stmt.c: see pg_stmt.h. */
#include "libcommon/pg_stmt.h"

#include <libpq-events.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct stmt {
    uint64_t hash;
    char *sql;
} stmt;

typedef struct stmt_cache {
    stmt *s;
    int n;
} stmt_cache;

static void cache_clear(stmt_cache *c)
{
    for (int i = 0; i < c->n; i++)
        free(c->s[i].sql);
    c->n = 0;
}

static int _event(PGEventId id, void *info, void *pass)
{
    (void)pass;
    if (id == PGEVT_REGISTER) {
        stmt_cache *c = calloc(1, sizeof(*c));
        if (c) c->s = calloc(PG_STMT_CACHE_MAX, sizeof(*c->s));
        if (!c || !c->s) {
            free(c);
            return 0;
        }
        return PQsetInstanceData(((PGEventRegister *)info)->conn, _event, c);
    }
    if (id == PGEVT_CONNRESET) {
        /* A new server session: its named statements are gone. */
        stmt_cache *c = PQinstanceData(((PGEventConnReset *)info)->conn, _event);
        if (c) cache_clear(c);
    } else if (id == PGEVT_CONNDESTROY) {
        stmt_cache *c = PQinstanceData(((PGEventConnDestroy *)info)->conn, _event);
        if (c) {
            cache_clear(c);
            free(c->s);
            free(c);
        }
    }
    return 1;
}

bool pg_stmt_attach(PGconn *conn)
{
    return PQregisterEventProc(conn, _event, "tessera statement cache", NULL) != 0;
}

PGresult *pg_stmt_exec(PGconn *conn, const char *sql, int n, const char *const *params)
{
    stmt_cache *c = PQinstanceData(conn, _event);
    if (!c) return PQexecParams(conn, sql, n, NULL, params, NULL, NULL, 0);
    uint64_t h = ts_fnv1a(TS_FNV_OFFSET, sql, strlen(sql));
    int idx = -1;
    for (int i = 0; i < c->n && idx < 0; i++)
        if (c->s[i].hash == h && strcmp(c->s[i].sql, sql) == 0) idx = i;
    char name[16];
    if (idx < 0) {
        if (c->n >= PG_STMT_CACHE_MAX)
            return PQexecParams(conn, sql, n, NULL, params, NULL, NULL, 0);
        snprintf(name, sizeof(name), "ts%d", c->n);
        PGresult *p = PQprepare(conn, name, sql, n, NULL);
        if (PQresultStatus(p) != PGRES_COMMAND_OK) return p; /* e.g. a syntax error */
        PQclear(p);
        idx = c->n++;
        c->s[idx] = (stmt){h, ts_strdup(sql)};
    }
    snprintf(name, sizeof(name), "ts%d", idx);
    return PQexecPrepared(conn, name, n, params, NULL, NULL, 0);
}

bool pg_stmt_attached(const PGconn *conn)
{
    return PQinstanceData(conn, _event) != NULL;
}

int pg_stmt_count(const PGconn *conn)
{
    stmt_cache *c = PQinstanceData(conn, _event);
    return c ? c->n : 0;
}
