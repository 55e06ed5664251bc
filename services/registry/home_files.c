/* home_files.c: a session's files for /home/work (home_files.h). */
#include "home_files.h"

#include "libcommon/home_path.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MODE_DEFAULT 0644
#define MODE_KEYS 0600

/* "644" -> 0644; -1 unless three octal digits. */
static int _perm(const char *s)
{
    if (!s || strlen(s) != 3) return -1;
    int m = 0;
    for (int i = 0; i < 3; i++) {
        if (s[i] < '0' || s[i] > '7') return -1;
        m = m * 8 + (s[i] - '0');
    }
    return m;
}

json_t *home_files_from_context(const json_t *ctx)
{
    json_t *out = json_array();
    bool has_keys = false;
    const json_t *dot = json_object_get(ctx, "dotfiles");
    size_t i;
    const json_t *e;
    json_array_foreach(dot, i, e)
    {
        const char *path = json_string_value(json_object_get(e, "path"));
        const char *data = json_string_value(json_object_get(e, "data"));
        int mode = _perm(json_string_value(json_object_get(e, "perm")));
        if (!path || home_path_problem(path) || !data) continue;
        if (strcmp(path, HOME_FILES_AUTHORIZED_KEYS) == 0) has_keys = true;
        json_array_append_new(out, json_pack("{s:s, s:i, s:s}", "path", path, "mode",
                                             mode < 0 ? MODE_DEFAULT : mode, "data", data));
    }
    const char *key = json_string_value(json_object_get(ctx, "ssh_public_key"));
    if (!has_keys && key && *key) {
        size_t n = strlen(key);
        char *line = malloc(n + 2);
        memcpy(line, key, n);
        line[n] = key[n - 1] == '\n' ? '\0' : '\n';
        line[n + 1] = '\0';
        json_array_append_new(out, json_pack("{s:s, s:i, s:s}", "path", HOME_FILES_AUTHORIZED_KEYS,
                                             "mode", MODE_KEYS, "data", line));
        free(line);
    }
    return out;
}

void home_files_add_cluster(json_t *files, const char *public_key)
{
    if (!public_key || !*public_key) return;
    size_t i;
    json_t *e;
    bool keys = false, config = false;
    size_t n = strlen(public_key);
    const char *nl = public_key[n - 1] == '\n' ? "" : "\n";
    json_array_foreach(files, i, e)
    {
        const char *path = json_string_value(json_object_get(e, "path"));
        if (path && strcmp(path, HOME_FILES_SSH_CONFIG) == 0) config = true;
        if (!path || strcmp(path, HOME_FILES_AUTHORIZED_KEYS) != 0) continue;
        const char *data = json_string_value(json_object_get(e, "data"));
        size_t dn = data ? strlen(data) : 0;
        char *both = malloc(dn + n + 3);
        snprintf(both, dn + n + 3, "%s%s%s%s", data ? data : "",
                 dn && data[dn - 1] != '\n' ? "\n" : "", public_key, nl);
        json_object_set_new(e, "data", json_string(both));
        free(both);
        keys = true;
    }
    if (!keys) {
        char *line = malloc(n + 2);
        snprintf(line, n + 2, "%s%s", public_key, nl);
        json_array_append_new(files,
                              json_pack("{s:s, s:i, s:s}", "path", HOME_FILES_AUTHORIZED_KEYS,
                                        "mode", MODE_KEYS, "data", line));
        free(line);
    }
    /* as Backend.AI's kernel runner writes it (one entry per role) */
    if (!config)
        json_array_append_new(files,
                              json_pack("{s:s, s:i, s:s}", "path", HOME_FILES_SSH_CONFIG, "mode",
                                        MODE_KEYS, "data",
                                        "Host main*\n\tPort 2200\n\tStrictHostKeyChecking no\n"
                                        "\tUserKnownHostsFile /dev/null\n"
                                        "\tIdentityFile /home/config/ssh/id_cluster\n"
                                        "Host sub*\n\tPort 2200\n\tStrictHostKeyChecking no\n"
                                        "\tUserKnownHostsFile /dev/null\n"
                                        "\tIdentityFile /home/config/ssh/id_cluster\n"));
}

Tessera__V1__HomeFile **home_files_pb(arena *a, const char *text, size_t *n)
{
    *n = 0;
    json_t *arr = json_loads(text ? text : "[]", 0, NULL);
    Tessera__V1__HomeFile **v = ar_alloc(a, (json_array_size(arr) + 1) * sizeof(*v));
    size_t i;
    json_t *o;
    json_array_foreach(arr, i, o)
    {
        const char *path = json_string_value(json_object_get(o, "path"));
        const char *data = json_string_value(json_object_get(o, "data"));
        if (!path || !data) continue;
        Tessera__V1__HomeFile *f = ar_alloc(a, sizeof(*f));
        tessera__v1__home_file__init(f);
        f->path = ar_str(a, path);
        f->mode = (uint32_t)json_integer_value(json_object_get(o, "mode")) & 0777u;
        f->data.len = strlen(data);
        f->data.data = (uint8_t *)ar_str(a, data);
        v[(*n)++] = f;
    }
    json_decref(arr);
    return v;
}
