/* runtime_state.c: what the parts of the runtime share (runtime_state.h). */
#include "services/agent/runtime_state.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "libcommon/proc.h"
#include "services/agent/cgroups.h"

#define RUNC_TIMEOUT_MS 30000

/* ---- files ----------------------------------------------------------------------- */

bool rts_write_file(const char *path, const char *data, size_t len)
{
    char *tmp = ts_asprintf("%s.tmp", path);
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    bool ok = fd >= 0 && write(fd, data, len) == (ssize_t)len;
    if (fd >= 0) close(fd);
    ok = ok && rename(tmp, path) == 0;
    if (!ok) unlink(tmp);
    free(tmp);
    return ok;
}

char *rts_read_file(const char *path, size_t max)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return NULL;
    char *buf = ts_malloc(max + 1);
    size_t len = 0;
    ssize_t k;
    while (len < max && (k = read(fd, buf + len, max - len)) > 0)
        len += (size_t)k;
    close(fd);
    buf[len] = '\0';
    return buf;
}

static int _rm_entry(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)sb;
    (void)flag;
    (void)ftw;
    (void)remove(path);
    return 0;
}

/* Whether any mount point lies below dir (in /proc/self/mountinfo, whose
 * paths escape space, tab, newline and backslash as \ooo). */
bool rts_mounted_below(const char *dir)
{
    FILE *f = fopen("/proc/self/mountinfo", "re");
    if (!f) return true; /* cannot tell: keep it */
    size_t dl = strlen(dir);
    char line[8192], mnt[4096];
    bool found = false;
    while (!found && fgets(line, sizeof(line), f)) {
        char raw[4096];
        if (sscanf(line, "%*d %*d %*s %*s %4095s", raw) != 1) continue;
        size_t n = 0;
        for (const char *p = raw; *p && n < sizeof(mnt) - 1; p++) {
            if (p[0] == '\\' && p[1] >= '0' && p[1] <= '3' && p[2] >= '0' && p[2] <= '7' &&
                p[3] >= '0' && p[3] <= '7') {
                mnt[n++] = (char)((p[1] - '0') * 64 + (p[2] - '0') * 8 + (p[3] - '0'));
                p += 3;
            } else {
                mnt[n++] = *p;
            }
        }
        mnt[n] = '\0';
        found = strncmp(mnt, dir, dl) == 0 && mnt[dl] == '/';
    }
    fclose(f);
    return found;
}

/* rm -rf that never crosses into a mount point (a rootfs still mounted). */
void rts_rm_tree(const char *path)
{
    (void)nftw(path, _rm_entry, 32, FTW_DEPTH | FTW_PHYS | FTW_MOUNT);
}

bool rts_valid_id(const char *id)
{
    if (!id || !*id || id[0] == '.' || strlen(id) > 64) return false;
    for (const char *p = id; *p; p++)
        if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
              *p == '-' || *p == '_' || *p == '.'))
            return false;
    return true;
}
bool rts_check_id(const char *id, ts_err *err)
{
    if (rts_valid_id(id)) return true;
    ts_err_set(err, "kernel id '%s' is not valid here", id ? id : "(null)");
    return false;
}

char *rts_kdir(runtime *rt, const char *id)
{
    return ts_asprintf("%s/%s", rt->kernels_dir, id);
}

char *rts_kpath(runtime *rt, const char *id, const char *name)
{
    return ts_asprintf("%s/%s/%s", rt->kernels_dir, id, name);
}

/* ":/tessera/<id>" as it appears in /proc/<pid>/cgroup */
void rts_cg_hint(const char *id, char *buf, size_t size)
{
    snprintf(buf, size, ":/" CG_PARENT "/%s", id);
}

void rts_cg_rel(const char *id, char *buf, size_t size)
{
    snprintf(buf, size, CG_PARENT "/%s", id);
}

/* /proc/<pid>/stat field 22: start time in clock ticks since boot; 0 if gone. */
unsigned long long rts_proc_starttime(pid_t pid)
{
    char path[64], buf[1024];
    snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return 0;
    ssize_t n = read(fd, buf, sizeof(buf) - 1);
    close(fd);
    if (n <= 0) return 0;
    buf[n] = '\0';
    char *p = strrchr(buf, ')');
    if (!p) return 0;
    unsigned long long st = 0;
    /* after ")": state(3) ... starttime(22) is the 20th field */
    if (sscanf(p + 2,
               "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %*u %*u %*d %*d %*d %*d %*d %*d %llu",
               &st) != 1)
        return 0;
    return st;
}

/* ---- state.json ----------------------------------------------------------------- */

bool rts_state_save(runtime *rt, const char *id, const kernel_spec *spec, const kstate *s)
{
    json_t *ports = json_array();
    for (int i = 0; i < s->n_ports; i++)
        json_array_append_new(ports,
                              json_pack("{s:i, s:i}", "container", s->ports[i].container_port,
                                        "host", s->ports[i].host_port));
    json_t *j = json_pack("{s:s, s:s?, s:s, s:s, s:o, s:i, s:i, s:I, s:b, s:I}", "kernel_id", id,
                          "session_id", spec ? spec->session_id : NULL, "phase", s->phase, "ip",
                          s->ip, "ports", ports, "init_pid", (int)s->init_pid, "supervisor_pid",
                          (int)s->sup_pid, "supervisor_start", (json_int_t)s->sup_start, "batch",
                          s->batch, "updated_at", (json_int_t)ts_now_wall_ms());
    json_object_set_new(j, "keepalive", json_boolean(s->keepalive));
    if (spec) json_object_set_new(j, "cluster_size", json_integer(spec->cluster_size));
    json_object_set_new(j, "cni_portmap", json_string(s->portmap));
    json_object_set_new(j, "cni_bridge", json_string(s->bridge));
    if (s->cni_result) json_object_set_new(j, "cni_result", json_loads(s->cni_result, 0, NULL));
    if (s->cluster_conf)
        json_object_set_new(j, "cluster_conf", json_loads(s->cluster_conf, 0, NULL));
    if (s->cluster_result)
        json_object_set_new(j, "cluster_result", json_loads(s->cluster_result, 0, NULL));
    char *text = json_dumps(j, JSON_COMPACT);
    json_decref(j);
    char *path = rts_kpath(rt, id, "state.json");
    bool ok = rts_write_file(path, text, strlen(text));
    free(path);
    free(text);
    return ok;
}

bool rts_state_load(runtime *rt, const char *id, kstate *s)
{
    memset(s, 0, sizeof(*s));
    char *path = rts_kpath(rt, id, "state.json");
    json_t *j = json_load_file(path, 0, NULL);
    free(path);
    if (!j) return false;
    ts_strlcpy(s->phase, json_string_value(json_object_get(j, "phase")) ?: "", sizeof(s->phase));
    ts_strlcpy(s->ip, json_string_value(json_object_get(j, "ip")) ?: "", sizeof(s->ip));
    size_t i;
    json_t *v;
    json_array_foreach(json_object_get(j, "ports"), i, v)
    {
        if (s->n_ports >= RTS_MAX_PORTS) break;
        s->ports[s->n_ports].container_port =
            (int)json_integer_value(json_object_get(v, "container"));
        s->ports[s->n_ports].host_port = (int)json_integer_value(json_object_get(v, "host"));
        s->n_ports++;
    }
    json_t *cr = json_object_get(j, "cni_result");
    if (cr) s->cni_result = json_dumps(cr, JSON_COMPACT);
    json_t *cc = json_object_get(j, "cluster_conf"), *cl = json_object_get(j, "cluster_result");
    if (cc) s->cluster_conf = json_dumps(cc, JSON_COMPACT);
    if (cl) s->cluster_result = json_dumps(cl, JSON_COMPACT);
    /* no key: written by an agent from before agent.cni_portmap, which ran
     * Debian's portmap */
    ts_strlcpy(s->portmap,
               json_string_value(json_object_get(j, "cni_portmap")) ?: rt->cni_portmap_legacy,
               sizeof(s->portmap));
    /* no key: written before agent.cni_bridge, by an agent that ran Debian's */
    ts_strlcpy(s->bridge,
               json_string_value(json_object_get(j, "cni_bridge")) ?: rt->cni_bridge_legacy,
               sizeof(s->bridge));
    s->init_pid = (pid_t)json_integer_value(json_object_get(j, "init_pid"));
    s->sup_pid = (pid_t)json_integer_value(json_object_get(j, "supervisor_pid"));
    s->sup_start = (unsigned long long)json_integer_value(json_object_get(j, "supervisor_start"));
    s->batch = json_is_true(json_object_get(j, "batch"));
    s->keepalive = json_is_true(json_object_get(j, "keepalive"));
    json_decref(j);
    return true;
}

void rts_state_free(kstate *s)
{
    free(s->cni_result);
    free(s->cluster_conf);
    free(s->cluster_result);
    s->cni_result = s->cluster_conf = s->cluster_result = NULL;
}

/* ---- runc ------------------------------------------------------------------------ */

void rts_runc_log_error(const char *log_path, char *buf, size_t size)
{
    buf[0] = '\0';
    char *text = rts_read_file(log_path, 1 << 16);
    if (!text) return;
    /* strtok_r: starts run on concurrent workers */
    char *save = NULL;
    for (char *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        json_t *j = json_loads(line, 0, NULL);
        const char *lvl = json_string_value(json_object_get(j, "level"));
        const char *msg = json_string_value(json_object_get(j, "msg"));
        if (lvl && msg && (strcmp(lvl, "error") == 0 || strcmp(lvl, "fatal") == 0))
            ts_strlcpy(buf, msg, size);
        json_decref(j);
    }
    free(text);
}

bool rts_runc(runtime *rt, const char *const *args, exec_result *r, ts_err *err)
{
    const char *argv[32];
    int n = 0;
    argv[n++] = rt->runc;
    for (; *args && n < 31; args++)
        argv[n++] = *args;
    argv[n] = NULL;
    proc_opts o = {.argv = argv, .timeout_ms = RUNC_TIMEOUT_MS, .cap_bytes = 1 << 16};
    return proc_run(&o, r, err);
}
