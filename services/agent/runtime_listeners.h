/* runtime_listeners.h: the processes of a kernel that serve one of its TCP
 * ports, found from the host: the sockets of the kernel's network namespace
 * whose local end is that port (/proc/<init>/net/tcp and tcp6: the listening
 * socket and the connections accepted on it) and the processes of the
 * kernel's cgroup holding one of them (/proc/<pid>/fd): the app's server and
 * any process it forked per connection. For stopping an app (app_start.h). */
#ifndef AGENT_RUNTIME_LISTENERS_H
#define AGENT_RUNTIME_LISTENERS_H

#include <sys/types.h>

#include "services/agent/container.h"

#define LISTENERS_MAX 64

/* The socket inodes of /proc/net/tcp-format text (a header line, then one
 * socket per line) whose local port is port, listening or connected (states
 * 01 to 0A): at most max into inodes; the count. */
int listeners_parse_inodes(const char *text, int port, unsigned long *inodes, int max);

/* The processes of kernel id (its cgroup) holding a socket of port in its
 * network namespace: at most max into pids, the count in *n
 * (0: nothing listens). false (err) when the kernel has no running state. */
bool runtime_listeners(runtime *rt, const char *id, int port, pid_t *pids, int max, int *n,
                       ts_err *err) TS_MUST_CHECK;

/* Stop what serves port in kernel id: SIGTERM to each process, SIGKILL
 * to those still there after grace_ms. *n: how many were signalled (0:
 * nothing listened). false (err) as runtime_listeners. */
bool runtime_stop_listeners(runtime *rt, const char *id, int port, int grace_ms, int *n,
                            ts_err *err) TS_MUST_CHECK;

#endif
