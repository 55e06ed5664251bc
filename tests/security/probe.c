/* probe.c: the security suite's tenant-side probe (tests/security/).
 *
 * A static program put into a busybox test image (tools/oci-image.py --add)
 * and run inside a session through the public execute API. It tries what a
 * tenant must not be able to do and prints what happened as one JSON object
 * on stdout; the tests decide what passes. Built with
 * `gcc -static -O2 -o probe tests/security/probe.c` (glibc's static libc).
 *
 *   probe syscalls [NAME...]     each dangerous syscall, in a child process of
 *                                its own, with harmless arguments:
 *                                {"NAME": {"result": refused|reached|allowed|
 *                                killed, "ret", "errno", "err", "detail"}}
 *                                (scratch files in $TESSERA_PROBE_SCRATCH,
 *                                default /tmp/.tessera-probe)
 *   probe rawsock                raw sockets: {"inet_raw": {...}, "packet": {...}}
 *   probe tcp [-t MS] ADDR:PORT...   connect to each at once (non-blocking):
 *                                {"ADDR:PORT": {"result": open|refused|
 *                                unreachable|timeout|error, "errno", "err"}}
 *   probe udp [-t MS] ADDR:PORT...   send a datagram to each, wait for any
 *                                answer: reply|refused|no-reply|error
 *   probe ping [-t MS] ADDR...   ICMP echo with a ping socket (SOCK_DGRAM),
 *                                else a raw socket: reply|no-reply|no-socket|error
 *   probe serve TCPPORT UDPPORT [SECONDS]
 *                                daemonize: answer every TCP connection with
 *                                "tessera-probe\n" and echo UDP datagrams
 *                                prefixed with "tessera-probe " ({"pid"});
 *                                gone after SECONDS when given
 *   probe wopen FILE...          open(O_WRONLY) each (never writes a byte)
 *   probe ptrace PID...          kill(PID, 0) and ptrace(PTRACE_SEIZE, PID)
 *   probe pids                   the processes this pid namespace shows
 *
 * Exit status 0 when the probe itself worked (whatever it found), 2 on usage
 * errors.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/bpf.h>
#include <linux/keyctl.h>
#include <linux/perf_event.h>
#include <linux/reboot.h>
#include <net/ethernet.h>
#include <netinet/in.h>
#include <netinet/ip.h>
#include <netinet/ip_icmp.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/ptrace.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/time.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define BANNER "tessera-probe"

/* ---- JSON output ------------------------------------------------------------ */

static int g_first = 1;

static void json_str(const char *s)
{
    putchar('"');
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p == '"' || *p == '\\')
            printf("\\%c", *p);
        else if (*p < 0x20 || *p >= 0x7f)
            printf("\\u%04x", *p);
        else
            putchar(*p);
    }
    putchar('"');
}

static void obj_begin(void)
{
    putchar('{');
    g_first = 1;
}

static void obj_end(void)
{
    puts("}");
}

static void key(const char *k)
{
    if (!g_first) putchar(',');
    g_first = 0;
    json_str(k);
    putchar(':');
}

static const char *errname(int e)
{
    if (e == 0) return "";
    const char *n = strerrorname_np(e);
    return n ? n : "E?";
}

/* One entry {"result": r, "errno": e, "err": name, "detail": d}. */
static void entry(const char *k, const char *result, long ret, int e, const char *detail)
{
    key(k);
    printf("{\"result\":");
    json_str(result ? result : "");
    printf(",\"ret\":%ld,\"errno\":%d,\"err\":", ret, e);
    json_str(errname(e));
    printf(",\"detail\":");
    json_str(detail ? detail : "");
    putchar('}');
}

static long now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1000L + ts.tv_nsec / 1000000L;
}

static int parse_addr(const char *s, struct sockaddr_in *sa, int want_port)
{
    char host[64];
    memset(sa, 0, sizeof(*sa));
    sa->sin_family = AF_INET;
    const char *colon = strrchr(s, ':');
    size_t hl = want_port ? (colon ? (size_t)(colon - s) : 0) : strlen(s);
    if (hl == 0 || hl >= sizeof(host)) return -1;
    memcpy(host, s, hl);
    host[hl] = 0;
    if (inet_pton(AF_INET, host, &sa->sin_addr) != 1) return -1;
    if (want_port) {
        char *end;
        long p = strtol(colon + 1, &end, 10);
        if (*end || p <= 0 || p > 65535) return -1;
        sa->sin_port = htons((uint16_t)p);
    }
    return 0;
}

/* ---- syscalls ----------------------------------------------------------------
 * Each runs in a forked child (so unshare, setns, a mount that works or a key
 * added change nothing for the others) with arguments that do no harm when the
 * call is let through: invalid flags or magic numbers that the kernel checks
 * after its permission check, paths that do not exist, our own namespaces. A
 * refusal by seccomp or a missing capability is EPERM (or ENOSYS); anything else
 * means the call reached the kernel's code behind those fences. */

/* A scratch directory of the probe's own (mount point, device node):
 * $TESSERA_PROBE_SCRATCH, default /tmp/.tessera-probe. */
static char g_scratch[256] = "/tmp/.tessera-probe";
static char g_mnt[300], g_node[300];

static void scratch_init(void)
{
    const char *s = getenv("TESSERA_PROBE_SCRATCH");
    if (s && *s && strlen(s) < sizeof(g_scratch)) snprintf(g_scratch, sizeof(g_scratch), "%s", s);
    snprintf(g_mnt, sizeof(g_mnt), "%s/mnt", g_scratch);
    snprintf(g_node, sizeof(g_node), "%s/null", g_scratch);
    mkdir(g_scratch, 0700);
    mkdir(g_mnt, 0700);
}

typedef struct {
    long ret;
    int err;
    char detail[96];
} sc_result;

typedef void (*sc_fn)(sc_result *);

static void sc_mount(sc_result *r)
{
    r->ret = syscall(SYS_mount, "tmpfs", g_mnt, "tmpfs", MS_NOSUID | MS_NODEV, "size=4k");
    r->err = r->ret < 0 ? errno : 0;
    if (r->ret == 0) {
        snprintf(r->detail, sizeof(r->detail), "mounted a tmpfs (unmounted again)");
        syscall(SYS_umount2, g_mnt, MNT_DETACH);
    }
}

static void sc_umount2(sc_result *r)
{
    /* not a mount point: EINVAL when the call gets that far */
    r->ret = syscall(SYS_umount2, g_mnt, 0);
    r->err = r->ret < 0 ? errno : 0;
}

static void sc_unshare(sc_result *r, int flag)
{
    r->ret = syscall(SYS_unshare, flag);
    r->err = r->ret < 0 ? errno : 0;
}
static void sc_unshare_user(sc_result *r)
{
    sc_unshare(r, CLONE_NEWUSER);
}
static void sc_unshare_mnt(sc_result *r)
{
    sc_unshare(r, CLONE_NEWNS);
}
static void sc_unshare_net(sc_result *r)
{
    sc_unshare(r, CLONE_NEWNET);
}

static void sc_setns(sc_result *r)
{
    int fd = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        r->ret = -1;
        r->err = errno;
        snprintf(r->detail, sizeof(r->detail), "open /proc/self/ns/net failed");
        return;
    }
    /* our own namespace: joining it changes nothing */
    r->ret = syscall(SYS_setns, fd, CLONE_NEWNET);
    r->err = r->ret < 0 ? errno : 0;
    close(fd);
}

static void sc_pivot_root(sc_result *r)
{
    r->ret =
        syscall(SYS_pivot_root, "/nonexistent-tessera-probe", "/nonexistent-tessera-probe/old");
    r->err = r->ret < 0 ? errno : 0;
}

static void sc_keyctl(sc_result *r)
{
    r->ret = syscall(SYS_keyctl, KEYCTL_GET_KEYRING_ID, KEY_SPEC_PROCESS_KEYRING, 0);
    r->err = r->ret < 0 ? errno : 0;
}

static void sc_add_key(sc_result *r)
{
    r->ret = syscall(SYS_add_key, "user", "tessera-probe", "x", 1, KEY_SPEC_PROCESS_KEYRING);
    r->err = r->ret < 0 ? errno : 0;
}

static void sc_bpf(sc_result *r)
{
    union bpf_attr attr;
    memset(&attr, 0, sizeof(attr));
    attr.map_type = BPF_MAP_TYPE_ARRAY;
    attr.key_size = 4;
    attr.value_size = 4;
    attr.max_entries = 1;
    r->ret = syscall(SYS_bpf, BPF_MAP_CREATE, &attr, sizeof(attr));
    r->err = r->ret < 0 ? errno : 0;
    if (r->ret >= 0) close((int)r->ret);
}

static void sc_perf_event_open(sc_result *r)
{
    struct perf_event_attr attr;
    memset(&attr, 0, sizeof(attr));
    attr.size = sizeof(attr);
    attr.type = PERF_TYPE_SOFTWARE;
    attr.config = PERF_COUNT_SW_CPU_CLOCK;
    attr.disabled = 1;
    attr.exclude_kernel = 1;
    attr.exclude_hv = 1;
    r->ret = syscall(SYS_perf_event_open, &attr, 0, -1, -1, 0);
    r->err = r->ret < 0 ? errno : 0;
    if (r->ret >= 0) close((int)r->ret);
}

static void sc_kexec_load(sc_result *r)
{
    /* flag 0x100 is no KEXEC_* flag: EINVAL after the capability check */
    r->ret = syscall(SYS_kexec_load, 0UL, 0UL, NULL, 0x100UL);
    r->err = r->ret < 0 ? errno : 0;
}

static void sc_init_module(sc_result *r)
{
    r->ret = syscall(SYS_init_module, NULL, 0UL, "");
    r->err = r->ret < 0 ? errno : 0;
}

static void sc_finit_module(sc_result *r)
{
    r->ret = syscall(SYS_finit_module, -1, "", 0);
    r->err = r->ret < 0 ? errno : 0;
}

static void sc_delete_module(sc_result *r)
{
    r->ret = syscall(SYS_delete_module, "tessera_no_such_module", O_NONBLOCK);
    r->err = r->ret < 0 ? errno : 0;
}

static void sc_reboot(sc_result *r)
{
    /* wrong magic: EINVAL after the capability check, nothing reboots */
    r->ret = syscall(SYS_reboot, 0x1234, 0x5678, LINUX_REBOOT_CMD_CAD_OFF, NULL);
    r->err = r->ret < 0 ? errno : 0;
}

static void sc_swapon(sc_result *r)
{
    r->ret = syscall(SYS_swapon, "/nonexistent-tessera-probe", 0);
    r->err = r->ret < 0 ? errno : 0;
}

static void sc_open_by_handle_at(sc_result *r)
{
    struct {
        unsigned int handle_bytes;
        int handle_type;
        unsigned char f_handle[16];
    } h;
    memset(&h, 0, sizeof(h));
    h.handle_bytes = 8;
    h.handle_type = 1;
    int fd = open("/", O_RDONLY | O_DIRECTORY);
    r->ret = syscall(SYS_open_by_handle_at, fd, &h, O_RDONLY);
    r->err = r->ret < 0 ? errno : 0;
    if (r->ret >= 0) close((int)r->ret);
    if (fd >= 0) close(fd);
}

static void sc_userfaultfd(sc_result *r)
{
    /* UFFD_USER_MODE_ONLY (1): allowed to anyone when not filtered */
    r->ret = syscall(SYS_userfaultfd, O_CLOEXEC | 1);
    r->err = r->ret < 0 ? errno : 0;
    if (r->ret >= 0) close((int)r->ret);
}

static void sc_io_uring_setup(sc_result *r)
{
    unsigned char params[120]; /* struct io_uring_params */
    memset(params, 0, sizeof(params));
    r->ret = syscall(425 /* __NR_io_uring_setup */, 1, params);
    r->err = r->ret < 0 ? errno : 0;
    if (r->ret >= 0) close((int)r->ret);
}

static void sc_settimeofday(sc_result *r)
{
    /* tv_usec out of range: EINVAL before anything is set */
    struct timeval tv = {.tv_sec = 1, .tv_usec = 2000000};
    r->ret = syscall(SYS_settimeofday, &tv, NULL);
    r->err = r->ret < 0 ? errno : 0;
}

static void sc_clock_settime(sc_result *r)
{
    /* CLOCK_MONOTONIC cannot be set: EINVAL when the call gets that far */
    struct timespec ts = {.tv_sec = 1, .tv_nsec = 0};
    r->ret = syscall(SYS_clock_settime, CLOCK_MONOTONIC, &ts);
    r->err = r->ret < 0 ? errno : 0;
}

static void sc_iopl(sc_result *r)
{
#ifdef SYS_iopl
    /* level 0: lowering (or keeping) the level needs no capability */
    r->ret = syscall(SYS_iopl, 0);
    r->err = r->ret < 0 ? errno : 0;
#else
    r->ret = -1;
    r->err = ENOSYS;
    snprintf(r->detail, sizeof(r->detail), "no iopl on this architecture");
#endif
}

static void sc_ioperm(sc_result *r)
{
#ifdef SYS_ioperm
    /* turning access off needs no capability */
    r->ret = syscall(SYS_ioperm, 0x80UL, 1UL, 0);
    r->err = r->ret < 0 ? errno : 0;
#else
    r->ret = -1;
    r->err = ENOSYS;
    snprintf(r->detail, sizeof(r->detail), "no ioperm on this architecture");
#endif
}

static void sc_acct(sc_result *r)
{
    r->ret = syscall(SYS_acct, "/nonexistent-tessera-probe/acct");
    r->err = r->ret < 0 ? errno : 0;
}

static void sc_syslog(sc_result *r)
{
    /* SYSLOG_ACTION_SIZE_BUFFER: allowed to anyone unless dmesg_restrict */
    r->ret = syscall(SYS_syslog, 10, NULL, 0);
    r->err = r->ret < 0 ? errno : 0;
}

static void sc_mknod_char(sc_result *r)
{
    const char *p = g_node;
    unlink(p);
    r->ret = syscall(SYS_mknodat, AT_FDCWD, p, S_IFCHR | 0600, makedev(1, 3));
    r->err = r->ret < 0 ? errno : 0;
    if (r->ret == 0) {
        snprintf(r->detail, sizeof(r->detail), "created char device 1:3 (removed again)");
        unlink(p);
    }
}

static const struct {
    const char *name;
    sc_fn fn;
} SYSCALLS[] = {
    {"mount", sc_mount},
    {"umount2", sc_umount2},
    {"unshare_newuser", sc_unshare_user},
    {"unshare_newns", sc_unshare_mnt},
    {"unshare_newnet", sc_unshare_net},
    {"setns", sc_setns},
    {"pivot_root", sc_pivot_root},
    {"keyctl", sc_keyctl},
    {"add_key", sc_add_key},
    {"bpf", sc_bpf},
    {"perf_event_open", sc_perf_event_open},
    {"kexec_load", sc_kexec_load},
    {"init_module", sc_init_module},
    {"finit_module", sc_finit_module},
    {"delete_module", sc_delete_module},
    {"reboot", sc_reboot},
    {"swapon", sc_swapon},
    {"open_by_handle_at", sc_open_by_handle_at},
    {"userfaultfd", sc_userfaultfd},
    {"io_uring_setup", sc_io_uring_setup},
    {"settimeofday", sc_settimeofday},
    {"clock_settime", sc_clock_settime},
    {"iopl", sc_iopl},
    {"ioperm", sc_ioperm},
    {"acct", sc_acct},
    {"syslog", sc_syslog},
    {"mknod_char", sc_mknod_char},
};
#define N_SYSCALLS (sizeof(SYSCALLS) / sizeof(SYSCALLS[0]))

/* Run fn in a child; its result comes back through a pipe. */
static void run_syscall(const char *name, sc_fn fn)
{
    int pfd[2];
    if (pipe(pfd) != 0) {
        entry(name, "error", -1, errno, "pipe failed");
        return;
    }
    pid_t pid = fork();
    if (pid < 0) {
        entry(name, "error", -1, errno, "fork failed");
        close(pfd[0]);
        close(pfd[1]);
        return;
    }
    if (pid == 0) {
        close(pfd[0]);
        alarm(10);
        sc_result r;
        memset(&r, 0, sizeof(r));
        errno = 0;
        fn(&r);
        ssize_t w = write(pfd[1], &r, sizeof(r));
        _exit(w == (ssize_t)sizeof(r) ? 0 : 1);
    }
    close(pfd[1]);
    sc_result r;
    memset(&r, 0, sizeof(r));
    ssize_t n = read(pfd[0], &r, sizeof(r));
    close(pfd[0]);
    int st = 0;
    waitpid(pid, &st, 0);
    if (n != (ssize_t)sizeof(r)) {
        char d[96];
        if (WIFSIGNALED(st))
            snprintf(d, sizeof(d), "the child was killed by signal %d (%s)", WTERMSIG(st),
                     sigabbrev_np(WTERMSIG(st)) ? sigabbrev_np(WTERMSIG(st)) : "?");
        else
            snprintf(d, sizeof(d), "the child exited with %d before reporting", WEXITSTATUS(st));
        entry(name, WIFSIGNALED(st) ? "killed" : "error", -1, 0, d);
        return;
    }
    const char *res = r.ret >= 0                            ? "allowed"
                      : (r.err == EPERM || r.err == ENOSYS) ? "refused"
                                                            : "reached";
    entry(name, res, r.ret, r.err, r.detail);
}

static int cmd_syscalls(int argc, char **argv)
{
    scratch_init();
    obj_begin();
    for (size_t i = 0; i < N_SYSCALLS; i++) {
        int want = argc == 0;
        for (int j = 0; j < argc; j++)
            if (strcmp(argv[j], SYSCALLS[i].name) == 0) want = 1;
        if (want) run_syscall(SYSCALLS[i].name, SYSCALLS[i].fn);
    }
    for (int j = 0; j < argc; j++) {
        int known = 0;
        for (size_t i = 0; i < N_SYSCALLS; i++)
            if (strcmp(argv[j], SYSCALLS[i].name) == 0) known = 1;
        if (!known) entry(argv[j], "unknown", -1, 0, "the probe has no such check");
    }
    obj_end();
    return 0;
}

/* ---- raw sockets -------------------------------------------------------------- */

static void try_socket(const char *name, int domain, int type, int proto)
{
    int fd = socket(domain, type, proto);
    int e = fd < 0 ? errno : 0;
    entry(name, fd >= 0 ? "opened" : "refused", fd, e, "");
    if (fd >= 0) close(fd);
}

static int cmd_rawsock(void)
{
    obj_begin();
    try_socket("inet_raw", AF_INET, SOCK_RAW, IPPROTO_ICMP);
    try_socket("inet_raw_tcp", AF_INET, SOCK_RAW, IPPROTO_TCP);
    try_socket("packet", AF_PACKET, SOCK_RAW, htons(ETH_P_ALL));
    obj_end();
    return 0;
}

/* ---- reachability --------------------------------------------------------------- */

static int opt_timeout(int *argc, char ***argv, int def)
{
    int t = def;
    if (*argc >= 2 && strcmp((*argv)[0], "-t") == 0) {
        t = atoi((*argv)[1]);
        *argc -= 2;
        *argv += 2;
    }
    return t > 0 ? t : def;
}

static int cmd_tcp(int argc, char **argv)
{
    int timeout = opt_timeout(&argc, &argv, 2000);
    struct pollfd *pf = calloc((size_t)argc + 1, sizeof(*pf));
    const char **res = calloc((size_t)argc + 1, sizeof(*res));
    int *errs = calloc((size_t)argc + 1, sizeof(int));
    int pending = 0;
    for (int i = 0; i < argc; i++) {
        struct sockaddr_in sa;
        pf[i].fd = -1;
        if (parse_addr(argv[i], &sa, 1) != 0) {
            res[i] = "error";
            errs[i] = EINVAL;
            continue;
        }
        int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        if (fd < 0) {
            res[i] = "error";
            errs[i] = errno;
            continue;
        }
        if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0) {
            res[i] = "open";
            close(fd);
            continue;
        }
        if (errno != EINPROGRESS) {
            errs[i] = errno;
            res[i] = errno == ECONNREFUSED                             ? "refused"
                     : (errno == EHOSTUNREACH || errno == ENETUNREACH) ? "unreachable"
                                                                       : "error";
            close(fd);
            continue;
        }
        pf[i].fd = fd;
        pf[i].events = POLLOUT;
        pending++;
    }
    long deadline = now_ms() + timeout;
    while (pending > 0) {
        long left = deadline - now_ms();
        if (left <= 0) break;
        int n = poll(pf, (nfds_t)argc, (int)left);
        if (n < 0 && errno != EINTR) break;
        for (int i = 0; i < argc; i++) {
            if (pf[i].fd < 0 || !pf[i].revents) continue;
            int soerr = 0;
            socklen_t l = sizeof(soerr);
            getsockopt(pf[i].fd, SOL_SOCKET, SO_ERROR, &soerr, &l);
            errs[i] = soerr;
            res[i] = soerr == 0                                        ? "open"
                     : soerr == ECONNREFUSED                           ? "refused"
                     : (soerr == EHOSTUNREACH || soerr == ENETUNREACH) ? "unreachable"
                                                                       : "error";
            close(pf[i].fd);
            pf[i].fd = -1;
            pending--;
        }
    }
    obj_begin();
    for (int i = 0; i < argc; i++) {
        if (pf[i].fd >= 0) {
            close(pf[i].fd);
            res[i] = "timeout";
        }
        entry(argv[i], res[i], 0, errs[i], "");
    }
    obj_end();
    return 0;
}

static int cmd_udp(int argc, char **argv)
{
    int timeout = opt_timeout(&argc, &argv, 2000);
    struct pollfd *pf = calloc((size_t)argc + 1, sizeof(*pf));
    const char **res = calloc((size_t)argc + 1, sizeof(*res));
    int *errs = calloc((size_t)argc + 1, sizeof(int));
    int pending = 0;
    for (int i = 0; i < argc; i++) {
        struct sockaddr_in sa;
        pf[i].fd = -1;
        if (parse_addr(argv[i], &sa, 1) != 0) {
            res[i] = "error";
            errs[i] = EINVAL;
            continue;
        }
        int fd = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0 ||
            send(fd, BANNER "-udp", sizeof(BANNER "-udp") - 1, 0) < 0) {
            errs[i] = errno;
            res[i] = errno == ECONNREFUSED ? "refused" : "error";
            if (fd >= 0) close(fd);
            continue;
        }
        pf[i].fd = fd;
        pf[i].events = POLLIN;
        pending++;
    }
    long deadline = now_ms() + timeout;
    while (pending > 0) {
        long left = deadline - now_ms();
        if (left <= 0) break;
        int n = poll(pf, (nfds_t)argc, (int)left);
        if (n < 0 && errno != EINTR) break;
        for (int i = 0; i < argc; i++) {
            if (pf[i].fd < 0 || !pf[i].revents) continue;
            char buf[256];
            ssize_t got = recv(pf[i].fd, buf, sizeof(buf), 0);
            if (got >= 0) {
                res[i] = "reply";
            } else {
                errs[i] = errno;
                res[i] = errno == ECONNREFUSED ? "refused" : "error";
            }
            close(pf[i].fd);
            pf[i].fd = -1;
            pending--;
        }
    }
    obj_begin();
    for (int i = 0; i < argc; i++) {
        if (pf[i].fd >= 0) {
            close(pf[i].fd);
            res[i] = "no-reply";
        }
        entry(argv[i], res[i], 0, errs[i], "");
    }
    obj_end();
    return 0;
}

static uint16_t csum(const void *data, size_t len)
{
    const uint8_t *p = data;
    uint32_t s = 0;
    for (size_t i = 0; i + 1 < len; i += 2)
        s += (uint32_t)(p[i] << 8 | p[i + 1]);
    if (len & 1) s += (uint32_t)(p[len - 1] << 8);
    while (s >> 16)
        s = (s & 0xffff) + (s >> 16);
    return htons((uint16_t)~s);
}

static int cmd_ping(int argc, char **argv)
{
    int timeout = opt_timeout(&argc, &argv, 2000);
    int raw = 0;
    const char *kind = "ping-socket";
    int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, IPPROTO_ICMP);
    int e1 = fd < 0 ? errno : 0;
    if (fd < 0) {
        fd = socket(AF_INET, SOCK_RAW | SOCK_CLOEXEC, IPPROTO_ICMP);
        raw = 1;
        kind = "raw-socket";
    }
    obj_begin();
    if (fd < 0) {
        int e2 = errno;
        char d[128];
        snprintf(d, sizeof(d), "ping socket: %s; raw socket: %s", errname(e1), errname(e2));
        for (int i = 0; i < argc; i++)
            entry(argv[i], "no-socket", -1, e2, d);
        obj_end();
        return 0;
    }
    int *got = calloc((size_t)argc + 1, sizeof(int));
    uint16_t ident = (uint16_t)(getpid() & 0xffff);
    for (int i = 0; i < argc; i++) {
        struct sockaddr_in sa;
        if (parse_addr(argv[i], &sa, 0) != 0) {
            got[i] = -1;
            continue;
        }
        uint8_t pkt[64];
        memset(pkt, 0, sizeof(pkt));
        struct icmphdr *h = (struct icmphdr *)pkt;
        h->type = ICMP_ECHO;
        h->un.echo.id = htons(ident);
        h->un.echo.sequence = htons((uint16_t)(i + 1));
        memcpy(pkt + sizeof(*h), BANNER, sizeof(BANNER) - 1);
        h->checksum = csum(pkt, sizeof(pkt));
        if (sendto(fd, pkt, sizeof(pkt), 0, (struct sockaddr *)&sa, sizeof(sa)) < 0)
            got[i] = -errno - 1000;
    }
    long deadline = now_ms() + timeout;
    for (;;) {
        long left = deadline - now_ms();
        if (left <= 0) break;
        struct pollfd p = {.fd = fd, .events = POLLIN};
        if (poll(&p, 1, (int)left) <= 0) continue;
        uint8_t buf[1500];
        struct sockaddr_in from;
        socklen_t fl = sizeof(from);
        ssize_t n = recvfrom(fd, buf, sizeof(buf), 0, (struct sockaddr *)&from, &fl);
        if (n <= 0) continue;
        uint8_t *icmp = buf;
        if (raw) {
            size_t ihl = (size_t)(buf[0] & 0x0f) * 4;
            if ((size_t)n < ihl + sizeof(struct icmphdr)) continue;
            icmp = buf + ihl;
        }
        struct icmphdr *h = (struct icmphdr *)icmp;
        if (h->type != ICMP_ECHOREPLY) continue;
        if (raw && ntohs(h->un.echo.id) != ident) continue;
        int seq = ntohs(h->un.echo.sequence);
        if (seq >= 1 && seq <= argc) {
            struct sockaddr_in sa;
            if (parse_addr(argv[seq - 1], &sa, 0) == 0 &&
                sa.sin_addr.s_addr == from.sin_addr.s_addr)
                got[seq - 1] = 1;
        }
    }
    for (int i = 0; i < argc; i++) {
        if (got[i] <= -1000)
            entry(argv[i], "error", -1, -got[i] - 1000, kind);
        else
            entry(argv[i], got[i] == 1 ? "reply" : got[i] < 0 ? "error" : "no-reply", 0, 0, kind);
    }
    obj_end();
    close(fd);
    return 0;
}

/* ---- serve ------------------------------------------------------------------------ */

static int cmd_serve(int argc, char **argv)
{
    if (argc != 2 && argc != 3) return 2;
    int tport = atoi(argv[0]), uport = atoi(argv[1]);
    int lifetime = argc == 3 ? atoi(argv[2]) : 0;
    int t = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    int u = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    int one = 1;
    setsockopt(t, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_ANY)};
    sa.sin_port = htons((uint16_t)tport);
    if (t < 0 || bind(t, (struct sockaddr *)&sa, sizeof(sa)) != 0 || listen(t, 64) != 0) {
        printf("{\"error\":\"tcp %d: %s\"}\n", tport, strerror(errno));
        return 1;
    }
    sa.sin_port = htons((uint16_t)uport);
    if (u < 0 || bind(u, (struct sockaddr *)&sa, sizeof(sa)) != 0) {
        printf("{\"error\":\"udp %d: %s\"}\n", uport, strerror(errno));
        return 1;
    }
    fflush(stdout);
    pid_t pid = fork();
    if (pid < 0) return 1;
    if (pid > 0) {
        printf("{\"pid\":%d,\"tcp\":%d,\"udp\":%d}\n", (int)pid, tport, uport);
        return 0;
    }
    setsid();
    if (lifetime > 0) alarm((unsigned)lifetime);
    signal(SIGPIPE, SIG_IGN);
    signal(SIGHUP, SIG_IGN);
    int dn = open("/dev/null", O_RDWR);
    if (dn >= 0) {
        dup2(dn, 0);
        dup2(dn, 1);
        dup2(dn, 2);
        if (dn > 2) close(dn);
    }
    struct pollfd p[2] = {{.fd = t, .events = POLLIN}, {.fd = u, .events = POLLIN}};
    for (;;) {
        if (poll(p, 2, -1) < 0) continue;
        if (p[0].revents) {
            int c = accept4(t, NULL, NULL, SOCK_CLOEXEC);
            if (c >= 0) {
                ssize_t w = write(c, BANNER "\n", sizeof(BANNER));
                (void)w;
                close(c);
            }
        }
        if (p[1].revents) {
            char buf[512], out[600];
            struct sockaddr_in from;
            socklen_t fl = sizeof(from);
            ssize_t n = recvfrom(u, buf, sizeof(buf) - 1, 0, (struct sockaddr *)&from, &fl);
            if (n >= 0) {
                buf[n] = 0;
                int m = snprintf(out, sizeof(out), BANNER " %s", buf);
                sendto(u, out, (size_t)m, 0, (struct sockaddr *)&from, fl);
            }
        }
    }
}

/* ---- files, processes --------------------------------------------------------------- */

static int cmd_wopen(int argc, char **argv)
{
    obj_begin();
    for (int i = 0; i < argc; i++) {
        /* O_WRONLY without O_TRUNC or O_CREAT, and nothing is written */
        int fd = open(argv[i], O_WRONLY | O_NOCTTY | O_NONBLOCK | O_CLOEXEC);
        int e = fd < 0 ? errno : 0;
        entry(argv[i], fd >= 0 ? "writable" : "refused", fd, e, "");
        if (fd >= 0) close(fd);
    }
    obj_end();
    return 0;
}

static int cmd_ptrace(int argc, char **argv)
{
    obj_begin();
    for (int i = 0; i < argc; i++) {
        pid_t pid = (pid_t)atoi(argv[i]);
        char k[64];
        int kr = kill(pid, 0);
        int ke = kr < 0 ? errno : 0;
        snprintf(k, sizeof(k), "kill:%s", argv[i]);
        entry(k, kr == 0 ? "exists" : "refused", kr, ke, "");
        /* in a child: a tracer that exits detaches at once */
        int pfd[2];
        long pr = -1;
        int pe = 0;
        if (pipe(pfd) == 0) {
            pid_t c = fork();
            if (c == 0) {
                close(pfd[0]);
                long r = ptrace(PTRACE_SEIZE, pid, NULL, NULL);
                int res[2] = {(int)r, r < 0 ? errno : 0};
                ssize_t w = write(pfd[1], res, sizeof(res));
                _exit(w == (ssize_t)sizeof(res) ? 0 : 1);
            }
            close(pfd[1]);
            int res[2] = {-1, EIO};
            if (c > 0 && read(pfd[0], res, sizeof(res)) == (ssize_t)sizeof(res)) {
                pr = res[0];
                pe = res[1];
            }
            close(pfd[0]);
            if (c > 0) waitpid(c, NULL, 0);
        }
        snprintf(k, sizeof(k), "ptrace:%s", argv[i]);
        entry(k, pr == 0 ? "attached" : "refused", pr, pe, "");
    }
    obj_end();
    return 0;
}

static int cmd_pids(void)
{
    DIR *d = opendir("/proc");
    if (!d) return 1;
    obj_begin();
    struct dirent *de;
    while ((de = readdir(d))) {
        if (!isdigit((unsigned char)de->d_name[0])) continue;
        char path[300], cmd[512];
        snprintf(path, sizeof(path), "/proc/%s/cmdline", de->d_name);
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        ssize_t n = fd >= 0 ? read(fd, cmd, sizeof(cmd) - 1) : -1;
        if (fd >= 0) close(fd);
        if (n < 0) n = 0;
        for (ssize_t i = 0; i < n; i++)
            if (cmd[i] == 0) cmd[i] = ' ';
        cmd[n] = 0;
        key(de->d_name);
        json_str(cmd);
    }
    closedir(d);
    obj_end();
    return 0;
}

static int usage(void)
{
    fprintf(stderr,
            "usage: probe syscalls [NAME...] | rawsock | tcp [-t MS] ADDR:PORT... | "
            "udp [-t MS] ADDR:PORT... | ping [-t MS] ADDR... | serve TCPPORT UDPPORT [SECONDS] | "
            "wopen FILE... | ptrace PID... | pids\n");
    return 2;
}

int main(int argc, char **argv)
{
    if (argc < 2) return usage();
    const char *c = argv[1];
    argc -= 2;
    argv += 2;
    int rc;
    if (strcmp(c, "syscalls") == 0)
        rc = cmd_syscalls(argc, argv);
    else if (strcmp(c, "rawsock") == 0)
        rc = cmd_rawsock();
    else if (strcmp(c, "tcp") == 0)
        rc = cmd_tcp(argc, argv);
    else if (strcmp(c, "udp") == 0)
        rc = cmd_udp(argc, argv);
    else if (strcmp(c, "ping") == 0)
        rc = cmd_ping(argc, argv);
    else if (strcmp(c, "serve") == 0)
        rc = cmd_serve(argc, argv);
    else if (strcmp(c, "wopen") == 0)
        rc = cmd_wopen(argc, argv);
    else if (strcmp(c, "ptrace") == 0)
        rc = cmd_ptrace(argc, argv);
    else if (strcmp(c, "pids") == 0)
        rc = cmd_pids();
    else
        return usage();
    if (rc == 2) return usage();
    fflush(stdout);
    return rc;
}
