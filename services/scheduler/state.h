/* state.h: what the scheduler's modules share (docs/scheduler.md, "The
 * service"): its options, the inbox between the consumer threads and the
 * scheduling thread, the records of the sessions and agents it knows, its
 * counters, and sched_svc, which holds them all. Types and small record
 * helpers only: this module calls no other module of the scheduler's service,
 * so every one of them can include it.
 *
 * service.c creates the sched_svc and wires the modules over it:
 *   consumers.c  -> the inbox (consumer threads)
 *   groups.c     resource groups and the set of groups that want a pass
 *   store.c      the scheduler's own Redis records
 *   publisher.c  SessionScheduled / SessionUnschedulable
 *   shared_limits.c  limits across instances
 *   agents.c     agent events -> the model      (groups, store)
 *   sessions.c   session events, the passes     (groups, store, publisher,
 *                                                shared_limits, agents)
 *   recovery.c   start-up and Redis loss        (all of the above)
 *   ownership.c  which pending sessions are this instance's (recovery) */
#ifndef TESSERA_SCHED_STATE_H
#define TESSERA_SCHED_STATE_H

#include "libcommon/svc.h"
#include "services/scheduler/engine.h"
#include "services/scheduler/reservation.h"
#include "services/scheduler/strmap.h"
#include "tessera/v1/session.pb-c.h"

#include <pthread.h>
#include <stdatomic.h>

#define SCHED_TOPIC_SESSION "tessera.session.v1"
#define SCHED_TOPIC_AGENT "tessera.agent.v1"
#define SCHED_SESSIONS_GROUP "tessera-scheduler.sessions"
#define SCHED_MAX_PARTITIONS 256 /* of tessera.session.v1 */

/* Options (main.c's table fills it). */
typedef struct sched_config {
    char *key_prefix;
    int64_t sweep_interval_ms;
    int64_t resync_interval_ms;
    int64_t reserve_batch;
    int64_t tombstone_ttl_ms;
    int64_t rebuild_after_ms;
    bool write_agent_capacity;
    char *default_order;
    char *default_selector;
    int64_t aging_ms;
    int64_t max_held;
    int64_t pass_lookahead;
    char *group_policies;
    char *default_architecture;
} sched_config;

extern sched_config sched_cfg;

/* ---- inbox: consumer threads -> scheduling thread -------------------------------------- */

typedef enum {
    EV_ENQUEUED,          /* enq: the decoded SessionEnqueued (owned) */
    EV_ENDED,             /* session cancelled, terminated or failed: release what it holds */
    EV_AGENT_UP,          /* agent: AgentStarted or AgentHeartbeat fields */
    EV_AGENT_DOWN,        /* AgentStopped */
    EV_AGENT_SCHEDULABLE, /* AgentSchedulable: agent.id, schedulable (false: drained) */
} sched_ev_kind;

/* An agent's announced capacity (from AgentStarted or AgentHeartbeat). */
typedef struct sched_agent_msg {
    char id[SCHED_ID_MAX];
    char group[SCHED_ID_MAX];
    char arch[SCHED_ARCH_MAX]; /* "" from heartbeats: keep what is known */
    slots_t total;             /* without cuda.* (they come from the devices) */
    int ndev;
    int32_t dev_cap[SCHED_MAX_DEVICES];
    char dev_id[SCHED_MAX_DEVICES][SCHED_ID_MAX];
    bool has_devices; /* the message listed devices (heartbeats may not) */
} sched_agent_msg;

typedef struct sched_ev {
    struct sched_ev *next;
    sched_ev_kind kind;
    char session_id[SCHED_ID_MAX];
    char reason[128];
    Tessera__V1__SessionEnqueued *enq;
    sched_agent_msg agent;
    bool schedulable; /* EV_AGENT_SCHEDULABLE */
    int64_t at_us;    /* when the consumer got it (monotonic) */
} sched_ev;

/* ---- the scheduler's records --------------------------------------------------------------- */

/* One kernel holding slots (what SessionScheduled said, and what release needs). */
typedef struct sched_held {
    char kernel_id[SCHED_ID_MAX];
    char agent_id[SCHED_ID_MAX];
    char role[16];
    int idx;
    slots_t slots;
    int ndev;
    resv_dev dev[SCHED_MAX_DEVICES];
    bool whole[SCHED_MAX_DEVICES];
} sched_held;

typedef enum { REC_PENDING = 0, REC_HELD } sched_rec_state;

/* A session this instance knows: pending in a queue, or holding slots. */
typedef struct sched_rec {
    char id[SCHED_ID_MAX];
    char group[SCHED_ID_MAX];
    sched_rec_state state;
    Tessera__V1__SessionEnqueued *enq; /* NULL for sessions adopted from Redis */
    char scope[RESV_SCOPES][SCHED_ID_MAX];
    int64_t queued_us; /* when the event reached this instance (latency metric) */
    int nk;
    sched_held *k;  /* REC_HELD */
    bool unpersist; /* scheduled: delete its pending record after the bus acknowledged */
} sched_rec;

/* Per-agent facts the engine model does not keep. */
typedef struct sched_agent_info {
    char group[SCHED_ID_MAX];
    char arch[SCHED_ARCH_MAX];
    int ndev;
    char dev_id[SCHED_MAX_DEVICES][SCHED_ID_MAX];
    bool stopped;
    bool drained; /* AgentSchedulable false (Redis: agent:<id> drained, the registry's) */
} sched_agent_info;

typedef struct sched_stats {
    _Atomic uint64_t enqueued, duplicates, ended, released, scheduled, unschedulable_published,
        refused, passes, sweeps, resyncs, redis_losses, rebuilds, agents_events, latency_count,
        handed_over, taken_over;
    _Atomic uint64_t latency_us_sum, pass_us_sum;
    _Atomic int64_t pending, held_sessions, agents, partitions;
} sched_stats;

typedef struct sched_batch sched_batch; /* sessions.c: the reservations of a pass */

typedef struct sched_svc {
    svc *s;
    kbus *bus;
    const char *producer;
    /* inbox */
    pthread_mutex_t mu;
    pthread_cond_t cv;
    sched_ev *head, *tail;
    bool stop;
    /* start-up handshake */
    bool loaded;
    bool load_ok;
    ts_err load_err;
    pthread_t thread;
    bool thread_started;
    kbus_consumer *c_sessions, *c_agents;
    atomic_bool agents_assigned;
    /* scheduling thread only */
    rds *r;
    resv *v;
    sched_engine *e;
    strmap *recs;         /* session id -> sched_rec */
    strmap *agents;       /* agent id -> sched_agent_info */
    strmap *dirty;        /* resource group name -> (void *)1 */
    strmap *ext_accounts; /* "<resv scope>:<id>" -> (void *)1: others hold some (shared_limits.c) */
    sched_batch *batch;
    char **unpersist; /* pending records to delete after the bus acknowledged */
    size_t nunpersist, capunpersist;
    bool loading; /* start-up: allocations are adopted after the agents */
    bool redis_lost;
    int64_t lost_since_ms;
    int64_t next_sweep_ms, next_resync_ms;
    /* ownership.c: the partitions of tessera.session.v1 the group gave this
     * instance (known once it had some), and the topic's partition count */
    bool owned[SCHED_MAX_PARTITIONS];
    int n_owned, n_partitions;
    bool owned_known;
    int64_t next_take_ms;
    sched_stats st;
} sched_svc;

/* Records: the session's record, made (empty, pending) on first use. */
sched_rec *sched_rec_get_or_new(sched_svc *x, const char *id, const char *group);
/* Forget a session's record (strmap and memory). */
void sched_rec_drop(sched_svc *x, sched_rec *rec);
void sched_rec_free(void *p);

/* The log context of the scheduling thread: the one session (or agent) the
 * code works on now; the previous one's fields are cleared. */
void sched_log_session(const char *session_id);
void sched_log_agent(const char *agent_id);

#endif
