/* gpu_mounts.c: the CUDA shim, NVIDIA device nodes and driver libraries in a
 * kernel's OCI bundle (see gpu_mounts.h). */
#include "services/agent/gpu_mounts.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "libcommon/log.h"
#include "services/agent/oci_spec.h"

/* ---- host: shim, device nodes, minors, driver libraries ------------------------------- */

static bool _check_shim(const char *path, ts_err *err)
{
    struct stat st;
    if (!path || path[0] != '/') {
        ts_err_set(err, "agent.cuda_shim_path '%s' must be an absolute path", path ? path : "");
        return false;
    }
    if (stat(path, &st) != 0 || access(path, R_OK) != 0) {
        ts_err_set(err,
                   "agent.cuda_shim_path %s: %s (build it with `make shim`, or set "
                   "agent.cuda_shim = false)",
                   path, strerror(errno));
        return false;
    }
    if (!S_ISREG(st.st_mode)) {
        ts_err_set(err, "agent.cuda_shim_path %s is not a regular file", path);
        return false;
    }
    return true;
}

static bool _is_chardev(const char *dir, const char *name)
{
    char p[512];
    struct stat st;
    snprintf(p, sizeof(p), "%s/%s", dir, name);
    return stat(p, &st) == 0 && S_ISCHR(st.st_mode);
}

/* "Device Minor: N" of /proc/driver/nvidia/gpus/<bus-id>/information; the
 * driver names the directory in lower case with a 4-digit domain. */
static int _minor_of(const char *proc_dir, const char *bus_id)
{
    if (!bus_id || !*bus_id) return -1;
    char bus[32];
    size_t n = 0;
    for (; bus_id[n] && n < sizeof(bus) - 1; n++)
        bus[n] = (char)tolower((unsigned char)bus_id[n]);
    bus[n] = '\0';
    const char *b = bus;
    if (strlen(bus) == 16) b = bus + 4; /* cuDeviceGetPCIBusId gives 8-digit domains */
    char path[512], line[256];
    snprintf(path, sizeof(path), "%s/%s/information", proc_dir, b);
    FILE *f = fopen(path, "r");
    if (!f) return -1;
    int minor = -1;
    while (fgets(line, sizeof(line), f))
        if (sscanf(line, "Device Minor: %d", &minor) == 1) break;
    fclose(f);
    return minor;
}

/* soname -> host path from `ldconfig -p` ("\tlibcuda.so.1 (libc6,x86-64) => /usr/lib/..."). */
static char *_ldconfig_lookup(const char *ldconfig, const char *soname)
{
    char cmd[512];
    snprintf(cmd, sizeof(cmd), "%s -p 2>/dev/null", ldconfig);
    FILE *p = popen(cmd, "r");
    if (!p) return NULL;
    char line[1024], *found = NULL;
    size_t sl = strlen(soname);
    while (fgets(line, sizeof(line), p)) {
        char *s = line;
        while (*s == ' ' || *s == '\t')
            s++;
        if (strncmp(s, soname, sl) != 0 || s[sl] != ' ') continue;
        if (!strstr(s, "x86-64") && !strstr(s, "AArch64") && !strstr(s, "64bit")) continue;
        char *arrow = strstr(s, "=> ");
        if (!arrow) continue;
        char *path = arrow + 3;
        path[strcspn(path, "\r\n")] = '\0';
        if (path[0] == '/' && !found) found = ts_strdup(path);
    }
    pclose(p);
    return found;
}

static void _find_driver_libs(gpu_host *h, const gpu_host_opts *o)
{
    const char *list = o->driver_libs && *o->driver_libs ? o->driver_libs : GPU_DEFAULT_DRIVER_LIBS;
    char *copy = ts_strdup(list), *save = NULL;
    for (char *t = strtok_r(copy, ", ", &save); t && h->n_driver_libs < GPU_MAX_DRIVER_LIBS;
         t = strtok_r(NULL, ", ", &save)) {
        char *path = t[0] == '/' ? (access(t, R_OK) == 0 ? ts_strdup(t) : NULL)
                                 : _ldconfig_lookup(o->ldconfig ? o->ldconfig : "ldconfig", t);
        if (!path) {
            TLOG_INFO("driver library not found, not mounted", "library=%s", t);
            continue;
        }
        h->driver_libs[h->n_driver_libs++] = path;
    }
    free(copy);
}

bool gpu_host_init(gpu_host *h, const gpu_host_opts *o, ts_err *err)
{
    memset(h, 0, sizeof(*h));
    h->shim = o->shim;
    h->dev_dir = ts_strdup(o->dev_dir ? o->dev_dir : "/dev");
    h->shim_path = ts_strdup(o->shim_path ? o->shim_path : "");
    if (o->n_devices <= 0) return true;
    if (o->n_devices > NODE_MAX_DEVICES) {
        ts_err_set(err, "%d GPUs: at most %d are supported", o->n_devices, NODE_MAX_DEVICES);
        gpu_host_free(h);
        return false;
    }
    if (h->shim && !_check_shim(h->shim_path, err)) {
        gpu_host_free(h);
        return false;
    }
    h->has_nodes = _is_chardev(h->dev_dir, "nvidiactl");
    const char *proc = o->proc_gpus_dir ? o->proc_gpus_dir : "/proc/driver/nvidia/gpus";
    for (int i = 0; i < o->n_devices; i++) {
        const node_device *d = &o->devices[i];
        h->device_ids[i] = ts_strdup(d->id);
        h->uuids[i] = ts_strdup(d->uuid);
        int minor = d->mock ? -1 : _minor_of(proc, d->bus_id);
        h->minors[i] = minor >= 0 ? minor : atoi(d->id); /* no procfs entry: the ordinal */
    }
    h->n_devices = o->n_devices;
    if (h->has_nodes) _find_driver_libs(h, o);
    TLOG_INFO("gpu mounts", "shim=%s path=%s device_nodes=%s driver_libs=%d",
              h->shim ? "on" : "off", h->shim_path, h->has_nodes ? "yes" : "no(mock)",
              h->n_driver_libs);
    return true;
}

void gpu_host_free(gpu_host *h)
{
    free(h->shim_path);
    free(h->dev_dir);
    for (int i = 0; i < h->n_devices; i++) {
        free(h->device_ids[i]);
        free(h->uuids[i]);
    }
    for (int i = 0; i < h->n_driver_libs; i++)
        free(h->driver_libs[i]);
    memset(h, 0, sizeof(*h));
}

const char *gpu_host_uuid(const gpu_host *h, const char *device_id)
{
    for (int i = 0; h && i < h->n_devices; i++)
        if (!strcmp(h->device_ids[i], device_id)) return h->uuids[i][0] ? h->uuids[i] : NULL;
    return NULL;
}

/* ---- per kernel ------------------------------------------------------------------------ */

bool gpu_shim_conf_write(const char *path, const gpu_shim_conf *c, ts_err *err)
{
    bool all_uuids = c->n_uuids > 0;
    for (int i = 0; i < c->n_uuids; i++)
        all_uuids = all_uuids && c->uuids[i] && c->uuids[i][0];
    FILE *f = fopen(path, "w");
    bool ok = f != NULL;
    if (f) {
        fprintf(f, "# written by tessera-agent for kernel %s\n", c->kernel_id);
        if (c->mem_limit && c->mem_limit[0]) fprintf(f, "mem_limit = %s\n", c->mem_limit);
        fprintf(f, "compute_share = %.2f\n", c->compute_share);
        fprintf(f, "shared_dir = %s\n", GPU_SHARED_DIR);
        if (all_uuids) {
            fputs("visible_uuids = ", f);
            for (int i = 0; i < c->n_uuids; i++)
                fprintf(f, "%s%s", i ? "," : "", c->uuids[i]);
            fputc('\n', f);
        }
        ok = !ferror(f);
        ok = fclose(f) == 0 && ok;
    }
    if (!ok) ts_err_set(err, "write %s: %s", path, strerror(errno));
    return ok;
}

bool gpu_kernel_prepare(const gpu_host *h, const char *kernel_dir, const char *const *device_ids,
                        int n_ids, kernel_gpu *out, ts_err *err)
{
    memset(out, 0, sizeof(*out));
    out->host = h;
    if (ts_strlcpy(out->kernel_dir, kernel_dir, sizeof(out->kernel_dir)) >=
        sizeof(out->kernel_dir)) {
        ts_err_set(err, "gpu state path too long: %s", kernel_dir);
        return false;
    }
    for (int i = 0; i < n_ids; i++) {
        int j = 0;
        while (j < h->n_devices && strcmp(h->device_ids[j], device_ids[i]) != 0)
            j++;
        if (j == h->n_devices || out->n_minors >= NODE_MAX_DEVICES) {
            ts_err_set(err, "GPU '%s' is not a device of this agent", device_ids[i]);
            return false;
        }
        out->minors[out->n_minors++] = h->minors[j];
    }
    if (!h->shim) return true;
    ts_err e = {{0}};
    if (!_check_shim(h->shim_path, &e)) {
        ts_err_set(err, "cuda shim: %s", e.msg);
        return false;
    }
    char path[640];
    snprintf(path, sizeof(path), "%s/ld.so.preload", kernel_dir);
    FILE *f = fopen(path, "w");
    if (!f || fprintf(f, "%s\n", GPU_SHIM_PATH) < 0 || fclose(f) != 0) {
        ts_err_set(err, "write %s: %s", path, strerror(errno));
        return false;
    }
    snprintf(path, sizeof(path), "%s/shared", kernel_dir);
    /* any container user writes the region; the directory is this kernel's alone */
    if ((mkdir(path, 0700) != 0 && errno != EEXIST) || chmod(path, 01777) != 0) {
        ts_err_set(err, "mkdir %s: %s", path, strerror(errno));
        return false;
    }
    return true;
}

void gpu_kernel_cleanup(const char *kernel_dir)
{
    char path[640], shared[600];
    snprintf(shared, sizeof(shared), "%s/shared", kernel_dir);
    DIR *d = opendir(shared);
    if (d) {
        struct dirent *e;
        while ((e = readdir(d))) {
            if (e->d_name[0] == '.') continue;
            snprintf(path, sizeof(path), "%s/%s", shared, e->d_name);
            unlink(path);
        }
        closedir(d);
        rmdir(shared);
    }
    static const char *const files[] = {"cuda-shim.conf", "ld.so.preload"};
    for (size_t i = 0; i < TS_ARRAY_LEN(files); i++) {
        snprintf(path, sizeof(path), "%s/%s", kernel_dir, files[i]);
        unlink(path);
    }
    rmdir(kernel_dir);
}

/* ---- the bundle ------------------------------------------------------------------------- */

/* The host node <dev_dir>/<name> at /dev/<name>, with its allow rule. In a
 * user namespace nobody may mknod: the node itself is bind-mounted (as runc
 * would do from the same path in the host's /dev; without nodev, so it
 * opens), and the node's host mode says who may use it (the driver's 0666). */
static bool _add_device(const kernel_gpu *g, json_t *devs, json_t *mounts, json_t *rules,
                        const char *name)
{
    char host[512], ctr[128];
    snprintf(host, sizeof(host), "%s/%s", g->host->dev_dir, name);
    snprintf(ctr, sizeof(ctr), "/dev/%s", name);
    struct stat st;
    if (stat(host, &st) != 0 || !S_ISCHR(st.st_mode)) return false;
    json_int_t maj = (json_int_t)major(st.st_rdev), min = (json_int_t)minor(st.st_rdev);
    if (mounts)
        json_array_append_new(mounts, json_pack("{s:s, s:s, s:s, s:[s, s, s, s]}", "destination",
                                                ctr, "type", "bind", "source", host, "options",
                                                "bind", "rprivate", "nosuid", "noexec"));
    else
        json_array_append_new(devs, json_pack("{s:s, s:s, s:I, s:I, s:i, s:i, s:i}", "path", ctr,
                                              "type", "c", "major", maj, "minor", min, "fileMode",
                                              0666, "uid", 0, "gid", 0));
    json_array_append_new(rules, json_pack("{s:b, s:s, s:I, s:I, s:s}", "allow", 1, "type", "c",
                                           "major", maj, "minor", min, "access", "rwm"));
    return true;
}

bool gpu_bundle_apply(const kernel_gpu *g, json_t *config, ts_err *err)
{
    json_t *mounts = json_object_get(config, "mounts");
    json_t *linux_ = json_object_get(config, "linux");
    json_t *res = json_object_get(linux_, "resources");
    json_t *rules = json_object_get(res, "devices");
    json_t *env = json_object_get(json_object_get(config, "process"), "env");
    if (!json_is_array(mounts) || !json_is_array(rules) || !json_is_array(env)) {
        ts_err_set(err, "config.json lacks mounts, env or linux.resources.devices");
        return false;
    }
    const gpu_host *h = g->host;
    char src[640];
    if (h->shim) {
        json_array_append_new(mounts, oci_bind(GPU_SHIM_PATH, h->shim_path, true));
        snprintf(src, sizeof(src), "%s/ld.so.preload", g->kernel_dir);
        json_array_append_new(mounts, oci_bind("/etc/ld.so.preload", src, true));
        snprintf(src, sizeof(src), "%s/cuda-shim.conf", g->kernel_dir);
        json_array_append_new(mounts, oci_bind(GPU_CONF_PATH, src, true));
        snprintf(src, sizeof(src), "%s/shared", g->kernel_dir);
        json_array_append_new(mounts, oci_bind(GPU_SHARED_DIR, src, false));
    }
    if (!h->has_nodes) return true; /* mock GPUs: nothing to open */
    json_t *devs = json_object_get(linux_, "devices");
    if (!devs) {
        devs = json_array();
        json_object_set_new(linux_, "devices", devs);
    }
    /* a kernel with a user namespace (bundle.c wrote its mappings) */
    json_t *node_binds = json_object_get(linux_, "uidMappings") ? mounts : NULL;
    static const char *const common[] = {"nvidiactl", "nvidia-uvm", "nvidia-uvm-tools"};
    for (size_t i = 0; i < TS_ARRAY_LEN(common); i++)
        (void)_add_device(g, devs, node_binds, rules, common[i]);
    char name[32], visible[128] = "CUDA_VISIBLE_DEVICES=";
    for (int i = 0; i < g->n_minors; i++) {
        snprintf(name, sizeof(name), "nvidia%d", g->minors[i]);
        if (!_add_device(g, devs, node_binds, rules, name)) {
            ts_err_set(err, "GPU device node %s/%s is missing", h->dev_dir, name);
            return false;
        }
        size_t l = strlen(visible);
        snprintf(visible + l, sizeof(visible) - l, "%s%d", i ? "," : "", i);
    }
    oci_env_put(env, visible);
    for (int i = 0; i < h->n_driver_libs; i++)
        json_array_append_new(mounts, oci_bind(h->driver_libs[i], h->driver_libs[i], true));
    return true;
}
