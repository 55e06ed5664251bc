/* ports.h: the host port pool for published service ports.
 *
 * One file per allocated port, <state>/ports/<port>, holding the kernel id.
 * Creating it with O_EXCL is the allocation (atomic, even across processes),
 * and it outlives an agent restart, so a port still published by a running
 * kernel is never handed out again. A port some other host process listens on
 * is skipped (checked with a bind). */
#ifndef AGENT_PORTS_H
#define AGENT_PORTS_H

#include "container.h"

typedef struct port_pool port_pool;

port_pool *ports_new(const char *state_dir, int start, int end, ts_err *err);
void ports_free(port_pool *p);

/* n host ports for kernel_id into out[]; all or none. */
bool ports_alloc(port_pool *p, const char *kernel_id, int n, int *out, ts_err *err) TS_MUST_CHECK;
/* Release every port held by kernel_id (idempotent); returns how many. */
int ports_release_kernel(port_pool *p, const char *kernel_id);
/* The kernel holding port, into buf; false when free. */
bool ports_owner(port_pool *p, int port, char *buf, size_t size) TS_MUST_CHECK;

#endif
