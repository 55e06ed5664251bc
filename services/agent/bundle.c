/* bundle.c: write a kernel's OCI config.json (runtime spec 1.0). */
#include "services/agent/bundle.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "services/agent/gpu_mounts.h"
#include "services/agent/oci_spec.h"
#include "services/agent/seccomp.h"
#include "services/agent/term_app.h"

/* Root's powers over its own container, nothing over the host (bundle.h):
 * owners and modes of files (CHOWN, DAC_OVERRIDE, FOWNER, FSETID), set ids
 * (SETUID, SETGID, SETPCAP: dropping from the bounding set), signals to other
 * users' processes (KILL), ports below 1024 (NET_BIND_SERVICE), chroot
 * (SYS_CHROOT). Docker's default set less NET_RAW (raw and packet sockets),
 * MKNOD (device nodes), AUDIT_WRITE and SETFCAP (file capabilities, which
 * no_new_privs would ignore anyway). */
const char *const bundle_caps[] = {
    "CAP_CHOWN",  "CAP_DAC_OVERRIDE", "CAP_FOWNER",  "CAP_FSETID",           "CAP_KILL",
    "CAP_SETGID", "CAP_SETUID",       "CAP_SETPCAP", "CAP_NET_BIND_SERVICE", "CAP_SYS_CHROOT",
    NULL,
};

uint64_t bundle_caps_mask(void)
{
    /* bit numbers of the names above, from linux/capability.h */
    static const int bits[] = {0, 1, 3, 4, 5, 6, 7, 8, 10, 18};
    uint64_t m = 0;
    for (size_t i = 0; i < TS_ARRAY_LEN(bits); i++)
        m |= 1ULL << bits[i];
    return m;
}

static const char *const _masked[] = {
    "/proc/asound",
    "/proc/acpi",
    "/proc/kcore",
    "/proc/keys",
    "/proc/latency_stats",
    "/proc/timer_list",
    "/proc/timer_stats",
    "/proc/sched_debug",
    "/proc/scsi",
    "/sys/firmware",
    "/sys/devices/virtual/powercap",
    NULL,
};
static const char *const _readonly[] = {
    "/proc/bus", "/proc/fs", "/proc/irq", "/proc/sys", "/proc/sysrq-trigger", NULL,
};

bool bundle_open_in_root(const char *rootfs, const char *path, int flags, int *fd)
{
    *fd = -1;
    int root = open(rootfs, O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (root < 0) return false;
    struct open_how how = {.flags = (uint64_t)(flags | O_CLOEXEC),
                           .resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS};
    while (*path == '/')
        path++;
    *fd = (int)syscall(SYS_openat2, root, path, &how, sizeof(how));
    close(root);
    return *fd >= 0;
}

static bool _all_digits(const char *s)
{
    if (!*s) return false;
    for (; *s; s++)
        if (*s < '0' || *s > '9') return false;
    return true;
}

/* Look name (or numeric id) up in a passwd/group-style file of the rootfs:
 * field 0 name, field 2 id, field 3 (passwd) primary gid. */
static bool _lookup(const char *rootfs, const char *file, const char *name, long *id, long *gid)
{
    int fd;
    if (!bundle_open_in_root(rootfs, file, O_RDONLY, &fd)) return false;
    FILE *f = fdopen(fd, "r");
    if (!f) {
        close(fd);
        return false;
    }
    char line[1024];
    bool found = false;
    while (!found && fgets(line, sizeof(line), f)) {
        char *fields[4] = {0};
        char *p = line;
        for (int i = 0; i < 4 && p; i++) {
            fields[i] = p;
            p = strchr(p, ':');
            if (p) *p++ = '\0';
        }
        if (!fields[0] || !fields[2]) continue;
        bool match =
            _all_digits(name) ? strcmp(fields[2], name) == 0 : strcmp(fields[0], name) == 0;
        if (!match) continue;
        *id = strtol(fields[2], NULL, 10);
        if (gid) *gid = fields[3] ? strtol(fields[3], NULL, 10) : *id;
        found = true;
    }
    fclose(f);
    return found;
}

bool bundle_resolve_user(const char *rootfs, const char *user, uid_t *uid, gid_t *gid, ts_err *err)
{
    *uid = 0;
    *gid = 0;
    if (!user || !*user) return true;
    char u[256], *g;
    ts_strlcpy(u, user, sizeof(u));
    g = strchr(u, ':');
    if (g) *g++ = '\0';
    long id = 0, pgid = 0;
    if (_lookup(rootfs, "/etc/passwd", u, &id, &pgid)) {
        *uid = (uid_t)id;
        *gid = (gid_t)pgid;
    } else if (_all_digits(u)) {
        *uid = (uid_t)strtol(u, NULL, 10);
        *gid = *uid == 0 ? 0 : (gid_t)*uid;
    } else {
        ts_err_set(err, "image user '%s' is not in the image's /etc/passwd", u);
        return false;
    }
    if (g && *g) {
        long gg = 0;
        if (_lookup(rootfs, "/etc/group", g, &gg, NULL))
            *gid = (gid_t)gg;
        else if (_all_digits(g))
            *gid = (gid_t)strtol(g, NULL, 10);
        else {
            ts_err_set(err, "image group '%s' is not in the image's /etc/group", g);
            return false;
        }
    }
    return true;
}

bool bundle_process_user(const char *rootfs, const image_info *image, const userns_map *userns,
                         uid_t *uid, gid_t *gid, ts_err *err)
{
    if (!bundle_resolve_user(rootfs, image ? image->user : NULL, uid, gid, err)) return false;
    if (userns && userns->size) {
        if (*uid >= userns->size || *gid >= userns->size) {
            ts_err_set(err, "image user %u:%u is outside the user namespace (container ids 0..%u)",
                       (unsigned)*uid, (unsigned)*gid, userns->size - 1);
            return false;
        }
        return true;
    }
    if (*uid != 0 && *gid != 0) return true;
    long id = 0, pgid = 0;
    if (_lookup(rootfs, "/etc/passwd", "work", &id, &pgid) && id > 0 && pgid > 0) {
        *uid = (uid_t)id;
        *gid = (gid_t)pgid;
    } else {
        *uid = BUNDLE_WORK_UID;
        *gid = BUNDLE_WORK_UID;
    }
    return true;
}

static json_t *_env(const kernel_spec *s)
{
    json_t *env = json_array();
    oci_env_put(env, "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin");
    oci_env_put(env, "HOME=/home/work");
    oci_env_put(env, "LANG=C.UTF-8");
    if (s->image && s->image->env)
        for (char **e = s->image->env; *e; e++)
            oci_env_put(env, *e);
    char buf[512];
    const char *ids[][2] = {
        {"TESSERA_KERNEL_ID", s->kernel_id},
        {"TESSERA_SESSION_ID", s->session_id},
        {"BACKENDAI_KERNEL_ID", s->kernel_id},
        {"BACKENDAI_SESSION_ID", s->session_id},
    };
    for (size_t i = 0; i < TS_ARRAY_LEN(ids); i++) {
        if (!ids[i][1]) continue;
        snprintf(buf, sizeof(buf), "%s=%s", ids[i][0], ids[i][1]);
        oci_env_put(env, buf);
    }
    if (s->env)
        for (const char *const *e = s->env; *e; e++)
            oci_env_put(env, *e);
    return env;
}

bool bundle_uses_keepalive(const kernel_spec *s)
{
    if (s->batch || (s->argv && s->argv[0])) return false;
    bool ep = s->image && s->image->entrypoint && s->image->entrypoint[0];
    bool cmd = s->image && s->image->cmd && s->image->cmd[0];
    return !ep && !cmd;
}

static bool _args(const bundle_params *p, json_t **out, ts_err *err)
{
    const kernel_spec *s = p->spec;
    json_t *a = json_array();
    if (s->argv && s->argv[0]) {
        for (const char *const *v = s->argv; *v; v++)
            json_array_append_new(a, json_string(*v));
    } else {
        if (s->image && s->image->entrypoint)
            for (char **v = s->image->entrypoint; *v; v++)
                json_array_append_new(a, json_string(*v));
        if (s->image && s->image->cmd)
            for (char **v = s->image->cmd; *v; v++)
                json_array_append_new(a, json_string(*v));
    }
    if (json_array_size(a) == 0) {
        if (s->batch) {
            json_decref(a);
            ts_err_set(err, "batch kernel has no command and its image none either");
            return false;
        }
        /* Interactive with nothing to run: keep the container up. With a
         * shell, one that ends at SIGTERM (a pid-1 process without a handler
         * ignores it, and destroy would wait its whole grace period). */
        int fd;
        if (bundle_open_in_root(p->rootfs, "/bin/sh", O_PATH, &fd)) {
            close(fd);
            json_array_append_new(a, json_string("/bin/sh"));
            json_array_append_new(a, json_string("-c"));
            json_array_append_new(a,
                                  json_string("trap 'exit 0' TERM INT; sleep 2147483647 & wait"));
        } else {
            json_array_append_new(a, json_string("sleep"));
            json_array_append_new(a, json_string("2147483647"));
        }
    }
    *out = a;
    return true;
}

static json_t *_strings(const char *const *v)
{
    json_t *a = json_array();
    for (; *v; v++)
        json_array_append_new(a, json_string(*v));
    return a;
}

static json_t *_mounts(const bundle_params *p, ts_err *err)
{
    const kernel_spec *s = p->spec;
    json_t *m = json_array();
    char buf[256], src[1024];
    json_array_append_new(m, oci_mount("/proc", "proc", "proc", "nosuid,noexec,nodev"));
    json_array_append_new(
        m, oci_mount("/dev", "tmpfs", "tmpfs", "nosuid,strictatime,mode=755,size=65536k"));
    json_array_append_new(m, oci_mount("/dev/pts", "devpts", "devpts",
                                       "nosuid,noexec,newinstance,ptmxmode=0666,mode=0620,gid=5"));
    int64_t shm = s->shm_bytes > 0 ? s->shm_bytes : 64LL << 20;
    snprintf(buf, sizeof(buf), "nosuid,noexec,nodev,mode=1777,size=%lld", (long long)shm);
    json_array_append_new(m, oci_mount("/dev/shm", "tmpfs", "shm", buf));
    json_array_append_new(m, oci_mount("/dev/mqueue", "mqueue", "mqueue", "nosuid,noexec,nodev"));
    json_array_append_new(m, oci_mount("/sys", "sysfs", "sysfs", "nosuid,noexec,nodev,ro"));
    json_array_append_new(
        m, oci_mount("/sys/fs/cgroup", "cgroup", "cgroup", "nosuid,noexec,nodev,relatime,ro"));
    static const char *const etc[] = {"hosts", "hostname", "resolv.conf"};
    for (size_t i = 0; i < TS_ARRAY_LEN(etc); i++) {
        snprintf(src, sizeof(src), "%s/%s", p->etc_dir, etc[i]);
        snprintf(buf, sizeof(buf), "/etc/%s", etc[i]);
        json_array_append_new(m, oci_mount(buf, "bind", src, "rbind,rprivate,nosuid,nodev"));
    }
    json_array_append_new(m, oci_bind("/home/work", p->home_dir, false));
    if (p->config_dir) json_array_append_new(m, oci_bind("/home/config", p->config_dir, true));
    term_app_mount(m, s->term_path);
    for (int i = 0; i < s->n_mounts; i++) {
        const bind_mount *b = &s->mounts[i];
        if (!b->host_path || b->host_path[0] != '/' || !b->container_path ||
            b->container_path[0] != '/' || strstr(b->container_path, "/../") ||
            strcmp(b->container_path, "/") == 0) {
            ts_err_set(err, "bind mount %s -> %s: both paths must be absolute (and not /)",
                       b->host_path ? b->host_path : "(null)",
                       b->container_path ? b->container_path : "(null)");
            json_decref(m);
            return NULL;
        }
        json_array_append_new(m, oci_bind(b->container_path, b->host_path, b->read_only));
    }
    return m;
}

static json_t *_resources(const kernel_spec *s)
{
    json_t *r = json_object();
    json_object_set_new(r, "devices", json_pack("[{s:b, s:s}]", "allow", 0, "access", "rwm"));
    if (s->cpu_cores > 0) {
        int64_t quota = (int64_t)(s->cpu_cores * BUNDLE_CPU_PERIOD + 0.5);
        if (quota < 1000) quota = 1000; /* the kernel's minimum is 1 ms */
        json_object_set_new(r, "cpu",
                            json_pack("{s:I, s:I}", "quota", (json_int_t)quota, "period",
                                      (json_int_t)BUNDLE_CPU_PERIOD));
    }
    if (s->mem_bytes > 0)
        json_object_set_new(r, "memory",
                            json_pack("{s:I, s:I}", "limit", (json_int_t)s->mem_bytes, "swap",
                                      (json_int_t)s->mem_bytes));
    json_object_set_new(
        r, "pids",
        json_pack("{s:I}", "limit",
                  (json_int_t)(s->pids_max > 0 ? s->pids_max : BUNDLE_DEFAULT_PIDS)));
    return r;
}

bool bundle_write(const char *bundle_dir, const bundle_params *p, ts_err *err)
{
    const kernel_spec *s = p->spec;
    bool userns = p->userns && p->userns->size;
    uid_t uid;
    gid_t gid;
    if (!bundle_process_user(p->rootfs, s->image, p->userns, &uid, &gid, err)) return false;
    json_t *args;
    if (!_args(p, &args, err)) return false;
    json_t *mounts = _mounts(p, err);
    if (!mounts) {
        json_decref(args);
        return false;
    }
    const char *cwd = s->image && s->image->workdir && s->image->workdir[0] == '/'
                          ? s->image->workdir
                          : "/home/work";
    /* root of its own user namespace: bundle_caps; the work user without
     * one: nothing at all */
    static const char *const none[] = {NULL};
    json_t *caps = _strings(userns ? bundle_caps : none);
    /* as many open files as the agent may have: raising the hard limit
     * needs CAP_SYS_RESOURCE, which a confined agent may lack */
    struct rlimit nofile = {1048576, 1048576};
    struct rlimit cur;
    if (getrlimit(RLIMIT_NOFILE, &cur) == 0 && cur.rlim_max < nofile.rlim_max)
        nofile.rlim_cur = nofile.rlim_max = cur.rlim_max;
    json_t *process =
        json_pack("{s:b, s:{s:i, s:i}, s:o, s:o, s:s, s:{s:o, s:o, s:o, s:[], s:[]}, s:b,"
                  " s:[{s:s, s:I, s:I}]}",
                  "terminal", 0, "user", "uid", (int)uid, "gid", (int)gid, "args", args, "env",
                  _env(s), "cwd", cwd, "capabilities", "bounding", caps, "effective",
                  json_deep_copy(caps), "permitted", json_deep_copy(caps), "inheritable", "ambient",
                  "noNewPrivileges", 1, "rlimits", "type", "RLIMIT_NOFILE", "hard",
                  (json_int_t)nofile.rlim_max, "soft", (json_int_t)nofile.rlim_cur);
    json_t *ns =
        json_pack("[{s:s}, {s:s}, {s:s}, {s:s}, {s:s, s:s}]", "type", "pid", "type", "ipc", "type",
                  "uts", "type", "mount", "type", "network", "path", p->netns_path);
    json_t *linux_ =
        json_pack("{s:o, s:s, s:o, s:o, s:o, s:o}", "resources", _resources(s), "cgroupsPath",
                  p->cgroups_path, "namespaces", ns, "maskedPaths", _strings(_masked),
                  "readonlyPaths", _strings(_readonly), "seccomp", seccomp_default_profile());
    /* ICMP echo for every group through datagram sockets (ping without
     * CAP_NET_RAW, as Docker does); the range in the kernel's own ids */
    char ping[64];
    snprintf(ping, sizeof(ping), "0 %u", userns ? p->userns->size - 1 : 2147483647u);
    json_object_set_new(linux_, "sysctl", json_pack("{s:s}", "net.ipv4.ping_group_range", ping));
    if (userns) {
        /* one mapping for every kernel (userns.h): 0..size-1 inside are
         * base.. outside; the namespace itself the agent made, with the
         * network namespace, and runc joins it */
        json_t *user = json_pack("{s:s}", "type", "user");
        if (p->userns_path) json_object_set_new(user, "path", json_string(p->userns_path));
        json_array_insert_new(ns, 0, user);
        const char *keys[] = {"uidMappings", "gidMappings"};
        for (size_t i = 0; i < TS_ARRAY_LEN(keys); i++)
            json_object_set_new(linux_, keys[i],
                                json_pack("[{s:i, s:I, s:I}]", "containerID", 0, "hostID",
                                          (json_int_t)p->userns->base, "size",
                                          (json_int_t)p->userns->size));
    }
    const char *host = s->hostname && *s->hostname ? s->hostname : s->kernel_id;
    json_t *cfg = json_pack("{s:s, s:o, s:{s:s, s:b}, s:s, s:o, s:o}", "ociVersion", "1.0.2",
                            "process", process, "root", "path", "rootfs", "readonly", 0, "hostname",
                            host, "mounts", mounts, "linux", linux_);
    if (!cfg) {
        ts_err_set(err, "cannot build config.json");
        return false;
    }
    if (s->gpu && !gpu_bundle_apply(s->gpu, cfg, err)) {
        json_decref(cfg);
        return false;
    }
    char *path = ts_asprintf("%s/config.json", bundle_dir);
    bool ok = json_dump_file(cfg, path, JSON_COMPACT) == 0;
    if (!ok) ts_err_set(err, "write %s: %s", path, strerror(errno));
    free(path);
    json_decref(cfg);
    return ok;
}
