/* service_ports.c: service ports from image labels (service_ports.h). */
#include "services/agent/service_ports.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

char *image_label(const char *labels_json, const char *name)
{
    if (!labels_json) return NULL;
    json_t *j = json_loads(labels_json, 0, NULL);
    const char *v = json_string_value(json_object_get(j, name));
    char *out = v ? ts_strdup(v) : NULL;
    json_decref(j);
    return out;
}

static bool _add(kernel_service_port *out, int *n, const char *name, const char *proto, int port,
                 ts_err *err)
{
    if (port <= 0 || port > 65535) {
        ts_err_set(err, "service port %d of '%s' is not a port", port, name);
        return false;
    }
    for (int i = 0; i < *n; i++)
        if (out[i].container_port == port) return true;
    if (*n >= KERNEL_MAX_PORTS) {
        ts_err_set(err, "more than %d service ports", KERNEL_MAX_PORTS);
        return false;
    }
    kernel_service_port *p = &out[(*n)++];
    memset(p, 0, sizeof(*p));
    ts_strlcpy(p->name, name, sizeof(p->name));
    ts_strlcpy(p->protocol, proto, sizeof(p->protocol));
    p->container_port = port;
    return true;
}

/* One "name:proto:port" or "name:proto:[p1,p2]" entry. */
static bool _entry(char *e, kernel_service_port *out, int *n, ts_err *err)
{
    while (*e == ' ')
        e++;
    if (!*e) return true;
    char *c1 = strchr(e, ':');
    char *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
    if (!c1 || !c2 || c1 == e) {
        ts_err_set(err, "service port entry '%s' is not name:protocol:port", e);
        return false;
    }
    *c1 = *c2 = '\0';
    const char *name = e, *proto = c1 + 1;
    char *ports = c2 + 1;
    if (*ports == '[') {
        ports++;
        char *end = strchr(ports, ']');
        if (end) *end = '\0';
    }
    char *save = NULL;
    for (char *p = strtok_r(ports, ",", &save); p; p = strtok_r(NULL, ",", &save)) {
        char *endp;
        long v = strtol(p, &endp, 10);
        while (*endp == ' ')
            endp++;
        if (endp == p || *endp) {
            ts_err_set(err, "service port '%s' of '%s' is not a number", p, name);
            return false;
        }
        if (!_add(out, n, name, proto, (int)v, err)) return false;
    }
    return true;
}

bool service_ports_parse(const char *label, const int32_t *preopen, size_t n_preopen,
                         kernel_service_port *out, int *count, ts_err *err)
{
    int n = 0;
    *count = 0;
    if (label && *label) {
        char *s = ts_strdup(label);
        /* split on commas outside brackets */
        int depth = 0;
        char *start = s;
        bool ok = true;
        for (char *p = s;; p++) {
            if (*p == '[') depth++;
            if (*p == ']') depth--;
            if ((*p == ',' && depth == 0) || !*p) {
                bool last = !*p;
                *p = '\0';
                if (!_entry(start, out, &n, err)) {
                    ok = false;
                    break;
                }
                if (last) break;
                start = p + 1;
            }
        }
        free(s);
        if (!ok) {
            ts_err_prefix(err, "image label ai.backend.service-ports");
            return false;
        }
    }
    for (size_t i = 0; i < n_preopen; i++) {
        char name[16];
        snprintf(name, sizeof(name), "%d", (int)preopen[i]);
        if (!_add(out, &n, name, "preopen", (int)preopen[i], err)) {
            ts_err_prefix(err, "preopen ports");
            return false;
        }
    }
    *count = n;
    return true;
}

bool service_ports_start_commands(const char *labels_json, kernel_service_port *ports, int n,
                                  ts_err *err)
{
    for (int i = 0; i < n; i++) {
        char label[128];
        snprintf(label, sizeof(label), "tessera.app.%s.start", ports[i].name);
        char *cmd = image_label(labels_json, label);
        if (!cmd) continue;
        size_t len = strlen(cmd);
        if (len >= sizeof(ports[i].start)) {
            ts_err_set(err, "image label %s is longer than %zu bytes", label,
                       sizeof(ports[i].start) - 1);
            free(cmd);
            return false;
        }
        memcpy(ports[i].start, cmd, len + 1);
        free(cmd);
    }
    return true;
}
