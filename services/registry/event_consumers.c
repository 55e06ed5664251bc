/* event_consumers.c: see event_consumers.h. */
#include "event_consumers.h"

#include "context.h"
#include <unistd.h>

int reg_event_consumers(void)
{
    int n = (int)reg_settings.event_consumers;
    if (n == 0) {
        /* auto: one on a machine of two CPUs or fewer, where the fetch loops
         * and database writers of three per group took the scheduler's CPU
         * (bench-scheduler: 4,900 placements/s with three, 9,600 with one) */
        long cpus = sysconf(_SC_NPROCESSORS_ONLN);
        n = cpus > 2 ? 3 : 1;
    }
    if (n < 1) n = 1;
    if (n > REG_MAX_EVENT_CONSUMERS) n = REG_MAX_EVENT_CONSUMERS;
    return n;
}

static bool start(reg_consumers *rc, svc *s, const char *group, const char *const *topics,
                  kbus_handler handler, const kbus_batch_opts *opts, kbus_batch_handler batch,
                  ts_err *err)
{
    int n = reg_event_consumers();
    rc->n = 0;
    rc->topic = topics[0];
    atomic_store(&rc->settled, false);
    for (int i = 0; i < n; i++) {
        kbus_consumer *c =
            batch ? kbus_consume_batch(svc_bus(s), group, topics, opts, batch, NULL, err)
                  : kbus_consume(svc_bus(s), group, topics, handler, NULL, err);
        if (!c) {
            reg_consumers_stop(rc);
            return false;
        }
        rc->c[rc->n++] = c;
    }
    return true;
}

bool reg_consumers_start(reg_consumers *rc, svc *s, const char *group, const char *const *topics,
                         kbus_handler handler, ts_err *err)
{
    return start(rc, s, group, topics, handler, NULL, NULL, err);
}

bool reg_consumers_start_batch(reg_consumers *rc, svc *s, const char *group,
                               const char *const *topics, const kbus_batch_opts *opts,
                               kbus_batch_handler handler, ts_err *err)
{
    return start(rc, s, group, topics, NULL, opts, handler, err);
}

bool reg_consumers_check(svc *s, void *ctx, ts_err *err)
{
    (void)s;
    reg_consumers *rc = ctx;
    if (atomic_load(&rc->settled)) return true;
    /* Joined: the group assigned the topic's partitions among its members,
     * this process's consumers and the other registry instances' (alone,
     * they have every partition). */
    for (int i = 0; i < rc->n; i++)
        if (!kbus_consumer_joined(rc->c[i])) {
            ts_err_set(err, "%s: the registry's consumers have not joined their group yet",
                       rc->topic);
            return false;
        }
    atomic_store(&rc->settled, true);
    return true;
}

void reg_consumers_stop(reg_consumers *rc)
{
    kbus_consumers_stop(rc->c, rc->n);
    rc->n = 0;
}
