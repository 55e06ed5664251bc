/* caller.c: the caller's context from tessera-auth and the volume policies
 * (see caller.h and folders.h). */
#include "caller.h"

#include "libcommon/httpc.h"
#include "libcommon/log.h"
#include "volumes.h"

#include <curl/curl.h>
#include <stdlib.h>
#include <string.h>

static __thread httpc *t_client;

static httpc *_client(void)
{
    if (!t_client) t_client = httpc_new_internal((int)vf_cfg.auth_timeout_ms);
    return t_client;
}

/* GET <auth>/v1/<what>?<arg>=<value>. */
static bool _auth_get(const char *what, const char *arg, const char *value, const char *request_id,
                      long *status, json_t **out, ts_err *err)
{
    *out = NULL;
    *status = 0;
    char *v = curl_easy_escape(NULL, value, 0);
    char *url = ts_asprintf("%s/v1/%s?%s=%s", vf_cfg.auth_url, what, arg, v ? v : "");
    curl_free(v);
    bool ok = httpc_json(_client(), "GET", url, NULL, request_id, status, out, err);
    free(url);
    if (!ok) ts_err_prefix(err, "tessera-auth");
    return ok;
}

bool vf_user_lookup(const char *email, const char *request_id, long *status, json_t **out,
                    ts_err *err)
{
    return _auth_get("user-lookup", "email", email, request_id, status, out, err);
}

bool vf_auth_project(const char *access_key, const char *group, const char *request_id,
                     long *status, json_t **out, ts_err *err)
{
    *out = NULL;
    *status = 0;
    char *a = curl_easy_escape(NULL, access_key, 0);
    char *g = curl_easy_escape(NULL, group, 0);
    char *url = ts_asprintf("%s/v1/session-context?access_key=%s&group=%s", vf_cfg.auth_url,
                            a ? a : "", g ? g : "");
    curl_free(a);
    curl_free(g);
    bool ok = httpc_json(_client(), "GET", url, NULL, request_id, status, out, err);
    free(url);
    if (!ok) ts_err_prefix(err, "tessera-auth");
    return ok;
}

static bool _fill(http_req *req, http_resp *resp, const char *access_key, const char *user_id,
                  vf_caller *out)
{
    (void)user_id;
    long status = 0;
    json_t *ctx = NULL;
    ts_err err = {{0}};
    if (!_auth_get("session-context", "access_key", access_key, req->request_id, &status, &ctx,
                   &err)) {
        TLOG_WARN("auth unreachable", "error=\"%s\"", err.msg);
        http_problem(resp, 503, "service-unavailable", NULL, "%s", err.msg);
        return false;
    }
    if (status == 404) {
        json_decref(ctx);
        http_problem(resp, user_id ? 401 : 404, user_id ? "auth-failed" : "not-found", NULL,
                     "unknown access key");
        return false;
    }
    if (status != 200 || !json_is_object(ctx)) {
        json_decref(ctx);
        http_problem(resp, 503, "service-unavailable", NULL,
                     "tessera-auth answered %ld to the session-context look-up", status);
        return false;
    }
    const json_t *user = json_object_get(ctx, "user");
    const char *id = json_string_value(json_object_get(user, "id"));
    const char *ustatus = json_string_value(json_object_get(user, "status"));
    const char *role = json_string_value(json_object_get(user, "role"));
    const char *email = json_string_value(json_object_get(user, "email"));
    const char *domain = json_string_value(json_object_get(user, "domain_name"));
    const char *why = NULL;
    if (!id || !role || !domain || !email)
        why = "malformed context from tessera-auth";
    else if (user_id && strcmp(id, user_id) != 0)
        why = "the access key is not the caller's";
    else if (!json_is_true(json_object_get(ctx, "is_active")))
        why = "the keypair is not active";
    else if (!ustatus || strcmp(ustatus, "active") != 0)
        why = "the user is not active";
    if (why) {
        json_decref(ctx);
        http_problem(resp, user_id ? 401 : 403, user_id ? "auth-failed" : "forbidden", NULL, "%s",
                     why);
        return false;
    }
    memset(out, 0, sizeof(*out));
    ts_strlcpy(out->user_id, id, sizeof(out->user_id));
    ts_strlcpy(out->access_key, access_key, sizeof(out->access_key));
    ts_strlcpy(out->email, email, sizeof(out->email));
    ts_strlcpy(out->role, role, sizeof(out->role));
    ts_strlcpy(out->domain_name, domain, sizeof(out->domain_name));
    out->ctx = ctx;
    return true;
}

bool vf_caller_get(svc *s, http_req *req, http_resp *resp, vf_caller *out)
{
    (void)s;
    memset(out, 0, sizeof(*out));
    const char *id = http_header(req, "X-Tessera-Caller");
    const char *ak = http_header(req, "X-Tessera-Caller-Access-Key");
    if (!id || !ts_uuid_valid(id)) {
        http_problem(resp, 401, "auth-failed", NULL,
                     "no authenticated caller (this endpoint needs a signed request)");
        return false;
    }
    if (!ak || strlen(ak) != 20) {
        http_problem(resp, 401, "auth-failed", NULL, "missing or malformed caller access key");
        return false;
    }
    return _fill(req, resp, ak, id, out);
}

bool vf_caller_for_key(svc *s, http_req *req, http_resp *resp, const char *access_key,
                       vf_caller *out)
{
    (void)s;
    memset(out, 0, sizeof(*out));
    if (!access_key || strlen(access_key) != 20) {
        http_problem(resp, 400, "invalid-api-params", NULL,
                     "access_key must be an access key (20 characters)");
        return false;
    }
    return _fill(req, resp, access_key, NULL, out);
}

void vf_caller_free(vf_caller *c)
{
    json_decref(c->ctx);
    c->ctx = NULL;
}

bool vf_caller_is_superadmin(const vf_caller *c)
{
    return strcmp(c->role, "superadmin") == 0;
}

bool vf_caller_admin_of(const vf_caller *c, const char *domain_name)
{
    if (vf_caller_is_superadmin(c)) return true;
    return strcmp(c->role, "admin") == 0 && domain_name && strcmp(c->domain_name, domain_name) == 0;
}

bool vf_caller_admin_over(const vf_caller *c, const char *domain_name, const char *owner_user_id)
{
    if (!vf_caller_admin_of(c, domain_name)) return false;
    if (vf_caller_is_superadmin(c) || !owner_user_id) return true;
    size_t i;
    json_t *id;
    json_array_foreach(json_object_get(c->ctx, "domain_superadmins"), i, id)
    {
        const char *v = json_string_value(id);
        if (v && strcmp(v, owner_user_id) == 0) return false;
    }
    return true;
}

const json_t *vf_caller_project(const vf_caller *c, const char *project_id)
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

bool vf_caller_in_project(const vf_caller *c, const char *project_id)
{
    return vf_caller_project(c, project_id) != NULL;
}

static int64_t _policy_int(const vf_caller *c, const char *key)
{
    json_t *v = json_object_get(json_object_get(c->ctx, "user_policy"), key);
    return json_is_integer(v) && json_integer_value(v) > 0 ? json_integer_value(v) : 0;
}

int64_t vf_caller_max_vfolder_count(const vf_caller *c)
{
    return _policy_int(c, "max_vfolder_count");
}

int64_t vf_caller_max_quota_scope_size(const vf_caller *c)
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

json_t *vf_caller_allowed_hosts(const vf_caller *c, const json_t *project_hosts)
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

bool vf_caller_host_allows(const vf_caller *c, const json_t *project_hosts, const char *host,
                           const char *perm_name)
{
    if (vf_caller_is_superadmin(c)) return true;
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
