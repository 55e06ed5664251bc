/* oci_spec.c: building blocks of an OCI runtime config (oci_spec.h). */
#include "services/agent/oci_spec.h"

#include <stdlib.h>
#include <string.h>

#include "libcommon/common.h"

void oci_env_put(json_t *env, const char *kv)
{
    const char *eq = strchr(kv, '=');
    if (!eq || eq == kv) return;
    size_t klen = (size_t)(eq - kv) + 1;
    size_t i;
    json_t *v;
    json_array_foreach(env, i, v)
    {
        if (strncmp(json_string_value(v), kv, klen) == 0) {
            json_array_set_new(env, i, json_string(kv));
            return;
        }
    }
    json_array_append_new(env, json_string(kv));
}

json_t *oci_mount(const char *dst, const char *type, const char *src, const char *opts)
{
    json_t *o = json_array();
    char *copy = ts_strdup(opts), *save = NULL;
    for (char *t = strtok_r(copy, ",", &save); t; t = strtok_r(NULL, ",", &save))
        json_array_append_new(o, json_string(t));
    free(copy);
    return json_pack("{s:s, s:s, s:s, s:o}", "destination", dst, "type", type, "source", src,
                     "options", o);
}

json_t *oci_bind(const char *dst, const char *src, bool read_only)
{
    return oci_mount(dst, "bind", src,
                     read_only ? "rbind,rprivate,nosuid,nodev,ro"
                               : "rbind,rprivate,nosuid,nodev,rw");
}
