/* reserve_redis.c: engine placements -> Redis reservations (see reserve_redis.h). */
#include "services/scheduler/reserve_redis.h"

#include <stdlib.h>

void sched_resv_session(const sched_session *s, const sched_kplace *k, int nk, resv_session *out,
                        resv_kernel *kbuf, resv_dev *dbuf)
{
    *out = (resv_session){.session_id = s->id}; /* no limits: the engine's predicates hold */
    out->scope[RESV_SCOPE_KEYPAIR] = s->access_key;
    out->scope[RESV_SCOPE_USER] = s->user_id;
    out->scope[RESV_SCOPE_PROJECT] = s->project_id;
    out->scope[RESV_SCOPE_DOMAIN] = s->domain;
    out->nk = nk;
    out->k = kbuf;
    for (int i = 0; i < nk; i++) {
        resv_dev *d = dbuf + (size_t)i * SCHED_MAX_DEVICES;
        for (int j = 0; j < k[i].pick.ndev; j++)
            d[j] = (resv_dev){k[i].pick.dev[j].dev, k[i].pick.dev[j].shares};
        kbuf[i] = (resv_kernel){k[i].kernel->kernel_id, k[i].pick.agent->id, &k[i].kernel->slots,
                                k[i].pick.ndev, d};
    }
}

bool sched_reserve_redis(void *ctx, const char *group, const sched_session *s,
                         const sched_kplace *k, int nk, ts_err *err)
{
    (void)group;
    resv_kernel *kb = ts_calloc((size_t)nk, sizeof(*kb));
    resv_dev *db = ts_calloc((size_t)nk * SCHED_MAX_DEVICES, sizeof(*db));
    resv_session rs;
    sched_resv_session(s, k, nk, &rs, kb, db);
    resv_result res;
    bool ok = resv_reserve(ctx, &rs, 1, &res, err);
    if (ok && res.status == RESV_REFUSED) {
        ts_err_set(err, "%s", res.reason);
        ok = false;
    } else if (ok && res.status == RESV_TAKEN) {
        ts_err_set(err, "session %s was placed elsewhere by another scheduler instance", s->id);
        ok = false;
    }
    free(kb);
    free(db);
    return ok;
}
