/* test_runtime_disk.c: a kernel's disk (services/agent/runtime_disk.h) with
 * real runc, overlayfs and CNI, as root: a restart's destroy keeps
 * /home/work for the next start of the same kernel id while the root file
 * system starts again from the image, a kept disk goes with the next plain
 * destroy or when discarded, and a kernel dir of an older agent (home at
 * <kdir>/home) keeps its home too. Skips, saying why, only when kernels
 * cannot run here (kernel_fixture.h). */
#include "tests/unit/agent/kernel_fixture.h"

#include <errno.h>

#include "services/agent/runtime_disk.h"

static kfix F = {.name = "test_runtime_disk",
                 .network = "tsdisk0",
                 .subnet = "10.213.79.0/24",
                 .port_start = 31140,
                 .port_end = 31150,
                 .log_cap = 64 * 1024};
static const userns_map g_userns = {USERNS_DEFAULT_BASE, USERNS_DEFAULT_SIZE};
static runtime *g_rt;
static char g_layer[300];
static char *g_layers[1];
static image_info g_img;

static int group_setup(void **state)
{
    (void)state;
    if (!kf_begin(&F, "/var/tmp/tessera-disk-XXXXXX", true)) return -1;
    if (F.skip) return 0;
    snprintf(g_layer, sizeof(g_layer), "%s/layer", F.tmp);
    if (!kf_busybox_layer(g_layer, NULL) || !kf_shift_layer(g_layer, g_userns.base)) return -1;
    runtime_opts o = kf_opts(&F, &g_userns);
    if (!(g_rt = kf_runtime(&o))) return -1;
    g_layers[0] = g_layer;
    static char ref[] = "local/busybox:test";
    g_img = (image_info){.reference = ref, .layer_dirs = g_layers, .n_layers = 1};
    return 0;
}

static int group_teardown(void **state)
{
    (void)state;
    if (g_rt) {
        kf_destroy_leftovers(g_rt);
        runtime_free(g_rt);
    }
    kf_end(&F, false);
    return 0;
}

#define SKIP_IF_UNAVAILABLE() KF_SKIP_IF_UNAVAILABLE(&F)

static char *_path(const char *fmt, const char *id)
{
    char *p = NULL;
    if (asprintf(&p, fmt, F.state, id) < 0) fail_msg("out of memory");
    return p;
}

static bool _exists(const char *fmt, const char *id)
{
    char *p = _path(fmt, id);
    bool e = access(p, F_OK) == 0;
    free(p);
    return e;
}

/* stdout of sh -c cmd in kernel id (exit 0 asserted) */
static char *_sh(const char *id, const char *cmd)
{
    const char *argv[] = {"/bin/sh", "-c", cmd, NULL};
    exec_result r = kf_run_in(g_rt, id, argv, 10000, 65536);
    if (r.exit_code != 0) fail_msg("'%s' exited %d: %s", cmd, r.exit_code, r.err);
    char *out = ts_strdup(r.out);
    exec_result_free(&r);
    return out;
}

static void _start(const char *id)
{
    kernel_spec s = kf_spec(id, &g_img, "sess-disk", "main1");
    kernel_status st;
    kf_start_ok(g_rt, &s, &st);
    assert_int_equal(st.state, KERNEL_RUNNING);
}

static void _destroy(const char *id, bool keep_home)
{
    destroy_opts o = {.grace_ms = 0, .keep_home = keep_home};
    ts_err err = {{0}};
    if (!runtime_destroy_with(g_rt, id, &o, &err)) fail_msg("destroy: %s", err.msg);
}

/* /home/work survives a restart's destroy and start; the root file system,
 * /tmp and /etc/hosts edits do not. */
static void test_restart_keeps_home(void **state)
{
    (void)state;
    SKIP_IF_UNAVAILABLE();
    char id[TS_UUID_STRLEN];
    ts_uuid4(id);
    _start(id);
    free(_sh(id, "echo KEEP > /home/work/keep.txt && mkdir -p /home/work/d/e && "
                 "echo deep > /home/work/d/e/f && echo root > /root/r && echo t > /tmp/t && "
                 "echo '10.9.9.9 edited' >> /etc/hosts"));
    _destroy(id, true);
    /* gone as a kernel; its disk kept aside */
    assert_false(_exists("%s/kernels/%s", id));
    assert_true(_exists("%s/kernels/.kept-%s/disk/home/keep.txt", id));
    kernel_status st;
    ts_err err = {{0}};
    assert_true(runtime_status(g_rt, id, &st, &err));
    assert_int_equal(st.state, KERNEL_GONE);
    char **ids = NULL;
    int n = 0;
    assert_true(runtime_list(g_rt, &ids, &n, &err));
    for (int i = 0; i < n; i++) {
        assert_string_not_equal(ids[i], id);
        free(ids[i]);
    }
    free(ids);

    _start(id);
    assert_false(_exists("%s/kernels/.kept-%s", id));
    char *out = _sh(id, "cat /home/work/keep.txt /home/work/d/e/f; ls -ld /home/work | "
                        "cut -c1-10; for f in /root/r /tmp/t; do test -e $f && echo $f; done; "
                        "grep -c edited /etc/hosts; true");
    assert_string_equal(out, "KEEP\ndeep\ndrwxr-xr-x\n0\n");
    free(out);
    /* the kept home is the user's: writable as before */
    free(_sh(id, "echo more >> /home/work/keep.txt"));
    _destroy(id, false);
    assert_false(_exists("%s/kernels/%s", id));
    assert_false(_exists("%s/kernels/.kept-%s", id));
}

/* A kept disk that no start takes goes with a plain destroy of the id, or
 * with runtime_discard_kept. */
static void test_kept_disk_removed(void **state)
{
    (void)state;
    SKIP_IF_UNAVAILABLE();
    char id[TS_UUID_STRLEN];
    ts_uuid4(id);
    _start(id);
    free(_sh(id, "echo x > /home/work/x"));
    _destroy(id, true);
    assert_true(_exists("%s/kernels/.kept-%s/disk/home/x", id));
    _destroy(id, false); /* a destroy of the ended kernel again */
    assert_false(_exists("%s/kernels/.kept-%s", id));

    ts_uuid4(id);
    _start(id);
    _destroy(id, true);
    assert_true(_exists("%s/kernels/.kept-%s/disk", id));
    runtime_discard_kept(g_rt, id);
    assert_false(_exists("%s/kernels/.kept-%s", id));
    runtime_discard_kept(g_rt, id); /* nothing there: nothing done */
}

/* A kernel dir an agent before the disk made (its home at <kdir>/home, no
 * disk/) keeps that home through a restart. */
static void test_old_layout_home_kept(void **state)
{
    (void)state;
    SKIP_IF_UNAVAILABLE();
    char id[TS_UUID_STRLEN];
    ts_uuid4(id);
    char *home = _path("%s/kernels/%s/home", id);
    char *kdir = _path("%s/kernels/%s", id);
    assert_int_equal(sh("mkdir -p %s/home/sub %s/upper && echo old > %s/sub/f", kdir, kdir, home),
                     0);
    char *rt_home = runtime_home_dir(g_rt, id);
    assert_string_equal(rt_home, home);
    free(rt_home);
    _destroy(id, true);
    assert_false(_exists("%s/kernels/%s", id));
    assert_true(_exists("%s/kernels/.kept-%s/disk/home/sub/f", id));
    _start(id);
    char *out = _sh(id, "cat /home/work/sub/f");
    assert_string_equal(out, "old\n");
    free(out);
    rt_home = runtime_home_dir(g_rt, id);
    char *want = _path("%s/kernels/%s/disk/home", id);
    assert_string_equal(rt_home, want);
    free(want);
    free(rt_home);
    _destroy(id, false);
    free(home);
    free(kdir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_restart_keeps_home),
        cmocka_unit_test(test_kept_disk_removed),
        cmocka_unit_test(test_old_layout_home_kept),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
