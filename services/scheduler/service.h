/* service.h: tessera-scheduler's wiring around the engine (docs/scheduler.md,
 * "Wiring"): the event consumers, the scheduling thread, the Redis records that
 * make the pending queue survive a restart, and the events it publishes.
 *
 * Threads:
 *   - the sessions consumer (group tessera-scheduler.sessions) decodes
 *     tessera.session.v1, makes the durable part of each event's effect in
 *     Redis (a pending record at enqueue, a tombstone at the end), then hands
 *     the event to the scheduling thread through the inbox;
 *   - the agents consumer (a broadcast group per instance: every instance sees
 *     every agent) hands tessera.agent.v1 events to the inbox;
 *   - the scheduling thread owns the engine, the model and the reservation
 *     connection: it drains the inbox, marks resource groups dirty and runs
 *     passes (coalesced), plus a periodic sweep.
 *
 * Redis keys of the scheduler's own (besides reservation.h's layout):
 *   <p>sched:pending:<session>  string  the SessionEnqueued payload (protobuf), written
 *                               before the event's offset is stored, deleted once the
 *                               session is scheduled (SessionScheduled acknowledged by
 *                               the bus), cancelled or ended
 *   <p>sched:done:<session>     string  tombstone of an ended session (TTL
 *                               scheduler.tombstone_ttl): a late or replayed Enqueued is
 *                               ignored, and a release not yet done is done at start-up
 *   <p>sched:agents             hash    agent id -> "<resource group> <architecture>
 *                               <device ids, comma separated>"
 *   <p>sched:alive              string  present while Redis holds the scheduler's data; its
 *                               absence means Redis lost its data (FLUSHALL, restart) */
#ifndef TESSERA_SCHED_SERVICE_H
#define TESSERA_SCHED_SERVICE_H

#include "libcommon/svc.h"
#include "services/scheduler/engine.h"
#include "services/scheduler/reservation.h"
#include "services/scheduler/strmap.h"
#include "tessera/v1/agent.pb-c.h"
#include "tessera/v1/session.pb-c.h"

#include <pthread.h>
#include <stdatomic.h>

#define SCHED_TOPIC_SESSION "tessera.session.v1"
#define SCHED_TOPIC_AGENT "tessera.agent.v1"
#define SCHED_SESSIONS_GROUP "tessera-scheduler.sessions"

/* Options (main.c's table). */
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
    char *group_policies;
    char *default_architecture;
} sched_config;

extern sched_config sched_cfg;

/* ---- inbox: consumer threads -> scheduling thread -------------------------------------- */

typedef enum {
    EV_ENQUEUED,   /* enq: the decoded SessionEnqueued (owned) */
    EV_ENDED,      /* session cancelled, terminated or failed: release what it holds */
    EV_AGENT_UP,   /* agent: AgentStarted or AgentHeartbeat fields */
    EV_AGENT_DOWN, /* AgentStopped */
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
    int64_t at_us; /* when the consumer got it (monotonic) */
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
} sched_agent_info;

typedef struct sched_stats {
    _Atomic uint64_t enqueued, duplicates, ended, released, scheduled, unschedulable_published,
        refused, passes, sweeps, resyncs, redis_losses, rebuilds, agents_events, latency_count;
    _Atomic uint64_t latency_us_sum, pass_us_sum;
    _Atomic int64_t pending, held_sessions, agents;
} sched_stats;

typedef struct sched_batch sched_batch;

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
    sched_stats st;
} sched_svc;

/* main.c's hooks. */
bool sched_svc_start(svc *s, ts_err *err) TS_MUST_CHECK;
void sched_svc_stop(svc *s);

/* consumers.c */
bool sched_consumers_start(sched_svc *x, ts_err *err) TS_MUST_CHECK;
void sched_consumers_stop(sched_svc *x);
void sched_inbox_push(sched_svc *x, sched_ev *ev);
void sched_ev_free(sched_ev *ev);
/* Decode AgentStarted / AgentHeartbeat fields into m (false with err when invalid). */
bool sched_agent_msg_from_started(const Tessera__V1__AgentStarted *a, sched_agent_msg *m,
                                  ts_err *err) TS_MUST_CHECK;
bool sched_agent_msg_from_heartbeat(const Tessera__V1__AgentHeartbeat *h, sched_agent_msg *m,
                                    ts_err *err) TS_MUST_CHECK;

/* sessions.c: the scheduling thread's session work */
/* A sched_session from an Enqueued event (NULL with err when a slot is invalid). */
sched_session *sched_session_from_enqueued(const Tessera__V1__SessionEnqueued *m, ts_err *err);
void sched_on_enqueued(sched_svc *x, Tessera__V1__SessionEnqueued *m, int64_t at_us);
void sched_on_ended(sched_svc *x, const char *session_id, const char *reason);
/* Release a known session's kernels in Redis then in the model (exactly once). */
void sched_release_rec(sched_svc *x, sched_rec *rec);
void sched_rec_free(void *p);
sched_rec *sched_rec_get_or_new(sched_svc *x, const char *id, const char *group);
void sched_run_passes(sched_svc *x);
void sched_mark_dirty(sched_svc *x, const char *group);
/* The group (created with the configured policy on first use); NULL if the name is bad. */
bool sched_ensure_group(sched_svc *x, const char *group);
void sched_batch_free(sched_batch *b);
/* Delete the session's pending record after the bus acknowledged what was published. */
void sched_unpersist_later(sched_svc *x, const char *session_id);

/* agents.c */
void sched_on_agent_up(sched_svc *x, const sched_agent_msg *m);
void sched_on_agent_down(sched_svc *x, const char *agent_id, const char *reason);
/* Occupancy of one agent / every agent from Redis into the model. */
bool sched_resync_agent(sched_svc *x, const char *agent_id);
void sched_resync_all(sched_svc *x);

/* shared_limits.c: limits across instances (docs/scheduler.md, "Several instances"). */
/* The owner's limits per scope, encoded for the reserve script (heap; NULL = none). */
void sched_limits_encode(sched_svc *x, const sched_rec *rec, char *out[RESV_SCOPES]);
/* A reservation was refused for a limit: read the owner's usage back from Redis. */
void sched_limits_refused(sched_svc *x, const sched_rec *rec);
/* Read again the accounts others hold some of; true when any changed. */
bool sched_limits_resync(sched_svc *x);
/* Write every known agent's capacity (and info) to Redis again. */
void sched_rewrite_agents(sched_svc *x);

/* store.c: Redis records, start-up recovery, Redis loss */
bool sched_store_load(sched_svc *x, ts_err *err) TS_MUST_CHECK;
void sched_store_unpersist_flush(sched_svc *x);
void sched_store_check_loss(sched_svc *x);
bool sched_store_put_agent_info(sched_svc *x, const char *id, const sched_agent_info *ai);
/* Kernel ids of a session holding slots per Redis (scans alloc:*; rare). */
int sched_store_find_kernels(sched_svc *x, const char *session_id, char ***out);
/* "<prefix><kind><id>" (heap). */
char *sched_key(const char *kind, const char *id);

/* publisher.c */
void sched_publish_scheduled(sched_svc *x, const sched_rec *rec);
void sched_publish_unschedulable(sched_svc *x, const char *group, const sched_session *s,
                                 const char *code, const char *reason);

#endif
