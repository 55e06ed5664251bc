/* state.c: the options and the session records every module shares (state.h). */
#include "services/scheduler/state.h"

#include "libcommon/log.h"

#include <stdlib.h>

sched_config sched_cfg;

void sched_rec_free(void *p)
{
    sched_rec *rec = p;
    if (!rec) return;
    if (rec->enq) tessera__v1__session_enqueued__free_unpacked(rec->enq, NULL);
    free(rec->k);
    free(rec);
}

sched_rec *sched_rec_get_or_new(sched_svc *x, const char *id, const char *group)
{
    sched_rec *rec = strmap_get(x->recs, id);
    if (rec) return rec;
    rec = ts_calloc(1, sizeof(*rec));
    ts_strlcpy(rec->id, id, sizeof(rec->id));
    ts_strlcpy(rec->group, group ? group : "", sizeof(rec->group));
    strmap_put(x->recs, id, rec);
    return rec;
}

void sched_rec_drop(sched_svc *x, sched_rec *rec)
{
    strmap_del(x->recs, rec->id);
    sched_rec_free(rec);
}

void sched_log_session(const char *session_id)
{
    tlog_ctx_clear();
    tlog_ctx_session(session_id);
}

void sched_log_agent(const char *agent_id)
{
    tlog_ctx_clear();
    tlog_ctx_agent(agent_id);
}
