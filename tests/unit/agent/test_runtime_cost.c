/* test_runtime_cost.c: what starting kernels costs on this host, printed
 * (sequential runs, p50/p90/max), as root with real runc:
 *   - runtime_start to RUNNING without ports, with a port through
 *     tessera-portmap and through Debian's portmap, destroy likewise, beside
 *     bare `runc run` of the same bundle;
 *   - the user namespace: bare `runc run` with and without one, the agent's
 *     namespace creation (user + network vs network only), runtime_start
 *     with agent.userns on and off;
 * and that namespaces made on several threads at once never hang. Skips
 * like test_runtime.c. */
#include "tests/unit/agent/kernel_fixture.h"

#include <jansson.h>
#include <pthread.h>
#include <signal.h>
#include <sys/wait.h>

#define BARE_CGROUP "tessera-bare-bench"

static kfix F = {.name = "test_runtime_cost",
                 .network = "tscost0",
                 .subnet = "10.213.79.0/24",
                 .port_start = 31140,
                 .port_end = 31159,
                 .log_cap = 64 * 1024};
static kf_pair P; /* P.rt: agent.userns = on, P.rt_off: off */
static const userns_map g_userns = {USERNS_DEFAULT_BASE, USERNS_DEFAULT_SIZE};

static int group_setup(void **state)
{
    (void)state;
    if (!kf_begin(&F, "/var/tmp/tessera-cost-XXXXXX", true)) return -1;
    if (F.skip) return 0;
    return kf_pair_make(&F, &P, &g_userns, NULL) ? 0 : -1;
}

static int group_teardown(void **state)
{
    (void)state;
    kf_pair_end(&F, &P);
    return 0;
}

#define SKIP_IF_UNAVAILABLE() KF_SKIP_IF_UNAVAILABLE(&F)

static kernel_spec base_spec(const char *id, const image_info *img)
{
    return kf_spec(id, img, "sess-cost", "k-cost");
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}

static void report(const char *what, int64_t *us, int n)
{
    qsort(us, (size_t)n, sizeof(us[0]), cmp_i64);
    fprintf(stderr, "  %-58s p50 %6.1f ms  p90 %6.1f ms  max %6.1f ms (n=%d)\n", what,
            us[n / 2] / 1000.0, us[(n * 9) / 10] / 1000.0, us[n - 1] / 1000.0, n);
}

/* A bare bundle for `runc run` from a kernel's config.json: args `true`, no
 * bind mounts, runc's own new namespaces (no paths); without the user
 * namespace when userns is false, on a copy of the matching layer. */
static void bare_bundle(const char *config, const char *dir, bool userns)
{
    assert_int_equal(sh("rm -rf %s && mkdir -p %s && cp -a %s %s/rootfs && mkdir -p "
                        "%s/rootfs/home/work",
                        dir, dir, userns ? P.shifted : P.plain, dir, dir),
                     0);
    json_t *cfg = json_load_file(config, 0, NULL);
    assert_non_null(cfg);
    json_object_set_new(json_object_get(cfg, "process"), "args", json_pack("[s]", "true"));
    json_t *keep = json_array();
    size_t i;
    json_t *m;
    json_array_foreach(json_object_get(cfg, "mounts"), i, m)
    {
        if (strcmp(json_string_value(json_object_get(m, "type")), "bind") != 0)
            json_array_append(keep, m);
    }
    json_object_set_new(cfg, "mounts", keep);
    json_t *linux_ = json_object_get(cfg, "linux");
    json_object_set_new(linux_, "cgroupsPath", json_string("/" BARE_CGROUP));
    json_t *ns = json_array();
    json_array_foreach(json_object_get(linux_, "namespaces"), i, m)
    {
        const char *type = json_string_value(json_object_get(m, "type"));
        if (!userns && strcmp(type, "user") == 0) continue;
        json_array_append_new(ns, json_pack("{s:s}", "type", type));
    }
    json_object_set_new(linux_, "namespaces", ns);
    if (!userns) {
        json_object_del(linux_, "uidMappings");
        json_object_del(linux_, "gidMappings");
    }
    char path[512];
    snprintf(path, sizeof(path), "%s/config.json", dir);
    assert_int_equal(json_dump_file(cfg, path, 0), 0);
    json_decref(cfg);
}

/* ---- start latency: runtime_start to RUNNING vs bare `runc run` --------------- */

/* One kernel started and destroyed on rt (with one service port when port
 * is not 0): the two times in *start_us and *destroy_us; the bundle's
 * config.json copied to a bare bundle in bare_dir when it is not NULL. */
static void timed_kernel(runtime *rt, int port, int64_t *start_us, int64_t *destroy_us,
                         const char *bare_dir)
{
    char id[TS_UUID_STRLEN];
    ts_uuid4(id);
    kernel_spec s = base_spec(id, &P.img);
    int ports[] = {port};
    if (port) {
        s.service_ports = ports;
        s.n_service_ports = 1;
    } else {
        s.cpu_cores = 1;
        s.mem_bytes = 256LL << 20;
    }
    kernel_status st;
    int64_t t0 = ts_now_mono_us();
    kf_start_ok(rt, &s, &st);
    *start_us = ts_now_mono_us() - t0;
    assert_int_equal(st.state, KERNEL_RUNNING);
    if (bare_dir) {
        char *src = kf_kpath(&F, id, "bundle/config.json");
        bare_bundle(src, bare_dir, true);
        free(src);
    }
    t0 = ts_now_mono_us();
    kf_destroy_ok(rt, id, 500);
    *destroy_us = ts_now_mono_us() - t0;
}

static void test_start_latency(void **state)
{
    (void)state;
    SKIP_IF_UNAVAILABLE();
    enum { N = 20 };
    int64_t start_us[N], destroy_us[N], start_port_us[N], destroy_port_us[N], start_deb_us[N],
        destroy_deb_us[N], bare_us[N];
    runtime_opts o = kf_opts(&F, &g_userns);
    o.cni_portmap = o.cni_bridge = NULL; /* Debian's bridge and portmap */
    runtime *deb = kf_runtime(&o);
    assert_non_null(deb);
    char bare_dir[400];
    snprintf(bare_dir, sizeof(bare_dir), "%s/bare", F.tmp);
    for (int i = 0; i < N; i++) {
        timed_kernel(P.rt, 0, &start_us[i], &destroy_us[i], i == 0 ? bare_dir : NULL);
        timed_kernel(P.rt, 8888, &start_port_us[i], &destroy_port_us[i], NULL);
        timed_kernel(deb, 8888, &start_deb_us[i], &destroy_deb_us[i], NULL);
    }
    runtime_free(deb);
    for (int i = 0; i < N; i++) {
        char cmd[1024];
        snprintf(cmd, sizeof(cmd), "%s run --bundle %s tessera-bare-%d >/dev/null 2>&1", KF_RUNC,
                 bare_dir, i);
        int64_t t0 = ts_now_mono_us();
        int rc = system(cmd);
        bare_us[i] = ts_now_mono_us() - t0;
        if (rc != 0) fail_msg("bare runc run failed (%d)", rc);
    }
    sh("rmdir /sys/fs/cgroup/*/" BARE_CGROUP " 2>/dev/null");
    fprintf(stderr, "start latency (this host, sequential):\n");
    report("runtime_start -> RUNNING (no ports)", start_us, N);
    report("runtime_start -> RUNNING (1 port, tessera-portmap)", start_port_us, N);
    report("runtime_start -> RUNNING (1 port, Debian portmap)", start_deb_us, N);
    report("runtime_destroy (no ports, grace 500 ms)", destroy_us, N);
    report("runtime_destroy (1 port, tessera-portmap)", destroy_port_us, N);
    report("runtime_destroy (1 port, Debian portmap)", destroy_deb_us, N);
    report("bare `runc run` (true, fresh netns)", bare_us, N);
    fprintf(stderr, "  ratio p50 start/bare: %.2fx\n",
            (double)start_us[N / 2] / (double)bare_us[N / 2]);
}

/* ---- the user namespace ---------------------------------------------------------- */

typedef struct ns_worker {
    int idx;
    int made;
    char error[256];
} ns_worker;

static void *ns_worker_main(void *arg)
{
    ns_worker *w = arg;
    for (int i = 0; i < 20; i++) {
        char up[400], np[96];
        snprintf(up, sizeof(up), "%s/userns-par-%d", F.tmp, w->idx);
        snprintf(np, sizeof(np), "/run/netns/tessera-privpar-%d-%d", (int)getpid(), w->idx);
        ts_err err = {{0}};
        if (!userns_ns_create(&g_userns, up, np, &err)) {
            snprintf(w->error, sizeof(w->error), "%s", err.msg);
            return NULL;
        }
        if (!cni_netns_delete(np, &err) || !userns_ns_delete(up, &err)) {
            snprintf(w->error, sizeof(w->error), "delete: %s", err.msg);
            return NULL;
        }
        w->made++;
    }
    return NULL;
}

/* Namespaces made on several threads at once (the agent starts kernels in
 * parallel): every child must end, none may keep another's pipe (both would
 * wait for ever). A watchdog turns a hang into a failure. */
static void test_userns_parallel_creates_do_not_hang(void **state)
{
    (void)state;
    SKIP_IF_UNAVAILABLE();
    enum { T = 6 };
    pid_t self = getpid();
    pid_t dog = fork();
    if (dog == 0) {
        sleep(60);
        kill(self, SIGABRT);
        _exit(0);
    }
    pthread_t th[T];
    ns_worker w[T];
    for (int i = 0; i < T; i++) {
        w[i] = (ns_worker){.idx = i};
        assert_int_equal(pthread_create(&th[i], NULL, ns_worker_main, &w[i]), 0);
    }
    for (int i = 0; i < T; i++)
        pthread_join(th[i], NULL);
    kill(dog, SIGKILL);
    waitpid(dog, NULL, 0);
    for (int i = 0; i < T; i++) {
        if (w[i].error[0]) fail_msg("worker %d: %s", i, w[i].error);
        assert_int_equal(w[i].made, 20);
    }
}

static void test_cost_of_the_user_namespace(void **state)
{
    (void)state;
    SKIP_IF_UNAVAILABLE();
    enum { N = 30, NS = 50, START = 10 };
    kernel_status st0;
    char id[TS_UUID_STRLEN];
    ts_uuid4(id);
    kernel_spec s = base_spec(id, &P.img);
    kf_start_ok(P.rt, &s, &st0);
    char *config = kf_kpath(&F, id, "bundle/config.json");
    char with[400], without[400];
    snprintf(with, sizeof(with), "%s/bare-userns", F.tmp);
    snprintf(without, sizeof(without), "%s/bare-plain", F.tmp);
    bare_bundle(config, with, true);
    bare_bundle(config, without, false);
    free(config);
    kf_destroy_ok(P.rt, id, 200);
    int64_t u[N], p[N], nsu[NS], nsp[NS], su[START], so[START];
    for (int i = 0; i < N; i++) {
        const char *dirs[] = {with, without};
        int64_t *dst[] = {u, p};
        for (int k = 0; k < 2; k++) {
            char cmd[1024];
            snprintf(cmd, sizeof(cmd), "%s run --bundle %s tessera-priv-bare-%d-%d >/dev/null 2>&1",
                     KF_RUNC, dirs[k], k, i);
            int64_t t0 = ts_now_mono_us();
            int rc = system(cmd);
            dst[k][i] = ts_now_mono_us() - t0;
            if (rc != 0) fail_msg("bare runc run (%s) failed: %d", dirs[k], rc);
        }
    }
    sh("rmdir /sys/fs/cgroup/*/" BARE_CGROUP " 2>/dev/null");
    /* what the agent adds per kernel: user + network namespace vs network only */
    for (int i = 0; i < NS; i++) {
        char up[400], np[64];
        snprintf(up, sizeof(up), "%s/userns-probe", F.tmp);
        snprintf(np, sizeof(np), "/run/netns/tessera-privbench-%d", (int)getpid());
        ts_err err = {{0}};
        int64_t t0 = ts_now_mono_us();
        if (!userns_ns_create(&g_userns, up, np, &err)) fail_msg("%s", err.msg);
        nsu[i] = ts_now_mono_us() - t0;
        assert_true(cni_netns_delete(np, &err) && userns_ns_delete(up, &err));
        t0 = ts_now_mono_us();
        if (!cni_netns_create(np, &err)) fail_msg("%s", err.msg);
        nsp[i] = ts_now_mono_us() - t0;
        assert_true(cni_netns_delete(np, &err));
    }
    for (int i = 0; i < START; i++) {
        runtime *rts[] = {P.rt, P.rt_off};
        const image_info *imgs[] = {&P.img, &P.img_off};
        int64_t *dst[] = {su, so};
        for (int k = 0; k < 2; k++) {
            ts_uuid4(id);
            s = base_spec(id, imgs[k]);
            int64_t t0 = ts_now_mono_us();
            kf_start_ok(rts[k], &s, &st0);
            dst[k][i] = ts_now_mono_us() - t0;
            kf_destroy_ok(rts[k], id, 200);
        }
    }
    fprintf(stderr, "the user namespace's cost (this host, sequential, alternating):\n");
    report("bare `runc run` (true), new user namespace", u, N);
    report("bare `runc run` (true), no user namespace", p, N);
    report("agent: user + network namespace (userns_ns_create)", nsu, NS);
    report("agent: network namespace only (cni_netns_create)", nsp, NS);
    report("runtime_start -> RUNNING, agent.userns = on", su, START);
    report("runtime_start -> RUNNING, agent.userns = off", so, START);
}

int main(void)
{
    if (getenv("TEST_FILTER")) cmocka_set_test_filter(getenv("TEST_FILTER"));
    if (getenv("TEST_LOG_LEVEL") && !tlog_set_level(getenv("TEST_LOG_LEVEL"))) return 2;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_start_latency),
        cmocka_unit_test(test_userns_parallel_creates_do_not_hang),
        cmocka_unit_test(test_cost_of_the_user_namespace),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
