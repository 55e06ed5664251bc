/* seccomp.c: the default deny-list seccomp profile. */
#include "services/agent/seccomp.h"

#include <errno.h>

const char *const seccomp_denied[] = {
    /* kernel modules, kexec, reboot */
    "init_module",
    "finit_module",
    "delete_module",
    "create_module",
    "get_kernel_syms",
    "query_module",
    "kexec_load",
    "kexec_file_load",
    "reboot",
    /* the host's clocks, swap, accounting, quotas, kernel log */
    "settimeofday",
    "stime",
    "clock_settime",
    "clock_settime64",
    "clock_adjtime",
    "clock_adjtime64",
    "adjtimex",
    "swapon",
    "swapoff",
    "acct",
    "quotactl",
    "quotactl_fd",
    "syslog",
    "_sysctl",
    "sysfs",
    "ustat",
    "uselib",
    "nfsservctl",
    "lookup_dcookie",
    /* raw I/O ports, vm86 */
    "iopl",
    "ioperm",
    "vm86",
    "vm86old",
    /* kernel keyrings (not namespaced) */
    "add_key",
    "request_key",
    "keyctl",
    /* bpf, perf, userfaultfd, io_uring (bypasses the filter) */
    "bpf",
    "perf_event_open",
    "userfaultfd",
    "io_uring_setup",
    "io_uring_enter",
    "io_uring_register",
    /* mounts and namespaces */
    "mount",
    "umount",
    "umount2",
    "pivot_root",
    "move_mount",
    "open_tree",
    "fsopen",
    "fsconfig",
    "fsmount",
    "fspick",
    "mount_setattr",
    "setns",
    "unshare",
    /* file handles (the "shocker" escape), cross-process inspection */
    "name_to_handle_at",
    "open_by_handle_at",
    "kcmp",
    /* moving other processes' pages between NUMA nodes */
    "move_pages",
    "migrate_pages",
    NULL,
};

json_t *seccomp_default_profile(void)
{
    json_t *names = json_array();
    for (const char *const *n = seccomp_denied; *n; n++)
        json_array_append_new(names, json_string(*n));
    json_t *rule =
        json_pack("{s:o, s:s, s:i}", "names", names, "action", "SCMP_ACT_ERRNO", "errnoRet", EPERM);
#if defined(__x86_64__)
    json_t *arch = json_pack("[s,s,s]", "SCMP_ARCH_X86_64", "SCMP_ARCH_X86", "SCMP_ARCH_X32");
#elif defined(__aarch64__)
    json_t *arch = json_pack("[s,s]", "SCMP_ARCH_AARCH64", "SCMP_ARCH_ARM");
#else
    json_t *arch = json_array();
#endif
    return json_pack("{s:s, s:o, s:[o]}", "defaultAction", "SCMP_ACT_ALLOW", "architectures", arch,
                     "syscalls", rule);
}
