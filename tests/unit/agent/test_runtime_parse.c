/* test_runtime_parse.c: the text the runtime parses while kernels start,
 * parsed on concurrent threads as the agent's kernel-start workers do: the
 * container's resolv.conf made from the host's (runtime_start.h) and the
 * last error in runc's JSON log (runtime_state.h). Each thread parses its
 * own text and must get its own answer: a parser that keeps hidden state
 * between calls (strtok) mixes two starts' lines or reads a freed buffer. */
#include "services/agent/runtime_start.h"
#include "services/agent/runtime_state.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define THREADS 8
#define RESOLV_ROUNDS 20000
#define RUNC_LOG_ROUNDS 1500

typedef struct worker {
    pthread_t thread;
    int idx;
    char log_path[300];
    int wrong; /* rounds whose answer was not this thread's */
    char first_wrong[512];
} worker;

static void test_resolv_conf_filters_loopback(void **state)
{
    (void)state;
    char host[] = "# written by systemd\nnameserver 127.0.0.53\n\nnameserver  10.1.2.3\n"
                  "nameserver ::1\nsearch corp.example\noptions edns0\n";
    char buf[4096];
    rts_resolv_conf(host, buf, sizeof(buf));
    assert_string_equal(buf, "# written by systemd\nnameserver  10.1.2.3\nsearch corp.example\n"
                             "options edns0\n");
    /* only loopback name servers, or no host file at all: public ones */
    char loop[] = "nameserver 127.0.0.1\nsearch x\n";
    rts_resolv_conf(loop, buf, sizeof(buf));
    assert_string_equal(buf, "search x\nnameserver 8.8.8.8\nnameserver 8.8.4.4\n");
    rts_resolv_conf(NULL, buf, sizeof(buf));
    assert_string_equal(buf, "nameserver 8.8.8.8\nnameserver 8.8.4.4\n");
}

static void *_resolv_worker(void *arg)
{
    worker *w = arg;
    char want[1024], host[1024], buf[4096];
    snprintf(want, sizeof(want),
             "# thread %d\nnameserver 10.0.%d.1\nnameserver 10.0.%d.2\nsearch t%d.example\n"
             "options ndots:%d\n",
             w->idx, w->idx, w->idx, w->idx, w->idx);
    for (int r = 0; r < RESOLV_ROUNDS; r++) {
        snprintf(host, sizeof(host),
                 "# thread %d\nnameserver 127.0.0.53\nnameserver 10.0.%d.1\nnameserver ::1\n"
                 "nameserver 10.0.%d.2\nsearch t%d.example\noptions ndots:%d\n",
                 w->idx, w->idx, w->idx, w->idx, w->idx);
        rts_resolv_conf(host, buf, sizeof(buf));
        if (strcmp(buf, want) != 0 && w->wrong++ == 0)
            snprintf(w->first_wrong, sizeof(w->first_wrong), "%s", buf);
    }
    return NULL;
}

static void *_runc_log_worker(void *arg)
{
    worker *w = arg;
    char want[64], buf[256];
    snprintf(want, sizeof(want), "thread %d: container_linux.go failed", w->idx);
    for (int r = 0; r < RUNC_LOG_ROUNDS; r++) {
        rts_runc_log_error(w->log_path, buf, sizeof(buf));
        if (strcmp(buf, want) != 0 && w->wrong++ == 0)
            snprintf(w->first_wrong, sizeof(w->first_wrong), "%s", buf);
    }
    return NULL;
}

static void _run_workers(worker *w, void *(*fn)(void *))
{
    for (int i = 0; i < THREADS; i++)
        assert_int_equal(pthread_create(&w[i].thread, NULL, fn, &w[i]), 0);
    for (int i = 0; i < THREADS; i++)
        assert_int_equal(pthread_join(w[i].thread, NULL), 0);
    for (int i = 0; i < THREADS; i++) {
        if (w[i].wrong)
            print_error("thread %d: %d wrong answers, the first:\n%s\n", i, w[i].wrong,
                        w[i].first_wrong);
        assert_int_equal(w[i].wrong, 0);
    }
}

static void test_resolv_conf_concurrent(void **state)
{
    (void)state;
    worker w[THREADS] = {0};
    for (int i = 0; i < THREADS; i++)
        w[i].idx = i;
    _run_workers(w, _resolv_worker);
}

static void test_runc_log_error_concurrent(void **state)
{
    (void)state;
    char dir[] = "/tmp/tessera-runc-log-XXXXXX";
    assert_non_null(mkdtemp(dir));
    worker w[THREADS] = {0};
    for (int i = 0; i < THREADS; i++) {
        w[i].idx = i;
        snprintf(w[i].log_path, sizeof(w[i].log_path), "%s/runc-%d.log", dir, i);
        FILE *f = fopen(w[i].log_path, "w");
        assert_non_null(f);
        fprintf(f, "{\"level\":\"info\",\"msg\":\"thread %d: starting\"}\n", i);
        fprintf(f, "{\"level\":\"warning\",\"msg\":\"thread %d: cgroup v1\"}\n", i);
        fprintf(f, "{\"level\":\"error\",\"msg\":\"thread %d: container_linux.go failed\"}\n", i);
        fprintf(f, "{\"level\":\"info\",\"msg\":\"thread %d: cleaned up\"}\n", i);
        fprintf(f, "not json at all %d\n", i);
        assert_int_equal(fclose(f), 0);
    }
    _run_workers(w, _runc_log_worker);
    for (int i = 0; i < THREADS; i++)
        unlink(w[i].log_path);
    rmdir(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_resolv_conf_filters_loopback),
        cmocka_unit_test(test_resolv_conf_concurrent),
        cmocka_unit_test(test_runc_log_error_concurrent),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
