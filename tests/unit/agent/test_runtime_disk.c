/* test_runtime_disk.c: a kernel's disk (services/agent/runtime_disk.h) with
 * real runc, overlayfs and CNI, as root: a restart's destroy keeps
 * /home/work for the next start of the same kernel id while the root file
 * system starts again from the image, a kept disk goes with the next plain
 * destroy or when discarded, and a kernel dir of an older agent (home at
 * <kdir>/home) keeps its home too; a sized disk limits what the kernel
 * writes (ENOSPC past it, the kernel healthy), keeps its size through a
 * restart and leaves no loop device, and its writes count once in the
 * kernel's block I/O; and the container's mountinfo names no host path. Skips, saying why, only
 * when kernels cannot run here (kernel_fixture.h), or for the sized disks, when loop devices or
 * mkfs.ext4 are missing. */
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

static void _start_sized(const char *id, int64_t bytes)
{
    kernel_spec s = kf_spec(id, &g_img, "sess-disk", "main1");
    s.disk_bytes = bytes;
    s.term_path = F.term; /* NULL when not built: no terminal mount */
    kernel_status st;
    kf_start_ok(g_rt, &s, &st);
    assert_int_equal(st.state, KERNEL_RUNNING);
}

/* exit code of sh -c cmd in kernel id; its stdout+stderr in out (heap) */
static int _try(const char *id, const char *cmd, char **out)
{
    const char *argv[] = {"/bin/sh", "-c", cmd, NULL};
    exec_result r = kf_run_in(g_rt, id, argv, 30000, 65536);
    *out = ts_asprintf("%s%s", r.out, r.err);
    int code = r.exit_code;
    exec_result_free(&r);
    return code;
}

static bool _disks_limited(void)
{
    char why[256];
    if (runtime_disk_limits(g_rt, why, sizeof(why))) return true;
    fprintf(stderr, "skipped: disk sizes not enforced here: %s\n", why);
    return false;
}

/* A kernel with a 32 MiB disk: writes past it fail with ENOSPC, in / and in
 * /home/work alike; freeing space makes writes work again and the kernel
 * stays healthy; the disk goes (unmounted, no loop device) with the kernel. */
static void test_size_limit(void **state)
{
    (void)state;
    SKIP_IF_UNAVAILABLE();
    if (!_disks_limited()) skip();
    char id[TS_UUID_STRLEN];
    ts_uuid4(id);
    _start_sized(id, 32LL << 20);
    char *out = NULL;
    /* df of /home/work: a file system of about 32 MiB (1K blocks) */
    assert_int_equal(_try(id, "df -k /home/work | tail -1 | awk '{print $2}'", &out), 0);
    long kb = atol(out);
    free(out);
    assert_true(kb > 24 * 1024 && kb <= 32 * 1024);
    assert_int_not_equal(_try(id, "dd if=/dev/zero of=/home/work/big bs=1M count=40", &out), 0);
    assert_non_null(strstr(out, "No space left on device"));
    free(out);
    /* the root file system shares it */
    assert_int_not_equal(_try(id, "dd if=/dev/zero of=/root/big bs=1M count=8", &out), 0);
    assert_non_null(strstr(out, "No space left on device"));
    free(out);
    assert_int_equal(_try(id,
                          "rm /home/work/big /root/big && echo ok > /home/work/small && "
                          "cat /home/work/small && dd if=/dev/zero of=/tmp/t bs=1M count=4 "
                          "2>/dev/null && echo written",
                          &out),
                     0);
    assert_string_equal(out, "ok\nwritten\n");
    free(out);
    char *img = _path("%s/kernels/%s/disk.img", id);
    assert_int_equal(access(img, F_OK), 0);
    _destroy(id, false);
    assert_int_not_equal(sh("losetup -a | grep -q %s", img), 0);
    char *mounts = read_text("/proc/self/mountinfo");
    assert_null(strstr(mounts, id));
    free(mounts);
    free(img);
}

/* A restart keeps a sized disk whole: its home, and its size. */
static void test_size_limit_restart(void **state)
{
    (void)state;
    SKIP_IF_UNAVAILABLE();
    if (!_disks_limited()) skip();
    char id[TS_UUID_STRLEN];
    ts_uuid4(id);
    _start_sized(id, 32LL << 20);
    free(_sh(id, "dd if=/dev/zero of=/home/work/f bs=1M count=4 2>/dev/null && "
                 "echo KEEP > /home/work/keep.txt && echo r > /root/r"));
    _destroy(id, true);
    assert_true(_exists("%s/kernels/.kept-%s/disk.img", id));
    _start_sized(id, 64LL << 20); /* the kept disk keeps its size */
    char *out = _sh(id, "cat /home/work/keep.txt; ls /root; df -k /home/work | tail -1 | "
                        "awk '{print $2}'");
    assert_true(strncmp(out, "KEEP\n", 5) == 0);
    assert_true(atol(out + 5) <= 32 * 1024);
    free(out);
    _destroy(id, false);
    assert_false(_exists("%s/kernels/.kept-%s", id));
}

/* What the container's /proc/self/mountinfo shows names no host path: the
 * overlay's options are relative to the kernel dir, and /home/work and the
 * /etc files are binds from the kernel's own disk (paths within it). */
static void test_mountinfo_without_host_paths(void **state)
{
    (void)state;
    SKIP_IF_UNAVAILABLE();
    if (!_disks_limited()) skip();
    char id[TS_UUID_STRLEN];
    ts_uuid4(id);
    _start_sized(id, 32LL << 20);
    char *out = _sh(id, "cat /proc/self/mountinfo");
    if (strstr(out, F.tmp)) fail_msg("a host path (%s) in mountinfo:\n%s", F.tmp, out);
    assert_non_null(strstr(out, "lowerdir=l/0,upperdir=disk/upper,workdir=disk/work"));
    assert_non_null(strstr(out, " /home /home/work "));
    assert_non_null(strstr(out, " /etc/hosts /etc/hosts "));
    /* tessera-term from a copy on the disk */
    if (F.term)
        assert_non_null(strstr(out, " /.tessera/tessera-term /opt/tessera/bin/tessera-term "));
    free(out);
    if (F.term) {
        out = _sh(id, "/opt/tessera/bin/tessera-term --help >/dev/null 2>&1; echo $?");
        assert_string_not_equal(out, "126\n"); /* it runs */
        free(out);
    }
    _destroy(id, false);
}

/* What a kernel writes to its sized disk counts once in its block I/O:
 * the loop device's bytes are done again on the backing file's device,
 * which is what is counted (cgroups.c). */
static void test_io_counted_once(void **state)
{
    (void)state;
    SKIP_IF_UNAVAILABLE();
    if (!_disks_limited()) skip();
    char id[TS_UUID_STRLEN];
    ts_uuid4(id);
    _start_sized(id, 64LL << 20);
    kernel_usage u0, u1;
    ts_err err = {{0}};
    assert_true(runtime_usage(g_rt, id, &u0, &err));
    free(_sh(id, "dd if=/dev/urandom of=/home/work/f bs=1M count=16 conv=fsync 2>/dev/null"));
    assert_true(runtime_usage(g_rt, id, &u1, &err));
    long long w = (long long)(u1.io_write_bytes - u0.io_write_bytes);
    if (w < (16LL << 20) || w > (24LL << 20))
        fail_msg("16 MiB written with fsync counted as %lld bytes", w);
    _destroy(id, false);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_restart_keeps_home),
        cmocka_unit_test(test_kept_disk_removed),
        cmocka_unit_test(test_old_layout_home_kept),
        cmocka_unit_test(test_size_limit),
        cmocka_unit_test(test_size_limit_restart),
        cmocka_unit_test(test_mountinfo_without_host_paths),
        cmocka_unit_test(test_io_counted_once),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
