/* kernel_events.h: publishing tessera.kernel.v1 events (key: session id,
 * subject: kernel id). A refused produce is logged (the caller has the
 * kernel in the thread's log context): the state the event reports is also
 * in heartbeats, and re-reported after an agent restart. */
#ifndef AGENT_KERNEL_EVENTS_H
#define AGENT_KERNEL_EVENTS_H

#include "libcommon/kbus.h"
#include "services/agent/image_pull.h"
#include "services/agent/service_ports.h"

#define KERNEL_TOPIC "tessera.kernel.v1"

typedef struct kev_ctx {
    kbus *bus;
    const char *agent_id;
    const char *session_id;
    const char *kernel_id;
    const char *correlation_id; /* may be NULL */
    int generation;             /* CreateKernel.generation (Started, Exited, Terminated) */
} kev_ctx;

void kev_pulling(const kev_ctx *c, const char *image, const image_progress *pr);
void kev_creating(const kev_ctx *c, const char *digest);
void kev_started(const kev_ctx *c, const char *kernel_host, const kernel_service_port *ports,
                 int n_ports);
void kev_exited(const kev_ctx *c, int exit_code, const char *reason);
void kev_terminated(const kev_ctx *c, int exit_code, const char *reason);

#endif
