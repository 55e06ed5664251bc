/* seccomp.c: the default allow-list seccomp profile (seccomp.h). */
#include "services/agent/seccomp.h"

#include <errno.h>
#include <sched.h>
#include <sys/personality.h>
#include <sys/socket.h>

#include "libcommon/common.h"

#ifndef CLONE_NEWTIME
#define CLONE_NEWTIME 0x00000080
#endif
#ifndef CLONE_NEWCGROUP
#define CLONE_NEWCGROUP 0x02000000
#endif

/* The flags that make new namespaces: the container's own are all it gets. */
#define NS_FLAGS                                                                                   \
    (CLONE_NEWNS | CLONE_NEWUTS | CLONE_NEWIPC | CLONE_NEWUSER | CLONE_NEWPID | CLONE_NEWNET |     \
     CLONE_NEWCGROUP)

const char *const seccomp_allowed[] = {
    /* processes and threads (clone, clone3, unshare and personality below) */
    "fork", "vfork", "execve", "execveat", "exit", "exit_group", "wait4", "waitid", "waitpid",
    "kill", "tkill", "tgkill", "getpid", "getppid", "gettid", "getpgid", "setpgid", "getpgrp",
    "getsid", "setsid", "set_tid_address", "set_robust_list", "get_robust_list", "rseq",
    "restart_syscall", "pause", "prctl", "arch_prctl", "set_thread_area", "get_thread_area",
    "modify_ldt", "capget", "capset", "seccomp", "landlock_create_ruleset", "landlock_add_rule",
    "landlock_restrict_self", "pidfd_open", "pidfd_send_signal", "process_mrelease",
    /* the container's own processes: gdb, strace, py-spy (the kernel checks
     * ptrace_may_access; safe under seccomp since Linux 4.8) */
    "ptrace", "process_vm_readv", "process_vm_writev",
    /* credentials (inside the user namespace) */
    "getuid", "geteuid", "getgid", "getegid", "getresuid", "getresgid", "getgroups", "setuid",
    "setgid", "setreuid", "setregid", "setresuid", "setresgid", "setfsuid", "setfsgid", "setgroups",
    "getuid32", "geteuid32", "getgid32", "getegid32", "getresuid32", "getresgid32", "getgroups32",
    "setuid32", "setgid32", "setreuid32", "setregid32", "setresuid32", "setresgid32", "setfsuid32",
    "setfsgid32", "setgroups32",
    /* signals and interval timers */
    "rt_sigaction", "rt_sigprocmask", "rt_sigreturn", "rt_sigsuspend", "rt_sigpending",
    "rt_sigtimedwait", "rt_sigtimedwait_time64", "rt_sigqueueinfo", "rt_tgsigqueueinfo",
    "sigaltstack", "signalfd", "signalfd4", "sigreturn", "sigprocmask", "alarm", "getitimer",
    "setitimer",
    /* memory: mappings, locking, NUMA policy of the caller's own pages (CUDA,
     * NCCL, PyTorch and hwloc use madvise, mremap, mbind, memfd_create) */
    "brk", "mmap", "mmap2", "munmap", "mremap", "mprotect", "madvise", "msync", "mincore", "mlock",
    "mlock2", "mlockall", "munlock", "munlockall", "remap_file_pages", "pkey_alloc", "pkey_free",
    "pkey_mprotect", "memfd_create", "memfd_secret", "membarrier", "get_mempolicy", "set_mempolicy",
    "mbind", "set_mempolicy_home_node", "map_shadow_stack", "mseal",
    /* files: descriptors, reading and writing */
    "open", "openat", "openat2", "creat", "close", "close_range", "read", "write", "readv",
    "writev", "pread64", "pwrite64", "preadv", "pwritev", "preadv2", "pwritev2", "lseek", "_llseek",
    "dup", "dup2", "dup3", "pipe", "pipe2", "fcntl", "fcntl64", "flock", "ioctl", "sendfile",
    "sendfile64", "splice", "tee", "vmsplice", "copy_file_range", "readahead", "fadvise64",
    "fadvise64_64", "arm_fadvise64_64", "fallocate", "ftruncate", "ftruncate64", "truncate",
    "truncate64", "fsync", "fdatasync", "sync", "syncfs", "sync_file_range", "sync_file_range2",
    "arm_sync_file_range",
    /* files: names, metadata, directories, extended attributes, inotify */
    "stat", "lstat", "fstat", "newfstatat", "stat64", "lstat64", "fstat64", "fstatat64", "statx",
    "statfs", "fstatfs", "statfs64", "fstatfs64", "access", "faccessat", "faccessat2", "getdents",
    "getdents64", "getcwd", "chdir", "fchdir", "chroot", "mkdir", "mkdirat", "rmdir", "rename",
    "renameat", "renameat2", "link", "linkat", "unlink", "unlinkat", "symlink", "symlinkat",
    "readlink", "readlinkat", "mknod", "mknodat", "chmod", "fchmod", "fchmodat", "fchmodat2",
    "chown", "fchown", "lchown", "fchownat", "chown32", "fchown32", "lchown32", "umask", "utime",
    "utimes", "utimensat", "utimensat_time64", "futimesat", "getxattr", "lgetxattr", "fgetxattr",
    "setxattr", "lsetxattr", "fsetxattr", "listxattr", "llistxattr", "flistxattr", "removexattr",
    "lremovexattr", "fremovexattr", "getxattrat", "setxattrat", "listxattrat", "removexattrat",
    "inotify_init", "inotify_init1", "inotify_add_watch", "inotify_rm_watch",
    /* polling, events, futexes, asynchronous I/O (libaio; not io_uring) */
    "poll", "ppoll", "ppoll_time64", "select", "_newselect", "pselect6", "pselect6_time64",
    "epoll_create", "epoll_create1", "epoll_ctl", "epoll_wait", "epoll_pwait", "epoll_pwait2",
    "eventfd", "eventfd2", "futex", "futex_time64", "futex_waitv", "futex_wake", "futex_wait",
    "futex_requeue", "io_setup", "io_destroy", "io_submit", "io_getevents", "io_pgetevents",
    "io_pgetevents_time64", "io_cancel",
    /* clocks and timers (reading only: setting the host's clock is refused) */
    "clock_gettime", "clock_gettime64", "clock_getres", "clock_getres_time64", "clock_nanosleep",
    "clock_nanosleep_time64", "nanosleep", "gettimeofday", "time", "times", "timer_create",
    "timer_settime", "timer_settime64", "timer_gettime", "timer_gettime64", "timer_getoverrun",
    "timer_delete", "timerfd_create", "timerfd_settime", "timerfd_settime64", "timerfd_gettime",
    "timerfd_gettime64",
    /* scheduling and resources (real-time classes still need CAP_SYS_NICE) */
    "sched_yield", "sched_getaffinity", "sched_setaffinity", "sched_getparam", "sched_setparam",
    "sched_getscheduler", "sched_setscheduler", "sched_getattr", "sched_setattr",
    "sched_get_priority_max", "sched_get_priority_min", "sched_rr_get_interval",
    "sched_rr_get_interval_time64", "getpriority", "setpriority", "ioprio_get", "ioprio_set",
    "getrlimit", "setrlimit", "prlimit64", "ugetrlimit", "getrusage", "getcpu", "sysinfo", "uname",
    "getrandom",
    /* sockets (socket itself below, by family); socketcall is the 32-bit x86
     * entry to all of them, whose family the filter cannot see */
    "socketpair", "bind", "connect", "listen", "accept", "accept4", "getsockname", "getpeername",
    "getsockopt", "setsockopt", "shutdown", "send", "sendto", "sendmsg", "sendmmsg", "recv",
    "recvfrom", "recvmsg", "recvmmsg", "recvmmsg_time64", "socketcall",
    /* System V and POSIX IPC (the container's own IPC namespace) */
    "shmget", "shmat", "shmdt", "shmctl", "semget", "semop", "semctl", "semtimedop",
    "semtimedop_time64", "msgget", "msgsnd", "msgrcv", "msgctl", "ipc", "mq_open", "mq_unlink",
    "mq_timedsend", "mq_timedsend_time64", "mq_timedreceive", "mq_timedreceive_time64", "mq_notify",
    "mq_getsetattr",
    /* arm */
    "breakpoint", "cacheflush", "set_tls", NULL};

const char *const seccomp_refused[] = {
    /* mounts and namespaces */
    "mount", "umount", "umount2", "pivot_root", "move_mount", "open_tree", "fsopen", "fsconfig",
    "fsmount", "fspick", "mount_setattr", "setns", "sethostname", "setdomainname",
    /* kernel keyrings (not namespaced) */
    "add_key", "request_key", "keyctl",
    /* bpf, perf, userfaultfd, io_uring (its requests bypass the filter) */
    "bpf", "perf_event_open", "userfaultfd", "io_uring_setup", "io_uring_enter",
    "io_uring_register",
    /* modules, kexec, reboot, swap, accounting, quotas, the kernel log */
    "init_module", "finit_module", "delete_module", "create_module", "query_module",
    "get_kernel_syms", "kexec_load", "kexec_file_load", "reboot", "swapon", "swapoff", "acct",
    "quotactl", "quotactl_fd", "syslog", "_sysctl", "sysfs", "ustat", "uselib", "nfsservctl",
    "lookup_dcookie", "vhangup",
    /* the host's clocks */
    "settimeofday", "stime", "clock_settime", "clock_settime64", "clock_adjtime", "clock_adjtime64",
    "adjtimex",
    /* raw I/O ports, vm86 */
    "iopl", "ioperm", "vm86", "vm86old",
    /* file handles (the "shocker" escape), other processes' files and pages */
    "name_to_handle_at", "open_by_handle_at", "kcmp", "pidfd_getfd", "process_madvise",
    "move_pages", "migrate_pages",
    /* fanotify watches whole mounts */
    "fanotify_init", "fanotify_mark", NULL};

static json_t *_rule(json_t *names, const char *action, json_t *args)
{
    json_t *r = json_pack("{s:o, s:s}", "names", names, "action", action);
    if (args) json_object_set_new(r, "args", args);
    return r;
}

/* "names" allowed when argument `index` compares to value with op
 * (SCMP_CMP_EQ, or SCMP_CMP_MASKED_EQ: (arg & value) == value_two). */
static json_t *_allow_if(const char *name, int index, const char *op, uint64_t value,
                         uint64_t value_two)
{
    json_t *arg = json_pack("{s:i, s:I, s:I, s:s}", "index", index, "value", (json_int_t)value,
                            "valueTwo", (json_int_t)value_two, "op", op);
    return _rule(json_pack("[s]", name), "SCMP_ACT_ALLOW", json_pack("[o]", arg));
}

json_t *seccomp_default_profile(void)
{
    json_t *names = json_array();
    for (const char *const *n = seccomp_allowed; *n; n++)
        json_array_append_new(names, json_string(*n));
    json_t *rules = json_array();
    json_array_append_new(rules, _rule(names, "SCMP_ACT_ALLOW", NULL));
    /* threads and processes, never new namespaces */
    json_array_append_new(rules, _allow_if("clone", 0, "SCMP_CMP_MASKED_EQ", NS_FLAGS, 0));
    json_array_append_new(
        rules, _allow_if("unshare", 0, "SCMP_CMP_MASKED_EQ", NS_FLAGS | CLONE_NEWTIME, 0));
    /* clone3 takes its flags in memory the filter cannot read: "not
     * implemented", and glibc uses clone */
    json_t *clone3 = _rule(json_pack("[s]", "clone3"), "SCMP_ACT_ERRNO", NULL);
    json_object_set_new(clone3, "errnoRet", json_integer(ENOSYS));
    json_array_append_new(rules, clone3);
    static const uint64_t personas[] = {
        PER_LINUX,         PER_LINUX32,
        UNAME26,           UNAME26 | PER_LINUX32,
        ADDR_NO_RANDOMIZE, ADDR_NO_RANDOMIZE | PER_LINUX32,
        0xffffffffu, /* query */
    };
    for (size_t i = 0; i < TS_ARRAY_LEN(personas); i++)
        json_array_append_new(rules, _allow_if("personality", 0, "SCMP_CMP_EQ", personas[i], 0));
    static const int families[] = {AF_UNIX, AF_INET, AF_INET6, AF_NETLINK};
    for (size_t i = 0; i < TS_ARRAY_LEN(families); i++)
        json_array_append_new(rules,
                              _allow_if("socket", 0, "SCMP_CMP_EQ", (uint64_t)families[i], 0));
        /* The native ABI only: a 32-bit entry (i386, x32, arm) is refused as a
         * whole (libseccomp's bad-arch action kills the thread). Each ABI listed
         * multiplies what runc compiles at every start and exec: 7.1 M
         * instructions for this list with one ABI, 31.7 M with three (libseccomp
         * 2.5.4 under callgrind; docs/benchmarks-history.md). */
#if defined(__x86_64__)
    json_t *arch = json_pack("[s]", "SCMP_ARCH_X86_64");
#elif defined(__aarch64__)
    json_t *arch = json_pack("[s]", "SCMP_ARCH_AARCH64");
#else
    json_t *arch = json_array();
#endif
    return json_pack("{s:s, s:i, s:o, s:o}", "defaultAction", "SCMP_ACT_ERRNO", "defaultErrnoRet",
                     EPERM, "architectures", arch, "syscalls", rules);
}
