/* test_runtime.c: services/agent's container runtime with real runc,
 * overlayfs and CNI, as root: interactive and batch kernels, exec (output,
 * exit codes, timeout, cap), OOM, logs and their cap, a published service
 * port, the port plugin a kernel was made with kept until its DEL, limits
 * and privileges seen from inside, re-adoption after the agent died, and
 * that destroy leaves nothing behind. The image is a busybox layer built
 * here from Debian's busybox-static (no registry, no image store). Skips,
 * saying why, only when it cannot run: not root, no runc, no busybox, no
 * overlayfs. The start latency: test_runtime_cost.c. */
#include "tests/unit/agent/kernel_fixture.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/wait.h>

#include "services/agent/bundle.h"
#include "services/agent/cgroups.h"

/* Host port ranges below the kernel's ephemeral range (32768-60999 by default):
 * a client socket elsewhere on the machine can hold any port in that range and
 * make the pool skip it. */
#define PORT_START 31100
#define PORT_END 31120
#define LOG_CAP (64 * 1024)

static kfix F = {.name = "test_runtime",
                 .network = "tstest0",
                 .subnet = "10.213.77.0/24",
                 .port_start = PORT_START,
                 .port_end = PORT_END,
                 .log_cap = LOG_CAP};
static runtime *g_rt;
static char g_layer[300];
static image_info g_img;
static char *g_layers[1];
/* the agent's default: a user namespace, container root = host uid 100000 */
static const userns_map g_userns = {USERNS_DEFAULT_BASE, USERNS_DEFAULT_SIZE};

/* ---- helpers ---------------------------------------------------------------- */

static int group_setup(void **state)
{
    (void)state;
    if (!kf_begin(&F, "/var/tmp/tessera-rt-XXXXXX", false)) return -1;
    if (F.skip) return 0;
    /* the busybox layer, owned as the image store unpacks it for g_userns */
    snprintf(g_layer, sizeof(g_layer), "%s/layer", F.tmp);
    if (!kf_busybox_layer(g_layer, NULL) || !kf_shift_layer(g_layer, g_userns.base)) return -1;
    runtime_opts o = kf_opts(&F, &g_userns);
    if (!(g_rt = kf_runtime(&o))) return -1;
    g_layers[0] = g_layer;
    static char ref[] = "local/busybox:test";
    g_img.reference = ref;
    g_img.layer_dirs = g_layers;
    g_img.n_layers = 1;
    static char *env[] = {"IMAGE_VAR=from-image", "PATH=/bin", NULL};
    g_img.env = env;
    return 0;
}

static int group_teardown(void **state)
{
    (void)state;
    if (g_rt) runtime_free(g_rt);
    /* the network's outbound NAT rule (cni.c) must be there, once, and go */
    if (!F.skip) {
        assert_int_equal(sh("iptables -w -t nat -S POSTROUTING | grep -c 'tessera:tstest0' | "
                            "grep -qx 1"),
                         0);
        assert_int_equal(sh("iptables -w -t nat -S POSTROUTING | grep -q 'CNI-.*tstest0'"), 1 << 8);
        cni_masq_remove("tstest0", "10.213.77.0/24");
        assert_int_equal(sh("iptables -w -t nat -S POSTROUTING | grep -q 'tessera:tstest0'"),
                         1 << 8);
    }
    kf_end(&F, true);
    return 0;
}

#define SKIP_IF_UNAVAILABLE() KF_SKIP_IF_UNAVAILABLE(&F)

static void new_id(char *id)
{
    ts_uuid4(id);
}

static kernel_spec base_spec(const char *id)
{
    return kf_spec(id, &g_img, "sess-1", "k-test");
}

static void start_ok(const kernel_spec *s, kernel_status *st)
{
    kf_start_ok(g_rt, s, st);
}

static void destroy_ok(const char *id)
{
    kf_destroy_ok(g_rt, id, 500);
}

static kernel_status wait_exit(const char *id, int timeout_ms)
{
    kernel_status st;
    int64_t deadline = ts_now_mono_ms() + timeout_ms;
    for (;;) {
        ts_err err = {{0}};
        if (!runtime_status(g_rt, id, &st, &err)) fail_msg("status: %s", err.msg);
        if (st.state == KERNEL_EXITED || ts_now_mono_ms() > deadline) return st;
        usleep(20000);
    }
}

static exec_result run_in(const char *id, const char *const *argv, int timeout_ms, size_t cap)
{
    return kf_run_in(g_rt, id, argv, timeout_ms, cap);
}

/* What a destroyed kernel must not leave anywhere. */
static void assert_no_leftovers(const char *id)
{
    char path[512];
    char *mounts = read_text("/proc/self/mountinfo");
    assert_non_null(mounts);
    if (strstr(mounts, id)) fail_msg("a mount of kernel %s remains", id);
    free(mounts);
    char rel[128];
    snprintf(rel, sizeof(rel), "tessera/%s", id);
    if (cg_exists_any(rel)) fail_msg("cgroup %s remains", rel);
    snprintf(path, sizeof(path), "/run/netns/tessera-%s", id);
    if (access(path, F_OK) == 0) fail_msg("netns %s remains", path);
    snprintf(path, sizeof(path), "%s/kernels/%s", F.state, id);
    if (access(path, F_OK) == 0) fail_msg("kernel dir %s remains", path);
    if (sh("%s list 2>/dev/null | grep -q %s", KF_RUNC, id) == 0)
        fail_msg("runc still lists %s", id);
    if (sh("iptables-save 2>/dev/null | grep -q %s", id) == 0)
        fail_msg("iptables rules for %s remain", id);
    if (sh("ps -eo args | grep -v grep | grep -q %s", id) == 0)
        fail_msg("a process of %s remains", id);
    if (sh("grep -rqs %s %s/cni/networks", id, F.state) == 0)
        fail_msg("an address lease of %s remains", id);
    kernel_status st;
    ts_err err = {{0}};
    assert_true(runtime_status(g_rt, id, &st, &err));
    assert_int_equal(st.state, KERNEL_GONE);
}

/* ---- tests ------------------------------------------------------------------ */

/* Long: one kernel started once, then each property of exec checked in turn (a kernel per check
 * costs seconds each). */
static void test_interactive_exec(void **state)
{
    (void)state;
    SKIP_IF_UNAVAILABLE();
    char id[TS_UUID_STRLEN];
    new_id(id);
    kernel_spec s = base_spec(id);
    const char *env[] = {"USER_VAR=from-spec", "IMAGE_VAR=overridden", NULL};
    s.env = env;
    kernel_status st;
    start_ok(&s, &st);
    assert_int_equal(st.state, KERNEL_RUNNING);
    assert_true(st.ip[0] != '\0');

    const char *echo[] = {"echo", "hi", NULL};
    exec_result r = run_in(id, echo, 5000, 4096);
    if (r.exit_code != 0) fail_msg("exec: %d %s %s", r.exit_code, r.out, r.err);
    assert_string_equal(r.out, "hi\n");
    assert_false(r.timed_out);
    exec_result_free(&r);

    const char *fail[] = {"sh", "-c", "echo to-out; echo to-err >&2; exit 5", NULL};
    r = run_in(id, fail, 5000, 4096);
    assert_int_equal(r.exit_code, 5);
    assert_string_equal(r.out, "to-out\n");
    assert_string_equal(r.err, "to-err\n");
    exec_result_free(&r);

    int64_t t0 = ts_now_mono_ms();
    const char *slow[] = {"sleep", "30", NULL};
    r = run_in(id, slow, 300, 4096);
    int64_t took = ts_now_mono_ms() - t0;
    assert_true(r.timed_out);
    assert_int_equal(r.exit_code, -1);
    assert_true(took < 3000);
    exec_result_free(&r);
    /* the timed-out process is gone from the container */
    const char *ps[] = {"sh", "-c", "ps -o args | grep -c '^sleep 30' || true", NULL};
    r = run_in(id, ps, 5000, 4096);
    assert_string_equal(r.out, "0\n");
    exec_result_free(&r);

    const char *lots[] = {"sh", "-c", "yes 0123456789 | head -c 100000; yes e | head -c 5000 >&2",
                          NULL};
    r = run_in(id, lots, 5000, 1000);
    assert_int_equal(r.out_len, 1000);
    assert_true(r.out_truncated);
    assert_int_equal(r.err_len, 1000);
    assert_true(r.err_truncated);
    exec_result_free(&r);

    /* exec's own environment on top of the kernel's */
    const char *xenv[] = {"EXEC_VAR=given", NULL};
    const char *showenv[] = {"sh", "-c", "echo $EXEC_VAR $USER_VAR", NULL};
    ts_err xerr = {{0}};
    assert_true(runtime_exec(g_rt, id, showenv, xenv, 5000, 4096, &r, &xerr));
    assert_string_equal(r.out, "given from-spec\n");
    exec_result_free(&r);

    /* environment, cwd, hostname, user */
    const char *info[] = {
        "sh", "-c",
        "echo $TESSERA_KERNEL_ID $BACKENDAI_SESSION_ID $USER_VAR $IMAGE_VAR; pwd; "
        "hostname; id -u",
        NULL};
    r = run_in(id, info, 5000, 4096);
    char want[512];
    snprintf(want, sizeof(want), "%s sess-1 from-spec overridden\n/home/work\nk-test\n0\n", id);
    assert_string_equal(r.out, want);
    exec_result_free(&r);

    /* no_new_privs and the kernels' capability set, as the kernel sees them */
    const char *status[] = {"cat", "/proc/1/status", NULL};
    r = run_in(id, status, 5000, 65536);
    assert_non_null(strstr(r.out, "NoNewPrivs:\t1"));
    char caps[64];
    snprintf(caps, sizeof(caps), "CapEff:\t%016llx", (unsigned long long)bundle_caps_mask());
    if (!strstr(r.out, caps)) fail_msg("want %s in\n%s", caps, r.out);
    assert_non_null(strstr(r.out, "Seccomp:\t2"));
    exec_result_free(&r);

    /* the seccomp profile refuses what it should, allows the rest */
    const char *mnt[] = {"sh", "-c", "mount -t tmpfs x /mnt 2>&1; echo rc=$?", NULL};
    r = run_in(id, mnt, 5000, 4096);
    assert_non_null(strstr(r.out, "rc=1"));
    exec_result_free(&r);

    /* /dev/shm sized, /home/work writable, proc paths masked */
    const char *fs[] = {
        "sh", "-c",
        "df -k /dev/shm | tail -1 | awk '{print $2}'; touch /home/work/x && echo ok; "
        "cat /proc/kcore | wc -c",
        NULL};
    r = run_in(id, fs, 5000, 4096);
    assert_string_equal(r.out, "8192\nok\n0\n");
    exec_result_free(&r);

    kernel_usage u;
    ts_err err = {{0}};
    assert_true(runtime_usage(g_rt, id, &u, &err));
    assert_true(u.mem_bytes > 0);
    assert_true(u.cpu_usec > 0);
    assert_true(u.pids >= 1);
    kernel_usage total;
    assert_true(runtime_usage_total(g_rt, &total, &err));
    assert_true(total.mem_bytes >= u.mem_bytes);

    char **ids;
    int n = 0;
    assert_true(runtime_list(g_rt, &ids, &n, &err));
    bool found = false;
    for (int i = 0; i < n; i++) {
        if (strcmp(ids[i], id) == 0) found = true;
        free(ids[i]);
    }
    free(ids);
    assert_true(found);

    int64_t d0 = ts_now_mono_ms();
    destroy_ok(id);
    /* the keep-alive ends on SIGTERM: no waiting out the grace period */
    fprintf(stderr, "  destroy of an interactive kernel: %lld ms\n",
            (long long)(ts_now_mono_ms() - d0));
    assert_no_leftovers(id);
    destroy_ok(id); /* idempotent */
}

static void test_limits_written(void **state)
{
    (void)state;
    SKIP_IF_UNAVAILABLE();
    char id[TS_UUID_STRLEN];
    new_id(id);
    kernel_spec s = base_spec(id);
    s.cpu_cores = 0.5;
    s.mem_bytes = 64LL << 20;
    s.pids_max = 50;
    kernel_status st;
    start_ok(&s, &st);
    char rel[128], path[512];
    snprintf(rel, sizeof(rel), "tessera/%s", id);
    struct {
        const char *ctl, *file, *want;
    } checks[] = {
        {"cpu", "cpu.cfs_quota_us", "50000\n"},
        {"cpu", "cpu.cfs_period_us", "100000\n"},
        {"memory", "memory.limit_in_bytes", "67108864\n"},
        {"memory", "memory.memsw.limit_in_bytes", "67108864\n"},
        {"pids", "pids.max", "50\n"},
    };
    for (size_t i = 0; i < TS_ARRAY_LEN(checks); i++) {
        assert_true(cg_path(checks[i].ctl, rel, checks[i].file, path, sizeof(path)));
        char *v = read_text(path);
        if (!v && strstr(checks[i].file, "memsw")) continue; /* no swap accounting */
        assert_non_null(v);
        if (strcmp(v, checks[i].want) != 0) fail_msg("%s = %s, want %s", path, v, checks[i].want);
        free(v);
    }
    /* the pids limit holds inside */
    const char *forks[] = {"sh", "-c",
                           "for i in $(seq 80); do sleep 5 & done 2>/dev/null; sleep 0.2; "
                           "ps | grep -c 'sleep 5'",
                           NULL};
    exec_result r = run_in(id, forks, 10000, 4096);
    int n = atoi(r.out);
    if (n >= 50) fail_msg("%d sleeps ran under a pids limit of 50", n);
    exec_result_free(&r);
    destroy_ok(id);
    assert_no_leftovers(id);
}

static void test_batch_exit_code_and_logs(void **state)
{
    (void)state;
    SKIP_IF_UNAVAILABLE();
    char id[TS_UUID_STRLEN];
    new_id(id);
    kernel_spec s = base_spec(id);
    const char *argv[] = {"sh", "-c", "echo hello-stdout; echo hello-stderr >&2; exit 3", NULL};
    s.argv = argv;
    s.batch = true;
    kernel_status st;
    start_ok(&s, &st);
    st = wait_exit(id, 10000);
    assert_int_equal(st.state, KERNEL_EXITED);
    assert_int_equal(st.exit_code, 3);
    assert_false(st.oom_killed);
    assert_non_null(strstr(st.reason, "code 3"));
    size_t len = 0;
    ts_err err = {{0}};
    char *logs = runtime_logs(g_rt, id, 4096, &len, &err);
    assert_non_null(logs);
    assert_non_null(strstr(logs, "hello-stdout\n"));
    assert_non_null(strstr(logs, "hello-stderr\n"));
    free(logs);
    /* exec into an ended kernel is refused with the reason */
    const char *echo[] = {"echo", "x", NULL};
    exec_result r;
    assert_false(runtime_exec(g_rt, id, echo, NULL, 1000, 100, &r, &err));
    assert_non_null(strstr(err.msg, "not running"));
    destroy_ok(id);
    assert_no_leftovers(id);

    /* success */
    new_id(id);
    s = base_spec(id);
    const char *ok[] = {"true", NULL};
    s.argv = ok;
    s.batch = true;
    start_ok(&s, &st);
    st = wait_exit(id, 10000);
    assert_int_equal(st.state, KERNEL_EXITED);
    assert_int_equal(st.exit_code, 0);
    destroy_ok(id);
}

static void test_oom_reason(void **state)
{
    (void)state;
    SKIP_IF_UNAVAILABLE();
    char id[TS_UUID_STRLEN];
    new_id(id);
    kernel_spec s = base_spec(id);
    s.mem_bytes = 32LL << 20;
    const char *argv[] = {
        "sh", "-c", "echo start; dd if=/dev/zero of=/dev/null bs=100M count=1; exit $?", NULL};
    s.argv = argv;
    s.batch = true;
    kernel_status st;
    start_ok(&s, &st);
    st = wait_exit(id, 15000);
    assert_int_equal(st.state, KERNEL_EXITED);
    if (!st.oom_killed || !strstr(st.reason, "OOM"))
        fail_msg("exit %d, reason '%s': want OOM", st.exit_code, st.reason);
    assert_int_equal(st.exit_code, 137);
    destroy_ok(id);
    assert_no_leftovers(id);
}

static void test_log_cap(void **state)
{
    (void)state;
    SKIP_IF_UNAVAILABLE();
    char id[TS_UUID_STRLEN];
    new_id(id);
    kernel_spec s = base_spec(id);
    const char *argv[] = {"sh", "-c", "seq 1 100000; echo the-end", NULL};
    s.argv = argv;
    s.batch = true;
    kernel_status st;
    start_ok(&s, &st);
    st = wait_exit(id, 15000);
    assert_int_equal(st.exit_code, 0);
    char dir[512];
    snprintf(dir, sizeof(dir), "%s/kernels/%s/logs", F.state, id);
    struct stat a, b;
    char p1[600], p2[600];
    snprintf(p1, sizeof(p1), "%s/output.log", dir);
    snprintf(p2, sizeof(p2), "%s/output.log.1", dir);
    off_t total = (stat(p1, &a) == 0 ? a.st_size : 0) + (stat(p2, &b) == 0 ? b.st_size : 0);
    if (total > LOG_CAP) fail_msg("log holds %lld bytes, cap %d", (long long)total, LOG_CAP);
    size_t len = 0;
    ts_err err = {{0}};
    char *logs = runtime_logs(g_rt, id, 100, &len, &err);
    assert_non_null(logs);
    assert_true(len <= 100);
    assert_non_null(strstr(logs, "100000\nthe-end\n"));
    free(logs);
    destroy_ok(id);
}

static bool fetch(const char *ip, int port, char *buf, size_t size)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    inet_pton(AF_INET, ip, &a.sin_addr);
    struct timeval tv = {.tv_sec = 2};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    bool ok = connect(fd, (struct sockaddr *)&a, sizeof(a)) == 0;
    size_t len = 0;
    ssize_t n;
    while (ok && len < size - 1 && (n = read(fd, buf + len, size - 1 - len)) > 0)
        len += (size_t)n;
    buf[len] = '\0';
    close(fd);
    return ok && len > 0;
}

static void test_service_port(void **state)
{
    (void)state;
    SKIP_IF_UNAVAILABLE();
    char id[TS_UUID_STRLEN];
    new_id(id);
    kernel_spec s = base_spec(id);
    const char *argv[] = {"sh", "-c", "while true; do nc -l -p 8080 -e echo hi-from-app; done",
                          NULL};
    int ports[] = {8080};
    s.argv = argv;
    s.service_ports = ports;
    s.n_service_ports = 1;
    kernel_status st;
    start_ok(&s, &st);
    assert_int_equal(st.n_ports, 1);
    assert_int_equal(st.ports[0].container_port, 8080);
    int hp = st.ports[0].host_port;
    assert_true(hp >= PORT_START && hp <= PORT_END);
    char buf[256];
    bool got = false;
    for (int i = 0; i < 50 && !got; i++) {
        got = fetch("127.0.0.1", hp, buf, sizeof(buf)) && strstr(buf, "hi-from-app");
        if (!got) usleep(100000);
    }
    if (!got) fail_msg("127.0.0.1:%d (portmap) did not answer", hp);
    got = false;
    for (int i = 0; i < 20 && !got; i++) {
        got = fetch(st.ip, 8080, buf, sizeof(buf)) && strstr(buf, "hi-from-app");
        if (!got) usleep(100000);
    }
    if (!got) fail_msg("%s:8080 did not answer", st.ip);
    char owner[64], path[512];
    snprintf(path, sizeof(path), "%s/ports/%d", F.state, hp);
    assert_int_equal(access(path, F_OK), 0);
    /* a second kernel never gets the same host port */
    char id2[TS_UUID_STRLEN];
    new_id(id2);
    kernel_spec s2 = base_spec(id2);
    s2.service_ports = ports;
    s2.n_service_ports = 1;
    kernel_status st2;
    start_ok(&s2, &st2);
    assert_int_not_equal(st2.ports[0].host_port, hp);
    destroy_ok(id2);
    destroy_ok(id);
    assert_no_leftovers(id);
    assert_no_leftovers(id2);
    assert_int_not_equal(access(path, F_OK), 0);
    (void)owner;
}

/* A runtime whose plugins are Debian's bridge and portmap (agent.cni_bridge =
 * bridge, agent.cni_portmap = portmap). */
static runtime *debian_portmap_runtime(void)
{
    runtime_opts o = kf_opts(&F, &g_userns);
    o.cni_portmap = o.cni_bridge = NULL;
    runtime *rt = kf_runtime(&o);
    if (!rt) fail_msg("no runtime with Debian's plugins");
    return rt;
}

/* Kernels networked by Debian's bridge (with host-local) and portmap (an
 * agent set to them, or one from before agent.cni_bridge and
 * agent.cni_portmap, whose state.json does not name the plugins), beside a
 * kernel of tessera-bridge on the same network, destroyed by an agent
 * running tessera-bridge and tessera-portmap: host-local sees
 * tessera-bridge's lease (no address is handed out twice), and DEL runs the
 * plugins the ADD ran, so none of their rules or leases is left. */
static void test_port_plugin_switch(void **state)
{
    (void)state;
    SKIP_IF_UNAVAILABLE();
    if (access("/usr/lib/cni/portmap", X_OK) != 0) {
        fprintf(stderr, "skipped: no /usr/lib/cni/portmap\n");
        skip();
    }
    char ours[TS_UUID_STRLEN];
    new_id(ours);
    kernel_spec os = base_spec(ours);
    kernel_status ost;
    start_ok(&os, &ost);
    runtime *deb = debian_portmap_runtime();
    int ports[] = {8080};
    char ids[2][TS_UUID_STRLEN];
    for (int k = 0; k < 2; k++) {
        new_id(ids[k]);
        kernel_spec s = base_spec(ids[k]);
        s.service_ports = ports;
        s.n_service_ports = 1;
        kernel_status st;
        ts_err err = {{0}};
        if (!runtime_start(deb, &s, &st, &err)) fail_msg("start: %s", err.msg);
        if (strcmp(st.ip, ost.ip) == 0) fail_msg("%s handed out twice", st.ip);
        if (sh("iptables-save -t nat | grep -q 'CNI-HOSTPORT-DNAT.*%s'", ids[k]) != 0)
            fail_msg("no portmap rule for %s", ids[k]);
        char path[512];
        snprintf(path, sizeof(path), "%s/kernels/%s/state.json", F.state, ids[k]);
        json_t *j = json_load_file(path, 0, NULL);
        assert_non_null(j);
        assert_string_equal(json_string_value(json_object_get(j, "cni_portmap")),
                            "/usr/lib/cni/portmap");
        assert_string_equal(json_string_value(json_object_get(j, "cni_bridge")),
                            "/usr/lib/cni/bridge");
        if (k == 1) { /* as an older agent wrote it */
            json_object_del(j, "cni_portmap");
            json_object_del(j, "cni_bridge");
            assert_int_equal(json_dump_file(j, path, 0), 0);
        }
        json_decref(j);
    }
    runtime_free(deb);
    for (int k = 0; k < 2; k++) {
        destroy_ok(ids[k]); /* g_rt: tessera-bridge, tessera-portmap */
        assert_no_leftovers(ids[k]);
    }
    destroy_ok(ours);
    assert_no_leftovers(ours);
}

static void test_bad_input(void **state)
{
    (void)state;
    SKIP_IF_UNAVAILABLE();
    kernel_status st;
    ts_err err = {{0}};
    kernel_spec s = base_spec("../etc");
    assert_false(runtime_start(g_rt, &s, &st, &err));
    assert_non_null(strstr(err.msg, "not valid"));
    /* a command that does not exist: start fails with runc's reason, nothing left */
    char id[TS_UUID_STRLEN];
    new_id(id);
    s = base_spec(id);
    const char *argv[] = {"/no/such/program", NULL};
    s.argv = argv;
    s.batch = true;
    err.msg[0] = '\0';
    bool ok = runtime_start(g_rt, &s, &st, &err);
    if (ok) {
        st = wait_exit(id, 5000);
        assert_int_equal(st.state, KERNEL_EXITED);
        destroy_ok(id);
    } else {
        assert_non_null(strstr(err.msg, "no such file"));
    }
    assert_no_leftovers(id);
    /* batch with no command at all */
    new_id(id);
    s = base_spec(id);
    s.batch = true;
    assert_false(runtime_start(g_rt, &s, &st, &err));
    assert_non_null(strstr(err.msg, "no command"));
    assert_no_leftovers(id);
    /* port pool exhaustion is reported and nothing is held */
    new_id(id);
    s = base_spec(id);
    int many[16];
    for (int i = 0; i < 16; i++)
        many[i] = 1000 + i;
    s.service_ports = many;
    s.n_service_ports = 16;
    char id2[TS_UUID_STRLEN];
    new_id(id2);
    kernel_spec s2 = base_spec(id2);
    s2.service_ports = many;
    s2.n_service_ports = 16;
    start_ok(&s, &st);
    assert_false(runtime_start(g_rt, &s2, &st, &err));
    assert_non_null(strstr(err.msg, "exhausted"));
    assert_no_leftovers(id2);
    destroy_ok(id);
}

/* Without its supervisor program the runtime does not open, and says which
 * file; tessera-sup run by hand (no pipes from the agent, bad arguments)
 * prints its usage and exits 2; --help exits 0. */
static void test_supervisor_missing_or_misused(void **state)
{
    (void)state;
    SKIP_IF_UNAVAILABLE();
    runtime_opts o = kf_opts(&F, &g_userns);
    o.cni_portmap = o.cni_bridge = NULL;
    o.sup_path = "/no/such/tessera-sup";
    ts_err err = {{0}};
    assert_null(runtime_new(&o, &err));
    assert_non_null(strstr(err.msg, "kernel supervisor /no/such/tessera-sup"));
    assert_non_null(strstr(err.msg, "No such file"));
    assert_int_equal(sh("%s --help | grep -q 'usage: tessera-sup'", F.sup), 0);
    assert_int_equal(WEXITSTATUS(sh("%s 2>/dev/null", F.sup)), 2); /* no arguments */
    assert_int_equal(WEXITSTATUS(sh("%s /tmp x '' runc 3>&1 4>&1 2>/dev/null", F.sup)), 2);
    assert_int_equal(WEXITSTATUS(sh("%s /tmp 100 '' runc 2>/dev/null 3>&- 4>&-", F.sup)), 2);
}

/* The agent is killed (here: a child process that started the kernel exits
 * at once, like kill -9) and a new one, on the same state dir, finds the
 * kernel still running, its log still collected, and can exec and destroy. */
static void test_readopt_after_agent_death(void **state)
{
    (void)state;
    SKIP_IF_UNAVAILABLE();
    char id[TS_UUID_STRLEN];
    new_id(id);
    pid_t pid = fork();
    if (pid == 0) {
        kernel_spec s = base_spec(id);
        const char *argv[] = {"sh", "-c",
                              "echo before; sleep 1; echo after-agent-death; sleep 1000", NULL};
        s.argv = argv;
        kernel_status st;
        ts_err err = {{0}};
        _exit(runtime_start(g_rt, &s, &st, &err) ? 0 : 1);
    }
    int ws = 0;
    assert_int_equal(waitpid(pid, &ws, 0), pid);
    assert_true(WIFEXITED(ws) && WEXITSTATUS(ws) == 0);
    runtime_opts o = kf_opts(&F, &g_userns);
    o.cni_bridge = NULL;
    ts_err err = {{0}};
    runtime *rt2 = runtime_new(&o, &err);
    assert_non_null(rt2);
    char **ids;
    int n = 0;
    assert_true(runtime_list(rt2, &ids, &n, &err));
    bool found = false;
    for (int i = 0; i < n; i++) {
        found = found || strcmp(ids[i], id) == 0;
        free(ids[i]);
    }
    free(ids);
    assert_true(found);
    kernel_status st;
    assert_true(runtime_status(rt2, id, &st, &err));
    assert_int_equal(st.state, KERNEL_RUNNING);
    const char *echo[] = {"echo", "still-here", NULL};
    exec_result r;
    assert_true(runtime_exec(rt2, id, echo, NULL, 5000, 100, &r, &err));
    assert_string_equal(r.out, "still-here\n");
    exec_result_free(&r);
    usleep(1500000);
    size_t len;
    char *logs = runtime_logs(rt2, id, 4096, &len, &err);
    assert_non_null(logs);
    assert_non_null(strstr(logs, "before\nafter-agent-death\n"));
    free(logs);
    assert_true(runtime_destroy(rt2, id, 200, &err));
    runtime_free(rt2);
    assert_no_leftovers(id);
}

int main(void)
{
    if (getenv("TEST_FILTER")) cmocka_set_test_filter(getenv("TEST_FILTER"));
    /* TEST_LOG_LEVEL=debug: the runtime's per-step timings of each start and destroy */
    if (getenv("TEST_LOG_LEVEL") && !tlog_set_level(getenv("TEST_LOG_LEVEL"))) return 2;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_interactive_exec),
        cmocka_unit_test(test_limits_written),
        cmocka_unit_test(test_batch_exit_code_and_logs),
        cmocka_unit_test(test_oom_reason),
        cmocka_unit_test(test_log_cap),
        cmocka_unit_test(test_service_port),
        cmocka_unit_test(test_port_plugin_switch),
        cmocka_unit_test(test_bad_input),
        cmocka_unit_test(test_supervisor_missing_or_misused),
        cmocka_unit_test(test_readopt_after_agent_death),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
