/* slots.h: resource slot amounts as exact fixed point, and small vectors of them.
 *
 * Every slot has a quantum; an amount is an int64 count of quanta:
 *
 *   slot              quantum           text accepted          text written
 *   cpu               0.001 core        "2", "0.5", 1.5        "2", "0.5"
 *   mem               1 byte            "1g", "512m", "1.5g",  "1073741824"
 *                                       "1GiB", 1073741824
 *   cuda.device       1 device          "1", 2                 "1"
 *   cuda.shares       0.01 device       "0.25", "1", 0.5       "0.25", "1.00"
 *   <vendor>.device   1 device          "1"                    "1"
 *   <vendor>.shares   0.01 device       "0.5"                  "0.50"
 *
 * Memory units are binary (k = 1024, g = 2^30; "i" and "b" are optional, any case),
 * as in Backend.AI. An amount with more decimals than its quantum ("0.005" for
 * cuda.shares), a negative amount, a unit on a slot that is not mem, or one
 * past INT64_MAX quanta is an error with a precise message; nothing is rounded.
 *
 * Slot ids are small integers: the four built-ins have fixed ids, vendor slots
 * get the next free id the first time their name is seen (process-wide,
 * thread-safe), up to SLOTS_MAX in all. */
#ifndef TESSERA_SLOTS_H
#define TESSERA_SLOTS_H

#include "libcommon/common.h"

#include <jansson.h>

#define SLOTS_MAX 16
#define SLOT_NAME_MAX 32
#define SLOT_FMT_MAX 32 /* enough for any formatted amount */

enum { SLOT_CPU = 0, SLOT_MEM, SLOT_CUDA_DEVICE, SLOT_CUDA_SHARES, SLOT_BUILTIN_COUNT };

/* cuda.shares quanta in one whole device (1.00). */
#define SLOT_SHARES_PER_DEVICE 100

/* A vector of amounts: v[id] counts when bit id of mask is set (absent = 0). */
typedef struct slots {
    uint32_t mask;
    int64_t v[SLOTS_MAX];
} slots_t;

/* ---- slot names -------------------------------------------------------------------------- */

/* The id of a known slot name, or -1 (does not register anything). */
int slot_find(const char *name);
/* *id: the id of name, registering "<vendor>.device" / "<vendor>.shares" on
 * first use. false with err set for anything else, or when SLOTS_MAX names
 * are taken. */
bool slot_intern(const char *name, int *id, ts_err *err) TS_MUST_CHECK;
/* The name of id ("?" when not registered). */
const char *slot_name(int id);
/* Quanta in one unit of the slot: 1000 for cpu, 100 for shares, 1 otherwise. */
int64_t slot_per_unit(int id);
/* Number of slots registered so far (ids 0 .. n-1). */
int slot_count(void);

/* ---- one amount -------------------------------------------------------------------------- */

/* Parse decimal text ("0.25", "1.5g", "  2 " with surrounding blanks) into quanta. */
bool slot_parse(int id, const char *text, int64_t *out, ts_err *err) TS_MUST_CHECK;
/* Parse a JSON number or string. */
bool slot_parse_json(int id, const json_t *value, int64_t *out, ts_err *err) TS_MUST_CHECK;
/* Exact decimal text of an amount; returns buf (size >= SLOT_FMT_MAX is always enough). */
char *slot_format(int id, int64_t v, char *buf, size_t size);

/* ---- vectors ----------------------------------------------------------------------------- */

static inline void slots_clear(slots_t *s)
{
    s->mask = 0;
}
static inline int64_t slots_get(const slots_t *s, int id)
{
    return (s->mask >> id) & 1u ? s->v[id] : 0;
}
static inline void slots_put(slots_t *s, int id, int64_t v)
{
    s->mask |= 1u << id;
    s->v[id] = v;
}
bool slots_is_zero(const slots_t *s) TS_MUST_CHECK;
bool slots_equal(const slots_t *a, const slots_t *b) TS_MUST_CHECK;

/* Set one slot from its name and text amount. */
bool slots_set(slots_t *s, const char *name, const char *amount, ts_err *err) TS_MUST_CHECK;
/* {"cpu": "2", "mem": "4g", "cuda.shares": 0.5} -> vector (replaces s). */
bool slots_from_json(slots_t *s, const json_t *obj, ts_err *err) TS_MUST_CHECK;
/* {"cpu": "2", "mem": "4294967296", ...}: every present slot as a string. */
json_t *slots_to_json(const slots_t *s);
/* "cpu=2 mem=4g cuda.shares=0.5" -> vector (replaces s); for configs and tests. */
bool slots_parse_text(slots_t *s, const char *text, ts_err *err) TS_MUST_CHECK;
/* "cpu=2 mem=4294967296 cuda.shares=0.50" (present slots, id order); returns buf. */
char *slots_format(const slots_t *s, char *buf, size_t size);

/* a += b; false (a unchanged) if a slot would pass INT64_MAX. */
bool slots_add(slots_t *a, const slots_t *b, ts_err *err) TS_MUST_CHECK;
/* a -= b; false (a unchanged) if a slot would go below zero. */
bool slots_sub(slots_t *a, const slots_t *b, ts_err *err) TS_MUST_CHECK;
/* Every slot of a <= the same slot of b (absent = 0). */
bool slots_le(const slots_t *a, const slots_t *b) TS_MUST_CHECK;
/* req fits in free: the first slot of req that free cannot cover, or -1. */
int slots_short(const slots_t *req, const slots_t *free);
static inline bool slots_fits(const slots_t *req, const slots_t *free)
{
    return slots_short(req, free) < 0;
}
/* Dominant share: max over slots of a / cap (slots with cap 0 are ignored). */
double slots_dominant_share(const slots_t *a, const slots_t *cap);

#endif
