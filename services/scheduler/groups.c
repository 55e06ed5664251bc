/* groups.c: resource groups and their policies, the groups wanting a pass
 * (groups.h). */
#include "services/scheduler/groups.h"

#include "libcommon/log.h"

#include <string.h>

static bool policy_for(const char *group, sched_rg_policy *pol)
{
    *pol = (sched_rg_policy){.order = SCHED_FIFO,
                             .selector = SCHED_CONCENTRATED,
                             .aging_ms = sched_cfg.aging_ms,
                             .max_held = (int)sched_cfg.max_held,
                             .lookahead = (int)sched_cfg.pass_lookahead};
    if (!sched_order_parse(sched_cfg.default_order, &pol->order) ||
        !sched_selector_parse(sched_cfg.default_selector, &pol->selector))
        return false;
    /* "gpu=drf/dispersed,cpu=lifo/roundrobin" */
    const char *p = sched_cfg.group_policies ? sched_cfg.group_policies : "";
    size_t glen = strlen(group);
    while (*p) {
        while (*p == ',' || *p == ' ')
            p++;
        const char *eq = strchr(p, '=');
        if (!eq) break;
        const char *end = strchr(eq, ',');
        if (!end) end = eq + strlen(eq);
        if ((size_t)(eq - p) == glen && strncmp(p, group, glen) == 0) {
            char val[64];
            size_t n =
                (size_t)(end - eq - 1) < sizeof(val) - 1 ? (size_t)(end - eq - 1) : sizeof(val) - 1;
            memcpy(val, eq + 1, n);
            val[n] = '\0';
            char *slash = strchr(val, '/');
            if (slash) *slash = '\0';
            if (val[0] && !sched_order_parse(val, &pol->order)) return false;
            if (slash && slash[1] && !sched_selector_parse(slash + 1, &pol->selector)) return false;
        }
        p = end;
    }
    return true;
}

bool sched_ensure_group(sched_svc *x, const char *group)
{
    if (sched_engine_group(x->e, group)) return true;
    sched_rg_policy pol;
    if (!policy_for(group, &pol)) return false;
    ts_err err;
    if (!sched_engine_add_group(x->e, group, &pol, &err)) {
        TLOG_WARN("resource group not added", "group=%s error=\"%s\"", group, err.msg);
        return false;
    }
    TLOG_INFO("resource group added", "group=%s order=%s selector=%s lookahead=%d", group,
              sched_order_name(pol.order), sched_selector_name(pol.selector), pol.lookahead);
    return true;
}

void sched_mark_dirty(sched_svc *x, const char *group)
{
    if (!strmap_get(x->dirty, group)) strmap_put(x->dirty, group, (void *)1);
}

void sched_mark_all_dirty(sched_svc *x)
{
    size_t pos = 0;
    const char *id;
    void *v;
    while (strmap_next(x->agents, &pos, &id, &v))
        sched_mark_dirty(x, ((sched_agent_info *)v)->group);
}
