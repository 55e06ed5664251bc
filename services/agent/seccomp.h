/* seccomp.h: the default seccomp profile of every kernel (OCI linux.seccomp).
 *
 * An allow-list, as container runtimes ship (we chose our own list, with
 * Docker's and Podman's default profiles as the reference for what a normal
 * workload needs): a syscall not named fails with EPERM. Named, by purpose:
 * processes and threads, credentials, signals, memory (including what CUDA,
 * NCCL and PyTorch use: mmap, mremap, madvise, mbind, memfd_create, futex,
 * sched_*, epoll, eventfd, ioctl), files, polling and timers, time,
 * scheduling and resources, sockets, System V and POSIX IPC, ptrace of the
 * container's own processes (gdb, strace; safe since kernel 4.8).
 *
 * Allowed only with some arguments:
 *   clone     without namespace flags (CLONE_NEWNS, NEWUTS, NEWIPC, NEWUSER,
 *             NEWPID, NEWNET, NEWCGROUP)
 *   unshare   the same, and without CLONE_NEWTIME
 *   personality  PER_LINUX, PER_LINUX32, UNAME26, ADDR_NO_RANDOMIZE (gdb)
 *             and their combinations, and the 0xffffffff query
 *   socket    AF_UNIX, AF_INET, AF_INET6, AF_NETLINK only (no AF_PACKET,
 *             AF_VSOCK, AF_ALG, AF_BLUETOOTH ...); raw AF_INET sockets still
 *             need CAP_NET_RAW, which kernels do not get
 * clone3 answers ENOSYS, so glibc falls back to clone (whose flags the filter
 * can see). Syscalls newer than every name here answer ENOSYS too (runc adds
 * that for a profile whose default is an errno), so new libcs fall back.
 * Names the host's libseccomp does not know are skipped by runc. Only the
 * native ABI is allowed: 32-bit programs (i386, x32, arm) do not run. */
#ifndef AGENT_SECCOMP_H
#define AGENT_SECCOMP_H

#include <jansson.h>

/* A new reference to the profile object. */
json_t *seccomp_default_profile(void);

/* The names allowed with any arguments, NULL-terminated (tests, docs). */
extern const char *const seccomp_allowed[];

/* Names that must stay refused whatever their arguments (tests, docs):
 * mounts, namespaces, keyrings, bpf, perf, kexec, modules, reboot, swap,
 * clocks, raw I/O ports, accounting, quotas, the kernel log, file handles,
 * userfaultfd, io_uring ... NULL-terminated. */
extern const char *const seccomp_refused[];

#endif
