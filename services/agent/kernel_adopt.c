/* kernel_adopt.c: re-adoption of the kernels after an agent restart (kernel_adopt.h). */
#include "services/agent/kernel_adopt.h"

#include <dirent.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "libcommon/log.h"

/* The session id a runtime kernel dir recorded (state.json), for kernels
 * without a meta file. */
static void _runtime_session(kernels *ks, const char *id, char *out, size_t size)
{
    char *path = ts_asprintf("%s/kernels/%s/state.json", ks->o.state_dir, id);
    json_t *j = json_load_file(path, 0, NULL);
    free(path);
    ts_strlcpy(out, json_string_value(json_object_get(j, "session_id")) ?: "", size);
    json_decref(j);
}

/* The records of meta/ (caller holds the lock). */
static void _load_meta(kernels *ks)
{
    DIR *d = opendir(ks->meta_dir);
    struct dirent *e;
    while (d && (e = readdir(d))) {
        size_t l = strlen(e->d_name);
        if (l < 6 || strcmp(e->d_name + l - 5, ".json") != 0) continue;
        krec *k = krec_load(ks->meta_dir, e->d_name);
        if (!k) continue;
        if (ktab_find(ks, k->id)) {
            krec_free(k);
            continue;
        }
        k->next = ks->all;
        ks->all = k;
    }
    if (d) closedir(d);
}

/* A record for each runtime kernel without one. */
static void _add_runtime_only(kernels *ks, char **ids, int n)
{
    for (int i = 0; i < n; i++) {
        if (ktab_find(ks, ids[i])) continue;
        krec *k = ts_calloc(1, sizeof(*k));
        ts_strlcpy(k->id, ids[i], sizeof(k->id));
        _runtime_session(ks, ids[i], k->session_id, sizeof(k->session_id));
        ts_strlcpy(k->status, "running", sizeof(k->status));
        k->next = ks->all;
        ks->all = k;
        TLOG_WARN("kernel without agent meta found: adopting it", "kernel=%s", k->id);
    }
}

/* Queue what a record in a transitional status needs; true when it is done
 * with (nothing to adopt). */
static bool _resume_transition(kernels *ks, krec *k, kernel_state state)
{
    const char *s = k->status;
    if (strcmp(s, "terminated") == 0) {
        if (state != KERNEL_GONE) { /* destroyed but not quite: finish it */
            ts_strlcpy(k->status, "terminating", sizeof(k->status));
            ktab_enqueue(ks, k, KTASK_DESTROY, k->reason, 0);
        }
        return true;
    }
    if (strcmp(s, "terminating") == 0) {
        ktab_enqueue(ks, k, KTASK_DESTROY, "", ks->o.destroy_grace_ms);
        return true;
    }
    if (strcmp(s, "pulling") == 0 || strcmp(s, "creating") == 0) {
        if (k->cmd_bytes) {
            TLOG_INFO("resuming an interrupted kernel creation", "kernel=%s", k->id);
            k->resume = state != KERNEL_GONE;
            ktab_enqueue(ks, k, KTASK_CREATE, NULL, 0);
        } else {
            ktab_enqueue(ks, k, KTASK_DESTROY, "creation interrupted by an agent restart", 0);
        }
        return true;
    }
    return false;
}

/* Running or exited by the runtime: adopted (true); otherwise its task queued. */
static bool _adopt_one(kernels *ks, krec *k, kernel_state state)
{
    switch (state) {
    case KERNEL_RUNNING:
        ts_strlcpy(k->status, "running", sizeof(k->status));
        return true;
    case KERNEL_EXITED:
        /* reported (again) by the watcher: an event produced just before a
         * crash may not have left the process */
        if (strcmp(k->status, "exited") != 0) k->exited_at_ms = ts_now_wall_ms();
        ts_strlcpy(k->status, "exited", sizeof(k->status));
        k->exit_reported = false;
        return true;
    case KERNEL_CREATING: /* a runtime dir that never got running */
        ktab_enqueue(ks, k, KTASK_DESTROY, "creation interrupted by an agent restart", 0);
        return false;
    case KERNEL_GONE:
        ktab_enqueue(ks, k, KTASK_REPORT_LOST, "the container was lost while the agent was down",
                     0);
        return false;
    }
    return false;
}

static kernel_state _runtime_state(kernels *ks, const krec *k, char **ids, int n)
{
    bool in_rt = false;
    for (int i = 0; i < n; i++)
        in_rt = in_rt || strcmp(ids[i], k->id) == 0;
    if (!in_rt) return KERNEL_GONE;
    kernel_status st;
    ts_err err = {{0}};
    if (runtime_status(ks->o.rt, k->id, &st, &err)) return st.state;
    TLOG_WARN("kernel status unreadable at start", "kernel=%s error=\"%s\"", k->id, err.msg);
    return KERNEL_CREATING;
}

int kernel_adopt(kernels *ks, char ***adopted)
{
    *adopted = NULL;
    int n_adopted = 0;
    char **ids = NULL;
    int n = 0;
    ts_err err = {{0}};
    pthread_mutex_lock(&ks->mu);
    _load_meta(ks);
    if (!runtime_list(ks->o.rt, &ids, &n, &err))
        TLOG_WARN("the runtime's kernels unreadable at start", "error=\"%s\"", err.msg);
    _add_runtime_only(ks, ids, n);
    for (krec *k = ks->all; k; k = k->next) {
        kernel_state state = _runtime_state(ks, k, ids, n);
        if (_resume_transition(ks, k, state) || !_adopt_one(ks, k, state)) continue;
        ktab_persist(ks, k);
        *adopted = ts_realloc(*adopted, sizeof(char *) * (size_t)(n_adopted + 1));
        (*adopted)[n_adopted++] = ts_strdup(k->id);
        TLOG_INFO("kernel adopted", "kernel=%s session=%s status=%s", k->id, k->session_id,
                  k->status);
    }
    /* a restart's CreateKernel accepted before the agent went down: after
     * whatever the pass above queued (the destroy of the older generation) */
    for (krec *k = ks->all; k; k = k->next)
        if (k->next_cmd) ktab_enqueue(ks, k, KTASK_CREATE, NULL, 0);
    pthread_mutex_unlock(&ks->mu);
    for (int i = 0; i < n; i++)
        free(ids[i]);
    free(ids);
    return n_adopted;
}
