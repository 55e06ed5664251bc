/* tessera-scheduler: places pending sessions on agents with room, never double-booking.
 *
 * Wiring only: the options table (into state.h's sched_cfg) and the svc hooks.
 * The engine is engine.c and its neighbours; the service around it is
 * service.c, which wires consumers.c, sessions.c, agents.c, groups.c,
 * store.c, recovery.c, shared_limits.c and publisher.c (docs/scheduler.md). */
#include "libcommon/svc.h"
#include "services/scheduler/service.h"
#include "services/scheduler/state.h"

static const cfg_option scheduler_options[] = {
    {"scheduler.key_prefix", CFG_STRING, &sched_cfg.key_prefix, "", 0, 0, NULL, false, NULL,
     "prefix of every Redis key (occupancy and the scheduler's records)"},
    {"scheduler.sweep_interval", CFG_DURATION, &sched_cfg.sweep_interval_ms, "1s", 10, 3600000,
     NULL, false, NULL, "periodic pass over every resource group (starts_at, aging, safety)"},
    {"scheduler.resync_interval", CFG_DURATION, &sched_cfg.resync_interval_ms, "10s", 100, 86400000,
     NULL, false, NULL,
     "how often every agent's occupancy is read back from Redis (other instances' placements)"},
    {"scheduler.reserve_batch", CFG_INT, &sched_cfg.reserve_batch, "64", 1, 4096, NULL, false, NULL,
     "sessions reserved per Redis script call"},
    {"scheduler.tombstone_ttl", CFG_DURATION, &sched_cfg.tombstone_ttl_ms, "24h", 1000,
     2592000000.0, NULL, false, NULL,
     "how long an ended session is remembered (a replayed SessionEnqueued is ignored)"},
    {"scheduler.rebuild_after", CFG_DURATION, &sched_cfg.rebuild_after_ms, "0", 0, 3600000, NULL,
     false, NULL,
     "after Redis lost its data, rebuild occupancy from this instance's model when the registry "
     "has not within this time (0 = never; only for a single instance)"},
    {"scheduler.write_agent_capacity", CFG_BOOL, &sched_cfg.write_agent_capacity, "true", 0, 0,
     NULL, false, NULL,
     "write agent:<id> capacity from AgentStarted / heartbeats (the registry does too)"},
    {"scheduler.default_order", CFG_ENUM, &sched_cfg.default_order, "fifo", 0, 0, "fifo|lifo|drf",
     false, NULL, "queue order of a resource group without a policy"},
    {"scheduler.default_selector", CFG_ENUM, &sched_cfg.default_selector, "concentrated", 0, 0,
     "concentrated|dispersed|roundrobin", false, NULL,
     "agent selector of a resource group without a policy"},
    {"scheduler.group_policies", CFG_STRING, &sched_cfg.group_policies, "", 0, 0, NULL, false, NULL,
     "per resource group order/selector, e.g. \"gpu=drf/dispersed,cpu=lifo/roundrobin\""},
    {"scheduler.aging", CFG_DURATION, &sched_cfg.aging_ms, "5m", 0, 86400000, NULL, false, NULL,
     "a session that did not fit for this long may hold an agent (0 = never)"},
    {"scheduler.max_held", CFG_INT, &sched_cfg.max_held, "1", 0, 1000, NULL, false, NULL,
     "agents held at once per resource group for aged sessions"},
    {"scheduler.pass_lookahead", CFG_INT, &sched_cfg.pass_lookahead, "2048", 0, 1000000, NULL,
     false, NULL,
     "sessions a scheduling pass considers at most per resource group, in queue order (0 = the "
     "whole queue); a pass that placed some and stopped there is followed by another"},
    {"scheduler.default_architecture", CFG_STRING, &sched_cfg.default_architecture, "x86_64", 0, 0,
     NULL, false, NULL, "architecture of an agent first seen through a heartbeat"},
    {NULL},
};

int main(int argc, char **argv)
{
    static const svc_spec spec = {
        .name = "scheduler",
        .summary = "places pending sessions on agents with room, never double-booking",
        .default_listen = "127.0.0.1:8093",
        .needs = SVC_NEEDS_REDIS | SVC_NEEDS_KAFKA,
        .options = scheduler_options,
        .start = sched_svc_start,
        .stop = sched_svc_stop,
    };
    return svc_main(argc, argv, &spec);
}
