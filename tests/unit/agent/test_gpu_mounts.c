/* test_gpu_mounts.c: services/agent/gpu_mounts.c through bundle_write:
 * the config.json of a GPU kernel has the shim, /etc/ld.so.preload, the shim
 * config and the accounting dir mounted, and (with device nodes) only the
 * allocated /dev/nvidiaN plus nvidiactl/nvidia-uvm as devices and allow rules,
 * the driver libraries, and CUDA_VISIBLE_DEVICES renumbered; cuda-shim.conf
 * carries the allocated GPUs' UUIDs in the container's ordinal order, and mock
 * GPUs get stable UUIDs of their own; a CPU kernel has
 * none of it; a bad shim path is refused at start and at creation. Device
 * nodes are symlinks to /dev/null in a temporary "dev" directory; driver
 * libraries are found through a fake `ldconfig -p`. No root needed. */
#include "services/agent/gpu_mounts.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "services/agent/bundle.h"

static char g_tmp[] = "/tmp/tessera-gpu-XXXXXX";
static char g_shim[256], g_dev[256], g_proc[256], g_kdir[256], g_rootfs[256], g_bundle[256],
    g_lib[256], g_ldconfig[256];

static void _write(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    assert_int_equal(fclose(f), 0);
}

static void _mkdir(char *out, const char *name)
{
    snprintf(out, 256, "%s/%s", g_tmp, name);
    assert_int_equal(mkdir(out, 0755), 0);
}

static int setup(void **state)
{
    (void)state;
    if (!mkdtemp(g_tmp)) return -1;
    snprintf(g_shim, sizeof(g_shim), "%s/libtessera-cuda.so", g_tmp);
    _write(g_shim, "not really a library");
    _mkdir(g_dev, "dev");
    _mkdir(g_proc, "proc");
    _mkdir(g_rootfs, "rootfs");
    _mkdir(g_bundle, "bundle");
    _mkdir(g_kdir, "kernel");
    static const char *const nodes[] = {"nvidiactl", "nvidia-uvm", "nvidia0", "nvidia1"};
    char p[512];
    for (size_t i = 0; i < TS_ARRAY_LEN(nodes); i++) {
        snprintf(p, sizeof(p), "%s/%s", g_dev, nodes[i]);
        assert_int_equal(symlink("/dev/null", p), 0);
    }
    /* device "0" is the driver's minor 1 */
    snprintf(p, sizeof(p), "%s/0000:3b:00.0", g_proc);
    assert_int_equal(mkdir(p, 0755), 0);
    snprintf(p, sizeof(p), "%s/0000:3b:00.0/information", g_proc);
    _write(p, "Model: \t\t Fake GPU\nDevice Minor: \t 1\n");
    snprintf(g_lib, sizeof(g_lib), "%s/libcuda.so.1", g_tmp);
    _write(g_lib, "fake driver");
    snprintf(g_ldconfig, sizeof(g_ldconfig), "%s/ldconfig", g_tmp);
    char script[1024];
    snprintf(script, sizeof(script),
             "#!/bin/sh\necho '3 libs found in cache'\n"
             "printf '\\tlibcuda.so.1 (libc6) => /usr/lib32/libcuda.so.1\\n'\n"
             "printf '\\tlibcuda.so.1 (libc6,x86-64) => %s\\n'\n"
             "printf '\\tlibcudart.so.12 (libc6,x86-64) => /nowhere/libcudart.so.12\\n'\n",
             g_lib);
    _write(g_ldconfig, script);
    assert_int_equal(chmod(g_ldconfig, 0755), 0);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    char cmd[512];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", g_tmp);
    return system(cmd) == 0 ? 0 : -1;
}

static const node_device g_devices[] = {
    {.id = "0",
     .model = "Fake GPU",
     .bus_id = "00000000:3B:00.0",
     .uuid = "GPU-00000000-aaaa-4aaa-8aaa-000000000000",
     .memory_bytes = 1 << 30},
    {.id = "1",
     .model = "Fake GPU",
     .bus_id = "",
     .uuid = "GPU-11111111-bbbb-4bbb-8bbb-111111111111",
     .memory_bytes = 1 << 30},
};
static const node_device g_mock[] = {{.id = "0", .model = "mock", .mock = true}};

static gpu_host_opts _opts(bool nodes)
{
    return (gpu_host_opts){.shim = true,
                           .shim_path = g_shim,
                           .driver_libs = "",
                           .dev_dir = nodes ? g_dev : "/nonexistent-dev",
                           .proc_gpus_dir = g_proc,
                           .ldconfig = g_ldconfig,
                           .devices = nodes ? g_devices : g_mock,
                           .n_devices = nodes ? 2 : 1};
}

/* bundle_write of a kernel (gpu may be NULL) -> the parsed config.json */
static json_t *_bundle(const kernel_gpu *gpu)
{
    static const char *const env[] = {"CUDA_VISIBLE_DEVICES=0", NULL};
    static const char *const argv[] = {"/bin/true", NULL};
    kernel_spec spec = {
        .kernel_id = "k1", .session_id = "s1", .argv = argv, .env = env, .gpu = gpu};
    bundle_params bp = {.spec = &spec,
                        .rootfs = g_rootfs,
                        .netns_path = "/run/netns/tessera-k1",
                        .cgroups_path = "/tessera/k1",
                        .home_dir = "/tmp/home",
                        .etc_dir = "/tmp/etc"};
    ts_err err = {{0}};
    assert_true(bundle_write(g_bundle, &bp, &err));
    char path[512];
    snprintf(path, sizeof(path), "%s/config.json", g_bundle);
    json_t *cfg = json_load_file(path, 0, NULL);
    assert_non_null(cfg);
    return cfg;
}

static json_t *_mount_at(json_t *cfg, const char *dst)
{
    size_t i;
    json_t *m;
    json_array_foreach(json_object_get(cfg, "mounts"), i, m)
    {
        if (strcmp(json_string_value(json_object_get(m, "destination")), dst) == 0) return m;
    }
    return NULL;
}

static bool _has_opt(json_t *m, const char *opt)
{
    size_t i;
    json_t *o;
    json_array_foreach(json_object_get(m, "options"), i, o)
    {
        if (strcmp(json_string_value(o), opt) == 0) return true;
    }
    return false;
}

static const char *_source(json_t *cfg, const char *dst)
{
    json_t *m = _mount_at(cfg, dst);
    return m ? json_string_value(json_object_get(m, "source")) : NULL;
}

static const char *_env(json_t *cfg, const char *key)
{
    size_t i, kl = strlen(key);
    json_t *v;
    json_array_foreach(json_object_get(json_object_get(cfg, "process"), "env"), i, v)
    {
        const char *s = json_string_value(v);
        if (strncmp(s, key, kl) == 0 && s[kl] == '=') return s + kl + 1;
    }
    return NULL;
}

static void test_start_checks_the_shim_path(void **state)
{
    (void)state;
    gpu_host h;
    ts_err err = {{0}};
    gpu_host_opts o = _opts(false);
    o.shim_path = "/nonexistent/libtessera-cuda.so";
    assert_false(gpu_host_init(&h, &o, &err));
    assert_non_null(strstr(err.msg, "agent.cuda_shim_path /nonexistent/libtessera-cuda.so"));
    assert_non_null(strstr(err.msg, "No such file"));
    o.shim_path = "lib/libtessera-cuda.so";
    assert_false(gpu_host_init(&h, &o, &err));
    assert_non_null(strstr(err.msg, "must be an absolute path"));
    o.shim_path = "";
    assert_false(gpu_host_init(&h, &o, &err));
    assert_non_null(strstr(err.msg, "must be an absolute path"));
    o.shim_path = g_tmp; /* a directory */
    assert_false(gpu_host_init(&h, &o, &err));
    assert_non_null(strstr(err.msg, "is not a regular file"));
    /* the shim off, or no GPUs: the path is not used, so not checked */
    o.shim = false;
    assert_true(gpu_host_init(&h, &o, &err));
    gpu_host_free(&h);
    o.shim = true;
    o.n_devices = 0;
    assert_true(gpu_host_init(&h, &o, &err));
    gpu_host_free(&h);
}

static void test_mock_gpu_kernel_gets_shim_preload_config(void **state)
{
    (void)state;
    gpu_host h;
    ts_err err = {{0}};
    gpu_host_opts o = _opts(false);
    assert_true(gpu_host_init(&h, &o, &err));
    assert_false(h.has_nodes);
    assert_int_equal(h.n_driver_libs, 0);
    char conf[512];
    snprintf(conf, sizeof(conf), "%s/cuda-shim.conf", g_kdir);
    _write(conf, "mem_limit = 0:536870912\n");
    const char *ids[] = {"0"};
    kernel_gpu kg;
    assert_true(gpu_kernel_prepare(&h, g_kdir, ids, 1, &kg, &err));

    json_t *cfg = _bundle(&kg);
    char want[512];
    assert_string_equal(_source(cfg, GPU_SHIM_PATH), g_shim);
    assert_true(_has_opt(_mount_at(cfg, GPU_SHIM_PATH), "ro"));
    snprintf(want, sizeof(want), "%s/ld.so.preload", g_kdir);
    assert_string_equal(_source(cfg, "/etc/ld.so.preload"), want);
    assert_true(_has_opt(_mount_at(cfg, "/etc/ld.so.preload"), "ro"));
    assert_string_equal(_source(cfg, "/etc/tessera/cuda-shim.conf"), conf);
    assert_true(_has_opt(_mount_at(cfg, "/etc/tessera/cuda-shim.conf"), "ro"));
    snprintf(want, sizeof(want), "%s/shared", g_kdir);
    assert_string_equal(_source(cfg, "/run/tessera-cuda"), want);
    assert_true(_has_opt(_mount_at(cfg, "/run/tessera-cuda"), "rw"));
    /* mock GPUs: no device nodes, no rules beyond deny-all, env untouched */
    json_t *lx = json_object_get(cfg, "linux");
    assert_null(json_object_get(lx, "devices"));
    assert_int_equal(json_array_size(json_object_get(json_object_get(lx, "resources"), "devices")),
                     1);
    assert_string_equal(_env(cfg, "CUDA_VISIBLE_DEVICES"), "0");
    json_decref(cfg);

    /* the preload file names the shim; the accounting dir is writable by anyone */
    snprintf(want, sizeof(want), "%s/ld.so.preload", g_kdir);
    FILE *f = fopen(want, "r");
    assert_non_null(f);
    char line[256] = "";
    assert_non_null(fgets(line, sizeof(line), f));
    fclose(f);
    assert_string_equal(line, GPU_SHIM_PATH "\n");
    struct stat st;
    snprintf(want, sizeof(want), "%s/shared", g_kdir);
    assert_int_equal(stat(want, &st), 0);
    assert_int_equal(st.st_mode & 07777, 01777);

    /* cleanup leaves nothing, a region file of the shim included */
    snprintf(want, sizeof(want), "%s/shared/tessera-cuda.region", g_kdir);
    _write(want, "region");
    gpu_kernel_cleanup(g_kdir);
    assert_int_equal(access(g_kdir, F_OK), -1);
    assert_int_equal(mkdir(g_kdir, 0755), 0);
    gpu_host_free(&h);
}

static void test_real_nodes_only_allocated_devices_and_libraries(void **state)
{
    (void)state;
    gpu_host h;
    ts_err err = {{0}};
    gpu_host_opts o = _opts(true);
    assert_true(gpu_host_init(&h, &o, &err));
    assert_true(h.has_nodes);
    assert_int_equal(h.minors[0], 1); /* from the procfs entry of its bus id */
    assert_int_equal(h.minors[1], 1); /* no entry: the ordinal */
    /* libcuda.so.1 found (the 64-bit entry), the others are not in the cache */
    assert_int_equal(h.n_driver_libs, 1);
    assert_string_equal(h.driver_libs[0], g_lib);

    const char *ids[] = {"0"};
    kernel_gpu kg;
    assert_true(gpu_kernel_prepare(&h, g_kdir, ids, 1, &kg, &err));
    json_t *cfg = _bundle(&kg);
    json_t *lx = json_object_get(cfg, "linux");
    json_t *devs = json_object_get(lx, "devices");
    assert_true(json_is_array(devs));
    char paths[256] = "";
    size_t i;
    json_t *d;
    json_array_foreach(devs, i, d)
    {
        strcat(paths, json_string_value(json_object_get(d, "path")));
        strcat(paths, " ");
        assert_string_equal(json_string_value(json_object_get(d, "type")), "c");
        assert_int_equal(json_integer_value(json_object_get(d, "major")), 1); /* /dev/null */
        assert_int_equal(json_integer_value(json_object_get(d, "minor")), 3);
    }
    /* nvidia-uvm-tools is absent from this "dev": skipped; nvidia0 is not ours */
    assert_string_equal(paths, "/dev/nvidiactl /dev/nvidia-uvm /dev/nvidia1 ");
    json_t *rules = json_object_get(json_object_get(lx, "resources"), "devices");
    assert_int_equal(json_array_size(rules), 4);
    assert_false(json_is_true(json_object_get(json_array_get(rules, 0), "allow")));
    for (i = 1; i < 4; i++) {
        json_t *r = json_array_get(rules, i);
        assert_true(json_is_true(json_object_get(r, "allow")));
        assert_string_equal(json_string_value(json_object_get(r, "access")), "rwm");
    }
    assert_string_equal(_source(cfg, g_lib), g_lib);
    assert_true(_has_opt(_mount_at(cfg, g_lib), "ro"));
    assert_string_equal(_env(cfg, "CUDA_VISIBLE_DEVICES"), "0");
    assert_non_null(_mount_at(cfg, "/etc/ld.so.preload"));
    json_decref(cfg);

    /* two devices: both nodes, numbered 0,1 in the container */
    const char *two[] = {"1", "0"};
    o.proc_gpus_dir = "/nonexistent-proc"; /* minors = ordinals */
    gpu_host h2;
    assert_true(gpu_host_init(&h2, &o, &err));
    assert_true(gpu_kernel_prepare(&h2, g_kdir, two, 2, &kg, &err));
    cfg = _bundle(&kg);
    assert_string_equal(_env(cfg, "CUDA_VISIBLE_DEVICES"), "0,1");
    devs = json_object_get(json_object_get(cfg, "linux"), "devices");
    assert_string_equal(json_string_value(json_object_get(json_array_get(devs, 2), "path")),
                        "/dev/nvidia1");
    assert_string_equal(json_string_value(json_object_get(json_array_get(devs, 3), "path")),
                        "/dev/nvidia0");
    json_decref(cfg);
    gpu_host_free(&h2);

    /* the shim off: devices and libraries still, no shim, no preload */
    o.shim = false;
    o.shim_path = "/nonexistent";
    assert_true(gpu_host_init(&h2, &o, &err));
    assert_true(gpu_kernel_prepare(&h2, g_kdir, ids, 1, &kg, &err));
    cfg = _bundle(&kg);
    assert_null(_mount_at(cfg, "/etc/ld.so.preload"));
    assert_null(_mount_at(cfg, GPU_SHIM_PATH));
    assert_null(_mount_at(cfg, "/etc/tessera/cuda-shim.conf"));
    assert_non_null(_mount_at(cfg, g_lib));
    assert_int_equal(json_array_size(json_object_get(json_object_get(cfg, "linux"), "devices")), 3);
    json_decref(cfg);
    gpu_host_free(&h2);
    gpu_kernel_cleanup(g_kdir);
    assert_int_equal(mkdir(g_kdir, 0755), 0);
    gpu_host_free(&h);
}

static void test_cpu_kernel_gets_none(void **state)
{
    (void)state;
    json_t *cfg = _bundle(NULL);
    assert_null(_mount_at(cfg, "/etc/ld.so.preload"));
    assert_null(_mount_at(cfg, GPU_SHIM_PATH));
    assert_null(_mount_at(cfg, "/etc/tessera/cuda-shim.conf"));
    assert_null(_mount_at(cfg, "/run/tessera-cuda"));
    json_t *lx = json_object_get(cfg, "linux");
    assert_null(json_object_get(lx, "devices"));
    assert_int_equal(json_array_size(json_object_get(json_object_get(lx, "resources"), "devices")),
                     1);
    json_decref(cfg);
}

static void test_creation_errors(void **state)
{
    (void)state;
    gpu_host h;
    ts_err err = {{0}};
    gpu_host_opts o = _opts(true);
    assert_true(gpu_host_init(&h, &o, &err));
    kernel_gpu kg;
    /* a device this agent does not have */
    const char *bad[] = {"7"};
    assert_false(gpu_kernel_prepare(&h, g_kdir, bad, 1, &kg, &err));
    assert_string_equal(err.msg, "GPU '7' is not a device of this agent");
    /* the shim removed after start */
    char moved[512];
    snprintf(moved, sizeof(moved), "%s.moved", g_shim);
    assert_int_equal(rename(g_shim, moved), 0);
    const char *ids[] = {"1"};
    assert_false(gpu_kernel_prepare(&h, g_kdir, ids, 1, &kg, &err));
    assert_non_null(strstr(err.msg, "cuda shim: agent.cuda_shim_path"));
    assert_non_null(strstr(err.msg, "No such file"));
    assert_int_equal(rename(moved, g_shim), 0);
    /* a device node gone: the bundle is refused, not written half-way */
    assert_true(gpu_kernel_prepare(&h, g_kdir, ids, 1, &kg, &err));
    char node[512];
    snprintf(node, sizeof(node), "%s/nvidia1", g_dev);
    assert_int_equal(unlink(node), 0);
    kernel_spec spec = {.kernel_id = "k1", .session_id = "s1", .gpu = &kg};
    bundle_params bp = {.spec = &spec,
                        .rootfs = g_rootfs,
                        .netns_path = "/run/netns/x",
                        .cgroups_path = "/tessera/k1",
                        .home_dir = "/tmp/home",
                        .etc_dir = "/tmp/etc"};
    assert_false(bundle_write(g_bundle, &bp, &err));
    assert_non_null(strstr(err.msg, "GPU device node"));
    assert_non_null(strstr(err.msg, "nvidia1 is missing"));
    assert_int_equal(symlink("/dev/null", node), 0);
    gpu_kernel_cleanup(g_kdir);
    assert_int_equal(mkdir(g_kdir, 0755), 0);
    gpu_host_free(&h);
}

static char *_slurp(const char *path)
{
    static char buf[4096];
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    size_t n = fread(buf, 1, sizeof(buf) - 1, f);
    buf[n] = '\0';
    fclose(f);
    return buf;
}

/* The conf lists the UUIDs in allocation order (= the container's CUDA
 * ordinals), not in the host's order; a device without a UUID leaves the key
 * out rather than hide that GPU from NVML. */
static void test_shim_conf_carries_uuids_in_ordinal_order(void **state)
{
    (void)state;
    gpu_host h;
    ts_err err = {{0}};
    gpu_host_opts o = _opts(true);
    assert_true(gpu_host_init(&h, &o, &err));
    assert_string_equal(gpu_host_uuid(&h, "1"), g_devices[1].uuid);
    assert_null(gpu_host_uuid(&h, "7"));
    assert_null(gpu_host_uuid(NULL, "0"));

    char path[512];
    snprintf(path, sizeof(path), "%s/cuda-shim.conf", g_kdir);
    gpu_shim_conf c = {.kernel_id = "k1", .mem_limit = "0:1024,1:2048", .compute_share = 0.5};
    c.uuids[c.n_uuids++] = gpu_host_uuid(&h, "1"); /* allocated "1" then "0" */
    c.uuids[c.n_uuids++] = gpu_host_uuid(&h, "0");
    assert_true(gpu_shim_conf_write(path, &c, &err));
    const char *text = _slurp(path);
    assert_non_null(strstr(text, "\nvisible_uuids = GPU-11111111-bbbb-4bbb-8bbb-111111111111,"
                                 "GPU-00000000-aaaa-4aaa-8aaa-000000000000\n"));
    assert_non_null(strstr(text, "\nmem_limit = 0:1024,1:2048\n"));
    assert_non_null(strstr(text, "\ncompute_share = 0.50\n"));
    assert_non_null(strstr(text, "\nshared_dir = " GPU_SHARED_DIR "\n"));

    c.uuids[1] = NULL; /* a device the driver gave no UUID for */
    assert_true(gpu_shim_conf_write(path, &c, &err));
    assert_null(strstr(_slurp(path), "visible_uuids"));
    c.uuids[1] = "";
    assert_true(gpu_shim_conf_write(path, &c, &err));
    assert_null(strstr(_slurp(path), "visible_uuids"));
    unlink(path);

    assert_false(gpu_shim_conf_write("/nonexistent-dir/cuda-shim.conf", &c, &err));
    assert_non_null(strstr(err.msg, "write /nonexistent-dir/cuda-shim.conf"));
    gpu_host_free(&h);
}

/* Mock GPUs: a UUID each, NVML-shaped, distinct, the same after a restart and
 * different on another agent. */
static void test_mock_gpus_have_stable_uuids(void **state)
{
    (void)state;
    node_opts o = {.mock_gpus = 3, .mock_gpu_memory = 1 << 30, .agent_id = "agent-a"};
    node_info a, again, other;
    ts_err err = {{0}};
    assert_true(node_detect(&o, &a, &err));
    assert_true(node_detect(&o, &again, &err));
    o.agent_id = "agent-b";
    assert_true(node_detect(&o, &other, &err));
    assert_int_equal(a.n_devices, 3);
    for (int i = 0; i < 3; i++) {
        const char *u = a.devices[i].uuid;
        assert_int_equal(strlen(u), 40);
        assert_memory_equal(u, "GPU-", 4);
        for (int j = 4; j < 40; j++)
            assert_non_null(
                strchr(j == 12 || j == 17 || j == 22 || j == 27 ? "-" : "0123456789abcdef", u[j]));
        assert_string_equal(u, again.devices[i].uuid);
        assert_string_not_equal(u, other.devices[i].uuid);
        for (int j = 0; j < i; j++)
            assert_string_not_equal(u, a.devices[j].uuid);
    }
    unsigned char b[16];
    for (int i = 0; i < 16; i++)
        b[i] = (unsigned char)(i * 17);
    char s[48];
    node_format_uuid(b, s, sizeof(s));
    assert_string_equal(s, "GPU-00112233-4455-6677-8899-aabbccddeeff");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_start_checks_the_shim_path),
        cmocka_unit_test(test_mock_gpu_kernel_gets_shim_preload_config),
        cmocka_unit_test(test_real_nodes_only_allocated_devices_and_libraries),
        cmocka_unit_test(test_cpu_kernel_gets_none),
        cmocka_unit_test(test_creation_errors),
        cmocka_unit_test(test_shim_conf_carries_uuids_in_ordinal_order),
        cmocka_unit_test(test_mock_gpus_have_stable_uuids),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
