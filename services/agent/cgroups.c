/* cgroups.c: find the cgroup hierarchies once (from /proc/self/mountinfo), read
 * a kernel's usage and OOM kills, remove what runc might leave behind. */
#include "services/agent/cgroups.h"

#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

typedef struct hier {
    char mnt[256];
    char opts[256]; /* "rw,cpu,cpuacct" or "" for cgroup2 */
    bool v2;
} hier;

static hier _h[32];
static int _n_h;
static pthread_once_t _once = PTHREAD_ONCE_INIT;

static void _scan(void)
{
    FILE *f = fopen("/proc/self/mountinfo", "re");
    if (!f) return;
    char line[2048];
    while (fgets(line, sizeof(line), f) && _n_h < (int)TS_ARRAY_LEN(_h)) {
        /* id parent maj:min root mountpoint opts... - fstype source superopts */
        char root[512], mnt[512];
        if (sscanf(line, "%*d %*d %*s %511s %511s", root, mnt) != 2) continue;
        char *sep = strstr(line, " - ");
        if (!sep) continue;
        char fstype[32], src[256], sopts[512];
        if (sscanf(sep + 3, "%31s %255s %511s", fstype, src, sopts) != 3) continue;
        bool v2 = strcmp(fstype, "cgroup2") == 0;
        if (!v2 && strcmp(fstype, "cgroup") != 0) continue;
        hier *h = &_h[_n_h++];
        ts_strlcpy(h->mnt, mnt, sizeof(h->mnt));
        ts_strlcpy(h->opts, v2 ? "" : sopts, sizeof(h->opts));
        h->v2 = v2;
    }
    fclose(f);
}

static const hier *_find(const char *controller)
{
    pthread_once(&_once, _scan);
    for (int i = 0; i < _n_h; i++) {
        if (!controller[0]) {
            if (_h[i].v2) return &_h[i];
            continue;
        }
        if (_h[i].v2) continue;
        /* whole-word match in the comma-separated options */
        size_t n = strlen(controller);
        for (const char *p = _h[i].opts; (p = strstr(p, controller)) != NULL; p += n) {
            bool start = p == _h[i].opts || p[-1] == ',';
            bool end = p[n] == '\0' || p[n] == ',';
            if (start && end) return &_h[i];
        }
    }
    return NULL;
}

bool cg_path(const char *controller, const char *rel, const char *file, char *buf, size_t size)
{
    const hier *h = _find(controller);
    if (!h) return false;
    int n = snprintf(buf, size, "%s/%s%s%s", h->mnt, rel, file ? "/" : "", file ? file : "");
    return n > 0 && (size_t)n < size;
}

int cg_procs(const char *rel, int *pids, int max)
{
    static const char *const ctl[] = {"pids", "memory", ""};
    for (size_t c = 0; c < TS_ARRAY_LEN(ctl); c++) {
        char path[512];
        if (!cg_path(ctl[c], rel, "cgroup.procs", path, sizeof(path))) continue;
        FILE *f = fopen(path, "re");
        if (!f) continue;
        int n = 0, pid;
        while (n < max && fscanf(f, "%d", &pid) == 1)
            if (pid > 0) pids[n++] = pid;
        fclose(f);
        return n;
    }
    return -1;
}

static bool _read_i64(const char *controller, const char *rel, const char *file, int64_t *out)
{
    char path[512];
    if (!cg_path(controller, rel, file, path, sizeof(path))) return false;
    FILE *f = fopen(path, "re");
    if (!f) return false;
    long long v;
    bool ok = fscanf(f, "%lld", &v) == 1;
    fclose(f);
    if (ok) *out = v;
    return ok;
}

/* "key value" lines (memory.oom_control, memory.events): the value of key. */
static bool _read_keyed(const char *controller, const char *rel, const char *file, const char *key,
                        int64_t *out)
{
    char path[512], k[64];
    if (!cg_path(controller, rel, file, path, sizeof(path))) return false;
    FILE *f = fopen(path, "re");
    if (!f) return false;
    long long v;
    bool found = false;
    while (fscanf(f, "%63s %lld", k, &v) == 2) {
        if (strcmp(k, key) == 0) {
            *out = v;
            found = true;
            break;
        }
    }
    fclose(f);
    return found;
}

/* Loop devices (a kernel's sized disk, runtime_disk.h): their I/O is done
 * again on the backing file's device, charged to the same cgroup, and
 * counted there. */
#define LOOP_MAJOR 7

/* Block I/O bytes: cgroup v2 io.stat ("M:m rbytes=N wbytes=N ...", one line
 * a device) or v1 blkio.throttle.io_service_bytes_recursive ("M:m Read N"),
 * summed over devices but loop devices (each of their bytes would count
 * twice). */
static void _read_io(const char *rel, kernel_usage *out)
{
    char path[512], line[512];
    FILE *f = NULL;
    bool v2 = false;
    if (cg_path("blkio", rel, "blkio.throttle.io_service_bytes_recursive", path, sizeof(path)))
        f = fopen(path, "re");
    if (!f && cg_path("", rel, "io.stat", path, sizeof(path))) {
        f = fopen(path, "re");
        v2 = f != NULL;
    }
    if (!f) return;
    while (fgets(line, sizeof(line), f)) {
        if (atoi(line) == LOOP_MAJOR && strchr(line, ':')) continue;
        if (v2) {
            const char *r = strstr(line, " rbytes="), *w = strstr(line, " wbytes=");
            if (r) out->io_read_bytes += strtoll(r + 8, NULL, 10);
            if (w) out->io_write_bytes += strtoll(w + 8, NULL, 10);
            continue;
        }
        char dev[64], op[32];
        long long v;
        if (sscanf(line, "%63s %31s %lld", dev, op, &v) != 3) continue;
        if (strcmp(op, "Read") == 0) out->io_read_bytes += v;
        if (strcmp(op, "Write") == 0) out->io_write_bytes += v;
    }
    fclose(f);
}

void cg_io_accounting(void)
{
    char dir[512];
    if (!cg_path("blkio", CG_PARENT, NULL, dir, sizeof(dir))) return; /* v2 counts anyway */
    if (mkdir(dir, 0755) != 0 && errno != EEXIST) return;
    char file[600];
    snprintf(file, sizeof(file), "%s/blkio.throttle.read_bps_device", dir);
    DIR *d = opendir("/sys/block");
    struct dirent *e;
    while (d && (e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.') continue;
        char dpath[300], devno[32] = "";
        snprintf(dpath, sizeof(dpath), "/sys/block/%s/dev", e->d_name);
        FILE *df = fopen(dpath, "re");
        if (!df) continue;
        bool ok = fscanf(df, "%31s", devno) == 1;
        fclose(df);
        FILE *lf = ok ? fopen(file, "we") : NULL;
        if (!lf) continue;
        /* 1 PiB/s: no limit in practice, but the device now keeps counts */
        fprintf(lf, "%s 1125899906842624\n", devno);
        fclose(lf);
    }
    if (d) closedir(d);
}

bool cg_usage(const char *rel, kernel_usage *out, ts_err *err)
{
    memset(out, 0, sizeof(*out));
    int64_t ns = 0;
    bool any = false;
    if (_read_i64("cpuacct", rel, "cpuacct.usage", &ns)) {
        out->cpu_usec = ns / 1000;
        any = true;
    } else if (_read_keyed("", rel, "cpu.stat", "usage_usec", &out->cpu_usec)) {
        any = true;
    }
    if (_read_i64("memory", rel, "memory.usage_in_bytes", &out->mem_bytes))
        any = true;
    else if (_read_i64("", rel, "memory.current", &out->mem_bytes))
        any = true;
    if (!_read_i64("memory", rel, "memory.max_usage_in_bytes", &out->mem_peak_bytes))
        (void)_read_i64("", rel, "memory.peak", &out->mem_peak_bytes);
    if (_read_i64("pids", rel, "pids.current", &out->pids))
        any = true;
    else if (_read_i64("", rel, "pids.current", &out->pids))
        any = true;
    if (any) _read_io(rel, out);
    if (!any) {
        ts_err_set(err, "no cgroup %s", rel);
        return false;
    }
    return true;
}

bool cg_oom_kills(const char *rel, int64_t *kills)
{
    return _read_keyed("memory", rel, "memory.oom_control", "oom_kill", kills) ||
           _read_keyed("", rel, "memory.events", "oom_kill", kills);
}

bool cg_memory_limit(const char *rel, int64_t *bytes)
{
    return _read_i64("memory", rel, "memory.limit_in_bytes", bytes);
}

/* rmdir path and its sub-cgroups (children first). */
static bool _rmdir_tree(const char *path, int depth)
{
    DIR *d = opendir(path);
    if (!d) return errno == ENOENT;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (e->d_type != DT_DIR || e->d_name[0] == '.') continue;
        if (depth < 8) {
            char *sub = ts_asprintf("%s/%s", path, e->d_name);
            (void)_rmdir_tree(sub, depth + 1);
            free(sub);
        }
    }
    closedir(d);
    for (int i = 0; i < 50; i++) {
        if (rmdir(path) == 0 || errno == ENOENT) return true;
        if (errno != EBUSY) return false;
        usleep(10000); /* tasks just killed can take a moment to leave */
    }
    return false;
}

bool cg_remove(const char *rel)
{
    pthread_once(&_once, _scan);
    bool ok = true;
    for (int i = 0; i < _n_h; i++) {
        char path[512];
        snprintf(path, sizeof(path), "%s/%s", _h[i].mnt, rel);
        if (!_rmdir_tree(path, 0)) ok = false;
    }
    return ok;
}

bool cg_exists_any(const char *rel)
{
    pthread_once(&_once, _scan);
    for (int i = 0; i < _n_h; i++) {
        char path[512];
        struct stat st;
        snprintf(path, sizeof(path), "%s/%s", _h[i].mnt, rel);
        if (stat(path, &st) == 0) return true;
    }
    return false;
}
