/* cni.c: network namespaces and the CNI plugins: bridge and the port plugin. */
#include "services/agent/cni.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <net/if.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "services/agent/exec.h"

#define NETNS_DIR "/run/netns"
#define CNI_TIMEOUT_MS 30000

void cni_netns_path(const char *kernel_id, char *buf, size_t size)
{
    snprintf(buf, size, NETNS_DIR "/tessera-%s", kernel_id);
}

/* As iproute2 does: /run/netns a shared mount point, so namespaces mounted
 * there show in every mount namespace (and runc's) at once. */
static void _netns_dir_setup(void)
{
    mkdir("/run", 0755);
    mkdir(NETNS_DIR, 0755);
    if (mount("", NETNS_DIR, "none", MS_SHARED | MS_REC, NULL) == 0) return;
    if (errno != EINVAL) return;
    if (mount(NETNS_DIR, NETNS_DIR, "none", MS_BIND | MS_REC, NULL) == 0)
        (void)mount("", NETNS_DIR, "none", MS_SHARED | MS_REC, NULL);
}
static pthread_once_t _dir_once = PTHREAD_ONCE_INIT;

/* A thread of its own enters a new network namespace (unshare affects only
 * the calling thread), brings lo up and bind-mounts the namespace onto the
 * file; the mount keeps it alive after the thread ends. (A forked child did
 * this before: a copy of the agent's address space per kernel.) */
typedef struct netns_job {
    const char *path;
    int failed_errno;
    const char *failed_step;
} netns_job;

static void *_netns_thread(void *arg)
{
    netns_job *j = arg;
    if (unshare(CLONE_NEWNET) < 0) {
        j->failed_errno = errno;
        j->failed_step = "unshare";
        return NULL;
    }
    int s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (s >= 0) {
        struct ifreq ifr;
        memset(&ifr, 0, sizeof(ifr));
        strcpy(ifr.ifr_name, "lo");
        if (ioctl(s, SIOCGIFFLAGS, &ifr) == 0) {
            ifr.ifr_flags |= IFF_UP;
            (void)ioctl(s, SIOCSIFFLAGS, &ifr);
        }
        close(s);
    }
    if (mount("/proc/thread-self/ns/net", j->path, "none", MS_BIND, NULL) < 0) {
        j->failed_errno = errno;
        j->failed_step = "bind mount";
    }
    return NULL;
}

bool cni_netns_create(const char *path, ts_err *err)
{
    pthread_once(&_dir_once, _netns_dir_setup);
    int fd = open(path, O_RDONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0);
    if (fd < 0) {
        ts_err_set(err, "create %s: %s", path, strerror(errno));
        return false;
    }
    close(fd);
    netns_job j = {.path = path};
    pthread_t t;
    int rc = pthread_create(&t, NULL, _netns_thread, &j);
    if (rc != 0) {
        ts_err_set(err, "create network namespace %s: pthread_create: %s", path, strerror(rc));
        unlink(path);
        return false;
    }
    pthread_join(t, NULL);
    if (j.failed_step) {
        ts_err_set(err, "create network namespace %s: %s: %s", path, j.failed_step,
                   strerror(j.failed_errno));
        (void)umount2(path, MNT_DETACH);
        unlink(path);
        return false;
    }
    return true;
}

bool cni_netns_delete(const char *path, ts_err *err)
{
    if (umount2(path, MNT_DETACH) < 0 && errno != EINVAL && errno != ENOENT) {
        ts_err_set(err, "umount %s: %s", path, strerror(errno));
        return false;
    }
    if (unlink(path) < 0 && errno != ENOENT) {
        ts_err_set(err, "remove %s: %s", path, strerror(errno));
        return false;
    }
    return true;
}

/* The plugin's type: its file name. */
static const char *_type_of(const char *path)
{
    const char *slash = strrchr(path, '/');
    return slash ? slash + 1 : path;
}

static json_t *_bridge_conf(const cni_conf *c, const char *plugin)
{
    char *data = ts_asprintf("%s/networks", c->data_dir);
    json_t *j = json_pack(
        "{s:s, s:s, s:s, s:s, s:b, s:b, s:b, s:{s:s, s:[[{s:s}]], s:[{s:s}], s:s}}", "cniVersion",
        "1.0.0", "name", c->network, "type", _type_of(plugin), "bridge", c->network, "isGateway", 1,
        "ipMasq", 0, "hairpinMode", 1, "ipam", "type", "host-local", "ranges", "subnet", c->subnet,
        "routes", "dst", "0.0.0.0/0", "dataDir", data);
    free(data);
    return j;
}

char *cni_plugin_locate(const char *option, const char *plugin, const char *ours,
                        const char *bin_dir, ts_err *err)
{
    char *path;
    if (!plugin || !*plugin || strcmp(plugin, ours) == 0) {
        path = proc_sibling_path(ours, err);
        if (!path) return NULL;
    } else if (plugin[0] == '/') {
        path = ts_strdup(plugin);
    } else if (!strchr(plugin, '/') && strcmp(plugin, ".") != 0 && strcmp(plugin, "..") != 0) {
        path = ts_asprintf("%s/%s", bin_dir, plugin);
    } else {
        ts_err_set(err, "%s '%s': a plugin name or an absolute path", option, plugin);
        return NULL;
    }
    struct stat st;
    if (stat(path, &st) != 0) {
        ts_err_set(err, "%s: %s: %s", option, path, strerror(errno));
    } else if (!S_ISREG(st.st_mode) || access(path, X_OK) != 0) {
        ts_err_set(err, "%s: %s is not an executable file", option, path);
    } else {
        return path;
    }
    free(path);
    return NULL;
}

static json_t *_portmap_conf(const cni_conf *c, const char *plugin, const kernel_ports *ports,
                             int n, const char *prev)
{
    json_t *maps = json_array();
    for (int i = 0; i < n; i++)
        json_array_append_new(maps, json_pack("{s:i, s:i, s:s}", "hostPort", ports[i].host_port,
                                              "containerPort", ports[i].container_port, "protocol",
                                              "tcp"));
    json_t *j = json_pack("{s:s, s:s, s:s, s:{s:b}, s:b, s:{s:o}}", "cniVersion", "1.0.0", "name",
                          c->network, "type", _type_of(plugin), "capabilities", "portMappings", 1,
                          "snat", 1, "runtimeConfig", "portMappings", maps);
    if (prev) {
        json_t *p = json_loads(prev, 0, NULL);
        if (p) json_object_set_new(j, "prevResult", p);
    }
    return j;
}

/* Run one plugin (a path, or a name in bin_dir); *out gets its stdout on success. */
static bool _plugin(const cni_conf *c, const char *plugin, const char *cmd, const char *kernel_id,
                    const char *netns, json_t *conf, char **out, ts_err *err)
{
    char *stdin_data = json_dumps(conf, JSON_COMPACT);
    const char *type = _type_of(plugin);
    char *bin = plugin[0] == '/' ? ts_strdup(plugin) : ts_asprintf("%s/%s", c->bin_dir, plugin);
    char *e_cmd = ts_asprintf("CNI_COMMAND=%s", cmd);
    char *e_id = ts_asprintf("CNI_CONTAINERID=%s", kernel_id);
    char *e_ns = ts_asprintf("CNI_NETNS=%s", netns);
    char *e_path = ts_asprintf("CNI_PATH=%s", c->bin_dir);
    const char *path = getenv("PATH");
    char *e_syspath =
        ts_asprintf("PATH=%s", path && *path ? path : "/usr/sbin:/usr/bin:/sbin:/bin");
    const char *envp[] = {e_cmd, e_id, e_ns, "CNI_IFNAME=eth0", e_path, e_syspath, NULL};
    const char *argv[] = {bin, NULL};
    proc_opts o = {.argv = argv,
                   .envp = envp,
                   .stdin_data = stdin_data,
                   .stdin_len = strlen(stdin_data),
                   .timeout_ms = CNI_TIMEOUT_MS,
                   .cap_bytes = 1 << 20};
    exec_result r;
    bool ok = proc_run(&o, &r, err);
    if (ok && r.exit_code != 0) {
        /* plugins report errors as {"code":..,"msg":..,"details":..} on stdout */
        json_t *e = json_loads(r.out, 0, NULL);
        const char *msg = e ? json_string_value(json_object_get(e, "msg")) : NULL;
        const char *det = e ? json_string_value(json_object_get(e, "details")) : NULL;
        ts_err_set(err, "CNI %s %s: %s%s%s", type, cmd, msg ? msg : (r.err_len ? r.err : r.out),
                   det && *det ? ": " : "", det && *det ? det : "");
        if (r.timed_out) ts_err_set(err, "CNI %s %s: timed out", type, cmd);
        json_decref(e);
        ok = false;
    }
    if (ok && out) {
        *out = r.out;
        r.out = NULL;
    }
    exec_result_free(&r);
    free(stdin_data);
    free(bin);
    free(e_cmd);
    free(e_id);
    free(e_ns);
    free(e_path);
    free(e_syspath);
    return ok;
}

static bool _parse_ip(const char *result, char *ip, size_t size)
{
    json_t *j = json_loads(result, 0, NULL);
    json_t *ips = json_object_get(j, "ips");
    size_t i;
    json_t *v;
    bool ok = false;
    json_array_foreach(ips, i, v)
    {
        const char *a = json_string_value(json_object_get(v, "address"));
        if (!a || strchr(a, ':')) continue; /* IPv4 first */
        ts_strlcpy(ip, a, size);
        char *slash = strchr(ip, '/');
        if (slash) *slash = '\0';
        ok = true;
        break;
    }
    json_decref(j);
    return ok;
}

/* ---- outbound NAT: one rule per network ----------------------------------------------------
 * The bridge plugin's ipMasq makes a chain per container (nine iptables runs
 * on every ADD and DEL); one MASQUERADE rule for the subnet does the same for
 * every container of the network, added once per process. */

static pthread_mutex_t masq_mu = PTHREAD_MUTEX_INITIALIZER;
static char masq_done[8][64]; /* networks whose rule this process has checked */

static bool _iptables_masq(const char *op, const char *network, const char *subnet, ts_err *err)
{
    char comment[96];
    snprintf(comment, sizeof(comment), "tessera:%s", network);
    const char *argv[] = {"iptables", "-w",        "-t",    "nat", op,           "POSTROUTING",
                          "-s",       subnet,      "!",     "-d",  subnet,       "-m",
                          "comment",  "--comment", comment, "-j",  "MASQUERADE", NULL};
    proc_opts po = {.argv = argv, .timeout_ms = 10000};
    exec_result r;
    if (!proc_run(&po, &r, err)) return false;
    bool ok = r.exit_code == 0;
    if (!ok && err && strcmp(op, "-C") != 0)
        ts_err_set(err, "iptables %s POSTROUTING MASQUERADE for %s: exit %d: %.200s", op, subnet,
                   r.exit_code, r.err ? r.err : "");
    exec_result_free(&r);
    return ok;
}

static bool _masq_once(const cni_conf *c, ts_err *err)
{
    pthread_mutex_lock(&masq_mu);
    int free_slot = -1;
    for (int i = 0; i < (int)TS_ARRAY_LEN(masq_done); i++) {
        if (strcmp(masq_done[i], c->network) == 0) {
            pthread_mutex_unlock(&masq_mu);
            return true;
        }
        if (free_slot < 0 && !masq_done[i][0]) free_slot = i;
    }
    ts_err e2 = {{0}};
    bool ok = _iptables_masq("-C", c->network, c->subnet, &e2) ||
              _iptables_masq("-A", c->network, c->subnet, err);
    if (ok && free_slot >= 0) ts_strlcpy(masq_done[free_slot], c->network, sizeof(masq_done[0]));
    pthread_mutex_unlock(&masq_mu);
    return ok;
}

void cni_masq_remove(const char *network, const char *subnet)
{
    pthread_mutex_lock(&masq_mu);
    for (int i = 0; i < (int)TS_ARRAY_LEN(masq_done); i++)
        if (strcmp(masq_done[i], network) == 0) masq_done[i][0] = '\0';
    ts_err err = {{0}};
    while (_iptables_masq("-D", network, subnet, &err)) /* every copy */
        ;
    pthread_mutex_unlock(&masq_mu);
}

bool cni_add(const cni_conf *c, const char *kernel_id, const char *netns, const kernel_ports *ports,
             int n_ports, char **result, char *ip, size_t ip_size, ts_err *err)
{
    *result = NULL;
    if (!_masq_once(c, err)) return false;
    json_t *bc = _bridge_conf(c, c->bridge);
    char *res = NULL;
    bool ok = _plugin(c, c->bridge, "ADD", kernel_id, netns, bc, &res, err);
    json_decref(bc);
    if (!ok) return false;
    if (!_parse_ip(res, ip, ip_size)) {
        ts_err_set(err, "CNI %s ADD: no IPv4 address in the result", _type_of(c->bridge));
        ok = false;
    }
    if (ok && n_ports > 0) {
        json_t *pc = _portmap_conf(c, c->portmap, ports, n_ports, res);
        ok = _plugin(c, c->portmap, "ADD", kernel_id, netns, pc, NULL, err);
        json_decref(pc);
    }
    if (!ok) {
        ts_err dummy;
        if (!cni_del(c, kernel_id, netns, ports, n_ports, res, NULL, NULL,
                     &dummy)) { /* best effort */
        }
        free(res);
        return false;
    }
    *result = res;
    return true;
}

bool cni_del(const cni_conf *c, const char *kernel_id, const char *netns, const kernel_ports *ports,
             int n_ports, const char *prev_result, const char *bridge, const char *portmap,
             ts_err *err)
{
    bool ok = true;
    if (n_ports > 0) {
        const char *pm = portmap && access(portmap, X_OK) == 0 ? portmap : c->portmap;
        json_t *pc = _portmap_conf(c, pm, ports, n_ports, prev_result);
        if (!_plugin(c, pm, "DEL", kernel_id, netns, pc, NULL, err)) ok = false;
        json_decref(pc);
    }
    const char *br = bridge && access(bridge, X_OK) == 0 ? bridge : c->bridge;
    json_t *bc = _bridge_conf(c, br);
    if (prev_result) {
        json_t *p = json_loads(prev_result, 0, NULL);
        if (p) json_object_set_new(bc, "prevResult", p);
    }
    ts_err e2 = {{0}};
    if (!_plugin(c, br, "DEL", kernel_id, netns, bc, NULL, &e2)) {
        if (ok) *err = e2;
        ok = false;
    }
    json_decref(bc);
    return ok;
}
