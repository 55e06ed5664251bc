/* slot_budget.h: what a caller may still take, slot by slot, where a slot
 * may be unlimited (POST /v1/resource/check-presets, check_presets.h).
 *
 * A budget is a slot vector plus the set of slots without a limit. A limit
 * comes from a total_resource_slots object ({"cpu": "4", "mem": "8g"}): the
 * slots it names are finite, every other slot is unlimited (Backend.AI's
 * DefaultForUnspecified.UNLIMITED). Remaining = limit - using, never below
 * zero; unlimited stays unlimited. Written as JSON, a finite amount is
 * decimal text ("2", "1073741824", "0.50") and an unlimited one "Infinity",
 * as Backend.AI's ResourceSlot.to_json writes Decimal("Infinity").
 *
 * Pure computation (no I/O): unit-tested in tests/unit/registry/. */
#ifndef REGISTRY_SLOT_BUDGET_H
#define REGISTRY_SLOT_BUDGET_H

#include "libcommon/slots.h"

#include <jansson.h>

/* The slots every answer lists (GET /config/resource-slots): cpu, mem,
 * cuda.device, cuda.shares. */
#define BUDGET_KNOWN_SLOTS ((1u << SLOT_BUILTIN_COUNT) - 1u)

typedef struct budget {
    slots_t v;          /* finite amounts (quanta) */
    uint32_t unlimited; /* bit id set: slot id has no limit */
} budget_t;

/* Every slot unlimited. */
void budget_unlimited(budget_t *b);

/* A limit from a total_resource_slots object: NULL, null or {} = no limit at
 * all; a slot whose value is "Infinity" (or "inf") is unlimited too. false with
 * err set when a slot name or amount is malformed (b is then unlimited). */
bool budget_from_limit(budget_t *b, const json_t *total, ts_err *err) TS_MUST_CHECK;

/* out = limit - using, per slot, floored at zero; unlimited stays unlimited. */
void budget_remaining(const budget_t *limit, const slots_t *using, budget_t *out);

/* a = min(a, b) per slot (unlimited is larger than any amount). */
void budget_min(budget_t *a, const budget_t *b);

/* a = min(a, finite) per slot: finite's absent slots count as zero. Slots of
 * `mask` only (the others keep a's value). */
void budget_cap(budget_t *a, const slots_t *finite, uint32_t mask);

/* Whether every slot of req fits in b (absent slots of b count as zero unless
 * unlimited). */
bool budget_allows(const budget_t *b, const slots_t *req) TS_MUST_CHECK;

/* a - b per slot, floored at zero (an agent's free capacity from its total
 * and occupancy, which may briefly disagree). */
void slots_sub_floor(slots_t *a, const slots_t *b);

/* A preset is allocatable when the caller's remaining budget allows it and at
 * least one of n agents (their free slots) can hold it whole. */
bool budget_preset_allocatable(const slots_t *preset, const budget_t *remaining,
                               const slots_t *agents_free, size_t n) TS_MUST_CHECK;

/* {"cpu": "2", "mem": "Infinity", ...}: the slots of mask (zero when absent),
 * then any other slot that b holds. */
json_t *budget_to_json(const budget_t *b, uint32_t mask);

/* The same for a finite vector: every slot of mask, "0" when absent. */
json_t *slots_to_json_known(const slots_t *s, uint32_t mask);

#endif
