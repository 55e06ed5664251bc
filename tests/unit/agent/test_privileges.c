/* test_privileges.c: least privilege inside kernels, seen from inside
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
 *   - an image user outside the mapping is refused.
 * The profile itself: test_seccomp.c; the cost of the user namespace:
 * test_runtime_cost.c.
 *
 * Skips, saying why, only when it cannot run: not root, no runc, busybox,
 * overlayfs, CNI plugins, cc -static, or the agent's helper binaries. */
#include "tests/unit/agent/kernel_fixture.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <sys/sysmacros.h>

#include "services/agent/bundle.h"
#include "services/agent/gpu_mounts.h"

#define BASE USERNS_DEFAULT_BASE

static kfix F = {.name = "test_privileges",
                 .network = "tspriv0",
                 .subnet = "10.213.78.0/24",
                 .port_start = 31130,
                 .port_end = 31139,
                 .log_cap = 1 << 20};
static kf_pair P; /* P.rt: agent.userns = on, P.rt_off: off */
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

/* The probe, built static in <tmp>/probe (put in the image's /bin). */
static bool make_probe(char *path, size_t size)
{
    char src[400];
    snprintf(src, sizeof(src), "%s/probe.c", F.tmp);
    FILE *f = fopen(src, "w");
    if (!f) return false;
    fputs(PROBE_C, f);
    fclose(f);
    snprintf(path, size, "%s/probe", F.tmp);
    if (sh("cc -static -O1 -o %s %s 2>%s/probe.log", path, src, F.tmp) == 0) return true;
    fprintf(stderr, "cannot build the probe (see %s/probe.log)\n", F.tmp);
    return false;
}

static int group_setup(void **state)
{
    (void)state;
    if (!kf_begin(&F, "/var/tmp/tessera-priv-XXXXXX", true)) return -1;
    if (F.skip) return 0;
    if (sh("cc --version >/dev/null 2>&1") != 0) {
        F.skip = "no C compiler for the probe";
        return 0;
    }
    char probe[400];
    if (!make_probe(probe, sizeof(probe)) || !kf_pair_make(&F, &P, &g_userns, probe)) return -1;
    return 0;
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
    return kf_spec(id, img, "sess-priv", "k-priv");
}

static void start_ok(runtime *rt, const kernel_spec *s)
{
    kernel_status st;
    kf_start_ok(rt, s, &st);
    assert_int_equal(st.state, KERNEL_RUNNING);
}

/* A new kernel of img on rt, running; its id in id. */
static void start_new(runtime *rt, const image_info *img, char id[TS_UUID_STRLEN])
{
    ts_uuid4(id);
    kernel_spec s = base_spec(id, img);
    start_ok(rt, &s);
}

static void destroy_ok(runtime *rt, const char *id)
{
    kf_destroy_ok(rt, id, 200);
    char *mounts = read_text("/proc/self/mountinfo");
    assert_non_null(mounts);
    if (strstr(mounts, id)) fail_msg("a mount of kernel %s remains", id);
    free(mounts);
    char path[512];
    snprintf(path, sizeof(path), "%s/kernels/%s", F.state, id);
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
    return kf_kpath(&F, id, rel);
}

/* ---- with a user namespace ------------------------------------------------------ */

static void test_userns_identity_caps_seccomp(void **state)
{
    (void)state;
    SKIP_IF_UNAVAILABLE();
    char id[TS_UUID_STRLEN];
    start_new(P.rt, &P.img, id);

    char *out = run_sh(P.rt, id, "cat /proc/self/uid_map /proc/self/gid_map; id -u; id -g");
    char want[256];
    snprintf(want, sizeof(want), "%10u %10u %10u\n%10u %10u %10u\n0\n0\n", 0u, BASE,
             USERNS_DEFAULT_SIZE, 0u, BASE, USERNS_DEFAULT_SIZE);
    assert_string_equal(out, want);
    free(out);
    /* the kernel's init (runc run) and an exec'd process (runc exec): CHOWN,
     * DAC_OVERRIDE, FOWNER, FSETID, KILL, SETGID, SETUID, SETPCAP,
     * NET_BIND_SERVICE, SYS_CHROOT and nothing else */
    assert_int_equal(bundle_caps_mask(), 0x00000000000405fbULL);
    out = run_sh(P.rt, id, "cat /proc/1/status");
    assert_caps(out, bundle_caps_mask());
    free(out);
    out = run_sh(P.rt, id, "cat /proc/self/status");
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

    out = run_sh(P.rt, id, "/bin/probe");
    assert_probe(out, true);
    free(out);
    destroy_ok(P.rt, id);
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
    snprintf(rw, sizeof(rw), "%s/vf-rw-%.8s", F.tmp, id);
    snprintf(ro, sizeof(ro), "%s/vf-ro-%.8s", F.tmp, id);
    snprintf(closed, sizeof(closed), "%s/closed-%.8s", F.tmp, id);
    snprintf(staged, sizeof(staged), "%s/vf", closed);
    assert_int_equal(sh("mkdir -p %s %s %s && chown %u:%u %s %s %s && chmod 0700 %s", rw, ro,
                        staged, BASE, BASE, rw, ro, staged, closed),
                     0);
    bind_mount mounts[] = {
        {.host_path = rw, .container_path = "/home/work/rw"},
        {.host_path = ro, .container_path = "/home/work/ro", .read_only = true},
        {.host_path = staged, .container_path = "/home/work/staged"},
    };
    kernel_spec s = base_spec(id, &P.img);
    s.mounts = mounts;
    s.n_mounts = 3;
    start_ok(P.rt, &s);
    /* the staged bind is the container's only: none is left on the host */
    char *mi = read_text("/proc/self/mountinfo");
    assert_null(strstr(mi, staged));
    free(mi);
    char *binds = kpath(id, "binds");
    assert_int_not_equal(access(binds, F_OK), 0);
    free(binds);

    char *out =
        run_sh(P.rt, id,
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
    assert_owner(p = kpath(id, "disk/upper/rootfile"), BASE, BASE);
    free(p);
    assert_owner(p = kpath(id, "disk/upper/opt/pkg"), BASE, BASE);
    free(p);
    assert_owner(p = kpath(id, "disk/upper/opt/pkg/bin"), BASE + 123, BASE + 45);
    free(p);
    assert_owner(p = kpath(id, "disk/upper/tmp/t"), BASE + 1000, BASE + 1000);
    free(p);
    assert_owner(p = kpath(id, "disk/home/h"), BASE, BASE);
    free(p);
    assert_owner(p = kpath(id, "disk/home"), BASE, BASE);
    free(p);
    assert_owner(p = kpath(id, "disk/etc/hosts"), BASE, BASE);
    free(p);
    char f[500];
    snprintf(f, sizeof(f), "%s/f", rw);
    assert_owner(f, BASE + 1000, BASE + 1000);
    snprintf(f, sizeof(f), "%s/f", staged);
    assert_owner(f, BASE, BASE);
    snprintf(f, sizeof(f), "%s/f", ro);
    assert_int_not_equal(access(f, F_OK), 0);
    p = kpath(id, "disk/etc/hosts");
    char *hosts = read_text(p);
    free(p);
    assert_non_null(strstr(hosts, "10.0.0.9 extra"));
    free(hosts);
    destroy_ok(P.rt, id);
    /* the vfolders outlive the kernel */
    snprintf(f, sizeof(f), "%s/f", staged);
    assert_int_equal(access(f, F_OK), 0);
}

static void test_userns_host_read_only(void **state)
{
    (void)state;
    SKIP_IF_UNAVAILABLE();
    char id[TS_UUID_STRLEN];
    start_new(P.rt, &P.img, id);
    /* every mount at or below /sys, and /proc/sys, is read-only (but the
     * tmpfs runc puts at /sys/fs/cgroup to hold the cgroup mounts, the
     * container's own); the sysfs is the kernel's own (its interfaces only);
     * a port below 1024 binds */
    char *out =
        run_sh(P.rt, id,
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
    destroy_ok(P.rt, id);
}

static void test_userns_image_user_outside_mapping(void **state)
{
    (void)state;
    SKIP_IF_UNAVAILABLE();
    char id[TS_UUID_STRLEN];
    ts_uuid4(id);
    image_info img = P.img;
    img.user = "70000";
    kernel_spec s = base_spec(id, &img);
    kernel_status st;
    ts_err err = {{0}};
    assert_false(runtime_start(P.rt, &s, &st, &err));
    if (!strstr(err.msg, "outside the user namespace")) fail_msg("%s", err.msg);
    char path[512];
    snprintf(path, sizeof(path), "%s/kernels/%s", F.state, id);
    assert_int_not_equal(access(path, F_OK), 0);
    /* an image user inside it runs as that user, mapped */
    ts_uuid4(id);
    img.user = "work";
    s = base_spec(id, &img);
    start_ok(P.rt, &s);
    char *out = run_sh(P.rt, id, "id -u; id -g; touch /home/work/w && echo ok");
    assert_string_equal(out, "1000\n1000\nok\n");
    free(out);
    char *p = kpath(id, "disk/home/w");
    assert_owner(p, BASE + 1000, BASE + 1000);
    free(p);
    destroy_ok(P.rt, id);
}

/* GPU device nodes (here /dev/null and /dev/zero under NVIDIA names), the
 * CUDA shim's files, a driver library and tessera-term in a kernel with a
 * user namespace: runc binds the nodes (no mknod there). */
static void test_userns_gpu_and_term_mounts(void **state)
{
    (void)state;
    SKIP_IF_UNAVAILABLE();
    char dev[400], lib[400], gpu_dir[400], kdir[500];
    snprintf(dev, sizeof(dev), "%s/dev", F.tmp);
    snprintf(lib, sizeof(lib), "%s/libfake-driver.so.1", F.tmp);
    snprintf(gpu_dir, sizeof(gpu_dir), "%s/gpu", F.tmp);
    assert_int_equal(sh("mkdir -p %s %s && rm -f %s/nvidia* && mknod %s/nvidiactl c 1 3 && "
                        "mknod %s/nvidia0 c 1 5 && chmod 0666 %s/nvidia* && echo fake-driver > %s",
                        dev, gpu_dir, dev, dev, dev, dev, lib),
                     0);
    static const node_device devs[] = {
        {.id = "0", .model = "fake", .uuid = "GPU-00000000-1111-4222-8333-444444444444"}};
    gpu_host_opts go = {.shim = F.shim != NULL,
                        .shim_path = F.shim,
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
    kernel_spec s = base_spec(id, &P.img);
    s.gpu = &kg;
    s.term_path = F.term;
    start_ok(P.rt, &s);
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
    char *out = run_sh(P.rt, id, script);
    char want[1024];
    int n = snprintf(want, sizeof(want), "ctl-ok\n 00 00 00\n0\nfake-driver\nlib-ro\n");
    if (F.shim)
        n += snprintf(want + n, sizeof(want) - (size_t)n,
                      "# written by tessera-agent for kernel %s\n%s\nshim-readable\nshim-ro\n"
                      "shared-rw\n",
                      id, GPU_SHIM_PATH);
    if (F.term) snprintf(want + n, sizeof(want) - (size_t)n, "term-exec\nterm-ro\n");
    assert_string_equal(out, want);
    free(out);
    destroy_ok(P.rt, id);
    gpu_kernel_cleanup(kdir);
    gpu_host_free(&h);
    if (!F.shim) fprintf(stderr, "  (no ../../lib/libtessera-cuda.so: shim mounts not checked)\n");
    if (!F.term) fprintf(stderr, "  (no ../../bin/tessera-term: its mount not checked)\n");
}

/* ---- without a user namespace: the work user, no capabilities -------------------- */

static void test_off_work_user_without_caps(void **state)
{
    (void)state;
    SKIP_IF_UNAVAILABLE();
    char id[TS_UUID_STRLEN];
    start_new(P.rt_off, &P.img_off, id);
    char *out = run_sh(P.rt_off, id,
                       "cat /proc/self/uid_map; id -u; id -g; touch /home/work/f && echo home-ok; "
                       "(touch /x 2>/dev/null && echo root-written) || echo root-refused; "
                       "touch /tmp/t && echo tmp-ok");
    char want[256];
    snprintf(want, sizeof(want), "%10u %10u %10u\n1000\n1000\nhome-ok\nroot-refused\ntmp-ok\n", 0u,
             0u, 4294967295u);
    assert_string_equal(out, want);
    free(out);
    out = run_sh(P.rt_off, id, "cat /proc/1/status");
    assert_caps(out, 0);
    free(out);
    out = run_sh(P.rt_off, id, "cat /proc/self/status");
    assert_caps(out, 0);
    free(out);
    char *p = kpath(id, "disk/home/f");
    assert_owner(p, 1000, 1000);
    free(p);
    out = run_sh(P.rt_off, id, "/bin/probe");
    assert_probe(out, false);
    free(out);
    destroy_ok(P.rt_off, id);

    /* a non-root image user is kept; root is never used */
    image_info img = P.img_off;
    img.user = "2000:3000";
    start_new(P.rt_off, &img, id);
    out = run_sh(P.rt_off, id, "id -u; id -g");
    assert_string_equal(out, "2000\n3000\n");
    free(out);
    destroy_ok(P.rt_off, id);
    img.user = "1234:0"; /* gid 0 is root's group on the host: the work user instead */
    start_new(P.rt_off, &img, id);
    out = run_sh(P.rt_off, id, "id -u; id -g");
    assert_string_equal(out, "1000\n1000\n");
    free(out);
    destroy_ok(P.rt_off, id);
}

int main(void)
{
    if (getenv("TEST_FILTER")) cmocka_set_test_filter(getenv("TEST_FILTER"));
    if (getenv("TEST_LOG_LEVEL") && !tlog_set_level(getenv("TEST_LOG_LEVEL"))) return 2;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_userns_identity_caps_seccomp),
        cmocka_unit_test(test_userns_files_owned_by_mapped_root),
        cmocka_unit_test(test_userns_host_read_only),
        cmocka_unit_test(test_userns_image_user_outside_mapping),
        cmocka_unit_test(test_userns_gpu_and_term_mounts),
        cmocka_unit_test(test_off_work_user_without_caps),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
