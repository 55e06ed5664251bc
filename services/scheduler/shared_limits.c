/* shared_limits.c: per-scope limits across scheduler instances.
 *
 * Each instance's accounts count the sessions it placed; Redis (usage:<scope>)
 * counts what every instance placed. So that two instances cannot together pass
 * a limit, each reservation carries the owner's limits and the reserve script
 * checks them against usage:<scope> (reservation.c). A refusal for a limit
 * reads the owner's usage back from Redis into the accounts' ext_* (what the
 * others hold); then the predicates see the whole picture and report the usual
 * reason. Accounts with ext_* above zero are read again every
 * scheduler.resync_interval, so room the others free is seen. */
#include "services/scheduler/shared_limits.h"

#include "libcommon/log.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const sched_scope scope_of[RESV_SCOPES] = {
    [RESV_SCOPE_KEYPAIR] = SCHED_SCOPE_KEYPAIR,
    [RESV_SCOPE_USER] = SCHED_SCOPE_USER,
    [RESV_SCOPE_PROJECT] = SCHED_SCOPE_PROJECT,
    [RESV_SCOPE_DOMAIN] = SCHED_SCOPE_DOMAIN,
};

/* "sessions=3 cpu=4000 mem=0" (every limited slot, zero included); NULL when
 * nothing is limited. */
static char *limit_enc(const sched_limits *l, bool keypair)
{
    char buf[SLOTS_MAX * (SLOT_NAME_MAX + 24) + 32];
    size_t off = 0;
    buf[0] = '\0';
    if (keypair && l->max_concurrent_sessions > 0)
        off += (size_t)snprintf(buf, sizeof(buf), "sessions=%d", l->max_concurrent_sessions);
    for (int i = 0; i < SLOTS_MAX && off < sizeof(buf); i++)
        if ((l->max_slots.mask >> i) & 1u)
            off += (size_t)snprintf(buf + off, sizeof(buf) - off, "%s%s=%lld", off ? " " : "",
                                    slot_name(i), (long long)l->max_slots.v[i]);
    return off ? ts_strdup(buf) : NULL;
}

void sched_limits_encode(sched_svc *x, const sched_rec *rec, char *out[RESV_SCOPES])
{
    sched_accounts *a = sched_engine_accounts(x->e);
    for (int sc = 0; sc < RESV_SCOPES; sc++) {
        out[sc] = NULL;
        if (!rec->scope[sc][0]) continue;
        sched_account *acc = sched_accounts_get(a, scope_of[sc], rec->scope[sc]);
        out[sc] = limit_enc(&acc->limits, sc == RESV_SCOPE_KEYPAIR);
    }
}

/* Read one account's totals; keep it in x->ext_accounts while others hold
 * some of it. */
static void resync_one(sched_svc *x, int sc, const char *id)
{
    char usage_id[SCHED_ID_MAX + 16];
    snprintf(usage_id, sizeof(usage_id), "%s%s", occ_scope_tags[sc], id);
    int sessions;
    slots_t used;
    ts_err err = {{0}};
    if (!resv_read_usage(x->v, usage_id, &sessions, &used, &err)) {
        TLOG_WARN("usage not read back from Redis", "usage=%s error=\"%s\"", usage_id, err.msg);
        return;
    }
    sched_account *acc = sched_accounts_get(sched_engine_accounts(x->e), scope_of[sc], id);
    /* whether ext_* changed does not matter: the caller passes the groups anyway */
    TS_IGNORE(sched_account_set_totals(acc, sessions, &used));
    char key[SCHED_ID_MAX + 4];
    snprintf(key, sizeof(key), "%d:%s", sc, id);
    if (acc->ext_sessions > 0 || !slots_is_zero(&acc->ext_used))
        strmap_put(x->ext_accounts, key, (void *)1);
    else
        strmap_del(x->ext_accounts, key);
}

void sched_limits_refused(sched_svc *x, const sched_rec *rec)
{
    for (int sc = 0; sc < RESV_SCOPES; sc++)
        if (rec->scope[sc][0]) resync_one(x, sc, rec->scope[sc]);
}

void sched_limits_resync(sched_svc *x)
{
    size_t n = strmap_len(x->ext_accounts), i = 0, pos = 0;
    if (n == 0) return;
    char **keys = ts_calloc(n, sizeof(*keys));
    const char *k;
    void *unused;
    while (i < n && strmap_next(x->ext_accounts, &pos, &k, &unused))
        keys[i++] = ts_strdup(k);
    for (size_t j = 0; j < i; j++) {
        char *colon = strchr(keys[j], ':');
        if (colon) resync_one(x, atoi(keys[j]), colon + 1);
        free(keys[j]);
    }
    free(keys);
}
