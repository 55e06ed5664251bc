/* probe_syscalls.h: `probe syscalls [NAME...]`: each dangerous syscall,
 * in a child process of its own, with harmless arguments:
 * {"NAME": {"result": refused|reached|allowed|killed, "ret", "errno", "err",
 * "detail"}} (scratch files in $TESSERA_PROBE_SCRATCH, default
 * /tmp/.tessera-probe). */
#ifndef TESSERA_PROBE_SYSCALLS_H
#define TESSERA_PROBE_SYSCALLS_H

/* The names given (none: every check). Exit status 0. */
int probe_syscalls(int argc, char **argv);

#endif
