/* placement.h: the in-memory model of one resource group's agents and where a
 * request fits (see docs/scheduler.md, "Placement").
 *
 * An agent has total and occupied slots and up to SCHED_MAX_DEVICES GPU devices,
 * each with a capacity in cuda.shares quanta (100 = 1.00 = one whole device) and
 * the shares occupied on it. Its cuda.device total is its device count and its
 * cuda.shares total the sum of the device capacities.
 *
 * GPU rule for one kernel's request (cuda.device = n, cuda.shares = R):
 *   - n whole devices: n devices with nothing occupied, each taken entirely;
 *   - R <= the capacity of one device: ONE device, best fit (the device with the
 *     least free shares that still holds R);
 *   - R larger: entirely free devices taken whole (largest capacity first) while
 *     what remains is at least a device's capacity, then the remainder best fit
 *     on one more device. With the usual 1.00 per device: 2.5 = two whole free
 *     devices + 0.5 on the best-fitting third.
 * A request never spreads a remainder over several devices.
 *
 * Selectors pick among agents that fit: concentrated (the fullest first: for GPU
 * shares the agent whose best device is the tightest fit, for whole devices the
 * one with the fewest free devices, otherwise the least free cpu), dispersed
 * (the emptiest first, by the same keys reversed), roundrobin (the next agent
 * after the last one used). Agents are indexed in buckets by those keys per
 * architecture, so a placement looks at the few agents near the fitting
 * boundary, not at every agent. */
#ifndef TESSERA_SCHED_PLACEMENT_H
#define TESSERA_SCHED_PLACEMENT_H

#include "libcommon/slots.h"

#define SCHED_MAX_DEVICES 32
#define SCHED_ID_MAX 64
#define SCHED_ARCH_MAX 24
#define SCHED_REASON_MAX 256

typedef enum { SCHED_CONCENTRATED = 0, SCHED_DISPERSED, SCHED_ROUNDROBIN } sched_selector;

/* Parse "concentrated" / "dispersed" / "roundrobin"; false if unknown. */
bool sched_selector_parse(const char *name, sched_selector *out) TS_MUST_CHECK;
const char *sched_selector_name(sched_selector s);

/* How an agent is declared (capacity; occupancy is kept across updates). */
typedef struct sched_agent_spec {
    const char *id;
    const char *arch;                   /* "x86_64", "aarch64", ... */
    slots_t total;                      /* cpu, mem, vendor slots; cuda.* come from the devices */
    int ndev;                           /* GPU devices */
    int32_t dev_cap[SCHED_MAX_DEVICES]; /* shares quanta each; 0 = 100 (1.00) */
    bool schedulable;
} sched_agent_spec;

struct sched_pool;

/* One agent. Read its fields freely; change them only through this module. */
typedef struct sched_agent {
    char id[SCHED_ID_MAX];
    char arch[SCHED_ARCH_MAX];
    slots_t total, used;
    int ndev;
    int32_t dev_cap[SCHED_MAX_DEVICES];
    int32_t dev_used[SCHED_MAX_DEVICES];
    bool schedulable;
    bool drained;                    /* not schedulable: a superadmin drained it */
    char reserved_for[SCHED_ID_MAX]; /* an aged session holds it ("" = nobody) */
    /* index (placement.c) */
    struct sched_pool *pool;
    int pos;
    struct sched_agent *prev[3], *next[3];
    int16_t bucket[3];
} sched_agent;

/* One device's part of a placement. */
typedef struct sched_devalloc {
    uint8_t dev;
    bool whole;     /* taken as a cuda.device (entirely) */
    int32_t shares; /* shares quanta occupied on it */
} sched_devalloc;

/* Where one request goes. */
typedef struct sched_pick {
    sched_agent *agent;
    int ndev;
    sched_devalloc dev[SCHED_MAX_DEVICES];
} sched_pick;

/* Why a request does not fit now (sched_group_explain). */
typedef enum {
    SCHED_FIT_OK = 0,
    SCHED_FIT_NO_AGENT,   /* no schedulable agent of that architecture */
    SCHED_FIT_TOO_BIG,    /* larger than any agent's total capacity: never fits */
    SCHED_FIT_SHORT,      /* not enough of a slot free on any one agent */
    SCHED_FIT_FRAGMENTED, /* enough GPU shares free in total, not on one device */
    SCHED_FIT_RESERVED,   /* only agents held for aged sessions could take it */
} sched_fit;

const char *sched_fit_code(sched_fit f); /* "no_agent", "too_big", "no_capacity", ... */

typedef struct sched_group sched_group;

sched_group *sched_group_new(const char *name, sched_selector selector);
void sched_group_free(sched_group *g);
const char *sched_group_name(const sched_group *g);
sched_selector sched_group_selector(const sched_group *g);
void sched_group_set_selector(sched_group *g, sched_selector selector);

/* Add an agent or update its capacity (occupancy kept; false if the new
 * capacity is below what is occupied, or the spec is invalid). */
bool sched_group_set_agent(sched_group *g, const sched_agent_spec *spec, ts_err *err) TS_MUST_CHECK;
/* Remove an agent (its occupancy goes with it). False if unknown. */
bool sched_group_remove_agent(sched_group *g, const char *id) TS_MUST_CHECK;
sched_agent *sched_group_agent(const sched_group *g, const char *id);
size_t sched_group_agent_count(const sched_group *g);
/* The i-th agent (0 .. count-1, stable until an agent is removed). */
sched_agent *sched_group_agent_at(const sched_group *g, size_t i);
void sched_group_set_schedulable(sched_group *g, sched_agent *a, bool on);
/* Replace an agent's occupancy (from Redis, after a refused reservation). */
bool sched_group_set_usage(sched_group *g, sched_agent *a, const slots_t *used,
                           const int32_t *dev_used, ts_err *err) TS_MUST_CHECK;
/* Total capacity of the schedulable agents (DRF's denominator). */
const slots_t *sched_group_capacity(const sched_group *g);

/* Hold / free an agent for an aged session ("" or NULL frees it). */
void sched_group_hold(sched_group *g, sched_agent *a, const char *session_id);
int sched_group_held_count(const sched_group *g);

/* Find where req fits. arch "" = any. session_id: agents held for this session
 * are usable, others' are not. only: restrict to one agent (NULL = any).
 * Does not change the model: sched_group_commit does. */
bool sched_group_place(sched_group *g, const slots_t *req, const char *arch, const char *session_id,
                       sched_agent *only, sched_pick *out) TS_MUST_CHECK;
/* Would req fit on a (ignoring holds)? Fills out when it does. */
bool sched_agent_fit(const sched_agent *a, const slots_t *req, sched_pick *out) TS_MUST_CHECK;
/* Apply / undo a placement's occupancy. */
void sched_group_commit(sched_group *g, const sched_pick *p, const slots_t *req);
bool sched_group_uncommit(sched_group *g, sched_agent *a, const slots_t *req,
                          const sched_devalloc *dev, int ndev, ts_err *err) TS_MUST_CHECK;

/* Why req does not fit now, in words a user understands:
 * "not enough cuda.shares in resource group gpu (fragmented: 0.40 free on the
 * best device)". Scans every agent: call it only after a failed place. */
sched_fit sched_group_explain(const sched_group *g, const slots_t *req, const char *arch,
                              const char *session_id, char *reason, size_t size);

/* The agent an aged session should hold: one whose total capacity holds req,
 * not held by another session, closest to fitting now. NULL if none. */
sched_agent *sched_group_pick_hold(sched_group *g, const slots_t *req, const char *arch,
                                   const char *session_id);

#endif
