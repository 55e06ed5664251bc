/* caller.c: the caller's context from tessera-auth (libcommon/authctx.h)
 * and the volume policies (see caller.h and folders.h). */
#include "caller.h"

#include "libcommon/httpc.h"
#include "libcommon/log.h"
#include "volumes.h"

#include <curl/curl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

static int64_t g_cache_ttl_ms, g_cache_entries;

const cfg_option vf_caller_options[] = {
    {.name = "vfolder.context_cache_ttl",
     .type = CFG_DURATION,
     .dst = &g_cache_ttl_ms,
     .def = "0",
     .max = 3600000,
     .help = "how long a caller's session context (auth's 200 answer) is reused, dropped sooner on "
             "tessera.auth.v1 events; 0: no cache, no consumer, auth is asked on every request"},
    {.name = "vfolder.context_cache_entries",
     .type = CFG_INT,
     .dst = &g_cache_entries,
     .def = "4096",
     .min = 1,
     .max = 1000000,
     .help = "session contexts kept at most; a new one evicts the least recently used"},
    {0},
};

static authctx *g_auth;
static pthread_once_t g_auth_once = PTHREAD_ONCE_INIT;

static void _make_auth(void)
{
    authctx_opts o = {
        .auth_url = vf_cfg.auth_url,
        .timeout_ms = vf_cfg.auth_timeout_ms,
        .cache_ttl_ms = g_cache_ttl_ms,
        .cache_entries = g_cache_entries,
        .metrics_prefix = "tessera_vfolder",
    };
    g_auth = authctx_new(&o);
}

/* The session-context client (made on first use, from the loaded configuration). */
static authctx *_auth(void)
{
    pthread_once(&g_auth_once, _make_auth);
    return g_auth;
}

bool vf_caller_start(svc *s, ts_err *err)
{
    return authctx_start(_auth(), s, err);
}

void vf_caller_stop(void)
{
    authctx_stop(_auth());
}

static __thread httpc *t_client;

bool vf_user_lookup(const char *email, const char *request_id, long *status, json_t **out,
                    ts_err *err)
{
    *out = NULL;
    *status = 0;
    if (!t_client) t_client = httpc_new_internal((int)vf_cfg.auth_timeout_ms);
    char *v = curl_easy_escape(NULL, email, 0);
    char *url = ts_asprintf("%s/v1/user-lookup?email=%s", vf_cfg.auth_url, v ? v : "");
    curl_free(v);
    bool ok = httpc_json(t_client, "GET", url, NULL, request_id, status, out, err);
    free(url);
    if (!ok) ts_err_prefix(err, "tessera-auth");
    return ok;
}

bool vf_auth_project(const char *access_key, const char *group, const char *request_id,
                     long *status, json_t **out, ts_err *err)
{
    return authctx_get(_auth(), access_key, group, request_id, status, out, err);
}

bool vf_caller_get(svc *s, http_req *req, http_resp *resp, ts_caller *out)
{
    (void)s;
    return caller_from_request(_auth(), req, resp, NULL, out);
}

bool vf_caller_for_key(svc *s, http_req *req, http_resp *resp, const char *access_key,
                       ts_caller *out)
{
    (void)s;
    memset(out, 0, sizeof(*out));
    if (!access_key || strlen(access_key) != 20) {
        http_problem(resp, 400, "invalid-api-params", NULL,
                     "access_key must be an access key (20 characters)");
        return false;
    }
    json_t *ctx = NULL;
    if (!caller_context(_auth(), req, resp, access_key, NULL, &ctx)) return false;
    const char *why = caller_context_refusal(ctx, NULL);
    if (why) {
        json_decref(ctx);
        http_problem(resp, 403, "forbidden", NULL, "%s", why);
        return false;
    }
    caller_take_context(out, access_key, ctx);
    return true;
}

bool vf_caller_admin_of(const ts_caller *c, const char *domain_name)
{
    if (caller_is_superadmin(c)) return true;
    return strcmp(c->role, "admin") == 0 && domain_name && strcmp(c->domain_name, domain_name) == 0;
}

bool vf_caller_admin_over(const ts_caller *c, const char *domain_name, const char *owner_user_id)
{
    return vf_caller_admin_of(c, domain_name) && !caller_hides_user(c, owner_user_id);
}

const json_t *vf_caller_project(const ts_caller *c, const char *project_id)
{
    size_t i;
    json_t *p;
    if (!project_id) return NULL;
    json_array_foreach(json_object_get(c->ctx, "projects"), i, p)
    {
        const char *id = json_string_value(json_object_get(p, "id"));
        if (id && strcmp(id, project_id) == 0) return p;
    }
    return NULL;
}

bool vf_caller_in_project(const ts_caller *c, const char *project_id)
{
    return vf_caller_project(c, project_id) != NULL;
}

static int64_t _policy_int(const ts_caller *c, const char *key)
{
    json_t *v = json_object_get(json_object_get(c->ctx, "user_policy"), key);
    return json_is_integer(v) && json_integer_value(v) > 0 ? json_integer_value(v) : 0;
}

int64_t vf_caller_max_vfolder_count(const ts_caller *c)
{
    return _policy_int(c, "max_vfolder_count");
}

int64_t vf_caller_max_quota_scope_size(const ts_caller *c)
{
    return _policy_int(c, "max_quota_scope_size");
}

/* Merge {host: [perm...]} of src into dst (union of permissions). */
static void _merge(json_t *dst, const json_t *src)
{
    const char *host;
    json_t *perms;
    if (!json_is_object(src)) return;
    json_object_foreach((json_t *)src, host, perms)
    {
        if (!json_is_array(perms)) continue;
        json_t *have = json_object_get(dst, host);
        if (!have) {
            have = json_array();
            json_object_set_new(dst, host, have);
        }
        size_t i, j;
        json_t *p, *q;
        json_array_foreach(perms, i, p)
        {
            if (!json_is_string(p)) continue;
            bool dup = false;
            json_array_foreach(have, j, q) if (json_equal(p, q)) dup = true;
            if (!dup) json_array_append(have, p);
        }
    }
}

json_t *vf_caller_allowed_hosts(const ts_caller *c, const json_t *project_hosts)
{
    json_t *out = json_object();
    const json_t *hosts = json_object_get(c->ctx, "allowed_vfolder_hosts");
    _merge(out, json_object_get(hosts, "keypair"));
    _merge(out, json_object_get(hosts, "domain"));
    _merge(out, project_hosts);
    if (json_object_size(out) == 0 && vf_cfg.open_hosts) {
        static const char *const all[] = {VF_HOST_CREATE, VF_HOST_MODIFY,  VF_HOST_DELETE,
                                          VF_HOST_MOUNT,  VF_HOST_UPLOAD,  VF_HOST_DOWNLOAD,
                                          VF_HOST_INVITE, VF_HOST_SET_PERM};
        for (size_t i = 0; i < vf_volume_count(); i++) {
            json_t *perms = json_array();
            for (size_t j = 0; j < TS_ARRAY_LEN(all); j++)
                json_array_append_new(perms, json_string(all[j]));
            json_object_set_new(out, vf_volume_at(i)->name, perms);
        }
    }
    return out;
}

bool vf_caller_host_allows(const ts_caller *c, const json_t *project_hosts, const char *host,
                           const char *perm_name)
{
    if (caller_is_superadmin(c)) return true;
    json_t *all = vf_caller_allowed_hosts(c, project_hosts);
    bool ok = false;
    size_t i;
    json_t *p;
    json_array_foreach(json_object_get(all, host), i, p)
    {
        const char *name = json_string_value(p);
        if (name && strcmp(name, perm_name) == 0) ok = true;
    }
    json_decref(all);
    return ok;
}
