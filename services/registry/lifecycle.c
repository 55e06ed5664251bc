/* lifecycle.c: the session and kernel consumer groups (see lifecycle.h). */
#include "lifecycle.h"

#include "event_consumers.h"
#include "kernel_events.h"
#include "publish.h"
#include "session_events.h"

static reg_consumers session_consumers, kernel_consumers;

bool lifecycle_start(svc *s, ts_err *err)
{
    static const char *const session_topics[] = {TOPIC_SESSION, NULL};
    static const char *const kernel_topics[] = {TOPIC_KERNEL, NULL};
    /* No added wait: a batch is what has already arrived, at most 256
     * events. Placements cost three statements per batch whatever its size,
     * so larger batches save round trips (bench-scheduler through the API:
     * the registry recorded 3,300-3,950 placements/s with 64, 4,700-4,900
     * with 256, no more with 512); a batch's row locks are held for its one
     * transaction. A create waits on both groups: they are on the control
     * path (kafka.control_fetch_wait). */
    kbus_batch_opts opts = {.max_messages = 256, .max_wait_ms = 0, .control = true};
    if (!reg_consumers_start_batch(&session_consumers, s, "tessera-registry.sessions",
                                   session_topics, &opts, session_events_batch, err))
        return false;
    if (reg_consumers_start_batch(&kernel_consumers, s, "tessera-registry.kernels", kernel_topics,
                                  &opts, kernel_events_batch, err)) {
        svc_add_check(s, "session-events", reg_consumers_check, &session_consumers);
        svc_add_check(s, "kernel-events", reg_consumers_check, &kernel_consumers);
        return true;
    }
    reg_consumers_stop(&session_consumers);
    return false;
}

void lifecycle_stop(void)
{
    reg_consumers_stop(&session_consumers);
    reg_consumers_stop(&kernel_consumers);
}
