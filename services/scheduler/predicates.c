/* predicates.c: accounts (limits and usage per scope) and the predicates. */
#include "services/scheduler/predicates.h"

#include "services/scheduler/strmap.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct sched_accounts {
    strmap *scope[SCHED_SCOPE_COUNT]; /* id -> sched_account* */
};

const char *sched_scope_name(sched_scope s)
{
    static const char *names[] = {"keypair", "user", "project", "domain"};
    return s < SCHED_SCOPE_COUNT ? names[s] : "?";
}

sched_accounts *sched_accounts_new(void)
{
    sched_accounts *a = ts_calloc(1, sizeof(*a));
    for (int i = 0; i < SCHED_SCOPE_COUNT; i++)
        a->scope[i] = strmap_new();
    return a;
}

void sched_accounts_free(sched_accounts *a)
{
    if (!a) return;
    for (int i = 0; i < SCHED_SCOPE_COUNT; i++)
        strmap_free(a->scope[i], free);
    free(a);
}

sched_account *sched_accounts_get(sched_accounts *a, sched_scope scope, const char *id)
{
    sched_account *acc = strmap_get(a->scope[scope], id ? id : "");
    if (!acc) {
        acc = ts_calloc(1, sizeof(*acc));
        strmap_put(a->scope[scope], id ? id : "", acc);
    }
    return acc;
}

void sched_accounts_set_limits(sched_accounts *a, sched_scope scope, const char *id,
                               const sched_limits *limits)
{
    sched_accounts_get(a, scope, id)->limits = *limits;
}

void sched_session_scopes(const sched_session *s, const char *ids[SCHED_SCOPE_COUNT])
{
    ids[SCHED_SCOPE_KEYPAIR] = s->access_key;
    ids[SCHED_SCOPE_USER] = s->user_id;
    ids[SCHED_SCOPE_PROJECT] = s->project_id;
    ids[SCHED_SCOPE_DOMAIN] = s->domain;
}

void sched_accounts_charge(sched_accounts *a, const sched_session *s, int sign)
{
    const char *ids[SCHED_SCOPE_COUNT];
    sched_session_scopes(s, ids);
    if (sign < 0) {
        sched_accounts_release_slots(a, ids, &s->total);
        sched_accounts_release_session(a, ids);
        return;
    }
    for (int i = 0; i < SCHED_SCOPE_COUNT; i++) {
        sched_account *acc = sched_accounts_get(a, (sched_scope)i, ids[i]);
        ts_err e;
        if (!slots_add(&acc->used, &s->total, &e)) ts_panic("usage overflow: %s", e.msg);
        acc->sessions++;
    }
}

void sched_accounts_release_slots(sched_accounts *a, const char *ids[SCHED_SCOPE_COUNT],
                                  const slots_t *slots)
{
    for (int i = 0; i < SCHED_SCOPE_COUNT; i++) {
        sched_account *acc = sched_accounts_get(a, (sched_scope)i, ids[i]);
        ts_err e;
        if (!slots_sub(&acc->used, slots, &e)) slots_clear(&acc->used);
    }
}

void sched_accounts_release_session(sched_accounts *a, const char *ids[SCHED_SCOPE_COUNT])
{
    for (int i = 0; i < SCHED_SCOPE_COUNT; i++) {
        sched_account *acc = sched_accounts_get(a, (sched_scope)i, ids[i]);
        if (acc->sessions > 0) acc->sessions--;
    }
}

bool sched_account_set_totals(sched_account *acc, int sessions, const slots_t *used)
{
    int ext = sessions > acc->sessions ? sessions - acc->sessions : 0;
    bool changed = ext != acc->ext_sessions;
    acc->ext_sessions = ext;
    slots_t e;
    slots_clear(&e);
    for (int i = 0; i < SLOTS_MAX; i++) {
        int64_t d = slots_get(used, i) - slots_get(&acc->used, i);
        if (d > 0) slots_put(&e, i, d);
        changed |= slots_get(&e, i) != slots_get(&acc->ext_used, i);
    }
    acc->ext_used = e;
    return changed;
}

void sched_accounts_pending(sched_accounts *a, const sched_session *s, int sign)
{
    sched_account *acc = sched_accounts_get(a, SCHED_SCOPE_KEYPAIR, s->access_key);
    acc->pending += sign;
    if (acc->pending < 0) acc->pending = 0;
}

static void fail(sched_verdict *out, const char *code, const char *fmt, ...) TS_PRINTF(3, 4);
static void fail(sched_verdict *out, const char *code, const char *fmt, ...)
{
    out->code = code;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(out->reason, sizeof(out->reason), fmt, ap);
    va_end(ap);
}

static bool check_slots(sched_accounts *a, sched_scope scope, const char *id, const slots_t *want,
                        sched_verdict *out)
{
    static const char *codes[] = {"keypair_slots", "user_slots", "project_slots", "domain_slots"};
    sched_account *acc = sched_accounts_get(a, scope, id);
    uint32_t m = acc->limits.max_slots.mask & want->mask;
    while (m) {
        int i = __builtin_ctz(m);
        m &= m - 1;
        int64_t used = slots_get(&acc->used, i) + slots_get(&acc->ext_used, i),
                lim = acc->limits.max_slots.v[i];
        if (want->v[i] > 0 && used + want->v[i] > lim) {
            char u[SLOT_FMT_MAX], w[SLOT_FMT_MAX], l[SLOT_FMT_MAX];
            fail(out, codes[scope], "%s total slot limit: %s %s in use + %s requested > %s",
                 sched_scope_name(scope), slot_name(i), slot_format(i, used, u, sizeof(u)),
                 slot_format(i, want->v[i], w, sizeof(w)), slot_format(i, lim, l, sizeof(l)));
            return false;
        }
    }
    return true;
}

bool sched_predicates_check(sched_accounts *a, const sched_session *s, int64_t now_ms,
                            sched_verdict *out)
{
    out->code = NULL;
    out->reason[0] = '\0';
    if (s->starts_at_ms > now_ms) {
        time_t t = (time_t)(s->starts_at_ms / 1000);
        struct tm tm;
        char when[32];
        gmtime_r(&t, &tm);
        strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%SZ", &tm);
        fail(out, "starts_at", "starts at %s (in %lld s)", when,
             (long long)((s->starts_at_ms - now_ms + 999) / 1000));
        return false;
    }
    sched_account *kp = sched_accounts_get(a, SCHED_SCOPE_KEYPAIR, s->access_key);
    if (kp->limits.max_concurrent_sessions > 0 &&
        kp->sessions + kp->ext_sessions >= kp->limits.max_concurrent_sessions) {
        fail(out, "keypair_concurrency", "keypair concurrency limit %d reached",
             kp->limits.max_concurrent_sessions);
        return false;
    }
    const char *ids[SCHED_SCOPE_COUNT];
    sched_session_scopes(s, ids);
    for (int i = 0; i < SCHED_SCOPE_COUNT; i++)
        if (!check_slots(a, (sched_scope)i, ids[i], &s->total, out)) return false;
    return true;
}

bool sched_predicates_enqueue(sched_accounts *a, const sched_session *s, sched_verdict *out)
{
    out->code = NULL;
    out->reason[0] = '\0';
    sched_account *kp = sched_accounts_get(a, SCHED_SCOPE_KEYPAIR, s->access_key);
    if (kp->limits.max_pending_sessions > 0 && kp->pending >= kp->limits.max_pending_sessions) {
        fail(out, "max_pending", "keypair pending session limit %d reached",
             kp->limits.max_pending_sessions);
        return false;
    }
    return true;
}
