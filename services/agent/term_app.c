/* term_app.c: tessera-term in every kernel (term_app.h). */
#include "services/agent/term_app.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "libcommon/log.h"
#include "libcommon/proc.h"
#include "services/agent/oci_spec.h"

char *term_app_locate(const char *configured, ts_err *err)
{
    char *path;
    if (configured && *configured) {
        path = ts_strdup(configured);
    } else {
        path = proc_sibling_path("tessera-term", err);
        if (!path) return NULL;
    }
    struct stat st;
    if (path[0] != '/') {
        ts_err_set(err, "agent.term_path '%s' is not an absolute path", path);
    } else if (stat(path, &st) != 0) {
        ts_err_set(err, "%s: %s", path, strerror(errno));
    } else if (!S_ISREG(st.st_mode) || access(path, X_OK) != 0) {
        ts_err_set(err, "%s is not an executable file", path);
    } else {
        return path;
    }
    free(path);
    return NULL;
}

bool term_app_runtime_ok(const char *path)
{
    if (!path || !*path) return false;
    for (const char *c = path; *c; c++)
        if (!((*c >= 'A' && *c <= 'Z') || (*c >= 'a' && *c <= 'z') || (*c >= '0' && *c <= '9') ||
              strchr("/._+-", *c)))
            return false;
    return true;
}

int term_app_add_port(kernel_service_port *ports, int n, const char *runtime_path)
{
    if (n >= KERNEL_MAX_PORTS) return n;
    for (int i = 0; i < n; i++)
        if (strcmp(ports[i].name, TERM_APP_NAME) == 0 || ports[i].container_port == TERM_APP_PORT)
            return n;
    kernel_service_port *p = &ports[n];
    memset(p, 0, sizeof(*p));
    ts_strlcpy(p->name, TERM_APP_NAME, sizeof(p->name));
    ts_strlcpy(p->protocol, "http", sizeof(p->protocol));
    p->container_port = TERM_APP_PORT;
    int len = snprintf(p->start, sizeof(p->start), "%s --listen 0.0.0.0:%d", TERM_APP_PATH,
                       TERM_APP_PORT);
    if (runtime_path && *runtime_path) {
        /* the start command is run by /bin/sh -c: only characters that need
         * no quoting there */
        if (!term_app_runtime_ok(runtime_path)) {
            TLOG_WARN("runtime path not passed to the terminal app",
                      "reason=\"a character outside [A-Za-z0-9/._+-]\" runtime_path_len=%zu",
                      strlen(runtime_path));
        } else if ((size_t)len + strlen(" --runtime ") + strlen(runtime_path) >= sizeof(p->start)) {
            TLOG_WARN("runtime path not passed to the terminal app",
                      "reason=\"too long\" runtime_path=%s", runtime_path);
        } else {
            snprintf(p->start + len, sizeof(p->start) - (size_t)len, " --runtime %s", runtime_path);
        }
    }
    return n + 1;
}

void term_app_mount(json_t *mounts, const char *host_path)
{
    if (!host_path || !*host_path) return;
    json_array_append_new(mounts, oci_bind(TERM_APP_PATH, host_path, true));
}
