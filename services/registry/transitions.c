/* transitions.c: status changes, history, session end events and agent
 * commands (see transitions.h). */
#include "transitions.h"

#include "db_common.h"
#include "home_files.h"
#include "libcommon/cluster_names.h"
#include "libcommon/log.h"
#include "pbutil.h"
#include "session_cluster.h"
#include "tessera/v1/agent_cmd.pb-c.h"
#include "tessera/v1/session.pb-c.h"
#include "usage_store.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define SESS_COLS                                                                                  \
    "id::text, name, status, type, access_key, user_id::text, result, cluster_size, exit_code,"    \
    " status_info"

static void sess_from_row(const PGresult *r, int row, sess *s)
{
    memset(s, 0, sizeof(*s));
    ts_strlcpy(s->id, PQgetvalue(r, row, 0), sizeof(s->id));
    ts_strlcpy(s->name, PQgetvalue(r, row, 1), sizeof(s->name));
    ts_strlcpy(s->status, PQgetvalue(r, row, 2), sizeof(s->status));
    ts_strlcpy(s->type, PQgetvalue(r, row, 3), sizeof(s->type));
    ts_strlcpy(s->access_key, PQgetvalue(r, row, 4), sizeof(s->access_key));
    ts_strlcpy(s->user_id, PQgetvalue(r, row, 5), sizeof(s->user_id));
    ts_strlcpy(s->result, PQgetvalue(r, row, 6), sizeof(s->result));
    s->cluster_size = atoi(PQgetvalue(r, row, 7));
    s->has_exit_code = !PQgetisnull(r, row, 8);
    s->exit_code = s->has_exit_code ? atoi(PQgetvalue(r, row, 8)) : 0;
    ts_strlcpy(s->info, PQgetvalue(r, row, 9), sizeof(s->info));
}

bool tr_lock(PGconn *conn, const char *session_id, sess *s, bool *found, ts_err *err)
{
    const char *p[] = {session_id};
    PGresult *r =
        reg_exec(conn, "SELECT " SESS_COLS " FROM registry.sessions WHERE id = $1::uuid FOR UPDATE",
                 1, p, err);
    if (!r) return false;
    memset(s, 0, sizeof(*s));
    *found = PQntuples(r) == 1;
    if (*found) sess_from_row(r, 0, s);
    PQclear(r);
    return true;
}

bool tr_lock_many(PGconn *conn, const char *const *ids, size_t n, sess *out, bool *found,
                  ts_err *err)
{
    if (n == 0) return true;
    for (size_t i = 0; i < n; i++) {
        found[i] = false;
        memset(&out[i], 0, sizeof(out[i]));
    }
    char *arr = reg_uuid_array(ids, n);
    const char *p[] = {arr};
    /* ORDER BY id: the rows are locked in that order, whoever else locks several */
    PGresult *r = reg_exec(conn,
                           "SELECT " SESS_COLS " FROM registry.sessions"
                           " WHERE id = ANY($1::uuid[]) ORDER BY id FOR UPDATE",
                           1, p, err);
    free(arr);
    if (!r) return false;
    for (int row = 0; row < PQntuples(r); row++) {
        const char *id = PQgetvalue(r, row, 0);
        for (size_t i = 0; i < n; i++)
            if (!found[i] && strcasecmp(ids[i], id) == 0) {
                sess_from_row(r, row, &out[i]);
                found[i] = true;
            }
    }
    PQclear(r);
    return true;
}

/* tr_set's statement: the status (and the deadlines it implies), the
 * kernels' slots when final, and the history row. */
/* (clang-format cannot lay out a macro between string literals) */
/* clang-format off */
static const char set_sql[] =
    "WITH u AS (UPDATE registry.sessions SET status = $2, status_info = $3,"
    " status_changed_at = now(), " SESSION_DEADLINES_SET("$2") ","
    " terminated_at = CASE WHEN $4::bool THEN now() ELSE terminated_at END,"
    " occupied_slots = CASE WHEN $4::bool THEN '{}'::jsonb ELSE occupied_slots END"
    " WHERE id = $1::uuid RETURNING id),"
    " k AS (UPDATE registry.kernels SET holds_slots = false"
    "   WHERE $4::bool AND session_id = $1::uuid AND holds_slots)"
    " INSERT INTO registry.session_status_history (session_id, status, reason)"
    " SELECT id, $2, $3 FROM u";
/* clang-format on */

bool tr_set(PGconn *conn, outbox *ob, sess *s, const char *to, const char *reason, ts_err *err)
{
    bool final = reg_status_final(to);
    const char *p[] = {s->id, to, reason ? reason : "", final ? "true" : "false"};
    /* one statement */
    if (!reg_run(conn, set_sql, 4, p, err)) return false;
    /* its wall time per status, for usage accounting (docs/usage.md) */
    if (final && !usage_store_session_end(conn, s->id, err)) return false;
    tr_moved(ob, s, to, reason);
    return true;
}

void tr_moved(outbox *ob, sess *s, const char *to, const char *reason)
{
    char q[600];
    TLOG_INFO("session status", "name=%s from=%s to=%s reason=%s", s->name, s->status, to,
              tlog_quote(q, sizeof(q), reason ? reason : ""));
    ts_strlcpy(s->status, to, sizeof(s->status));
    ts_strlcpy(s->info, reason ? reason : "", sizeof(s->info));
    ob_notify(ob, s->id, to);
}

bool tr_set_result(PGconn *conn, sess *s, const char *result, int exit_code, ts_err *err)
{
    char code[16];
    snprintf(code, sizeof(code), "%d", exit_code);
    const char *p[] = {s->id, result, code};
    if (!reg_run(conn,
                 "UPDATE registry.sessions SET result = $2, exit_code = $3::int"
                 " WHERE id = $1::uuid",
                 3, p, err))
        return false;
    ts_strlcpy(s->result, result, sizeof(s->result));
    s->has_exit_code = true;
    s->exit_code = exit_code;
    return true;
}

bool tr_end(PGconn *conn, outbox *ob, sess *s, const char *final, const char *reason,
            const char *error_code, const char *kernel_id, const char *agent_id,
            const char *requested_by, ts_err *err)
{
    if (!tr_set(conn, ob, s, final, reason, err)) return false;
    const char *p[] = {s->id};
    if (!reg_run(conn,
                 "UPDATE registry.kernels SET status = 'CANCELLED', status_changed_at = now()"
                 " WHERE session_id = $1::uuid AND agent_id IS NULL"
                 " AND status NOT IN ('TERMINATED', 'CANCELLED', 'ERROR')",
                 1, p, err))
        return false;
    char *rsn = (char *)(reason ? reason : "");
    if (strcmp(final, ST_TERMINATED) == 0) {
        Tessera__V1__SessionTerminated m = TESSERA__V1__SESSION_TERMINATED__INIT;
        m.session_id = s->id;
        m.reason = rsn;
        m.exit_code = s->has_exit_code ? s->exit_code : 0;
        ob_session_event(ob, s->id, &m.base);
    } else if (strcmp(final, ST_ERROR) == 0) {
        Tessera__V1__SessionFailed m = TESSERA__V1__SESSION_FAILED__INIT;
        m.session_id = s->id;
        m.reason = rsn;
        m.error_code = (char *)(error_code ? error_code : "");
        m.kernel_id = (char *)(kernel_id ? kernel_id : "");
        m.agent_id = (char *)(agent_id ? agent_id : "");
        ob_session_event(ob, s->id, &m.base);
    } else {
        Tessera__V1__SessionCancelled m = TESSERA__V1__SESSION_CANCELLED__INIT;
        m.session_id = s->id;
        m.reason = rsn;
        m.requested_by = (char *)(requested_by ? requested_by : "system");
        ob_session_event(ob, s->id, &m.base);
    }
    return true;
}

bool tr_destroy_kernels(PGconn *conn, outbox *ob, const sess *s, const char *reason, bool force,
                        const char *kernel_status, ts_err *err)
{
    const char *p[] = {s->id};
    PGresult *r = reg_exec(conn,
                           "SELECT id::text, agent_id, generation FROM registry.kernels"
                           " WHERE session_id = $1::uuid AND agent_id IS NOT NULL"
                           " AND status NOT IN ('TERMINATED', 'CANCELLED', 'ERROR')"
                           " ORDER BY cluster_idx",
                           1, p, err);
    if (!r) return false;
    for (int i = 0; i < PQntuples(r); i++) {
        Tessera__V1__DestroyKernel m = TESSERA__V1__DESTROY_KERNEL__INIT;
        m.session_id = (char *)s->id;
        m.kernel_id = PQgetvalue(r, i, 0);
        m.reason = (char *)(reason ? reason : "");
        m.force = force;
        m.generation = atoi(PQgetvalue(r, i, 2));
        /* a restart: the agent keeps the kernel's /home/work for the next generation */
        m.restart = kernel_status && strcmp(kernel_status, "RESTARTING") == 0;
        ob_agent_cmd(ob, PQgetvalue(r, i, 1), m.kernel_id, &m.base);
    }
    PQclear(r);
    if (!kernel_status) return true;
    const char *p2[] = {s->id, kernel_status, reason ? reason : ""};
    return reg_run(conn,
                   "UPDATE registry.kernels SET status = $2, status_info = $3,"
                   " status_changed_at = now() WHERE session_id = $1::uuid"
                   " AND agent_id IS NOT NULL"
                   " AND status NOT IN ('TERMINATED', 'CANCELLED', 'ERROR')",
                   3, p2, err);
}

bool tr_terminate(PGconn *conn, outbox *ob, sess *s, const char *reason, const char *info,
                  const char *requested_by, ts_err *err)
{
    if (!tr_set(conn, ob, s, ST_TERMINATING, info, err)) return false;
    Tessera__V1__SessionTerminating t = TESSERA__V1__SESSION_TERMINATING__INIT;
    t.session_id = s->id;
    t.reason = (char *)reason;
    t.requested_by = (char *)requested_by;
    t.forced = false;
    ob_session_event(ob, s->id, &t.base);
    return tr_destroy_kernels(conn, ob, s, reason, false, "TERMINATING", err);
}

void tr_running_event(outbox *ob, const sess *s, char **kernel_ids, size_t n,
                      const char *main_agent_id, Tessera__V1__ServicePort **ports, size_t n_ports)
{
    Tessera__V1__SessionRunning e = TESSERA__V1__SESSION_RUNNING__INIT;
    e.session_id = (char *)s->id;
    e.n_kernel_ids = n;
    e.kernel_ids = kernel_ids;
    e.main_agent_id = (char *)main_agent_id;
    e.service_ports = ports;
    e.n_service_ports = n_ports;
    ob_session_event(ob, s->id, &e.base);
}

bool tr_running_if_all_up(PGconn *conn, outbox *ob, sess *s, bool *moved, ts_err *err)
{
    *moved = false;
    const char *sp[] = {s->id};
    PGresult *r =
        reg_exec(conn,
                 "SELECT id::text, coalesce(agent_id, ''), status, service_ports::text"
                 " FROM registry.kernels WHERE session_id = $1::uuid ORDER BY cluster_idx",
                 1, sp, err);
    if (!r) return false;
    int n = PQntuples(r), running = 0;
    for (int i = 0; i < n; i++)
        running += strcmp(PQgetvalue(r, i, 2), "RUNNING") == 0;
    bool ok = true;
    if (n > 0 && running == n) {
        ok = tr_set(conn, ob, s, ST_RUNNING, "", err);
        if (ok) {
            arena a = {0};
            char **ids = ar_alloc(&a, (size_t)n * sizeof(char *));
            for (int i = 0; i < n; i++)
                ids[i] = PQgetvalue(r, i, 0);
            json_t *pj = json_loads(PQgetvalue(r, 0, 3), 0, NULL);
            size_t n_ports;
            Tessera__V1__ServicePort **ports = pb_ports(&a, pj, &n_ports);
            tr_running_event(ob, s, ids, (size_t)n, PQgetvalue(r, 0, 1), ports, n_ports);
            json_decref(pj);
            ar_free(&a);
            *moved = true;
        }
    }
    PQclear(r);
    return ok;
}

bool tr_finish(PGconn *conn, outbox *ob, sess *s, ts_err *err)
{
    bool batch = strcmp(s->type, "batch") == 0;
    char reason[512];
    ts_strlcpy(reason, s->info[0] ? s->info : "terminated", sizeof(reason));
    if (!batch && strcmp(s->result, "FAILURE") == 0)
        return tr_end(conn, ob, s, ST_ERROR, reason, "kernel_exited", NULL, NULL, NULL, err);
    return tr_end(conn, ob, s, ST_TERMINATED, reason, NULL, NULL, NULL, NULL, err);
}

/* ---- CreateKernel --------------------------------------------------------------------------- */

#define KERNELS_COLS                                                                               \
    "SELECT k.id::text, k.cluster_role, k.cluster_idx, k.agent_id, k.slots::text,"                 \
    " k.devices::text, s.type, s.image, s.architecture, s.cluster_size, s.environ::text,"          \
    " s.mounts::text, s.startup_command, s.bootstrap_script, s.access_key, s.idle_timeout,"        \
    " coalesce(i.digest, ''),"                                                                     \
    " coalesce((i.labels || i.label_overrides)->>'ai.backend.service-ports', ''), s.name,"         \
    " s.resource_group, s.user_id::text, coalesce(s.project_id::text, ''), s.domain_name,"         \
    " k.generation, s.preopen_ports::text, s.id::text, s.home_files::text,"                        \
    " coalesce(i.label_overrides::text, '{}'),"                                                    \
    " coalesce((SELECT c.url LIKE 'http://%' FROM registry.container_registries c"                 \
    "   WHERE c.hostname = split_part(s.image, '/', 1)), false), "                                 \
    "s.rootfs_size, " SESSION_CLUSTER_COLUMN ", s.cluster_mode"                                    \
    " FROM registry.kernels k JOIN registry.sessions s ON s.id = k.session_id"                     \
    " LEFT JOIN registry.images i ON i.reference = s.image"
#define KERNELS_COL_SESSION 25
#define KERNELS_COL_CLUSTER 30
#define KERNELS_COL_MODE 31

static const char kernels_sql[] =
    KERNELS_COLS " WHERE k.session_id = $1::uuid AND k.agent_id IS NOT NULL"
                 " AND ($2::text IS NULL OR k.status = $2) ORDER BY k.cluster_idx";

static const char kernels_many_sql[] =
    KERNELS_COLS " WHERE k.session_id = ANY($1::uuid[]) AND k.agent_id IS NOT NULL"
                 " ORDER BY k.session_id, k.cluster_idx";

/* sessions.preopen_ports (a JSON list of ports) for CreateKernel. */
static int32_t *preopen_of(arena *a, const char *text, size_t *n)
{
    *n = 0;
    json_t *j = json_loads(text, 0, NULL);
    int32_t *out = NULL;
    if (json_is_array(j) && json_array_size(j) > 0) {
        out = ar_alloc(a, sizeof(*out) * json_array_size(j));
        size_t i;
        json_t *v;
        json_array_foreach(j, i, v) out[(*n)++] = (int32_t)json_integer_value(v);
    }
    json_decref(j);
    return out;
}

static void env_put(json_t *env, const char *k, const char *v)
{
    json_object_set_new(env, k, json_string(v));
}

/* The environment of one kernel: the user's, then the basics (which win). */
static Tessera__V1__CreateKernel__EnvironEntry **environ_of(arena *a, const char *session_id,
                                                            PGresult *r, int i, size_t *n)
{
    json_t *env = json_loads(PQgetvalue(r, i, 10), 0, NULL);
    if (!json_is_object(env)) {
        json_decref(env);
        env = json_object();
    }
    const char *kid = PQgetvalue(r, i, 0), *role = PQgetvalue(r, i, 1);
    int idx = atoi(PQgetvalue(r, i, 2)), size = atoi(PQgetvalue(r, i, 9));
    char host[CLUSTER_NAME_MAX], num[16], rank[16];
    cluster_hostname(role, idx, host, sizeof(host));
    snprintf(num, sizeof(num), "%d", cluster_role_index(role, idx));
    snprintf(rank, sizeof(rank), "%d", idx);
    char *hosts = cluster_hosts(size), *replicas = cluster_replicas(size);
    env_put(env, "BACKENDAI_SESSION_ID", session_id);
    env_put(env, "TESSERA_SESSION_ID", session_id);
    env_put(env, "BACKENDAI_KERNEL_ID", kid);
    env_put(env, "BACKENDAI_SESSION_NAME", PQgetvalue(r, i, 18));
    /* Backend.AI's: the role, its one-based index among the kernels of
     * that role, the session-wide zero-based rank, every kernel's name */
    env_put(env, "BACKENDAI_CLUSTER_ROLE", role);
    env_put(env, "BACKENDAI_CLUSTER_IDX", num);
    env_put(env, "BACKENDAI_CLUSTER_LOCAL_RANK", rank);
    env_put(env, "BACKENDAI_CLUSTER_SIZE", PQgetvalue(r, i, 9));
    env_put(env, "BACKENDAI_CLUSTER_HOST", host);
    env_put(env, "BACKENDAI_CLUSTER_HOSTS", hosts);
    env_put(env, "BACKENDAI_CLUSTER_REPLICAS", replicas);
    env_put(env, "BACKENDAI_CLUSTER_MODE", PQgetvalue(r, i, KERNELS_COL_MODE));
    free(hosts);
    free(replicas);
    env_put(env, "BACKENDAI_ACCESS_KEY", PQgetvalue(r, i, 14));
    env_put(env, "BACKENDAI_USER_UUID", PQgetvalue(r, i, 20));
    env_put(env, "BACKENDAI_PROJECT_ID", PQgetvalue(r, i, 21));
    env_put(env, "BACKENDAI_DOMAIN_NAME", PQgetvalue(r, i, 22));
    env_put(env, "BACKENDAI_SESSION_TYPE", PQgetvalue(r, i, 6));
    env_put(env, "BACKENDAI_RESOURCE_GROUP", PQgetvalue(r, i, 19));
    env_put(env, "BACKENDAI_SERVICE_PORTS", PQgetvalue(r, i, 17));
    env_put(env, "TESSERA_KERNEL_ID", kid);
    env_put(env, "TESSERA_SESSION_TYPE", PQgetvalue(r, i, 6));
    *n = json_object_size(env);
    Tessera__V1__CreateKernel__EnvironEntry **v = ar_alloc(a, (*n + 1) * sizeof(*v));
    size_t j = 0;
    const char *k;
    json_t *val;
    json_object_foreach(env, k, val)
    {
        Tessera__V1__CreateKernel__EnvironEntry *e = ar_alloc(a, sizeof(*e));
        tessera__v1__create_kernel__environ_entry__init(e);
        e->key = ar_str(a, k);
        e->value = ar_str(a, json_string_value(val));
        v[j++] = e;
    }
    *n = j;
    json_decref(env);
    return v;
}

static Tessera__V1__VfolderMount **mounts_of(arena *a, const char *text, size_t *n)
{
    json_t *arr = json_loads(text, 0, NULL);
    *n = 0;
    Tessera__V1__VfolderMount **v = ar_alloc(a, (json_array_size(arr) + 1) * sizeof(*v));
    for (size_t i = 0; json_is_array(arr) && i < json_array_size(arr); i++) {
        json_t *o = json_array_get(arr, i);
        if (!json_is_object(o)) continue;
        Tessera__V1__VfolderMount *m = ar_alloc(a, sizeof(*m));
        tessera__v1__vfolder_mount__init(m);
        m->vfolder_id = ar_str(a, json_string_value(json_object_get(o, "vfolder_id")));
        m->name = ar_str(a, json_string_value(json_object_get(o, "name")));
        m->host_path = ar_str(a, json_string_value(json_object_get(o, "host_path")));
        m->mount_path = ar_str(a, json_string_value(json_object_get(o, "mount_path")));
        m->permission = ar_str(a, json_string_value(json_object_get(o, "permission")));
        v[(*n)++] = m;
    }
    json_decref(arr);
    return v;
}

/* images.label_overrides (a JSON object of strings) for CreateKernel. */
static Tessera__V1__CreateKernel__ImageLabelOverridesEntry **labels_of(arena *a, const char *text,
                                                                       size_t *n)
{
    json_t *o = json_loads(text, 0, NULL);
    *n = 0;
    Tessera__V1__CreateKernel__ImageLabelOverridesEntry **v =
        ar_alloc(a, (json_object_size(o) + 1) * sizeof(*v));
    const char *k;
    json_t *val;
    json_object_foreach(o, k, val)
    {
        if (!json_is_string(val)) continue;
        Tessera__V1__CreateKernel__ImageLabelOverridesEntry *e = ar_alloc(a, sizeof(*e));
        tessera__v1__create_kernel__image_label_overrides_entry__init(e);
        e->key = ar_str(a, k);
        e->value = ar_str(a, json_string_value(val));
        v[(*n)++] = e;
    }
    json_decref(o);
    return v;
}

/* The CreateKernel of row i of a kernels_sql result into ob. */
static void create_kernel_cmd(outbox *ob, PGresult *r, int i)
{
    const char *session_id = PQgetvalue(r, i, KERNELS_COL_SESSION);
    arena a = {0};
    Tessera__V1__CreateKernel m = TESSERA__V1__CREATE_KERNEL__INIT;
    m.session_id = (char *)session_id;
    m.kernel_id = PQgetvalue(r, i, 0);
    m.agent_id = PQgetvalue(r, i, 3);
    m.session_type = pb_session_type(PQgetvalue(r, i, 6));
    m.image = PQgetvalue(r, i, 7);
    m.image_digest = PQgetvalue(r, i, 16);
    m.architecture = PQgetvalue(r, i, 8);
    m.cluster_role = PQgetvalue(r, i, 1);
    m.cluster_idx = atoi(PQgetvalue(r, i, 2));
    m.cluster_size = atoi(PQgetvalue(r, i, 9));
    json_t *slots = json_loads(PQgetvalue(r, i, 4), 0, NULL);
    json_t *devs = json_loads(PQgetvalue(r, i, 5), 0, NULL);
    m.slots = pb_slots(&a, slots, &m.n_slots);
    m.devices = pb_devs(&a, devs, &m.n_devices);
    m.environ = environ_of(&a, session_id, r, i, &m.n_environ);
    m.mounts = mounts_of(&a, PQgetvalue(r, i, 11), &m.n_mounts);
    m.startup_command = PQgetvalue(r, i, 12);
    m.bootstrap_script = PQgetvalue(r, i, 13);
    m.access_key = PQgetvalue(r, i, 14);
    m.idle_timeout_s = atoi(PQgetvalue(r, i, 15));
    m.generation = atoi(PQgetvalue(r, i, 23));
    m.preopen_ports = preopen_of(&a, PQgetvalue(r, i, 24), &m.n_preopen_ports);
    m.home_files = home_files_pb(&a, PQgetvalue(r, i, 26), &m.n_home_files);
    m.image_label_overrides = labels_of(&a, PQgetvalue(r, i, 27), &m.n_image_label_overrides);
    m.image_plain_http = PQgetvalue(r, i, 28)[0] == 't';
    m.rootfs_size = strtoll(PQgetvalue(r, i, 29), NULL, 10);
    m.cluster = session_cluster_info(
        &a, PQgetisnull(r, i, KERNELS_COL_CLUSTER) ? NULL : PQgetvalue(r, i, KERNELS_COL_CLUSTER),
        m.kernel_id);
    ob_agent_cmd(ob, m.agent_id, m.kernel_id, &m.base);
    json_decref(slots);
    json_decref(devs);
    ar_free(&a);
}

bool tr_create_kernels(PGconn *conn, outbox *ob, const sess *s, const char *from_status,
                       const char *to_status, ts_err *err)
{
    const char *p[] = {s->id, from_status};
    PGresult *r = reg_exec(conn, kernels_sql, 2, p, err);
    if (!r) return false;
    for (int i = 0; i < PQntuples(r); i++)
        create_kernel_cmd(ob, r, i);
    PQclear(r);
    if (!to_status) return true;
    const char *p2[] = {s->id, from_status, to_status};
    return reg_run(conn,
                   "UPDATE registry.kernels SET status = $3, status_info = '',"
                   " status_changed_at = now() WHERE session_id = $1::uuid"
                   " AND agent_id IS NOT NULL AND ($2::text IS NULL OR status = $2)",
                   3, p2, err);
}

bool tr_create_kernels_many(PGconn *conn, const char *const *ids, outbox *const *obs, size_t n,
                            ts_err *err)
{
    if (n == 0) return true;
    char *arr = reg_uuid_array(ids, n);
    const char *p[] = {arr};
    PGresult *r = reg_exec(conn, kernels_many_sql, 1, p, err);
    free(arr);
    if (!r) return false;
    size_t at = 0; /* rows come by session: look from the last match on */
    for (int i = 0; i < PQntuples(r); i++) {
        const char *sid = PQgetvalue(r, i, KERNELS_COL_SESSION);
        for (size_t k = 0; k < n; k++, at = (at + 1) % n)
            if (strcasecmp(ids[at], sid) == 0) {
                create_kernel_cmd(obs[at], r, i);
                break;
            }
    }
    PQclear(r);
    return true;
}
