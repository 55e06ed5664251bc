/* mount_guard.c: see mount_guard.h. */
#include "mount_guard.h"

#include "context.h"
#include "libcommon/httpc.h"
#include "libcommon/log.h"

#include <stdlib.h>
#include <string.h>

static __thread httpc *t_client;

bool vf_mount_guard_free(const char *id, const char *name, const char *request_id, http_resp *resp)
{
    if (!vf_cfg.registry_url || !*vf_cfg.registry_url) return true;
    if (!t_client) t_client = httpc_new_internal((int)vf_cfg.registry_timeout_ms);
    char *url = ts_asprintf("%s/v1/vfolder-mounts/%s", vf_cfg.registry_url, id);
    long status = 0;
    json_t *ans = NULL;
    ts_err err = {{0}};
    bool ok = httpc_json(t_client, "GET", url, NULL, request_id, &status, &ans, &err);
    free(url);
    json_t *sessions = json_object_get(ans, "sessions");
    if (!ok || status != 200 || !json_is_array(sessions)) {
        if (ok) ts_err_set(&err, "HTTP %ld", status);
        TLOG_WARN("tessera-registry not asked about mounts", "error=\"%s\"", err.msg);
        http_problem(resp, 503, "service-unavailable", NULL,
                     "cannot tell whether vfolder %s is mounted in a session: tessera-registry: %s",
                     name, err.msg);
        json_decref(ans);
        return false;
    }
    if (json_array_size(sessions) == 0) {
        json_decref(ans);
        return true;
    }
    /* "s1, s2, s3" (the first 20) */
    size_t len = 0, cap = 1024;
    char *list = ts_calloc(1, cap);
    json_t *names = json_array();
    size_t i;
    json_t *sess;
    json_array_foreach(sessions, i, sess)
    {
        const char *n = json_string_value(json_object_get(sess, "name"));
        if (!n) continue;
        json_array_append_new(names, json_string(n));
        if (i >= 20 || len + strlen(n) + 8 >= cap) continue;
        len += (size_t)snprintf(list + len, cap - len, "%s%s", len ? ", " : "", n);
    }
    if (json_array_size(sessions) > 20) snprintf(list + len, cap - len, ", ...");
    json_t *prob = http_problem_json("vfolder-in-use", "Conflict", NULL);
    char *msg =
        ts_asprintf("vfolder %s is mounted in live sessions: %s (end them first)", name, list);
    json_object_set_new(prob, "msg", json_string(msg));
    json_object_set_new(prob, "vfolder", json_string(name));
    json_object_set_new(prob, "sessions", names);
    char *text = json_dumps(prob, JSON_COMPACT);
    http_reply(resp, 409, "application/problem+json", text, strlen(text));
    free(text);
    free(msg);
    free(list);
    json_decref(prob);
    json_decref(ans);
    return false;
}
