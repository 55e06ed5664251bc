/* test_agent_privileges.c: least privilege inside kernels, seen from inside
 * real containers that the agent's own runtime (runtime.c, bundle.c,
 * seccomp.c, userns.c) starts with runc, as root:
 *
 *   - with the user namespace (agent.userns on, host ids 100000..165535):
 *     uid_map and gid_map show the mapping, the kernel's root is host uid
 *     100000, CapEff/CapPrm/CapBnd are exactly bundle_caps_mask(), CapInh and
 *     CapAmb 0, NoNewPrivs 1, Seccomp 2, also for `runc exec`;
 *   - seccomp: a static probe built here calls the dangerous syscalls (mount,
 *     unshare and clone of namespaces, setns, keyrings, bpf, perf, kexec,
 *     modules, reboot, swap, file handles, userfaultfd, io_uring, clocks, raw
 *     ports, acct, quotactl, syslog, fanotify ...) and each fails with EPERM,
 *     clone3 with ENOSYS; AF_VSOCK, AF_PACKET, AF_ALG and raw sockets are
 *     refused; what CUDA-like programs and tools use (memfd, mremap, mbind,
 *     libaio, futex, epoll, ptrace of a child, process_vm_readv ...) works;
 *   - files: what the kernel writes in its rootfs, /home/work, a vfolder bind
 *     mount (also one below a directory closed to the mapped root, which the
 *     agent stages) belongs to host uid 100000; chown to another container
 *     uid (apt does) lands on 100000 + uid; a read-only vfolder stays so;
 *   - the host: sysfs (its own: only the kernel's interfaces), cgroup and
 *     /proc/sys are read-only; ports below 1024 can be bound;
 *   - GPU device nodes, the CUDA shim files and tessera-term are usable,
 *     read-only where they should be;
 *   - without a user namespace (agent.userns = off): the image's work user
 *     (uid 1000), no capability at all, the same seccomp profile;
 *   - an image user outside the mapping is refused;
 *   - the cost: `runc run` with and without a user namespace, and the
 *     agent's namespace creation, printed;
 *   - the profile itself (without a container): default EPERM, no refused
 *     name allowed, clone/unshare/personality/socket only with arguments,
 *     clone3 ENOSYS.
 *
 * Skips, saying why, only when it cannot run: not root, no runc, busybox,
 * overlayfs, CNI plugins, cc -static, or the agent's helper binaries. */
#include "services/agent/bundle.h"
#include "services/agent/cni.h"
#include "services/agent/container.h"
#include "services/agent/runtime_destroy.h"
#include "services/agent/runtime_start.h"
#include "libcommon/proc.h"
#include "services/agent/gpu_mounts.h"
#include "services/agent/seccomp.h"
#include "services/agent/userns.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "tests/unit/agent/shell_util.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include "libcommon/log.h"

#define BUSYBOX "/bin/busybox"
#define RUNC "runc"
#define NETWORK "tspriv0"
#define SUBNET "10.213.78.0/24"
#define BASE USERNS_DEFAULT_BASE

static char g_tmp[256], g_state[300], g_plain[300], g_shifted[300];
static const char *g_skip;
static runtime *g_rt;     /* agent.userns = on */
static runtime *g_rt_off; /* agent.userns = off */
static char *g_portmap, *g_bridge, *g_sup, *g_term, *g_shim;
static image_info g_img, g_img_off;
static char *g_layer_u[1], *g_layer_o[1];
static const userns_map g_userns = {BASE, USERNS_DEFAULT_SIZE};

/* The probe: one line "<name> <errno>" per call (0: it worked). */
static const char *const PROBE_C =
    "#define _GNU_SOURCE\n"
    "#include <errno.h>\n#include <fcntl.h>\n#include <linux/netlink.h>\n"
    "#include <netinet/in.h>\n#include <sched.h>\n#include <signal.h>\n#include <stdio.h>\n"
    "#include <sys/mman.h>\n#include <sys/personality.h>\n#include <sys/ptrace.h>\n"
    "#include <sys/socket.h>\n#include <sys/syscall.h>\n#include <sys/uio.h>\n"
    "#include <sys/wait.h>\n#include <time.h>\n#include <unistd.h>\n"
    "#define R(n, c) do { errno = 0; long r_ = (long)(c); printf(\"%s %d\\n\", n, r_ == -1 ? "
    "errno : 0); } while (0)\n"
    "int main(void) {\n"
    "  R(\"mount\", syscall(SYS_mount, \"none\", \"/mnt\", \"tmpfs\", 0L, NULL));\n"
    "  R(\"umount2\", syscall(SYS_umount2, \"/proc\", 0));\n"
    "  R(\"pivot_root\", syscall(SYS_pivot_root, \"/\", \"/\"));\n"
    "  R(\"unshare_user\", syscall(SYS_unshare, CLONE_NEWUSER));\n"
    "  R(\"unshare_net\", syscall(SYS_unshare, CLONE_NEWNET));\n"
    "  R(\"unshare_ns\", syscall(SYS_unshare, CLONE_NEWNS));\n"
    "  R(\"unshare_fs\", syscall(SYS_unshare, CLONE_FS | CLONE_FILES));\n"
    "  long c = syscall(SYS_clone, CLONE_NEWUSER | SIGCHLD, 0, 0, 0, 0);\n"
    "  if (c == 0) _exit(0);\n"
    "  if (c > 0) waitpid((pid_t)c, NULL, 0);\n"
    "  printf(\"clone_user %d\\n\", c == -1 ? errno : 0);\n"
    "  R(\"clone3\", syscall(SYS_clone3, NULL, 0));\n"
    "  R(\"setns\", syscall(SYS_setns, -1, 0));\n"
    "  R(\"keyctl\", syscall(SYS_keyctl, -1L, 0, 0, 0, 0));\n"
    "  R(\"add_key\", syscall(SYS_add_key, NULL, NULL, NULL, 0, 0));\n"
    "  R(\"request_key\", syscall(SYS_request_key, NULL, NULL, NULL, 0));\n"
    "  R(\"bpf\", syscall(SYS_bpf, -1, NULL, 0));\n"
    "  R(\"perf_event_open\", syscall(SYS_perf_event_open, NULL, 0, -1, -1, 0));\n"
    "  R(\"kexec_load\", syscall(SYS_kexec_load, 0, 0, NULL, 0));\n"
    "  R(\"init_module\", syscall(SYS_init_module, NULL, 0, \"\"));\n"
    "  R(\"finit_module\", syscall(SYS_finit_module, -1, \"\", 0));\n"
    "  R(\"delete_module\", syscall(SYS_delete_module, \"tessera_none\", 0));\n"
    "  R(\"reboot\", syscall(SYS_reboot, 0, 0, 0, NULL));\n"
    "  R(\"swapon\", syscall(SYS_swapon, \"/nonexistent\", 0));\n"
    "  R(\"swapoff\", syscall(SYS_swapoff, \"/nonexistent\"));\n"
    "  R(\"open_by_handle_at\", syscall(SYS_open_by_handle_at, -1, NULL, 0));\n"
    "  R(\"name_to_handle_at\", syscall(SYS_name_to_handle_at, AT_FDCWD, \"/\", NULL, NULL, 0));\n"
    "  R(\"userfaultfd\", syscall(SYS_userfaultfd, 0));\n"
    "  R(\"io_uring_setup\", syscall(SYS_io_uring_setup, 0, NULL));\n"
    "  R(\"settimeofday\", syscall(SYS_settimeofday, NULL, NULL));\n"
    "  R(\"clock_settime\", syscall(SYS_clock_settime, CLOCK_REALTIME, NULL));\n"
    "#ifdef SYS_iopl\n"
    "  R(\"iopl\", syscall(SYS_iopl, 3));\n"
    "  R(\"ioperm\", syscall(SYS_ioperm, 0x80, 1, 1));\n"
    "#endif\n"
    "  R(\"acct\", syscall(SYS_acct, NULL));\n"
    "  R(\"quotactl\", syscall(SYS_quotactl, 0, NULL, 0, NULL));\n"
    "  R(\"syslog\", syscall(SYS_syslog, 10, NULL, 0));\n"
    "  R(\"fanotify_init\", syscall(SYS_fanotify_init, 0, 0));\n"
    "  R(\"pidfd_getfd\", syscall(SYS_pidfd_getfd, -1, 0, 0));\n"
    "  R(\"personality_rie\", syscall(SYS_personality, 0x0400000));\n"
    "  R(\"socket_vsock\", socket(40, SOCK_STREAM, 0));\n"
    "  R(\"socket_alg\", socket(38, SOCK_SEQPACKET, 0));\n"
    "  R(\"socket_packet\", socket(AF_PACKET, SOCK_RAW, 0));\n"
    "  R(\"socket_raw\", socket(AF_INET, SOCK_RAW, IPPROTO_ICMP));\n"
    "  R(\"socket_inet\", socket(AF_INET, SOCK_STREAM, 0));\n"
    "  R(\"socket_ping\", socket(AF_INET, SOCK_DGRAM, IPPROTO_ICMP));\n"
    "  R(\"socket_inet6\", socket(AF_INET6, SOCK_DGRAM, 0));\n"
    "  R(\"socket_unix\", socket(AF_UNIX, SOCK_STREAM, 0));\n"
    "  R(\"socket_netlink\", socket(AF_NETLINK, SOCK_RAW, NETLINK_ROUTE));\n"
    "  R(\"personality_query\", syscall(SYS_personality, 0xffffffffUL));\n"
    "  R(\"personality_norandom\", syscall(SYS_personality, ADDR_NO_RANDOMIZE));\n"
    "  R(\"memfd_create\", syscall(SYS_memfd_create, \"x\", 0));\n"
    "  char *p = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);\n"
    "  R(\"madvise\", madvise(p, 4096, MADV_DONTNEED));\n"
    "  R(\"get_mempolicy\", syscall(SYS_get_mempolicy, NULL, NULL, 0, NULL, 0));\n"
    "  R(\"mbind\", syscall(SYS_mbind, p, 4096, 0, NULL, 0, 0));\n"
    "  void *q = mremap(p, 4096, 8192, MREMAP_MAYMOVE);\n"
    "  printf(\"mremap %d\\n\", q == MAP_FAILED ? errno : 0);\n"
    "  unsigned long ctx = 0;\n"
    "  R(\"io_setup\", syscall(SYS_io_setup, 1, &ctx));\n"
    "  R(\"eventfd\", syscall(SYS_eventfd2, 0, 0));\n"
    "  R(\"epoll_create1\", syscall(SYS_epoll_create1, 0));\n"
    "  int word = 0;\n"
    "  R(\"futex\", syscall(SYS_futex, &word, 1 /* FUTEX_WAKE */, 1, NULL, NULL, 0));\n"
    "  cpu_set_t cpus;\n"
    "  sched_getaffinity(0, sizeof(cpus), &cpus);\n"
    "  R(\"sched_setaffinity\", sched_setaffinity(0, sizeof(cpus), &cpus));\n"
    "  char src[8] = \"probe\", dst[8] = {0};\n"
    "  struct iovec l = {dst, 6}, r = {src, 6};\n"
    "  R(\"process_vm_readv\", syscall(SYS_process_vm_readv, getpid(), &l, 1, &r, 1, 0));\n"
    "  pid_t child = fork();\n"
    "  if (child == 0) { pause(); _exit(0); }\n"
    "  long a = ptrace(PTRACE_ATTACH, child, NULL, NULL);\n"
    "  int e = a == -1 ? errno : 0;\n"
    "  if (a == 0) { waitpid(child, NULL, 0); ptrace(PTRACE_DETACH, child, NULL, NULL); }\n"
    "  kill(child, SIGKILL);\n"
    "  waitpid(child, NULL, 0);\n"
    "  printf(\"ptrace_attach %d\\n\", e);\n"
    "  R(\"chroot\", chroot(\"/\"));\n"
    "  return 0;\n"
    "}\n";

/* ---- helpers ---------------------------------------------------------------- */

static void assert_owner(const char *path, unsigned uid, unsigned gid)
{
    struct stat st;
    if (lstat(path, &st) != 0) fail_msg("%s: %s", path, strerror(errno));
    if (st.st_uid != uid || st.st_gid != gid)
        fail_msg("%s is owned by %u:%u on the host, want %u:%u", path, (unsigned)st.st_uid,
                 (unsigned)st.st_gid, uid, gid);
}

static char *sibling(const char *rel)
{
    char *p = proc_sibling_path(rel, NULL);
    if (p && access(p, F_OK) == 0) return p;
    free(p);
    return NULL;
}

static const char *why_skip(void)
{
    if (geteuid() != 0) return "not root";
    if (sh("%s --version >/dev/null 2>&1", RUNC) != 0) return "runc not found";
    if (access(BUSYBOX, X_OK) != 0) return "no " BUSYBOX " (apt-get install busybox-static)";
    if (sh("grep -qw overlay /proc/filesystems || modprobe overlay 2>/dev/null") != 0)
        return "no overlayfs";
    if (access("/usr/lib/cni/bridge", X_OK) != 0) return "no CNI plugins in /usr/lib/cni";
    char why[256];
    if (!userns_supported(why, sizeof(why))) return "no user namespaces on this kernel";
    if (!(g_portmap = sibling("../../bin/tessera-portmap")))
        return "no ../../bin/tessera-portmap (make)";
    if (!(g_bridge = sibling("../../bin/tessera-bridge")))
        return "no ../../bin/tessera-bridge (make)";
    if (!(g_sup = sibling("../../bin/tessera-sup"))) return "no ../../bin/tessera-sup (make)";
    g_term = sibling("../../bin/tessera-term");
    g_shim = sibling("../../lib/libtessera-cuda.so");
    return NULL;
}

/* A busybox image layer with the probe in /bin; a copy of it with owners
 * shifted as the image store unpacks it for g_userns. */
static bool make_layers(void)
{
    snprintf(g_plain, sizeof(g_plain), "%s/layer", g_tmp);
    snprintf(g_shifted, sizeof(g_shifted), "%s/layer-shifted", g_tmp);
    char path[400];
    snprintf(path, sizeof(path), "%s/probe.c", g_tmp);
    FILE *f = fopen(path, "w");
    if (!f) return false;
    fputs(PROBE_C, f);
    fclose(f);
    if (sh("cc -static -O1 -o %s/probe %s 2>%s/probe.log", g_tmp, path, g_tmp) != 0) {
        fprintf(stderr, "cannot build the probe (see %s/probe.log)\n", g_tmp);
        return false;
    }
    const char *L = g_plain;
    if (sh("mkdir -p %s/bin %s/etc %s/tmp %s/home/work %s/root %s/mnt && cp %s %s/bin/busybox && "
           "cp %s/probe %s/bin/probe && chmod 1777 %s/tmp && for a in $(%s --list); do [ -e "
           "%s/bin/$a ] || ln -s busybox %s/bin/$a; done && chown 1000:1000 %s/home/work",
           L, L, L, L, L, L, BUSYBOX, L, g_tmp, L, L, BUSYBOX, L, L, L) != 0)
        return false;
    snprintf(path, sizeof(path), "%s/etc/passwd", L);
    if (!(f = fopen(path, "w"))) return false;
    fputs("root:x:0:0:root:/root:/bin/sh\nwork:x:1000:1000:work:/home/work:/bin/sh\n", f);
    fclose(f);
    snprintf(path, sizeof(path), "%s/etc/group", L);
    if (!(f = fopen(path, "w"))) return false;
    fputs("root:x:0:\nwork:x:1000:\n", f);
    fclose(f);
    return sh("cp -a %s %s && chown -R -h %u:%u %s && chown %u:%u %s/home/work", L, g_shifted, BASE,
              BASE, g_shifted, BASE + 1000, BASE + 1000, g_shifted) == 0;
}

static runtime *new_runtime(const userns_map *userns)
{
    runtime_opts o = {.state_dir = g_state,
                      .runc_path = RUNC,
                      .cni_bin_dir = "/usr/lib/cni",
                      .cni_network = NETWORK,
                      .cni_subnet = SUBNET,
                      .cni_portmap = g_portmap,
                      .cni_bridge = g_bridge,
                      .sup_path = g_sup,
                      .port_pool_start = 31130,
                      .port_pool_end = 31139,
                      .log_cap_bytes = 1 << 20,
                      .userns = userns};
    ts_err err = {{0}};
    runtime *rt = runtime_new(&o, &err);
    if (!rt) fprintf(stderr, "runtime_new: %s\n", err.msg);
    return rt;
}

static int group_setup(void **state)
{
    (void)state;
    if (getenv("TEST_DEBUG")) tlog_min_level = TLOG_LEVEL_DEBUG;
    g_skip = why_skip();
    if (g_skip) {
        fprintf(stderr, "test_agent_privileges: skipping: %s\n", g_skip);
        return 0;
    }
    snprintf(g_tmp, sizeof(g_tmp), "/var/tmp/tessera-priv-XXXXXX");
    if (!mkdtemp(g_tmp)) return -1;
    /* mkdtemp makes 0700: the containers' root must pass it to its kernels */
    if (chmod(g_tmp, 0711) != 0) return -1;
    if (sh("cc --version >/dev/null 2>&1") != 0) {
        g_skip = "no C compiler for the probe";
        return 0;
    }
    if (!make_layers()) return -1;
    snprintf(g_state, sizeof(g_state), "%s/state", g_tmp);
    g_rt = new_runtime(&g_userns);
    g_rt_off = new_runtime(NULL);
    if (!g_rt || !g_rt_off) return -1;
    static char ref[] = "local/busybox:privileges";
    g_layer_u[0] = g_shifted;
    g_layer_o[0] = g_plain;
    g_img = (image_info){.reference = ref, .layer_dirs = g_layer_u, .n_layers = 1};
    g_img_off = (image_info){.reference = ref, .layer_dirs = g_layer_o, .n_layers = 1};
    return 0;
}

static int group_teardown(void **state)
{
    (void)state;
    /* kernels a failed test left */
    char **ids = NULL;
    int n = 0;
    ts_err lerr = {{0}};
    if (g_rt && !runtime_list(g_rt, &ids, &n, &lerr))
        fprintf(stderr, "leftover kernels unknown: %s\n", lerr.msg);
    for (int i = 0; i < n; i++) {
        ts_err err = {{0}};
        if (!runtime_destroy(g_rt, ids[i], 0, &err))
            fprintf(stderr, "leftover kernel %s: %s\n", ids[i], err.msg);
        free(ids[i]);
    }
    free(ids);
    runtime_free(g_rt);
    runtime_free(g_rt_off);
    free(g_portmap);
    free(g_bridge);
    free(g_sup);
    free(g_term);
    free(g_shim);
    if (!g_skip) {
        cni_masq_remove(NETWORK, SUBNET);
        sh("ip link del " NETWORK " 2>/dev/null");
    }
    if (g_tmp[0] && !getenv("TESSERA_KEEP_STATE"))
        sh("umount -R %s/state/kernels/*/bundle/rootfs 2>/dev/null; rm -rf %s", g_tmp, g_tmp);
    return 0;
}

#define SKIP_IF_UNAVAILABLE()                                                                      \
    do {                                                                                           \
        if (g_skip) {                                                                              \
            fprintf(stderr, "skipped: %s\n", g_skip);                                              \
            skip();                                                                                \
        }                                                                                          \
    } while (0)

static kernel_spec base_spec(const char *id, const image_info *img)
{
    kernel_spec s = {.kernel_id = id,
                     .session_id = "sess-priv",
                     .hostname = "k-priv",
                     .image = img,
                     .shm_bytes = 8 << 20};
    return s;
}

static void start_ok(runtime *rt, const kernel_spec *s)
{
    kernel_status st;
    ts_err err = {{0}};
    if (!runtime_start(rt, s, &st, &err)) fail_msg("start: %s", err.msg);
    assert_int_equal(st.state, KERNEL_RUNNING);
}

static void destroy_ok(runtime *rt, const char *id)
{
    ts_err err = {{0}};
    if (!runtime_destroy(rt, id, 200, &err)) fail_msg("destroy: %s", err.msg);
    char *mounts = read_text("/proc/self/mountinfo");
    assert_non_null(mounts);
    if (strstr(mounts, id)) fail_msg("a mount of kernel %s remains", id);
    free(mounts);
    char path[512];
    snprintf(path, sizeof(path), "%s/kernels/%s", g_state, id);
    if (access(path, F_OK) == 0) fail_msg("kernel dir %s remains", path);
}

/* `sh -c script` in the kernel; its stdout (heap). */
static char *run_sh(runtime *rt, const char *id, const char *script)
{
    const char *argv[] = {"sh", "-c", script, NULL};
    exec_result r;
    ts_err err = {{0}};
    if (!runtime_exec(rt, id, argv, NULL, 20000, 1 << 16, &r, &err))
        fail_msg("exec %s: %s", script, err.msg);
    if (r.exit_code != 0)
        fail_msg("`%s` exited with %d: %s%s", script, r.exit_code, r.out ? r.out : "",
                 r.err ? r.err : "");
    char *out = r.out;
    r.out = NULL;
    exec_result_free(&r);
    return out;
}

/* The value of "<key>:\t..." in a /proc/<pid>/status text, or "". */
static const char *status_field(const char *text, const char *key, char *buf, size_t size)
{
    char k[64];
    snprintf(k, sizeof(k), "\n%s:\t", key);
    const char *p = strstr(text, k);
    buf[0] = '\0';
    if (p) snprintf(buf, size, "%.*s", (int)strcspn(p + strlen(k), "\n"), p + strlen(k));
    return buf;
}

static void assert_caps(const char *status, uint64_t want)
{
    char hex[32], buf[64];
    snprintf(hex, sizeof(hex), "%016llx", (unsigned long long)want);
    static const char *const sets[] = {"CapPrm", "CapEff", "CapBnd"};
    for (size_t i = 0; i < TS_ARRAY_LEN(sets); i++)
        if (strcmp(status_field(status, sets[i], buf, sizeof(buf)), hex) != 0)
            fail_msg("%s %s, want %s", sets[i], buf, hex);
    assert_string_equal(status_field(status, "CapInh", buf, sizeof(buf)), "0000000000000000");
    assert_string_equal(status_field(status, "CapAmb", buf, sizeof(buf)), "0000000000000000");
    assert_string_equal(status_field(status, "NoNewPrivs", buf, sizeof(buf)), "1");
    assert_string_equal(status_field(status, "Seccomp", buf, sizeof(buf)), "2");
}

/* The probe's answer for name: errno, 0 when the call worked. */
static int probe_result(const char *out, const char *name)
{
    char k[64];
    snprintf(k, sizeof(k), "\n%s ", name);
    char *text = ts_asprintf("\n%s", out);
    const char *p = strstr(text, k);
    if (!p) fail_msg("the probe did not report %s:\n%s", name, out);
    int v = atoi(p + strlen(k));
    free(text);
    return v;
}

/* Every dangerous call fails with EPERM (clone3: ENOSYS), the rest works. */
static void assert_probe(const char *out, bool root_caps)
{
    static const char *const refused[] = {
        "mount",
        "umount2",
        "pivot_root",
        "unshare_user",
        "unshare_net",
        "unshare_ns",
        "clone_user",
        "setns",
        "keyctl",
        "add_key",
        "request_key",
        "bpf",
        "perf_event_open",
        "kexec_load",
        "init_module",
        "finit_module",
        "delete_module",
        "reboot",
        "swapon",
        "swapoff",
        "open_by_handle_at",
        "name_to_handle_at",
        "userfaultfd",
        "io_uring_setup",
        "settimeofday",
        "clock_settime",
        "acct",
        "quotactl",
        "syslog",
        "fanotify_init",
        "pidfd_getfd",
        "personality_rie",
        "socket_vsock",
        "socket_alg",
        "socket_packet",
        "socket_raw",
    };
    for (size_t i = 0; i < TS_ARRAY_LEN(refused); i++) {
        int e = probe_result(out, refused[i]);
        if (e != EPERM) fail_msg("%s: errno %d (%s), want EPERM", refused[i], e, strerror(e));
    }
#if defined(__x86_64__)
    assert_int_equal(probe_result(out, "iopl"), EPERM);
    assert_int_equal(probe_result(out, "ioperm"), EPERM);
#endif
    int e = probe_result(out, "clone3");
    if (e != ENOSYS) fail_msg("clone3: errno %d (%s), want ENOSYS", e, strerror(e));
    static const char *const allowed[] = {
        "unshare_fs",   "socket_inet",       "socket_ping",       "socket_inet6",
        "socket_unix",  "socket_netlink",    "personality_query", "personality_norandom",
        "memfd_create", "madvise",           "get_mempolicy",     "mbind",
        "mremap",       "io_setup",          "eventfd",           "epoll_create1",
        "futex",        "sched_setaffinity", "process_vm_readv",  "ptrace_attach",
    };
    for (size_t i = 0; i < TS_ARRAY_LEN(allowed); i++) {
        e = probe_result(out, allowed[i]);
        if (e != 0) fail_msg("%s: errno %d (%s), want success", allowed[i], e, strerror(e));
    }
    /* chroot needs CAP_SYS_CHROOT: root of its user namespace has it */
    assert_int_equal(probe_result(out, "chroot"), root_caps ? 0 : EPERM);
}

static char *kpath(const char *id, const char *rel)
{
    return ts_asprintf("%s/kernels/%s/%s", g_state, id, rel);
}

/* ---- the profile itself (no container) -------------------------------------------- */

/* Default deny with EPERM; no refused name allowed, none named twice; the
 * argument rules and clone3's ENOSYS are there. */
static void test_seccomp_profile_lists(void **state)
{
    (void)state;
    size_t n = 0;
    for (const char *const *a = seccomp_allowed; *a; a++, n++) {
        for (const char *const *r = seccomp_refused; *r; r++)
            if (strcmp(*a, *r) == 0) fail_msg("%s is both allowed and refused", *a);
        for (const char *const *b = a + 1; *b; b++)
            if (strcmp(*a, *b) == 0) fail_msg("%s is allowed twice", *a);
        static const char *const argful[] = {"clone", "clone3", "unshare", "personality", "socket"};
        for (size_t i = 0; i < TS_ARRAY_LEN(argful); i++)
            if (strcmp(*a, argful[i]) == 0) fail_msg("%s is allowed whatever its arguments", *a);
    }
    assert_true(n > 250);
    json_t *p = seccomp_default_profile();
    assert_string_equal(json_string_value(json_object_get(p, "defaultAction")), "SCMP_ACT_ERRNO");
    assert_int_equal(json_integer_value(json_object_get(p, "defaultErrnoRet")), EPERM);
    int clone3 = 0, socket_rules = 0, clone_rules = 0;
    size_t i;
    json_t *r;
    json_array_foreach(json_object_get(p, "syscalls"), i, r)
    {
        const char *first = json_string_value(json_array_get(json_object_get(r, "names"), 0));
        const char *action = json_string_value(json_object_get(r, "action"));
        if (strcmp(first, "clone3") == 0) {
            assert_string_equal(action, "SCMP_ACT_ERRNO");
            assert_int_equal(json_integer_value(json_object_get(r, "errnoRet")), ENOSYS);
            clone3++;
        }
        if (strcmp(first, "socket") == 0) socket_rules++;
        if (strcmp(first, "clone") == 0) {
            json_t *arg = json_array_get(json_object_get(r, "args"), 0);
            assert_string_equal(json_string_value(json_object_get(arg, "op")),
                                "SCMP_CMP_MASKED_EQ");
            assert_int_equal(json_integer_value(json_object_get(arg, "value")), 0x7E020000);
            assert_int_equal(json_integer_value(json_object_get(arg, "valueTwo")), 0);
            clone_rules++;
        }
    }
    assert_int_equal(clone3, 1);
    assert_int_equal(clone_rules, 1);
    assert_int_equal(socket_rules, 4);
    json_decref(p);
}

/* ---- with a user namespace ------------------------------------------------------ */

static void test_userns_identity_caps_seccomp(void **state)
{
    (void)state;
    SKIP_IF_UNAVAILABLE();
    char id[TS_UUID_STRLEN];
    ts_uuid4(id);
    kernel_spec s = base_spec(id, &g_img);
    start_ok(g_rt, &s);

    char *out = run_sh(g_rt, id, "cat /proc/self/uid_map /proc/self/gid_map; id -u; id -g");
    char want[256];
    snprintf(want, sizeof(want), "%10u %10u %10u\n%10u %10u %10u\n0\n0\n", 0u, BASE,
             USERNS_DEFAULT_SIZE, 0u, BASE, USERNS_DEFAULT_SIZE);
    assert_string_equal(out, want);
    free(out);
    /* the kernel's init (runc run) and an exec'd process (runc exec): CHOWN,
     * DAC_OVERRIDE, FOWNER, FSETID, KILL, SETGID, SETUID, SETPCAP,
     * NET_BIND_SERVICE, SYS_CHROOT and nothing else */
    assert_int_equal(bundle_caps_mask(), 0x00000000000405fbULL);
    out = run_sh(g_rt, id, "cat /proc/1/status");
    assert_caps(out, bundle_caps_mask());
    free(out);
    out = run_sh(g_rt, id, "cat /proc/self/status");
    assert_caps(out, bundle_caps_mask());
    free(out);
    /* seen from the host: an unprivileged user */
    char *pidf = kpath(id, "init.pid");
    char *pid = read_text(pidf);
    assert_non_null(pid);
    char path[64], buf[64];
    snprintf(path, sizeof(path), "/proc/%d/status", atoi(pid));
    char *host = read_text(path);
    assert_non_null(host);
    snprintf(want, sizeof(want), "%u\t%u\t%u\t%u", BASE, BASE, BASE, BASE);
    assert_string_equal(status_field(host, "Uid", buf, sizeof(buf)), want);
    assert_string_equal(status_field(host, "Gid", buf, sizeof(buf)), want);
    free(host);
    free(pid);
    free(pidf);

    out = run_sh(g_rt, id, "/bin/probe");
    assert_probe(out, true);
    free(out);
    destroy_ok(g_rt, id);
}

static void test_userns_files_owned_by_mapped_root(void **state)
{
    (void)state;
    SKIP_IF_UNAVAILABLE();
    char id[TS_UUID_STRLEN];
    ts_uuid4(id);
    /* vfolders as tessera-vfolder makes them (vfolder.file_owner 100000:100000),
     * one below a directory the mapped root cannot pass */
    char rw[400], ro[400], closed[400], staged[400];
    snprintf(rw, sizeof(rw), "%s/vf-rw-%.8s", g_tmp, id);
    snprintf(ro, sizeof(ro), "%s/vf-ro-%.8s", g_tmp, id);
    snprintf(closed, sizeof(closed), "%s/closed-%.8s", g_tmp, id);
    snprintf(staged, sizeof(staged), "%s/vf", closed);
    assert_int_equal(sh("mkdir -p %s %s %s && chown %u:%u %s %s %s && chmod 0700 %s", rw, ro,
                        staged, BASE, BASE, rw, ro, staged, closed),
                     0);
    bind_mount mounts[] = {
        {.host_path = rw, .container_path = "/home/work/rw"},
        {.host_path = ro, .container_path = "/home/work/ro", .read_only = true},
        {.host_path = staged, .container_path = "/home/work/staged"},
    };
    kernel_spec s = base_spec(id, &g_img);
    s.mounts = mounts;
    s.n_mounts = 3;
    start_ok(g_rt, &s);
    /* the staged bind is the container's only: none is left on the host */
    char *mi = read_text("/proc/self/mountinfo");
    assert_null(strstr(mi, staged));
    free(mi);
    char *binds = kpath(id, "binds");
    assert_int_not_equal(access(binds, F_OK), 0);
    free(binds);

    char *out =
        run_sh(g_rt, id,
               "touch /rootfile && mkdir -p /opt/pkg && touch /opt/pkg/bin && "
               "echo a > /home/work/h && echo b > /home/work/rw/f && "
               "echo c > /home/work/staged/f && touch /tmp/t && "
               "chown 1000:1000 /tmp/t /home/work/rw/f && chown 123:45 /opt/pkg/bin && "
               "(echo x > /home/work/ro/f 2>/dev/null && echo ro-written || echo ro-refused) "
               "&& (chown 70000 /tmp/t 2>/dev/null && echo unmapped-chowned || echo "
               "unmapped-refused) && echo '10.0.0.9 extra' >> /etc/hosts && echo done");
    assert_string_equal(out, "ro-refused\nunmapped-refused\ndone\n");
    free(out);
    char *p;
    assert_owner(p = kpath(id, "upper/rootfile"), BASE, BASE);
    free(p);
    assert_owner(p = kpath(id, "upper/opt/pkg"), BASE, BASE);
    free(p);
    assert_owner(p = kpath(id, "upper/opt/pkg/bin"), BASE + 123, BASE + 45);
    free(p);
    assert_owner(p = kpath(id, "upper/tmp/t"), BASE + 1000, BASE + 1000);
    free(p);
    assert_owner(p = kpath(id, "home/h"), BASE, BASE);
    free(p);
    assert_owner(p = kpath(id, "home"), BASE, BASE);
    free(p);
    assert_owner(p = kpath(id, "etc/hosts"), BASE, BASE);
    free(p);
    char f[500];
    snprintf(f, sizeof(f), "%s/f", rw);
    assert_owner(f, BASE + 1000, BASE + 1000);
    snprintf(f, sizeof(f), "%s/f", staged);
    assert_owner(f, BASE, BASE);
    snprintf(f, sizeof(f), "%s/f", ro);
    assert_int_not_equal(access(f, F_OK), 0);
    p = kpath(id, "etc/hosts");
    char *hosts = read_text(p);
    free(p);
    assert_non_null(strstr(hosts, "10.0.0.9 extra"));
    free(hosts);
    destroy_ok(g_rt, id);
    /* the vfolders outlive the kernel */
    snprintf(f, sizeof(f), "%s/f", staged);
    assert_int_equal(access(f, F_OK), 0);
}

static void test_userns_host_read_only(void **state)
{
    (void)state;
    SKIP_IF_UNAVAILABLE();
    char id[TS_UUID_STRLEN];
    ts_uuid4(id);
    kernel_spec s = base_spec(id, &g_img);
    start_ok(g_rt, &s);
    /* every mount at or below /sys, and /proc/sys, is read-only (but the
     * tmpfs runc puts at /sys/fs/cgroup to hold the cgroup mounts, the
     * container's own); the sysfs is the kernel's own (its interfaces only);
     * a port below 1024 binds */
    char *out =
        run_sh(g_rt, id,
               "awk '{ for (i = 7; $i != \"-\"; i++); split($6, o, \",\"); "
               "if ($5 ~ /^\\/sys/ || $5 == \"/proc/sys\" || $5 == \"/proc/sysrq-trigger\") "
               "print $5, o[1], $(i + 1) }' /proc/self/mountinfo | "
               "grep -v -e ' ro ' -e '^/sys/fs/cgroup rw tmpfs$' || true; "
               "grep -c ' /sys/fs/cgroup/memory ro,.* - cgroup ' /proc/self/mountinfo; "
               "ls /sys/class/net | tr '\\n' ' '; echo; "
               "(echo 1 > /sys/kernel/mm/ksm/run) 2>/dev/null && echo sys-written; "
               "(echo x > /sys/fs/cgroup/pids/pids.max) 2>/dev/null && echo cgroup-written; "
               "(echo h > /proc/sys/kernel/hostname) 2>/dev/null && echo proc-sys-written; "
               "(nc -l -p 80 >/dev/null 2>&1 &); sleep 0.3; netstat -ltn | grep -c ':80 '");
    assert_string_equal(out, "1\neth0 lo \n1\n");
    free(out);
    destroy_ok(g_rt, id);
}

static void test_userns_image_user_outside_mapping(void **state)
{
    (void)state;
    SKIP_IF_UNAVAILABLE();
    char id[TS_UUID_STRLEN];
    ts_uuid4(id);
    image_info img = g_img;
    img.user = "70000";
    kernel_spec s = base_spec(id, &img);
    kernel_status st;
    ts_err err = {{0}};
    assert_false(runtime_start(g_rt, &s, &st, &err));
    if (!strstr(err.msg, "outside the user namespace")) fail_msg("%s", err.msg);
    char path[512];
    snprintf(path, sizeof(path), "%s/kernels/%s", g_state, id);
    assert_int_not_equal(access(path, F_OK), 0);
    /* an image user inside it runs as that user, mapped */
    ts_uuid4(id);
    img.user = "work";
    s = base_spec(id, &img);
    start_ok(g_rt, &s);
    char *out = run_sh(g_rt, id, "id -u; id -g; touch /home/work/w && echo ok");
    assert_string_equal(out, "1000\n1000\nok\n");
    free(out);
    char *p = kpath(id, "home/w");
    assert_owner(p, BASE + 1000, BASE + 1000);
    free(p);
    destroy_ok(g_rt, id);
}

/* GPU device nodes (here /dev/null and /dev/zero under NVIDIA names), the
 * CUDA shim's files, a driver library and tessera-term in a kernel with a
 * user namespace: runc binds the nodes (no mknod there). */
static void test_userns_gpu_and_term_mounts(void **state)
{
    (void)state;
    SKIP_IF_UNAVAILABLE();
    char dev[400], lib[400], gpu_dir[400], kdir[500];
    snprintf(dev, sizeof(dev), "%s/dev", g_tmp);
    snprintf(lib, sizeof(lib), "%s/libfake-driver.so.1", g_tmp);
    snprintf(gpu_dir, sizeof(gpu_dir), "%s/gpu", g_tmp);
    assert_int_equal(sh("mkdir -p %s %s && rm -f %s/nvidia* && mknod %s/nvidiactl c 1 3 && "
                        "mknod %s/nvidia0 c 1 5 && chmod 0666 %s/nvidia* && echo fake-driver > %s",
                        dev, gpu_dir, dev, dev, dev, dev, lib),
                     0);
    static const node_device devs[] = {
        {.id = "0", .model = "fake", .uuid = "GPU-00000000-1111-4222-8333-444444444444"}};
    gpu_host_opts go = {.shim = g_shim != NULL,
                        .shim_path = g_shim,
                        .driver_libs = lib,
                        .dev_dir = dev,
                        .proc_gpus_dir = "/nonexistent",
                        .devices = devs,
                        .n_devices = 1};
    gpu_host h;
    ts_err err = {{0}};
    if (!gpu_host_init(&h, &go, &err)) fail_msg("gpu_host_init: %s", err.msg);
    char id[TS_UUID_STRLEN];
    ts_uuid4(id);
    snprintf(kdir, sizeof(kdir), "%s/%s", gpu_dir, id);
    assert_int_equal(mkdir(kdir, 0755), 0);
    gpu_shim_conf conf = {.kernel_id = id, .mem_limit = "0:1073741824", .compute_share = 1.0};
    char conf_path[600];
    snprintf(conf_path, sizeof(conf_path), "%s/cuda-shim.conf", kdir);
    if (!gpu_shim_conf_write(conf_path, &conf, &err)) fail_msg("%s", err.msg);
    const char *ids[] = {"0"};
    kernel_gpu kg;
    if (!gpu_kernel_prepare(&h, kdir, ids, 1, &kg, &err)) fail_msg("%s", err.msg);
    kernel_spec s = base_spec(id, &g_img);
    s.gpu = &kg;
    s.term_path = g_term;
    start_ok(g_rt, &s);
    char script[2048];
    snprintf(script, sizeof(script),
             "echo x > /dev/nvidiactl && echo ctl-ok; head -c 3 /dev/nvidia0 | od -An -tx1; "
             "echo $CUDA_VISIBLE_DEVICES; cat %s; (echo y >> %s) 2>/dev/null || echo lib-ro; "
             "if [ -e %s ]; then cat %s | head -1; cat /etc/ld.so.preload; "
             "test -r %s && echo shim-readable; (echo >> %s) 2>/dev/null || echo shim-ro; "
             "touch %s/x && echo shared-rw; fi; "
             "if [ -e /opt/tessera/bin/tessera-term ]; then test -x /opt/tessera/bin/tessera-term "
             "&& echo term-exec; (echo >> /opt/tessera/bin/tessera-term) 2>/dev/null || echo "
             "term-ro; fi",
             lib, lib, GPU_SHIM_PATH, GPU_CONF_PATH, GPU_SHIM_PATH, GPU_SHIM_PATH, GPU_SHARED_DIR);
    char *out = run_sh(g_rt, id, script);
    char want[1024];
    int n = snprintf(want, sizeof(want), "ctl-ok\n 00 00 00\n0\nfake-driver\nlib-ro\n");
    if (g_shim)
        n += snprintf(want + n, sizeof(want) - (size_t)n,
                      "# written by tessera-agent for kernel %s\n%s\nshim-readable\nshim-ro\n"
                      "shared-rw\n",
                      id, GPU_SHIM_PATH);
    if (g_term) snprintf(want + n, sizeof(want) - (size_t)n, "term-exec\nterm-ro\n");
    assert_string_equal(out, want);
    free(out);
    destroy_ok(g_rt, id);
    gpu_kernel_cleanup(kdir);
    gpu_host_free(&h);
    if (!g_shim) fprintf(stderr, "  (no ../../lib/libtessera-cuda.so: shim mounts not checked)\n");
    if (!g_term) fprintf(stderr, "  (no ../../bin/tessera-term: its mount not checked)\n");
}

/* ---- without a user namespace: the work user, no capabilities -------------------- */

static void test_off_work_user_without_caps(void **state)
{
    (void)state;
    SKIP_IF_UNAVAILABLE();
    char id[TS_UUID_STRLEN];
    ts_uuid4(id);
    kernel_spec s = base_spec(id, &g_img_off);
    start_ok(g_rt_off, &s);
    char *out = run_sh(g_rt_off, id,
                       "cat /proc/self/uid_map; id -u; id -g; touch /home/work/f && echo home-ok; "
                       "(touch /x 2>/dev/null && echo root-written) || echo root-refused; "
                       "touch /tmp/t && echo tmp-ok");
    char want[256];
    snprintf(want, sizeof(want), "%10u %10u %10u\n1000\n1000\nhome-ok\nroot-refused\ntmp-ok\n", 0u,
             0u, 4294967295u);
    assert_string_equal(out, want);
    free(out);
    out = run_sh(g_rt_off, id, "cat /proc/1/status");
    assert_caps(out, 0);
    free(out);
    out = run_sh(g_rt_off, id, "cat /proc/self/status");
    assert_caps(out, 0);
    free(out);
    char *p = kpath(id, "home/f");
    assert_owner(p, 1000, 1000);
    free(p);
    out = run_sh(g_rt_off, id, "/bin/probe");
    assert_probe(out, false);
    free(out);
    destroy_ok(g_rt_off, id);

    /* a non-root image user is kept; root is never used */
    ts_uuid4(id);
    image_info img = g_img_off;
    img.user = "2000:3000";
    s = base_spec(id, &img);
    start_ok(g_rt_off, &s);
    out = run_sh(g_rt_off, id, "id -u; id -g");
    assert_string_equal(out, "2000\n3000\n");
    free(out);
    destroy_ok(g_rt_off, id);
    ts_uuid4(id);
    img.user = "1234:0"; /* gid 0 is root's group on the host: the work user instead */
    s = base_spec(id, &img);
    start_ok(g_rt_off, &s);
    out = run_sh(g_rt_off, id, "id -u; id -g");
    assert_string_equal(out, "1000\n1000\n");
    free(out);
    destroy_ok(g_rt_off, id);
}

/* ---- the price ---------------------------------------------------------------------- */

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}

static void report(const char *what, int64_t *us, int n)
{
    qsort(us, (size_t)n, sizeof(us[0]), cmp_i64);
    fprintf(stderr, "  %-58s p50 %6.1f ms  p90 %6.1f ms (n=%d)\n", what, us[n / 2] / 1000.0,
            us[(n * 9) / 10] / 1000.0, n);
}

/* A bare bundle for `runc run` from a kernel's config.json: args `true`, no
 * bind mounts, runc's own new namespaces (no paths); without the user
 * namespace when userns is false, on a copy of the matching layer. */
static void bare_bundle(const char *config, const char *dir, bool userns)
{
    assert_int_equal(sh("rm -rf %s && mkdir -p %s && cp -a %s %s/rootfs && mkdir -p "
                        "%s/rootfs/home/work",
                        dir, dir, userns ? g_shifted : g_plain, dir, dir),
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
    json_object_set_new(linux_, "cgroupsPath", json_string("/tessera-priv-bare"));
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
        snprintf(up, sizeof(up), "%s/userns-par-%d", g_tmp, w->idx);
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
    char id[TS_UUID_STRLEN];
    ts_uuid4(id);
    kernel_spec s = base_spec(id, &g_img);
    start_ok(g_rt, &s);
    char *config = kpath(id, "bundle/config.json");
    char with[400], without[400];
    snprintf(with, sizeof(with), "%s/bare-userns", g_tmp);
    snprintf(without, sizeof(without), "%s/bare-plain", g_tmp);
    bare_bundle(config, with, true);
    bare_bundle(config, without, false);
    free(config);
    destroy_ok(g_rt, id);
    int64_t u[N], p[N], nsu[NS], nsp[NS], su[START], so[START];
    for (int i = 0; i < N; i++) {
        const char *dirs[] = {with, without};
        int64_t *dst[] = {u, p};
        for (int k = 0; k < 2; k++) {
            char cmd[1024];
            snprintf(cmd, sizeof(cmd), "%s run --bundle %s tessera-priv-bare-%d-%d >/dev/null 2>&1",
                     RUNC, dirs[k], k, i);
            int64_t t0 = ts_now_mono_us();
            int rc = system(cmd);
            dst[k][i] = ts_now_mono_us() - t0;
            if (rc != 0) fail_msg("bare runc run (%s) failed: %d", dirs[k], rc);
        }
    }
    sh("rmdir /sys/fs/cgroup/*/tessera-priv-bare 2>/dev/null");
    /* what the agent adds per kernel: user + network namespace vs network only */
    for (int i = 0; i < NS; i++) {
        char up[400], np[64];
        snprintf(up, sizeof(up), "%s/userns-probe", g_tmp);
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
        runtime *rts[] = {g_rt, g_rt_off};
        const image_info *imgs[] = {&g_img, &g_img_off};
        int64_t *dst[] = {su, so};
        for (int k = 0; k < 2; k++) {
            ts_uuid4(id);
            s = base_spec(id, imgs[k]);
            int64_t t0 = ts_now_mono_us();
            start_ok(rts[k], &s);
            dst[k][i] = ts_now_mono_us() - t0;
            destroy_ok(rts[k], id);
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
        cmocka_unit_test(test_seccomp_profile_lists),
        cmocka_unit_test(test_userns_identity_caps_seccomp),
        cmocka_unit_test(test_userns_files_owned_by_mapped_root),
        cmocka_unit_test(test_userns_host_read_only),
        cmocka_unit_test(test_userns_image_user_outside_mapping),
        cmocka_unit_test(test_userns_gpu_and_term_mounts),
        cmocka_unit_test(test_off_work_user_without_caps),
        cmocka_unit_test(test_userns_parallel_creates_do_not_hang),
        cmocka_unit_test(test_cost_of_the_user_namespace),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
