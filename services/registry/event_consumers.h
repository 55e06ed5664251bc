/* event_consumers.h: the registry's bus consumers. Each consumer group
 * (tessera-registry.sessions, .kernels, .agents) runs registry.event_consumers
 * consumers in this process: the group coordinator spreads the topic's
 * partitions over them, so events of different partitions are handled in
 * parallel while each partition (and so each session or agent, the key) stays
 * in order on one thread. More consumers than partitions leaves some idle. */
#ifndef REGISTRY_EVENT_CONSUMERS_H
#define REGISTRY_EVENT_CONSUMERS_H

#include "libcommon/kbus.h"
#include "registry.h"

#define REG_MAX_EVENT_CONSUMERS 16

typedef struct reg_consumers {
    kbus_consumer *c[REG_MAX_EVENT_CONSUMERS];
    int n;
} reg_consumers;

/* Start registry.event_consumers consumers of group on topics; on failure the
 * ones started are stopped again. */
bool reg_consumers_start(reg_consumers *rc, svc *s, const char *group, const char *const *topics,
                         kbus_handler handler, ts_err *err) TS_MUST_CHECK;
void reg_consumers_stop(reg_consumers *rc);

#endif
