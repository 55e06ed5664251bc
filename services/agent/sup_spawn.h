/* sup_spawn.h: starting a kernel's supervisor, tessera-sup
 * (services/agent/sup/main.c), which runs `runc run --detach`.
 *
 * The supervisor is not the agent's child (a restart of the agent does not
 * touch it): it calls setsid and makes itself a child subreaper, so when runc
 * has started the container and exited, the container's init is re-parented
 * to it and it can wait() for it and learn its exit status, something nothing
 * else on the host can. The container's stdout and stderr are a pipe the
 * supervisor reads into the size-capped log (logs.c). When init ends the
 * supervisor writes <kernel>/exit ("code signal oom_kills time"), drains the
 * pipe and exits. */
#ifndef AGENT_SUP_SPAWN_H
#define AGENT_SUP_SPAWN_H

#include "services/agent/runtime_state.h"

/* Start the supervisor of kernel id (its bundle written) and wait until the
 * container runs (*init_pid) or failed (err: runc's own error when it logged
 * one). *sup_pid is set whenever the supervisor started. */
bool sup_spawn(runtime *rt, const char *id, pid_t *init_pid, pid_t *sup_pid,
               ts_err *err) TS_MUST_CHECK;

#endif
