/* rds.h: Redis through hiredis: connect from a redis:// URL, reconnect after
 * errors, Lua scripts loaded once and run by SHA (EVALSHA, falling back to
 * loading again on NOSCRIPT, e.g. after a Redis restart). One rds per thread. */
#ifndef TESSERA_RDS_H
#define TESSERA_RDS_H

#include "libcommon/common.h"

#include <hiredis/hiredis.h>

typedef struct rds rds;

/* url: redis://[:password@]host:port[/db] or unix:///path/to/socket. */
rds *rds_connect(const char *url, int timeout_ms, ts_err *err);
void rds_free(rds *r);

/* Run a command (argv form, binary-safe). Reconnects once if the connection
 * was lost. NULL with err set on failure; an error *reply* is returned as a
 * reply of type REDIS_REPLY_ERROR. Free with freeReplyObject. */
redisReply *rds_command(rds *r, int argc, const char **argv, const size_t *argvlen, ts_err *err);
bool rds_ping(rds *r, ts_err *err) TS_MUST_CHECK;

typedef struct rds_script {
    const char *source;
    char sha[41]; /* filled by rds_script_load */
} rds_script;

bool rds_script_load(rds *r, rds_script *s, ts_err *err) TS_MUST_CHECK;
/* EVALSHA s with numkeys keys followed by args. */
redisReply *rds_eval(rds *r, rds_script *s, int numkeys, int argc, const char **argv,
                     const size_t *argvlen, ts_err *err);

/* An argument list for commands and scripts: borrowed strings (push) or
 * heap strings it frees (own). Start from {0}. */
typedef struct rds_args {
    const char **v;
    char **owned;
    size_t n, cap, nowned, capowned;
} rds_args;
void rds_args_push(rds_args *a, const char *s);
void rds_args_own(rds_args *a, char *s);
void rds_args_free(rds_args *a);

/* EVALSHA s with no keys and a's arguments; an error reply becomes NULL with
 * err set ("Redis script: ..."). */
redisReply *rds_eval_args(rds *r, rds_script *s, const rds_args *a, ts_err *err);

#endif
