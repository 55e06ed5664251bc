/* proc.h: run a helper program (runc, a CNI plugin) and capture what it says.
 *
 * proc_run spawns argv with posix_spawn (no shell), feeds stdin_data, captures
 * stdout and stderr separately (each capped: bytes past the cap are read and
 * dropped, and the result says it was truncated) and kills the program after
 * timeout_ms. The file descriptors of the caller are never inherited. */
#ifndef TESSERA_PROC_H
#define TESSERA_PROC_H

#include "libcommon/common.h"

#include <spawn.h>
#include <sys/types.h>

/* What a program said and how it ended. */
typedef struct exec_result {
    int exit_code; /* -1 when killed by the timeout */
    bool timed_out;
    char *out; /* heap, NUL-terminated */
    size_t out_len;
    bool out_truncated;
    char *err;
    size_t err_len;
    bool err_truncated;
} exec_result;
void exec_result_free(exec_result *r);

typedef struct proc_opts {
    const char *const *argv; /* argv[0]: a path, or a name looked up in PATH */
    const char *const *envp; /* NULL: the caller's environment */
    const char *stdin_data;  /* NULL: stdin is /dev/null */
    size_t stdin_len;
    int timeout_ms;   /* <= 0: no limit */
    size_t cap_bytes; /* per stream; 0: 1 MiB */
    /* Where the program writes the pid of a process it starts (runc exec
     * --pid-file): on timeout that process is killed with SIGKILL too. */
    const char *kill_pid_file;
} proc_opts;

/* posix_spawn attributes every program the agent starts gets: an empty
 * signal mask and every signal at its default (the agent blocks and handles
 * some), and with own_group a process group of its own (so a timeout can
 * kill what it started). Destroy with posix_spawnattr_destroy. */
void proc_spawnattr_init(posix_spawnattr_t *at, bool own_group);

/* Runs to completion (or the timeout). false only when it could not be
 * started; a non-zero exit is a result (r->exit_code, 128+signal when killed
 * by a signal, -1 on timeout). */
bool proc_run(const proc_opts *o, exec_result *r, ts_err *err) TS_MUST_CHECK;

/* Send sig to pid only while it is still the process whose /proc/<pid>/cgroup
 * names cgroup_hint (NULL: no check); through a pidfd, so a recycled pid is
 * never hit. true when the signal was sent. */
bool proc_signal_checked(pid_t pid, int sig, const char *cgroup_hint) TS_MUST_CHECK;

/* Wait up to timeout_ms for a process (not necessarily our child) to end;
 * true when it is gone. */
bool proc_wait_gone(pid_t pid, int timeout_ms) TS_MUST_CHECK;

/* "<directory of the running program>/<name>" (heap), where the programs
 * installed beside the agent are (tessera-term, tessera-portmap); NULL with
 * err set when /proc/self/exe cannot be read. */
char *proc_sibling_path(const char *name, ts_err *err);

#endif
