/* event_consumers.h: the registry's bus consumers. Each consumer group
 * (tessera-registry.sessions, .kernels, .agents) runs registry.event_consumers
 * consumers in this process: the group coordinator spreads the topic's
 * partitions over them, so events of different partitions are handled in
 * parallel while each partition (and so each session or agent, the key) stays
 * in order on one thread. More consumers than partitions leaves some idle. */
#ifndef REGISTRY_EVENT_CONSUMERS_H
#define REGISTRY_EVENT_CONSUMERS_H

#include "libcommon/kbus.h"

#include <stdatomic.h>
#include "libcommon/svc.h"

#define REG_MAX_EVENT_CONSUMERS 16

typedef struct reg_consumers {
    kbus_consumer *c[REG_MAX_EVENT_CONSUMERS];
    int n;
    const char *topic; /* the one topic of the group */
    atomic_bool settled;
} reg_consumers;

/* The consumers per group: registry.event_consumers, or when it is 0 (the
 * default) 1 on a machine of at most two CPUs and 3 on larger ones. */
int reg_event_consumers(void);
/* Start reg_event_consumers() consumers of group on topics; on failure the
 * ones started are stopped again. */
bool reg_consumers_start(reg_consumers *rc, svc *s, const char *group, const char *const *topics,
                         kbus_handler handler, ts_err *err) TS_MUST_CHECK;
/* The same in kbus's batch mode (kbus_consume_batch). */
bool reg_consumers_start_batch(reg_consumers *rc, svc *s, const char *group,
                               const char *const *topics, const kbus_batch_opts *opts,
                               kbus_batch_handler handler, ts_err *err) TS_MUST_CHECK;
void reg_consumers_stop(reg_consumers *rc);

/* Readiness (svc_add_check, ctx = reg_consumers *): every partition of the
 * topic is assigned to one of the group's consumers. Consumers joining one
 * after another rebalance the group a few times at start; events wait while
 * that lasts, so the registry is not ready before. Once true, stays true. */
bool reg_consumers_check(svc *s, void *ctx, ts_err *err) TS_MUST_CHECK;

#endif
