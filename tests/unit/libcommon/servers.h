/* servers.h: a real PostgreSQL and Redis for libcommon's unit tests
 * (test_pg.c, test_rds.c), started in a temporary directory on free ports by
 * a cmocka group set-up and stopped in its teardown, whatever failed. Tests
 * skip when the server binaries are not installed, and fail when they are
 * but the server does not come up. TESSERA_TEST_KEEP keeps the directory. */
#ifndef TESTS_UNIT_LIBCOMMON_SERVERS_H
#define TESTS_UNIT_LIBCOMMON_SERVERS_H

#include "libcommon/common.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <sys/types.h>

typedef struct test_servers {
    char dir[64];
    char log[128];
    char pgbin[128];
    bool pg_started;
    char pg_problem[256]; /* why PostgreSQL is not up, when its binaries exist */
    int pg_port;
    char dsn[256];
    pid_t redis_pid;
    char redis_problem[256];
    int redis_port;
    char redis_url[128];
    char redis_sock[128];
} test_servers;
extern test_servers T;

/* Start what is asked for (group set-up: 0, or -1 when no temp dir). */
int servers_setup(bool pg, bool redis);
/* Stop both and remove the directory (group teardown). */
int servers_teardown(void);
/* A free TCP port on 127.0.0.1, or -1. */
int free_port(void);
/* Run a PostgreSQL tool (pg_ctl, initdb) from the server's bin dir, as the
 * postgres user when root: its exit status, or -1. */
int run_pg_tool(const char *tool, const char *const *args);

#define NEED_PG()                                                                                  \
    do {                                                                                           \
        if (T.pg_problem[0]) fail_msg("PostgreSQL: %s", T.pg_problem);                             \
        if (!T.dsn[0]) skip();                                                                     \
    } while (0)
#define NEED_REDIS()                                                                               \
    do {                                                                                           \
        if (T.redis_problem[0]) fail_msg("Redis: %s", T.redis_problem);                            \
        if (T.redis_pid <= 0) skip();                                                              \
    } while (0)

#endif
