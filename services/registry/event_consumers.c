/* event_consumers.c: see event_consumers.h. */
#include "event_consumers.h"

bool reg_consumers_start(reg_consumers *rc, svc *s, const char *group, const char *const *topics,
                         kbus_handler handler, ts_err *err)
{
    int n = (int)reg_cfg.event_consumers;
    if (n < 1) n = 1;
    if (n > REG_MAX_EVENT_CONSUMERS) n = REG_MAX_EVENT_CONSUMERS;
    rc->n = 0;
    for (int i = 0; i < n; i++) {
        kbus_consumer *c = kbus_consume(svc_bus(s), group, topics, handler, NULL, err);
        if (!c) {
            reg_consumers_stop(rc);
            return false;
        }
        rc->c[rc->n++] = c;
    }
    return true;
}

void reg_consumers_stop(reg_consumers *rc)
{
    for (int i = 0; i < rc->n; i++)
        kbus_consumer_stop(rc->c[i]);
    rc->n = 0;
}
