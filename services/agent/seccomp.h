/* seccomp.h: the default seccomp profile of every kernel (OCI linux.seccomp).
 *
 * A deny list, not Docker's allow list: every syscall is allowed except those
 * that reach outside the container or into the kernel's own state (module
 * loading, kexec, reboot, swap, clock setting, keyrings, bpf, perf, mount and
 * namespace calls, open_by_handle_at, userfaultfd, io_uring ...), which fail
 * with EPERM. Most of these also need a capability the container lacks; the
 * filter is the second fence, as in Docker. Names unknown to the host's
 * libseccomp are skipped by runc. */
#ifndef AGENT_SECCOMP_H
#define AGENT_SECCOMP_H

#include <jansson.h>

/* A new reference to the profile object. */
json_t *seccomp_default_profile(void);

/* The denied names, NULL-terminated (tests, docs). */
extern const char *const seccomp_denied[];

#endif
