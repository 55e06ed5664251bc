/* slot_budget.c: see slot_budget.h. */
#include "slot_budget.h"

#include <string.h>
#include <strings.h>

static bool _unlimited(const budget_t *b, int id)
{
    return (b->unlimited >> id) & 1u;
}

void budget_unlimited(budget_t *b)
{
    slots_clear(&b->v);
    b->unlimited = ~0u;
}

static bool _is_infinity(const json_t *v)
{
    const char *s = json_string_value(v);
    if (s) return strcasecmp(s, "infinity") == 0 || strcasecmp(s, "inf") == 0;
    return json_is_real(v) && json_real_value(v) > 1e300;
}

bool budget_from_limit(budget_t *b, const json_t *total, ts_err *err)
{
    budget_unlimited(b);
    if (!total || json_is_null(total)) return true;
    if (!json_is_object(total)) {
        ts_err_set(err, "total_resource_slots is not an object");
        return false;
    }
    budget_t out;
    budget_unlimited(&out);
    const char *name;
    json_t *v;
    json_object_foreach((json_t *)total, name, v)
    {
        int id;
        int64_t q;
        if (!slot_intern(name, &id, err)) return false;
        if (_is_infinity(v)) continue;
        if (!slot_parse_json(id, v, &q, err)) return false;
        slots_put(&out.v, id, q);
        out.unlimited &= ~(1u << id);
    }
    *b = out;
    return true;
}

void budget_remaining(const budget_t *limit, const slots_t *using, budget_t *out)
{
    budget_t r = {.unlimited = limit->unlimited};
    slots_clear(&r.v);
    for (int id = 0; id < SLOTS_MAX; id++) {
        if (_unlimited(limit, id)) continue;
        int64_t left = slots_get(&limit->v, id) - slots_get(using, id);
        slots_put(&r.v, id, left > 0 ? left : 0);
    }
    *out = r;
}

void budget_min(budget_t *a, const budget_t *b)
{
    for (int id = 0; id < SLOTS_MAX; id++) {
        if (_unlimited(b, id)) continue;
        int64_t bv = slots_get(&b->v, id);
        if (_unlimited(a, id) || bv < slots_get(&a->v, id)) {
            slots_put(&a->v, id, bv);
            a->unlimited &= ~(1u << id);
        }
    }
}

void budget_cap(budget_t *a, const slots_t *finite, uint32_t mask)
{
    budget_t f = {.unlimited = ~mask};
    slots_clear(&f.v);
    for (int id = 0; id < SLOTS_MAX; id++)
        if ((mask >> id) & 1u) slots_put(&f.v, id, slots_get(finite, id));
    budget_min(a, &f);
}

bool budget_allows(const budget_t *b, const slots_t *req)
{
    for (int id = 0; id < SLOTS_MAX; id++)
        if (!_unlimited(b, id) && slots_get(req, id) > slots_get(&b->v, id)) return false;
    return true;
}

void slots_sub_floor(slots_t *a, const slots_t *b)
{
    for (int id = 0; id < SLOTS_MAX; id++) {
        if (!((a->mask | b->mask) >> id & 1u)) continue;
        int64_t left = slots_get(a, id) - slots_get(b, id);
        slots_put(a, id, left > 0 ? left : 0);
    }
}

bool budget_preset_allocatable(const slots_t *preset, const budget_t *remaining,
                               const slots_t *agents_free, size_t n)
{
    if (!budget_allows(remaining, preset)) return false;
    for (size_t i = 0; i < n; i++)
        if (slots_le(preset, &agents_free[i])) return true;
    return false;
}

json_t *budget_to_json(const budget_t *b, uint32_t mask)
{
    json_t *o = json_object();
    for (int id = 0; id < SLOTS_MAX; id++) {
        bool held = (b->v.mask >> id) & 1u;
        if (!((mask >> id) & 1u) && !held) continue;
        if (_unlimited(b, id)) {
            json_object_set_new(o, slot_name(id), json_string("Infinity"));
            continue;
        }
        char buf[SLOT_FMT_MAX];
        json_object_set_new(o, slot_name(id),
                            json_string(slot_format(id, slots_get(&b->v, id), buf, sizeof(buf))));
    }
    return o;
}

json_t *slots_to_json_known(const slots_t *s, uint32_t mask)
{
    budget_t b = {.v = *s, .unlimited = 0};
    return budget_to_json(&b, mask);
}
