/* runtime_start.h: creating and starting a kernel's container (container.h).
 *
 * The kernel dir and its host ports first, recorded in state.json before
 * anything outside the kernel dir exists (a crash from there on leaves
 * something destroy can find). Then the network (the netns, or the kernel's
 * user namespace with its netns, and CNI ADD) is set up in a thread while
 * the kernel's disk is made or taken back (runtime_disk.h), the overlay
 * rootfs is mounted, /etc/{hosts,hostname,resolv.conf} and
 * /home/work made, vfolders the containers' root cannot reach staged
 * (userns.h) and config.json written (bundle.h); once both are done, the
 * kernel's supervisor runs `runc run --detach` (sup_spawn.h), so the
 * process never sees a network that is not there yet. (One runc run instead
 * of `runc create` beside CNI and then `runc start`: a Go program fewer per
 * kernel, and CNI no longer competes with runc for the CPU.) A start that
 * fails at any step is torn down (runtime_destroy.h): nothing is left. */
#ifndef AGENT_RUNTIME_START_H
#define AGENT_RUNTIME_START_H

#include "services/agent/container.h"

/* Create and start; returns when the process runs (or failed: err says why). */
bool runtime_start(runtime *rt, const kernel_spec *spec, kernel_status *out,
                   ts_err *err) TS_MUST_CHECK;

/* The container's /etc/resolv.conf (into buf) from the host's text (NULL:
 * none; cut into lines in place): the host's resolver minus loopback name
 * servers (unreachable from the container's netns); none left: public ones,
 * as Docker does. Safe on concurrent starts. */
void rts_resolv_conf(char *host, char *buf, size_t size);

#endif
