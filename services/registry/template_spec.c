/* template_spec.c: see template_spec.h. */
#include "template_spec.h"

#include "validation.h"

#include "libcommon/image_ref.h"
#include "libcommon/slots.h"

#include <stdlib.h>
#include <string.h>

/* ---- checks -------------------------------------------------------------------------------- */

static bool _bad(http_resp *resp, const char *where, const char *field, const char *what)
{
    http_problem(resp, 400, "invalid-api-params", NULL, "%s.%s %s", where, field, what);
    return false;
}

/* A member that is absent, null or a string of at most max bytes (no NUL). */
static bool _opt_str(json_t *o, const char *key, size_t max, const char *where, const char *field,
                     http_resp *resp)
{
    json_t *v = json_object_get(o, key);
    if (!v || json_is_null(v)) return true;
    if (!json_is_string(v)) return _bad(resp, where, field, "must be a string");
    if (strlen(json_string_value(v)) != json_string_length(v))
        return _bad(resp, where, field, "must not contain NUL");
    if (json_string_length(v) > max) return _bad(resp, where, field, "is too long");
    return true;
}

/* The first of the aliases present (not null), or NULL; *key names it. */
static json_t *_alias(json_t *o, const char *const *names, const char **key)
{
    for (; *names; names++) {
        json_t *v = json_object_get(o, *names);
        if (v && !json_is_null(v)) {
            *key = *names;
            return v;
        }
    }
    return NULL;
}

/* Move the first alias present to names[0] (the others dropped). */
static void _normalize(json_t *o, const char *const *names)
{
    const char *key = NULL;
    json_t *v = _alias(o, names, &key);
    if (v) json_incref(v);
    for (const char *const *n = names; *n; n++)
        json_object_del(o, *n);
    if (v) json_object_set_new(o, names[0], v);
}

static bool _check_environ(json_t *env, const char *where, http_resp *resp)
{
    if (!env || json_is_null(env)) return true;
    char *field = ts_asprintf("%s.spec.kernel.environ", where);
    bool ok = session_environ_valid(env, field, resp);
    free(field);
    return ok;
}

static bool _check_kernel(json_t *kernel, const char *where, http_resp *resp)
{
    static const char *const startup[] = {"startup_command", "startup", "startupCommand", NULL};
    if (!json_is_object(kernel)) return _bad(resp, where, "spec.kernel", "must be an object");
    json_t *image = json_object_get(kernel, "image");
    if (!json_is_string(image) || json_string_length(image) == 0)
        return _bad(resp, where, "spec.kernel.image", "is required (an image reference)");
    if (json_string_length(image) > 500)
        return _bad(resp, where, "spec.kernel.image", "is too long");
    ts_err err = {{0}};
    if (!image_ref_valid(json_string_value(image), &err)) {
        http_problem(resp, 400, "invalid-api-params", NULL, "%s.spec.kernel.image: %s", where,
                     err.msg);
        return false;
    }
    if (!_opt_str(kernel, "architecture", 32, where, "spec.kernel.architecture", resp))
        return false;
    if (json_is_null(json_object_get(kernel, "architecture")) ||
        !json_object_get(kernel, "architecture"))
        json_object_set_new(kernel, "architecture", json_string("x86_64"));
    if (!_check_environ(json_object_get(kernel, "environ"), where, resp)) return false;
    json_t *run = json_object_get(kernel, "run");
    if (run && !json_is_null(run)) {
        if (!json_is_object(run)) return _bad(resp, where, "spec.kernel.run", "must be an object");
        _normalize(run, startup);
        if (!_opt_str(run, "bootstrap", 65536, where, "spec.kernel.run.bootstrap", resp) ||
            !_opt_str(run, "startup_command", 65536, where, "spec.kernel.run.startup_command",
                      resp))
            return false;
    }
    json_t *git = json_object_get(kernel, "git");
    if (git && !json_is_null(git))
        return _bad(resp, where, "spec.kernel.git",
                    "is not supported (Tessera does not clone repositories; use "
                    "spec.kernel.run.bootstrap)");
    return true;
}

static bool _check_mounts(json_t *mounts, const char *where, http_resp *resp)
{
    if (!mounts || json_is_null(mounts)) return true;
    if (!json_is_object(mounts))
        return _bad(resp, where, "spec.mounts", "must be an object {vfolder: path}");
    if (json_object_size(mounts) > 64)
        return _bad(resp, where, "spec.mounts", "has more than 64 folders");
    const char *k;
    json_t *v;
    json_object_foreach(mounts, k, v)
    {
        bool ok = *k && strlen(k) <= 128 && (json_is_null(v) || json_is_string(v));
        if (ok && json_is_string(v)) ok = json_string_length(v) <= 1024;
        if (!ok) {
            http_problem(resp, 400, "invalid-api-params", NULL,
                         "%s.spec.mounts: \"%.60s\" must name a folder and map it to a path "
                         "(a string, \"\" or null)",
                         where, k);
            return false;
        }
    }
    return true;
}

static bool _check_spec(json_t *spec, const char *where, http_resp *resp)
{
    static const char *const type[] = {"session_type", "type", "sessionType", NULL};
    if (!json_is_object(spec)) return _bad(resp, where, "spec", "is required (an object)");
    _normalize(spec, type);
    json_t *t = json_object_get(spec, "session_type");
    if (!t) json_object_set_new(spec, "session_type", t = json_string("interactive"));
    const char *ts = json_string_value(t);
    if (!ts || (strcmp(ts, "interactive") && strcmp(ts, "batch") && strcmp(ts, "inference")))
        return _bad(resp, where, "spec.session_type", "must be interactive, batch or inference");
    if (!_check_kernel(json_object_get(spec, "kernel"), where, resp) ||
        !_opt_str(spec, "scaling_group", 64, where, "spec.scaling_group", resp) ||
        !_check_mounts(json_object_get(spec, "mounts"), where, resp))
        return false;
    json_t *res = json_object_get(spec, "resources");
    if (res && !json_is_null(res)) {
        if (!json_is_object(res))
            return _bad(resp, where, "spec.resources", "must be an object {slot: amount}");
        slots_t slots;
        ts_err err = {{0}};
        if (!slots_from_json(&slots, res, &err)) {
            http_problem(resp, 400, "invalid-api-params", NULL, "%s.spec.resources: %s", where,
                         err.msg);
            return false;
        }
    }
    return true;
}

json_t *template_spec_check(json_t *tpl, const char *where, http_resp *resp)
{
    static const char *const version[] = {"api_version", "apiVersion", NULL};
    if (!json_is_object(tpl)) {
        _bad(resp, where, "template", "must be an object");
        return NULL;
    }
    char *text = json_dumps(tpl, JSON_COMPACT);
    size_t len = text ? strlen(text) : 0;
    free(text);
    if (len > TEMPLATE_MAX_BYTES) {
        http_problem(resp, 400, "invalid-api-params", NULL,
                     "%s is too large (%zu bytes as JSON; at most %d)", where, len,
                     TEMPLATE_MAX_BYTES);
        return NULL;
    }
    json_t *t = json_deep_copy(tpl);
    _normalize(t, version);
    const char *kind = json_string_value(json_object_get(t, "kind"));
    json_t *meta = json_object_get(t, "metadata");
    bool ok = false;
    if (!json_is_string(json_object_get(t, "api_version")))
        _bad(resp, where, "api_version", "is required (a string)");
    else if (!_opt_str(t, "api_version", 32, where, "api_version", resp))
        ;
    else if (!kind || (strcmp(kind, "taskTemplate") && strcmp(kind, "task_template")))
        _bad(resp, where, "kind", "must be taskTemplate (or task_template)");
    else if (!json_is_object(meta))
        _bad(resp, where, "metadata", "is required (an object with a name)");
    else if (!json_is_string(json_object_get(meta, "name")) ||
             json_string_length(json_object_get(meta, "name")) == 0)
        _bad(resp, where, "metadata.name", "is required (a string)");
    else if (!_opt_str(meta, "name", 128, where, "metadata.name", resp) ||
             !_opt_str(meta, "tag", 128, where, "metadata.tag", resp))
        ;
    else
        ok = _check_spec(json_object_get(t, "spec"), where, resp);
    if (ok) return t;
    json_decref(t);
    return NULL;
}

/* ---- the launch's body ---------------------------------------------------------------------- */

static const char *const RG_ALIASES[] = {"scaling_group", "resource_group", "scalingGroup", NULL};

/* The create body's aliases (validation.c reads the first present). */
static const char *const *const ALIASES[] = {
    (const char *const[]){"image", "lang", NULL},
    (const char *const[]){"name", "clientSessionToken", "sessionName", NULL},
    (const char *const[]){"type", "sessionType", "session_type", NULL},
    (const char *const[]){"group_name", "group", "groupName", NULL},
    (const char *const[]){"domain", "domain_name", "domainName", NULL},
    (const char *const[]){"startupCommand", "startup_command", NULL},
    (const char *const[]){"bootstrap_script", "bootstrapScript", NULL},
    RG_ALIASES,
};

/* Whether v overrides: not null, not an empty object or list. */
static bool _given(const json_t *v)
{
    return v && !json_is_null(v) && !(json_is_object(v) && json_object_size(v) == 0) &&
           !(json_is_array(v) && json_array_size(v) == 0);
}

/* Set key to v in o, after dropping key's aliases. */
static void _override(json_t *o, const char *key, json_t *v)
{
    for (size_t i = 0; i < sizeof(ALIASES) / sizeof(ALIASES[0]); i++)
        for (const char *const *n = ALIASES[i]; *n; n++)
            if (strcmp(*n, key) == 0)
                for (const char *const *m = ALIASES[i]; *m; m++)
                    json_object_del(o, *m);
    json_object_set(o, key, v);
}

static json_t *_base_config(const json_t *spec, const json_t *kernel)
{
    json_t *config = json_object();
    json_t *rg = json_object_get(spec, "scaling_group");
    if (json_is_string(rg) && json_string_length(rg)) json_object_set(config, "scaling_group", rg);
    json_t *mounts = json_object_get(spec, "mounts");
    if (json_is_object(mounts) && json_object_size(mounts)) {
        json_t *names = json_array(), *map = json_object();
        const char *k;
        json_t *v;
        json_object_foreach(mounts, k, v)
        {
            json_array_append_new(names, json_string(k));
            if (json_is_string(v) && json_string_length(v)) json_object_set(map, k, v);
        }
        json_object_set_new(config, "mounts", names);
        if (json_object_size(map))
            json_object_set_new(config, "mount_map", map);
        else
            json_decref(map);
    }
    json_t *env = json_object_get(kernel, "environ");
    if (json_is_object(env) && json_object_size(env)) json_object_set(config, "environ", env);
    json_t *res = json_object_get(spec, "resources");
    if (json_is_object(res) && json_object_size(res)) json_object_set(config, "resources", res);
    return config;
}

json_t *template_spec_merge(const json_t *tpl, const char *group_name, const json_t *request)
{
    const json_t *spec = json_object_get(tpl, "spec");
    const json_t *kernel = json_object_get(spec, "kernel");
    const json_t *run = json_object_get(kernel, "run");
    json_t *body = json_object();
    json_object_set(body, "image", json_object_get(kernel, "image"));
    json_t *arch = json_object_get(kernel, "architecture");
    if (json_is_string(arch)) json_object_set(body, "architecture", arch);
    json_object_set(body, "type", json_object_get(spec, "session_type"));
    if (group_name && *group_name) json_object_set_new(body, "group_name", json_string(group_name));
    json_t *boot = json_object_get(run, "bootstrap");
    if (json_is_string(boot) && json_string_length(boot))
        json_object_set(body, "bootstrap_script", boot);
    json_t *startup = json_object_get(run, "startup_command");
    if (json_is_string(startup) && json_string_length(startup))
        json_object_set(body, "startupCommand", startup);
    json_t *config = _base_config(spec, kernel);
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)request, k, v)
    {
        if (strcmp(k, "template_id") == 0 || strcmp(k, "templateId") == 0 || !_given(v)) continue;
        if (strcmp(k, "config") == 0 && json_is_object(v)) {
            const char *ck;
            json_t *cv;
            json_object_foreach(v, ck, cv) if (_given(cv)) _override(config, ck, cv);
        } else if (strcmp(k, "config") != 0) {
            _override(body, k, v);
            /* a top-level resource group beats the template's (validation.c reads config's first)
             */
            for (const char *const *m = RG_ALIASES; *m; m++)
                if (strcmp(k, *m) == 0)
                    for (const char *const *n = RG_ALIASES; *n; n++)
                        json_object_del(config, *n);
        } else {
            json_object_set(body, k, v); /* not an object: the create refuses it */
        }
    }
    if (!json_object_get(body, "config"))
        json_object_set_new(body, "config", config);
    else
        json_decref(config);
    return body;
}
