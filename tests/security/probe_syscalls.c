/* probe_syscalls.c: `probe syscalls`: the dangerous syscalls (see
 * probe_syscalls.h). */
#define _GNU_SOURCE
#include "probe_syscalls.h"

#include "probe_out.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/bpf.h>
#include <linux/keyctl.h>
#include <linux/perf_event.h>
#include <linux/reboot.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/time.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

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
        probe_out_entry(name, "error", -1, errno, "pipe failed");
        return;
    }
    pid_t pid = fork();
    if (pid < 0) {
        probe_out_entry(name, "error", -1, errno, "fork failed");
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
        probe_out_entry(name, WIFSIGNALED(st) ? "killed" : "error", -1, 0, d);
        return;
    }
    const char *res = r.ret >= 0                            ? "allowed"
                      : (r.err == EPERM || r.err == ENOSYS) ? "refused"
                                                            : "reached";
    probe_out_entry(name, res, r.ret, r.err, r.detail);
}

int probe_syscalls(int argc, char **argv)
{
    scratch_init();
    probe_out_begin();
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
        if (!known) probe_out_entry(argv[j], "unknown", -1, 0, "the probe has no such check");
    }
    probe_out_end();
    return 0;
}
