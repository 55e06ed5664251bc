/* usage.h: per-kernel resource usage from cgroups (runtime_usage), published
 * on tessera.usage.v1 (KernelUsage, key: kernel id) once per heartbeat, as the
 * difference since the previous sample. */
#ifndef AGENT_USAGE_H
#define AGENT_USAGE_H

#include "libcommon/kbus.h"
#include "services/agent/kernels.h"

#define USAGE_TOPIC "tessera.usage.v1"

typedef struct usage_tracker usage_tracker;

usage_tracker *usage_new(void);
void usage_free(usage_tracker *u);

/* Sample every running kernel among views, publish one KernelUsage each
 * (the first sample of a kernel covers the time since it was first seen),
 * forget kernels that are no longer running. Returns the number published. */
int usage_publish(usage_tracker *u, runtime *rt, kbus *bus, const char *agent_id,
                  const kernel_view *views, int n);

#endif
