/* occupancy.h: the shared part of the Redis occupancy layout
 * (docs/scheduler.md, "Redis layout and scripts"): key names, the text
 * encodings of slots and devices, writing an agent's capacity, and rebuilding
 * every occupancy key from the truth.
 *
 *   <p>agent:<id>       hash  cap:<slot>, used:<slot>, devcap:<n>, dev:<n>, schedulable
 *   <p>alloc:<kernel>   hash  session, agent, slots "cpu=1000 mem=1073741824",
 *                             devs "0=50 3=100", usage "kp:AK user:U project:P domain:D"
 *   <p>sess:<session>   int   kernels of the session still holding slots
 *   <p>usage:kp:<ak>, usage:user:<id>, usage:project:<id>, usage:domain:<name>
 *                       hash  <slot> (quanta held), sessions
 *   <p>rebuild          string, present while a rebuild runs (reserve refuses)
 *   <p>occupancy        string, written by every rebuild (wall ms); its absence
 *                       means Redis lost its data (FLUSHALL, a restart without
 *                       persistence) and occupancy must be rebuilt
 *
 * Both sides use this module: tessera-registry writes agents' capacity from
 * AgentStarted / heartbeats and rebuilds after a loss; tessera-scheduler's
 * reservation.c (reserve and release scripts) builds on the same names and
 * encodings. Amounts are integers in each slot's quantum (slots.h).
 *
 * One occ per thread (it uses the thread's rds connection). */
#ifndef TESSERA_OCCUPANCY_H
#define TESSERA_OCCUPANCY_H

#include "libcommon/rds.h"
#include "libcommon/slots.h"

/* Key kinds, after the prefix. */
#define OCC_KEY_AGENT "agent:"
#define OCC_KEY_ALLOC "alloc:"
#define OCC_KEY_SESS "sess:"
#define OCC_KEY_USAGE "usage:"
#define OCC_KEY_REBUILD "rebuild"
#define OCC_KEY_MARKER "occupancy"

/* Devices per agent that the layout addresses (devcap:0 .. devcap:31). */
#define OCC_MAX_DEVICES 32

enum { OCC_SCOPE_KEYPAIR = 0, OCC_SCOPE_USER, OCC_SCOPE_PROJECT, OCC_SCOPE_DOMAIN, OCC_SCOPES };

/* Usage key tags per scope: "kp:", "user:", "project:", "domain:". */
extern const char *const occ_scope_tags[OCC_SCOPES];

typedef struct occ_dev {
    int dev;        /* device index on its agent (0 .. OCC_MAX_DEVICES-1) */
    int32_t shares; /* cuda.shares quanta occupied on the device */
} occ_dev;

typedef struct occ_kernel {
    const char *kernel_id;
    const char *agent_id;
    const slots_t *slots;
    int ndev;
    const occ_dev *dev;
} occ_kernel;

/* A session holding slots: its owner's ids (NULL or "" = none) and its kernels.
 * limits: per scope, what the reserve script checks against usage:<scope>
 * before it reserves ("sessions=3 cpu=4000": sessions holding slots at once and
 * slot quanta held at once; NULL or "" = none). The rebuild ignores them. */
typedef struct occ_session {
    const char *session_id;
    const char *scope[OCC_SCOPES]; /* access key, user id, project id, domain name */
    int nk;
    const occ_kernel *k;
    const char *limits[OCC_SCOPES]; /* last: positional initializers leave it NULL */
} occ_session;

/* Whether an agent is drained (<p>agent:<id> field drained: "1" or absent).
 * Only tessera-registry knows (registry.agents.schedulable); the scheduler's
 * writes leave the field as it is. */
typedef enum occ_drain {
    OCC_DRAIN_KEEP = 0, /* leave the field as it is */
    OCC_DRAIN_OFF,      /* not drained: the field removed */
    OCC_DRAIN_ON,       /* drained: "1" */
} occ_drain;

/* An agent's capacity. */
typedef struct occ_agent {
    const char *id;
    const slots_t *total; /* cuda.device / cuda.shares included */
    int ndev;
    const int32_t *dev_cap; /* shares quanta per device */
    bool schedulable;       /* new reservations allowed (not lost, stopped or drained) */
    occ_drain drain;        /* last: positional initializers leave it KEEP */
} occ_agent;

typedef struct occ occ;

/* prefix: put in front of every key ("" or e.g. "tessera:"); no blanks. */
occ *occ_new(rds *r, const char *prefix);
void occ_free(occ *o);
rds *occ_rds(const occ *o);

/* "<prefix><kind><id>" (heap; id may be NULL for kinds without one). */
char *occ_key(const occ *o, const char *kind, const char *id);

/* Encodings used in the scripts' arguments and in alloc: records. */
/* "cpu=1000 mem=1073741824" (present slots with an amount above zero). */
char *occ_enc_slots(const slots_t *s);
/* "0=50 3=100". */
char *occ_enc_devs(const occ_dev *d, int n);
/* An id usable in keys and encodings: not empty, no blank, no '='. */
bool occ_plain_id(const char *what, const char *id, ts_err *err) TS_MUST_CHECK;

/* Write an agent's capacity (cap:*, devcap:*, schedulable, and drained unless
 * OCC_DRAIN_KEEP; occupancy untouched). */
bool occ_set_agent(occ *o, const occ_agent *a, ts_err *err) TS_MUST_CHECK;

/* Set the rebuild lock (<p>rebuild, expiring after ms): reservations are
 * refused while it is there. occ_rebuild removes it when done; occ_unlock
 * removes it without a rebuild. For a rebuild that first lets the
 * reservations in flight land (tessera-registry's occupancy_sync.c). */
bool occ_lock(occ *o, int ms, ts_err *err) TS_MUST_CHECK;
bool occ_unlock(occ *o, ts_err *err) TS_MUST_CHECK;

/* Rewrite all occupancy from the truth: set the rebuild lock (60 s expiry),
 * delete every agent:, alloc:, sess: and usage: key under the prefix, write
 * the agents, record every session's kernels (no capacity check: the truth is
 * recorded even if an agent shrank), remove the lock, write the marker. */
bool occ_rebuild(occ *o, const occ_agent *agents, int nagents, const occ_session *sessions,
                 int nsessions, ts_err *err) TS_MUST_CHECK;

/* Does Redis look rebuilt? *present = the marker exists. */
bool occ_marker_present(occ *o, bool *present, ts_err *err) TS_MUST_CHECK;
/* Does <p>agent:<id> exist with capacity? */
bool occ_agent_present(occ *o, const char *id, bool *present, ts_err *err) TS_MUST_CHECK;

/* Read an agent's occupancy fields: used slots and per-device shares used
 * (dev_used of OCC_MAX_DEVICES entries). Absent agent: all zero, *present false. */
bool occ_read_used(occ *o, const char *id, slots_t *used, int32_t dev_used[OCC_MAX_DEVICES],
                   bool *present, ts_err *err) TS_MUST_CHECK;

/* Release kernels' reservations (delete alloc:<kernel> and take its slots off
 * the agent, the usage scopes and sess:<session>, exactly once): released[i]
 * (may be NULL) says whether this call freed kernel i, *count (may be NULL)
 * how many it freed. false on a Redis failure. The scheduler releases with
 * it; the registry's reconcile pass releases reservations that no live
 * kernel holds. */
bool occ_release(occ *o, const char *const *kernel_ids, int n, bool *released, int *count,
                 ts_err *err) TS_MUST_CHECK;

/* Whether Redis is consistent with itself: agents' used:* and dev:* equal the
 * sums of their allocations, usage:* the sums of their scopes, sess:* the
 * kernel counts. *holds, and why ("ok", or where it breaks); false on a Redis
 * failure. Reads every occupancy key (KEYS): for tests and the periodic check. */
bool occ_check(occ *o, bool *holds, char *why, size_t size, ts_err *err) TS_MUST_CHECK;

/* One reservation as alloc:<kernel> records it. */
typedef struct occ_alloc {
    char kernel_id[80];
    char session_id[80];
    char agent_id[136];
} occ_alloc;

/* Every reservation (SCAN in one script): *out a heap array (free()) of *n;
 * false on a Redis failure. */
bool occ_list_allocs(occ *o, occ_alloc **out, size_t *n, ts_err *err) TS_MUST_CHECK;

/* Append the arguments the reserve/rebuild scripts take for n sessions
 * (session id, kernel count, owner scopes, then per kernel id, agent, slots,
 * devices); false with err set for an id that is not plain or a session
 * without kernels. Shared by the scheduler's reservations and rebuilds. */
bool occ_push_sessions(rds_args *a, const occ_session *s, int n, ts_err *err) TS_MUST_CHECK;

#endif
