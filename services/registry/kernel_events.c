/* kernel_events.c: the agents' kernel events on tessera.kernel.v1 (see
 * kernel_events.h), applied through batch_tx.h. */
#include "kernel_events.h"

#include "batch_tx.h"
#include "db_common.h"
#include "kernel_steps.h"
#include "libcommon/log.h"
#include "pbutil.h"
#include "session_cluster.h"
#include "tessera/v1/kernel.pb-c.h"
#include "tessera/v1/session.pb-c.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static kbus_result db_failed(void)
{
    return KBUS_RETRY;
}

typedef struct kernel_row {
    char status[16];
    char agent_id[136];
    int cluster_idx;
    int generation;
    char name[40]; /* main1, sub1, ... */
    bool found;
} kernel_row;

/* The event's kernel, locked; false on a database error. found false when it
 * is not a kernel of the session or another agent holds it (stale event). */
static bool lock_kernel(PGconn *conn, const sess *s, const char *kernel_id, const char *agent_id,
                        kernel_row *k, ts_err *err)
{
    memset(k, 0, sizeof(*k));
    if (!ts_uuid_valid(kernel_id)) return true;
    const char *p[] = {kernel_id, s->id};
    PGresult *r = reg_exec(
        conn,
        "SELECT status, coalesce(agent_id, ''), cluster_idx, generation, " SESSION_KERNEL_NAME_SQL
        " FROM registry.kernels k WHERE id = $1::uuid AND session_id = $2::uuid FOR UPDATE",
        2, p, err);
    if (!r) return false;
    if (PQntuples(r) == 1) {
        ts_strlcpy(k->status, PQgetvalue(r, 0, 0), sizeof(k->status));
        ts_strlcpy(k->agent_id, PQgetvalue(r, 0, 1), sizeof(k->agent_id));
        k->cluster_idx = atoi(PQgetvalue(r, 0, 2));
        k->generation = atoi(PQgetvalue(r, 0, 3));
        ts_strlcpy(k->name, PQgetvalue(r, 0, 4), sizeof(k->name));
        k->found = !agent_id || !agent_id[0] || strcmp(k->agent_id, agent_id) == 0;
        if (!k->found)
            TLOG_WARN("kernel event from another agent ignored", "agent=%s holder=%s", agent_id,
                      k->agent_id);
    } else {
        TLOG_WARN("event for an unknown kernel ignored", "");
    }
    PQclear(r);
    return true;
}

/* How a reason names a kernel: its id; in a session of several kernels its
 * name and node too ("kernel sub1 (<id>) on node2"). */
static void kernel_label(const sess *s, const kernel_row *k, const char *kernel_id, char *buf,
                         size_t size)
{
    if (s->cluster_size > 1 && k->name[0])
        snprintf(buf, size, "kernel %s (%s)%s%s", k->name, kernel_id, k->agent_id[0] ? " on " : "",
                 k->agent_id);
    else
        snprintf(buf, size, "kernel %s", kernel_id);
}

static bool in(const char *status, const char *const *set)
{
    for (; *set; set++)
        if (strcmp(status, *set) == 0) return true;
    return false;
}

/* An event about an older generation of the kernel (before a restart). */
static bool stale(const kernel_row *k, int generation)
{
    if (generation >= k->generation) return false;
    TLOG_INFO("kernel event of an older generation ignored", "generation=%d current=%d", generation,
              k->generation);
    return true;
}

/* The event's kernel updated in one statement (SET set_sql, its parameters
 * from $6 on: extra) when it is a kernel of the session held by the event's
 * agent, in one of the statuses from, and (generation >= 0) not of a newer
 * generation than the event's: *updated says whether it was (not: the event
 * is duplicated, reordered or stale, logged as lock_kernel and stale do);
 * false on a database error. Saves lock_kernel's round trip on the start
 * path. */
static bool update_kernel_if(PGconn *conn, const sess *s, const char *kernel_id,
                             const char *agent_id, int generation, const char *const *from,
                             const char *set_sql, int nextra, const char *const *extra,
                             bool *updated, ts_err *err)
{
    *updated = false;
    if (!ts_uuid_valid(kernel_id)) return true;
    char states[160], gen[16]; /* a text[] literal: {A,B,...} */
    size_t len = 0;
    states[len++] = '{';
    for (const char *const *f = from; *f; f++) {
        size_t n = strlen(*f);
        if (len + n + 3 > sizeof(states)) break; /* the callers' sets are a few words */
        if (f != from) states[len++] = ',';
        memcpy(states + len, *f, n);
        len += n;
    }
    states[len++] = '}';
    states[len] = '\0';
    snprintf(gen, sizeof(gen), "%d", generation);
    const char *p[12] = {kernel_id, s->id, agent_id ? agent_id : "", states, gen};
    for (int i = 0; i < nextra && i < 7; i++)
        p[5 + i] = extra[i];
    char *sql = ts_asprintf("UPDATE registry.kernels SET %s WHERE id = $1::uuid"
                            " AND session_id = $2::uuid AND ($3 = '' OR agent_id = $3)"
                            " AND status = ANY($4::text[])"
                            " AND ($5::int < 0 OR generation <= $5::int)",
                            set_sql);
    PGresult *r = reg_exec(conn, sql, 5 + nextra, p, err);
    free(sql);
    if (!r) return false;
    *updated = atoi(PQcmdTuples(r)) == 1;
    PQclear(r);
    if (*updated) return true;
    kernel_row k; /* why not: for the log */
    if (!lock_kernel(conn, s, kernel_id, agent_id, &k, err)) return false;
    if (k.found && generation >= 0) TS_IGNORE(stale(&k, generation)); /* it logs why */
    return true;
}

static bool kernel_final(const char *st)
{
    return reg_status_final(st);
}

static bool set_kernel(PGconn *conn, const char *kernel_id, const char *status, const char *info,
                       ts_err *err)
{
    const char *p[] = {kernel_id, status, info ? info : ""};
    return reg_run(conn,
                   "UPDATE registry.kernels SET status = $2, status_info = $3,"
                   " status_changed_at = now() WHERE id = $1::uuid",
                   3, p, err);
}

/* Kernels of the session on an agent that have not ended. */
static bool live_kernels(PGconn *conn, const sess *s, int *n, ts_err *err)
{
    const char *p[] = {s->id};
    PGresult *r = reg_exec(conn,
                           "SELECT count(*) FROM registry.kernels WHERE session_id = $1::uuid"
                           " AND agent_id IS NOT NULL"
                           " AND status NOT IN ('TERMINATED', 'CANCELLED', 'ERROR')",
                           1, p, err);
    if (!r) return false;
    *n = atoi(PQgetvalue(r, 0, 0));
    PQclear(r);
    return true;
}

static const char *const STARTING[] = {ST_SCHEDULED, ST_PREPARING, ST_PULLING, NULL};
static const char *const ACTIVE[] = {ST_SCHEDULED, ST_PREPARING,  ST_PULLING,
                                     ST_RUNNING,   ST_RESTARTING, NULL};

static void human_bytes(char *buf, size_t size, int64_t b)
{
    snprintf(buf, size, "%.1f MiB", (double)b / (1024.0 * 1024.0));
}

static kbus_result apply_pulling(PGconn *conn, outbox *ob, sess *s, const void *msg, ts_err *err)
{
    const Tessera__V1__KernelPulling *m = msg;
    kernel_row k;
    if (!lock_kernel(conn, s, m->kernel_id, m->agent_id, &k, err)) return db_failed();
    if (!k.found || !in(k.status, STARTING)) return KBUS_DONE;
    char done[32], total[32], info[160], layers[48] = "";
    human_bytes(done, sizeof(done), m->bytes_done);
    human_bytes(total, sizeof(total), m->bytes_total);
    if (m->layers_total > 0 && m->layers_done >= 0 && m->layers_done <= m->layers_total)
        snprintf(layers, sizeof(layers), ", %d of %d layers ready", m->layers_done,
                 m->layers_total);
    if (m->bytes_total > 0)
        snprintf(info, sizeof(info), "pulling %s / %s%s", done, total, layers);
    else
        snprintf(info, sizeof(info), "pulling %s%s", done, layers);
    if (!set_kernel(conn, m->kernel_id, "PULLING", info, err)) return db_failed();
    if (strcmp(s->status, ST_SCHEDULED) == 0 || strcmp(s->status, ST_PREPARING) == 0) {
        if (!tr_set(conn, ob, s, ST_PULLING, info, err)) return db_failed();
    } else if (strcmp(s->status, ST_PULLING) == 0) {
        const char *p[] = {s->id, info};
        if (!reg_run(conn, "UPDATE registry.sessions SET status_info = $2 WHERE id = $1::uuid", 2,
                     p, err))
            return db_failed();
        ts_strlcpy(s->info, info, sizeof(s->info));
    } else {
        return KBUS_DONE;
    }
    Tessera__V1__SessionPulling e = TESSERA__V1__SESSION_PULLING__INIT;
    e.session_id = s->id;
    e.image = m->image;
    e.bytes_done = m->bytes_done;
    e.bytes_total = m->bytes_total;
    ob_session_event(ob, s->id, &e.base);
    return KBUS_DONE;
}

static kbus_result apply_creating(PGconn *conn, outbox *ob, sess *s, const void *msg, ts_err *err)
{
    const Tessera__V1__KernelCreating *m = msg;
    const char *x[] = {m->image_digest};
    bool updated = false;
    if (!update_kernel_if(conn, s, m->kernel_id, m->agent_id, -1, STARTING,
                          "status = 'CREATING', status_info = 'creating the container',"
                          " image_digest = $6, status_changed_at = now()",
                          1, x, &updated, err))
        return db_failed();
    if (!updated) return KBUS_DONE;
    if (strcmp(s->status, ST_PULLING) == 0 &&
        !tr_set(conn, ob, s, ST_PREPARING, "image ready; creating containers", err))
        return db_failed();
    return KBUS_DONE;
}

static kbus_result apply_started(PGconn *conn, outbox *ob, sess *s, const void *msg, ts_err *err)
{
    const Tessera__V1__KernelStarted *m = msg;
    static const char *const from[] = {"SCHEDULED", "PREPARING",  "PULLING",
                                       "CREATING",  "RESTARTING", NULL};
    json_t *pj = pb_ports_json(m->service_ports, m->n_service_ports);
    char *pt = json_dumps(pj, JSON_COMPACT);
    json_decref(pj);
    const char *x[] = {m->container_id, m->kernel_host, pt};
    bool updated = false;
    bool ok = update_kernel_if(conn, s, m->kernel_id, m->agent_id, m->generation, from,
                               "status = 'RUNNING', status_info = '', container_id = $6,"
                               " kernel_host = $7, service_ports = $8::jsonb,"
                               " status_changed_at = now()",
                               3, x, &updated, err);
    free(pt);
    if (!ok) return db_failed();
    if (!updated) return KBUS_DONE;
    if (strcmp(s->status, ST_TERMINATING) == 0 || reg_status_final(s->status)) {
        /* Destroy requested meanwhile: make sure this container goes too. */
        sess copy = *s;
        return tr_destroy_kernels(conn, ob, &copy, "session ended", false, NULL, err) ? KBUS_DONE
                                                                                      : db_failed();
    }
    if (!in(s->status, ACTIVE) || strcmp(s->status, ST_RUNNING) == 0) return KBUS_DONE;
    if (s->cluster_size == 1 && m->agent_id && m->agent_id[0]) {
        /* the session's one kernel, held by this agent, now runs: no need to
         * read the session's kernels back */
        if (!tr_set(conn, ob, s, ST_RUNNING, "", err)) return db_failed();
        char *ids[1] = {m->kernel_id};
        tr_running_event(ob, s, ids, 1, m->agent_id, m->service_ports, m->n_service_ports);
        return KBUS_DONE;
    }
    bool moved;
    return tr_running_if_all_up(conn, ob, s, &moved, err) ? KBUS_DONE : db_failed();
}

static kbus_result apply_exited(PGconn *conn, outbox *ob, sess *s, const void *msg, ts_err *err)
{
    const Tessera__V1__KernelExited *m = msg;
    kernel_row k;
    if (!lock_kernel(conn, s, m->kernel_id, m->agent_id, &k, err)) return db_failed();
    if (!k.found || kernel_final(k.status) || stale(&k, m->generation)) return KBUS_DONE;
    char info[300], code[16];
    snprintf(code, sizeof(code), "%d", m->exit_code);
    snprintf(info, sizeof(info), "exited with code %d%s%s", m->exit_code, m->reason[0] ? ": " : "",
             m->reason);
    const char *p[] = {m->kernel_id, code, info};
    if (!reg_run(conn,
                 "UPDATE registry.kernels SET exit_code = $2::int, status_info = $3"
                 " WHERE id = $1::uuid",
                 3, p, err))
        return db_failed();
    bool batch = strcmp(s->type, "batch") == 0, main_kernel = k.cluster_idx == 0;
    const char *result = m->exit_code == 0 ? "SUCCESS" : "FAILURE";
    if (in(s->status, ACTIVE)) {
        if (batch && main_kernel) {
            char why[128];
            snprintf(why, sizeof(why), "batch finished with exit code %d", m->exit_code);
            if (!tr_set_result(conn, s, result, m->exit_code, err) ||
                !tr_terminate(conn, ob, s, "batch-finished", why, "system", err))
                return db_failed();
        } else if (!batch) {
            /* one kernel of a cluster leaves the others without it: a failure
             * whatever its code */
            char why[480];
            kernel_label(s, &k, m->kernel_id, why, sizeof(why));
            snprintf(why + strlen(why), sizeof(why) - strlen(why), " %s", info);
            bool failed = m->exit_code != 0 || s->cluster_size > 1;
            if ((failed && !tr_set_result(conn, s, "FAILURE", m->exit_code, err)) ||
                !tr_terminate(conn, ob, s, "kernel-exited", why, "system", err))
                return db_failed();
        }
    } else if (strcmp(s->status, ST_TERMINATING) == 0 && batch && main_kernel &&
               !s->has_exit_code) {
        if (!tr_set_result(conn, s, result, m->exit_code, err)) return db_failed();
    }
    return KBUS_DONE;
}

static const char *error_code_of(const char *reason)
{
    if (strncmp(reason, "pull", 4) == 0 || strstr(reason, "image")) return "image_pull";
    if (strncmp(reason, "create", 6) == 0) return "kernel_create";
    return "kernel_terminated";
}

static kbus_result apply_terminated(PGconn *conn, outbox *ob, sess *s, const void *msg, ts_err *err)
{
    const Tessera__V1__KernelTerminated *m = msg;
    kernel_row k;
    if (!lock_kernel(conn, s, m->kernel_id, m->agent_id, &k, err)) return db_failed();
    if (!k.found || kernel_final(k.status)) return KBUS_DONE;
    if (strcmp(k.status, "RESTARTING") == 0 && m->generation < k.generation) {
        /* The old container of a restart is gone; the new generation follows. */
        return set_kernel(conn, m->kernel_id, "PREPARING", "restarting", err) ? KBUS_DONE
                                                                              : db_failed();
    }
    if (stale(&k, m->generation)) return KBUS_DONE;
    char code[16], info[400];
    snprintf(code, sizeof(code), "%d", m->exit_code);
    snprintf(info, sizeof(info), "%s", m->reason[0] ? m->reason : "terminated");
    const char *p[] = {m->kernel_id, code, info};
    if (!reg_run(conn,
                 "UPDATE registry.kernels SET status = 'TERMINATED', status_info = $3,"
                 " exit_code = coalesce(exit_code, nullif($2::int, -1)),"
                 " status_changed_at = now() WHERE id = $1::uuid",
                 3, p, err))
        return db_failed();
    if (reg_status_final(s->status)) return KBUS_DONE;
    int live = 0;
    if (!live_kernels(conn, s, &live, err)) return db_failed();
    bool batch = strcmp(s->type, "batch") == 0;
    if (strcmp(s->status, ST_TERMINATING) == 0) {
        if (batch && k.cluster_idx == 0 && !s->has_exit_code && m->exit_code >= 0 &&
            !tr_set_result(conn, s, m->exit_code == 0 ? "SUCCESS" : "FAILURE", m->exit_code, err))
            return db_failed();
        if (live == 0 && !tr_finish(conn, ob, s, err)) return db_failed();
        return KBUS_DONE;
    }
    if (!in(s->status, ACTIVE)) return KBUS_DONE;
    bool failed_start = strncmp(info, "create", 6) == 0 || strncmp(info, "pull", 4) == 0;
    if (batch && k.cluster_idx == 0 && strcmp(s->status, ST_RUNNING) == 0 && m->exit_code >= 0 &&
        !failed_start) {
        /* The batch ended and the agent cleaned up at once (no KernelExited). */
        char why[128];
        snprintf(why, sizeof(why), "batch finished with exit code %d", m->exit_code);
        if (!tr_set_result(conn, s, m->exit_code == 0 ? "SUCCESS" : "FAILURE", m->exit_code, err))
            return db_failed();
        if (live > 0)
            return tr_terminate(conn, ob, s, "batch-finished", why, "system", err) ? KBUS_DONE
                                                                                   : db_failed();
        if (!tr_set(conn, ob, s, ST_TERMINATING, why, err) || !tr_finish(conn, ob, s, err))
            return db_failed();
        return KBUS_DONE;
    }
    /* A kernel ended on its own while the session was starting or running. */
    char why[600];
    kernel_label(s, &k, m->kernel_id, why, sizeof(why));
    snprintf(why + strlen(why), sizeof(why) - strlen(why), " terminated: %s", info);
    if (!tr_destroy_kernels(conn, ob, s, "a kernel of the session failed", true, "TERMINATING",
                            err) ||
        !tr_end(conn, ob, s, ST_ERROR, why, error_code_of(info), m->kernel_id, m->agent_id, NULL,
                err))
        return db_failed();
    return KBUS_DONE;
}

/* The start path's events (kernel_steps.c) of the sessions whose events in
 * the batch are one KernelCreating, one KernelStarted, or one of each in that
 * order, on a one-kernel session that is SCHEDULED or PREPARING. A step that
 * does not apply, and every other event, follows one by one; that order
 * keeps the outcome: a step left over changes nothing after the others. */
static kbus_result advance_kernels(PGconn *conn, tx_batch *b, ts_err *reason)
{
    const tx_item *items = b->items;
    const sess *ss = b->ss;
    size_t n = b->n;
    kernel_step *steps = ts_calloc(n, sizeof(*steps));
    size_t *at = ts_calloc(n, sizeof(*at)), ns = 0;
    for (size_t i = 0, end; i < n; i = end) {
        size_t g = b->group[i];
        for (end = i; end < n && b->group[end] == g; end++)
            ;
        bool creating = items[i].apply == apply_creating;
        bool ok =
            b->found[g] && ss[g].cluster_size == 1 &&
            (strcmp(ss[g].status, ST_PREPARING) == 0 || strcmp(ss[g].status, ST_SCHEDULED) == 0) &&
            (creating || items[i].apply == apply_started) &&
            (end - i == 1 || (end - i == 2 && creating && items[i + 1].apply == apply_started));
        for (size_t j = i; ok && j < end; j++) {
            steps[ns] = (kernel_step){.s = &b->ss[g], .ob = &b->obs[j]};
            if (items[j].apply == apply_started)
                steps[ns].started = (const Tessera__V1__KernelStarted *)items[j].m;
            else
                steps[ns].creating = (const Tessera__V1__KernelCreating *)items[j].m;
            at[ns++] = j;
        }
    }
    kbus_result res = KBUS_DONE;
    if (ns > 0 && !kernel_steps_apply(conn, steps, ns, reason)) res = KBUS_RETRY;
    for (size_t k = 0; k < ns && res == KBUS_DONE; k++)
        b->done[at[k]] = steps[k].done;
    free(steps);
    free(at);
    return res;
}

static const tx_type kernel_types[] = {
    {"tessera.v1.KernelPulling", &tessera__v1__kernel_pulling__descriptor, apply_pulling, NULL,
     NULL},
    {"tessera.v1.KernelCreating", &tessera__v1__kernel_creating__descriptor, apply_creating, NULL,
     NULL},
    {"tessera.v1.KernelStarted", &tessera__v1__kernel_started__descriptor, apply_started, NULL,
     NULL},
    {"tessera.v1.KernelExited", &tessera__v1__kernel_exited__descriptor, apply_exited, NULL, NULL},
    {"tessera.v1.KernelTerminated", &tessera__v1__kernel_terminated__descriptor, apply_terminated,
     NULL, NULL},
};

kbus_result kernel_events_batch(const kbus_msg *msgs, size_t n, void *ctx, ts_err *reason)
{
    (void)ctx;
    return batch_tx_consume(msgs, n, kernel_types, TS_ARRAY_LEN(kernel_types), advance_kernels,
                            reason);
}

kbus_result kernel_events_apply(const char *type, ProtobufCMessage *m, ts_err *err)
{
    return batch_tx_apply_message(kernel_types, TS_ARRAY_LEN(kernel_types), type, m, err);
}
