/* ownership.c: the sessions of this instance's partitions (ownership.h). */
#include "services/scheduler/ownership.h"

#include "libcommon/log.h"
#include "services/scheduler/engine.h"
#include "services/scheduler/recovery.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

bool sched_owns(sched_svc *x, const char *session_id)
{
    if (!x->owned_known) return true;
    if (x->n_owned == 0) return false;
    if (x->n_partitions <= 0) return true;
    int p = kbus_key_partition(session_id, x->n_partitions);
    return p >= 0 && p < SCHED_MAX_PARTITIONS && x->owned[p];
}

/* "0,2" */
static void list_owned(const sched_svc *x, char *out, size_t size)
{
    size_t len = 0;
    out[0] = '\0';
    for (int p = 0; p < SCHED_MAX_PARTITIONS && len + 8 < size; p++)
        if (x->owned[p]) len += (size_t)snprintf(out + len, size - len, "%s%d", len ? "," : "", p);
}

/* Queued sessions of partitions that went to another instance leave the queue. */
static void hand_over(sched_svc *x)
{
    size_t pos = 0, n = 0;
    const char *id;
    void *v;
    char **ids = NULL;
    while (strmap_next(x->recs, &pos, &id, &v)) {
        sched_rec *rec = v;
        if (rec->state != REC_PENDING || sched_owns(x, rec->id)) continue;
        ids = ts_realloc(ids, sizeof(*ids) * (n + 1));
        ids[n++] = ts_strdup(rec->id);
    }
    for (size_t i = 0; i < n; i++) {
        sched_rec *rec = strmap_get(x->recs, ids[i]);
        sched_log_session(ids[i]);
        if (sched_engine_cancel(x->e, rec->group, rec->id)) atomic_fetch_sub(&x->st.pending, 1);
        TLOG_INFO("pending session handed over: its partition went to another instance", "");
        sched_rec_drop(x, rec);
        atomic_fetch_add(&x->st.handed_over, 1);
        free(ids[i]);
    }
    tlog_ctx_clear();
    free(ids);
}

void sched_ownership_check(sched_svc *x, int64_t now_ms)
{
    bool owned[SCHED_MAX_PARTITIONS];
    int n;
    if (!x->c_sessions || !kbus_consumer_assignment(x->c_sessions, SCHED_TOPIC_SESSION, owned,
                                                    SCHED_MAX_PARTITIONS, &n))
        return;
    /* none: not joined yet, or (joined) none to spare for this instance */
    if (n == 0 && !kbus_consumer_joined(x->c_sessions)) return;
    bool changed = !x->owned_known || memcmp(owned, x->owned, sizeof(owned)) != 0;
    if (changed) {
        ts_err err = {{0}};
        int count = x->n_partitions;
        if (n > 0 && !kbus_topic_partitions(x->bus, SCHED_TOPIC_SESSION, 2000, &count, &err)) {
            TLOG_WARN("partitions of the sessions topic unknown: ownership unchanged",
                      "error=\"%s\"", err.msg);
            return;
        }
        memcpy(x->owned, owned, sizeof(owned));
        x->n_owned = n;
        atomic_store(&x->st.partitions, n);
        x->n_partitions = count;
        x->owned_known = true;
        char list[256];
        list_owned(x, list, sizeof(list));
        TLOG_INFO("sessions partitions assigned", "partitions=%s of=%d", list, count);
    }
    hand_over(x);
    if (!changed && now_ms < x->next_take_ms) return;
    x->next_take_ms = now_ms + sched_cfg.resync_interval_ms;
    ts_err err = {{0}};
    int taken;
    if (!sched_recovery_take_pending(x, sched_owns, &taken, &err))
        TLOG_WARN("pending records not taken from Redis (next sweep tries again)", "error=\"%s\"",
                  err.msg);
    else
        atomic_fetch_add(&x->st.taken_over, (uint64_t)taken);
    if (err.msg[0]) x->next_take_ms = now_ms; /* again at the next sweep */
}
