/* cni.c: network namespaces, the CNI plugins (bridge and the port plugin)
 * and the network's rules (netfilter.h). */
#include "services/agent/cni.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <jansson.h>
#include <net/if.h>
#include <netdb.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "libcommon/log.h"
#include "libcommon/proc.h"
#include "services/agent/netfilter.h"
#include "services/agent/netsys.h"

#define NETNS_DIR "/run/netns"
#define CNI_TIMEOUT_MS 30000
#define RECORDS_DIR "/run/tessera-agent/netfilter"
#define MAX_PUBLISH 8

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

/* portIsolation and disableIPv6 are tessera-bridge's (br_conf.h); other
 * bridge plugins ignore them, and cni_add does their part itself. */
static json_t *_bridge_conf(const cni_conf *c, const char *plugin)
{
    char *data = ts_asprintf("%s/networks", c->data_dir);
    json_t *j = json_pack(
        "{s:s, s:s, s:s, s:s, s:b, s:b, s:b, s:b, s:b, s:{s:s, s:[[{s:s}]], s:[{s:s}], s:s}}",
        "cniVersion", "1.0.0", "name", c->network, "type", _type_of(plugin), "bridge", c->network,
        "isGateway", 1, "ipMasq", 0, "hairpinMode", 1, "portIsolation", 1, "disableIPv6", 1, "ipam",
        "type", "host-local", "ranges", "subnet", c->subnet, "routes", "dst", "0.0.0.0/0",
        "dataDir", data);
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

/* ---- the network's policy: process-wide, set at the agent's start ----------------- */

static pthread_mutex_t policy_mu = PTHREAD_MUTEX_INITIALIZER;
static netfilter_policy policy_nf;
static bool policy_set;
static char publish[MAX_PUBLISH][INET_ADDRSTRLEN]; /* none: every local address */
static int n_publish;
static char *policy_state_dir;

bool cni_publish_resolve(const char *option, const char *kernel_host, char out[][INET_ADDRSTRLEN],
                         int max, int *n, ts_err *err)
{
    *n = 0;
    struct in_addr a;
    if (option && strcmp(option, "*") == 0) return true;
    if (option && *option) {
        char item[64];
        for (const char *p = option; *p;) {
            while (*p == ',' || *p == ' ')
                p++;
            size_t k = strcspn(p, ", ");
            if (!k) break;
            snprintf(item, sizeof(item), "%.*s", (int)k, p);
            p += k;
            if (inet_pton(AF_INET, item, &a) != 1) {
                ts_err_set(err, "agent.cni_publish_addrs: '%s' is not an IPv4 address", item);
                return false;
            }
            if (*n == max) {
                ts_err_set(err, "agent.cni_publish_addrs: at most %d addresses", max);
                return false;
            }
            inet_ntop(AF_INET, &a, out[(*n)++], INET_ADDRSTRLEN);
        }
        return true;
    }
    /* the host wsproxy connects to: an address, or a name as this host
     * resolves it; those of the host's own addresses (DNAT matches only
     * those: an address NATed by someone else or a name that is loopback
     * here, like Debian's "127.0.1.1 <hostname>", would publish nothing) */
    if (!kernel_host || !*kernel_host) return true;
    struct addrinfo hints = {.ai_family = AF_INET, .ai_socktype = SOCK_STREAM}, *res = NULL;
    if (getaddrinfo(kernel_host, NULL, &hints, &res) != 0) return true;
    struct ifaddrs *ifs = NULL;
    if (getifaddrs(&ifs) != 0) ifs = NULL;
    bool other = false;
    for (struct addrinfo *r = res; r && *n < max; r = r->ai_next) {
        const struct in_addr *ra = &((const struct sockaddr_in *)r->ai_addr)->sin_addr;
        bool local = false;
        for (struct ifaddrs *i = ifs; i && !local; i = i->ifa_next)
            local = i->ifa_addr && i->ifa_addr->sa_family == AF_INET &&
                    ((const struct sockaddr_in *)i->ifa_addr)->sin_addr.s_addr == ra->s_addr;
        char ip[INET_ADDRSTRLEN];
        inet_ntop(AF_INET, ra, ip, sizeof(ip));
        bool dup = false;
        for (int i = 0; i < *n && !dup; i++)
            dup = strcmp(out[i], ip) == 0;
        if (!local || dup) continue;
        ts_strlcpy(out[(*n)++], ip, INET_ADDRSTRLEN);
        other |= (ntohl(ra->s_addr) >> 24) != 127;
    }
    if (ifs) freeifaddrs(ifs);
    freeaddrinfo(res);
    /* a name that is loopback only here is not what others reach */
    if (!other && inet_pton(AF_INET, kernel_host, &a) != 1) *n = 0;
    return true;
}

bool cni_policy_set(const cni_policy *p, ts_err *err)
{
    netfilter_policy nf;
    char pub[MAX_PUBLISH][INET_ADDRSTRLEN];
    int np = 0;
    if (!netfilter_policy_parse(p->deny, p->publish_from, p->host_ports, p->outbound, &nf, err) ||
        !cni_publish_resolve(p->publish_addrs, p->kernel_host, pub, MAX_PUBLISH, &np, err))
        return false;
    pthread_mutex_lock(&policy_mu);
    policy_nf = nf;
    memcpy(publish, pub, sizeof(publish));
    n_publish = np;
    free(policy_state_dir);
    policy_state_dir = p->state_dir && *p->state_dir ? ts_strdup(p->state_dir) : NULL;
    policy_set = true;
    pthread_mutex_unlock(&policy_mu);
    char list[MAX_PUBLISH * INET_ADDRSTRLEN] = "";
    for (int i = 0; i < np; i++)
        snprintf(list + strlen(list), sizeof(list) - strlen(list), "%s%s", i ? "," : "", pub[i]);
    static const char *const out[] = {"nat", "routed", "none"};
    TLOG_INFO("CNI network policy",
              "publish_addrs=%s publish_from=\"%s\" host_ports=\"%s\" deny=\"%s\" outbound=%s",
              np ? list : "*", p->publish_from ? p->publish_from : "",
              p->host_ports ? p->host_ports : "", p->deny ? p->deny : "", out[nf.outbound]);
    if (!np && (!p->publish_addrs || !*p->publish_addrs))
        TLOG_WARN("published ports answer on every address of the host",
                  "kernel_host=%s reason=\"it is no address of this host (or loopback only); "
                  "set agent.cni_publish_addrs\"",
                  p->kernel_host ? p->kernel_host : "");
    return true;
}

/* The policy in force (the defaults before cni_policy_set). */
static void _policy(netfilter_policy *nf, char pub[MAX_PUBLISH][INET_ADDRSTRLEN], int *np)
{
    pthread_mutex_lock(&policy_mu);
    if (policy_set)
        *nf = policy_nf;
    else
        netfilter_policy_default(nf);
    if (pub) memcpy(pub, publish, sizeof(publish));
    if (np) *np = n_publish;
    pthread_mutex_unlock(&policy_mu);
}

static char *_kernels_dir(void)
{
    pthread_mutex_lock(&policy_mu);
    char *d = policy_state_dir ? ts_asprintf("%s/kernels", policy_state_dir) : NULL;
    pthread_mutex_unlock(&policy_mu);
    return d;
}

/* Published on each address of agent.cni_publish_addrs (hostIP), or on
 * every local address when it names none. */
static json_t *_portmap_conf(const cni_conf *c, const char *plugin, const kernel_ports *ports,
                             int n, const char *prev)
{
    char pub[MAX_PUBLISH][INET_ADDRSTRLEN];
    int np = 0;
    netfilter_policy nf;
    _policy(&nf, pub, &np);
    json_t *maps = json_array();
    for (int i = 0; i < n; i++)
        for (int a = 0; a < (np ? np : 1); a++) {
            json_t *m = json_pack("{s:i, s:i, s:s}", "hostPort", ports[i].host_port,
                                  "containerPort", ports[i].container_port, "protocol", "tcp");
            if (np) json_object_set_new(m, "hostIP", json_string(pub[a]));
            json_array_append_new(maps, m);
        }
    json_t *j = json_pack("{s:s, s:s, s:s, s:{s:b}, s:b, s:{s:o}}", "cniVersion", "1.0.0", "name",
                          c->network, "type", _type_of(plugin), "capabilities", "portMappings", 1,
                          "snat", 1, "runtimeConfig", "portMappings", maps);
    if (prev) {
        json_t *p = json_loads(prev, 0, NULL);
        if (p) json_object_set_new(j, "prevResult", p);
    }
    return j;
}

bool cni_plugin_run(const cni_conf *c, const char *plugin, const char *cmd, const char *kernel_id,
                    const char *netns, const char *ifname, json_t *conf, char **out, ts_err *err)
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
    char *e_if = ts_asprintf("CNI_IFNAME=%s", ifname);
    const char *envp[] = {e_cmd, e_id, e_ns, e_if, e_path, e_syspath, NULL};
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
    free(e_if);
    free(e_path);
    free(e_syspath);
    return ok;
}

/* From the bridge plugin's result: the container's IPv4 address, its MAC
 * (the interface with a sandbox; "" when not said) and the host end of its
 * veth pair (neither the bridge nor in the sandbox; "" when not said). */
typedef struct attached {
    char ip[64];
    char mac[18];
    char host_if[IF_NAMESIZE];
} attached;

static bool _parse_result_json(json_t *j, const char *bridge, attached *a)
{
    memset(a, 0, sizeof(*a));
    size_t i;
    json_t *v;
    bool ok = false;
    json_array_foreach(json_object_get(j, "ips"), i, v)
    {
        const char *addr = json_string_value(json_object_get(v, "address"));
        if (!addr || strchr(addr, ':')) continue; /* IPv4 first */
        ts_strlcpy(a->ip, addr, sizeof(a->ip));
        char *slash = strchr(a->ip, '/');
        if (slash) *slash = '\0';
        ok = true;
        break;
    }
    json_array_foreach(json_object_get(j, "interfaces"), i, v)
    {
        const char *name = json_string_value(json_object_get(v, "name"));
        const char *mac = json_string_value(json_object_get(v, "mac"));
        if (!name) continue;
        if (json_object_get(v, "sandbox")) {
            if (mac && strlen(mac) == 17)
                for (int k = 0; k < 18; k++)
                    a->mac[k] = (char)(mac[k] >= 'A' && mac[k] <= 'F' ? mac[k] + 32 : mac[k]);
        } else if (strcmp(name, bridge) != 0 && strlen(name) < IF_NAMESIZE) {
            ts_strlcpy(a->host_if, name, sizeof(a->host_if));
        }
    }
    return ok;
}

static bool _parse_result(const char *result, const char *bridge, attached *a)
{
    json_t *j = json_loads(result, 0, NULL);
    bool ok = _parse_result_json(j, bridge, a);
    json_decref(j);
    return ok;
}

bool cni_result_host_if(const char *result, const char *network, char *buf, size_t size)
{
    attached a;
    if (!result || !_parse_result(result, network, &a) || !a.host_if[0]) return false;
    ts_strlcpy(buf, a.host_if, size);
    return true;
}

/* ---- the network's rules (netfilter.h) -------------------------------------------- */

static pthread_mutex_t net_mu = PTHREAD_MUTEX_INITIALIZER;
static char net_done[8][64]; /* networks whose rules this process has set up */

static netfilter_net _net(const char *network, const char *subnet, const netfilter_policy *nf,
                          const char *kernels_dir)
{
    return (netfilter_net){.network = network,
                           .subnet = subnet,
                           .policy = nf,
                           .records_dir = RECORDS_DIR,
                           .kernels_dir = kernels_dir};
}

static bool _isolate_port(const char *network, const attached *a, ts_err *err);

/* Kernels of the network that ran before their records existed (an agent
 * from before the network's rules): recorded from their state.json (address,
 * MAC, session), their ports isolated, so that setup gives them their rules. */
static void _adopt_kernels(const netfilter_net *n)
{
    DIR *d = n->kernels_dir ? opendir(n->kernels_dir) : NULL;
    struct dirent *e;
    while (d && (e = readdir(d))) {
        if (e->d_name[0] == '.') continue;
        char *path = ts_asprintf("%s/%s/state.json", n->kernels_dir, e->d_name);
        json_t *j = json_load_file(path, 0, NULL);
        free(path);
        json_t *res = json_object_get(j, "cni_result");
        attached a;
        bool mine = false;
        size_t i;
        json_t *v;
        json_array_foreach(json_object_get(res, "interfaces"), i, v)
        {
            const char *name = json_string_value(json_object_get(v, "name"));
            mine |= name && strcmp(name, n->network) == 0;
        }
        /* cluster_size 1: a kernel alone in its session, which has no rules;
         * no cluster_size: an agent from before it, whose kernels all had */
        json_t *cs = json_object_get(j, "cluster_size");
        bool alone = json_is_integer(cs) && json_integer_value(cs) <= 1;
        if (mine && !alone && _parse_result_json(res, n->network, &a)) {
            const char *sid = json_string_value(json_object_get(j, "session_id"));
            netfilter_kernel k;
            memset(&k, 0, sizeof(k));
            ts_strlcpy(k.id, e->d_name, sizeof(k.id));
            ts_strlcpy(k.ip, a.ip, sizeof(k.ip));
            ts_strlcpy(k.mac, a.mac, sizeof(k.mac));
            netfilter_session_key(n->network, sid && *sid ? sid : e->d_name, k.session);
            ts_err err = {{0}};
            if (!_isolate_port(n->network, &a, &err) || !netfilter_kernel_record(n, &k, &err))
                TLOG_WARN("kernel's network not isolated", "kernel=%s network=%s error=\"%s\"",
                          e->d_name, n->network, err.msg);
        }
        json_decref(j);
    }
    if (d) closedir(d);
}

bool cni_network_setup(const char *network, const char *subnet, ts_err *err)
{
    netfilter_policy nf;
    _policy(&nf, NULL, NULL);
    char *kdir = _kernels_dir();
    netfilter_net n = _net(network, subnet, &nf, kdir);
    _adopt_kernels(&n);
    pthread_mutex_lock(&net_mu);
    bool ok = netfilter_setup(&n, err);
    int free_slot = -1;
    for (int i = 0; ok && i < (int)TS_ARRAY_LEN(net_done); i++) {
        if (strcmp(net_done[i], network) == 0) free_slot = -2;
        if (free_slot == -1 && !net_done[i][0]) free_slot = i;
    }
    if (ok && free_slot >= 0) ts_strlcpy(net_done[free_slot], network, sizeof(net_done[0]));
    pthread_mutex_unlock(&net_mu);
    free(kdir);
    return ok;
}

/* The first ADD of a network in this process sets its rules up (the agent
 * does at its start; this is for runtimes used without it). */
static bool _network_once(const cni_conf *c, ts_err *err)
{
    pthread_mutex_lock(&net_mu);
    bool done = false;
    for (int i = 0; i < (int)TS_ARRAY_LEN(net_done) && !done; i++)
        done = strcmp(net_done[i], c->network) == 0;
    pthread_mutex_unlock(&net_mu);
    return done || cni_network_setup(c->network, c->subnet, err);
}

bool cni_network_remove(const char *network, const char *subnet, ts_err *err)
{
    (void)subnet;
    pthread_mutex_lock(&net_mu);
    for (int i = 0; i < (int)TS_ARRAY_LEN(net_done); i++)
        if (strcmp(net_done[i], network) == 0) net_done[i][0] = '\0';
    /* route_localnet only with the DROP of 127.0.0.0/8 (if the bridge is
     * still there) */
    char path[128];
    snprintf(path, sizeof(path), "/proc/sys/net/ipv4/conf/%s/route_localnet", network);
    int fd = strchr(network, '/') ? -1 : open(path, O_WRONLY | O_CLOEXEC);
    if (fd >= 0) {
        if (write(fd, "0", 1) != 1) { /* the bridge went meanwhile */
        }
        close(fd);
    }
    bool ok = netfilter_remove(network, RECORDS_DIR, err);
    pthread_mutex_unlock(&net_mu);
    return ok;
}

void cni_masq_remove(const char *network, const char *subnet)
{
    ts_err err = {{0}};
    if (!cni_network_remove(network, subnet, &err))
        TLOG_WARN("CNI network", "error=\"%s\"", err.msg);
}

static bool _write_sys(const char *path, const char *value, ts_err *err)
{
    int fd = open(path, O_WRONLY | O_CLOEXEC);
    bool ok = fd >= 0 && write(fd, value, strlen(value)) == (ssize_t)strlen(value);
    if (!ok) ts_err_set(err, "set %s: %s", path, strerror(errno));
    if (fd >= 0) close(fd);
    return ok;
}

static bool _run(const char *const *argv, const char *in, ts_err *err)
{
    proc_opts po = {
        .argv = argv, .stdin_data = in, .stdin_len = in ? strlen(in) : 0, .timeout_ms = 10000};
    exec_result r;
    if (!proc_run(&po, &r, err)) return false;
    bool ok = r.exit_code == 0;
    if (!ok) ts_err_set(err, "%s: exit %d: %.200s", argv[0], r.exit_code, r.err ? r.err : "");
    exec_result_free(&r);
    return ok;
}

/* What tessera-bridge's portIsolation and disableIPv6 do, for a bridge
 * plugin that does not (Debian's): the port isolated and locked to the
 * container's MAC, a permanent neighbour entry, proxy ARP, no IPv6 on the
 * bridge and the host end. Skipped when the port is isolated already. */
static bool _isolate_port(const char *network, const attached *a, ts_err *err)
{
    char path[160], buf[4] = "";
    netsys_path(path, sizeof(path), a->host_if, "brport/isolated");
    int fd = a->host_if[0] ? open(path, O_RDONLY | O_CLOEXEC) : -1;
    if (fd >= 0) {
        if (read(fd, buf, sizeof(buf) - 1) < 0) buf[0] = '\0';
        close(fd);
    }
    if (buf[0] == '1') return true;
    struct in_addr in;
    if (!a->host_if[0] || strlen(a->mac) != 17 || strpbrk(a->host_if, " \t\n/") ||
        strpbrk(a->mac, " \t\n") || inet_pton(AF_INET, a->ip, &in) != 1) {
        ts_err_set(err, "the bridge plugin's result names no host interface, container MAC or "
                        "address usable here");
        return false;
    }
    static const char *const v4[][2] = {
        {"conf", "proxy_arp"}, {"conf", "proxy_arp_pvlan"}, {"neigh", "proxy_delay"}};
    for (size_t i = 0; i < TS_ARRAY_LEN(v4); i++) {
        snprintf(path, sizeof(path), "/proc/sys/net/ipv4/%s/%s/%s", v4[i][0], network, v4[i][1]);
        if (!_write_sys(path, i == 2 ? "0" : "1", err)) return false;
    }
    const char *v6[] = {network, a->host_if};
    for (size_t i = 0; i < 2 && access("/proc/sys/net/ipv6", F_OK) == 0; i++) {
        snprintf(path, sizeof(path), "/proc/sys/net/ipv6/conf/%s/disable_ipv6", v6[i]);
        if (!_write_sys(path, "1", err)) return false;
    }
    /* the bridge's MAC fixed (as it is), or a port coming or going changes
     * it and flushes the permanent neighbour entries (tessera-bridge does
     * the same) */
    char fix[96] = "", mac[24] = "", type[4] = "";
    netsys_path(path, sizeof(path), network, "addr_assign_type");
    fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd >= 0) {
        if (read(fd, type, sizeof(type) - 1) < 0) type[0] = '\0';
        close(fd);
    }
    netsys_path(path, sizeof(path), network, "address");
    fd = type[0] != '3' ? open(path, O_RDONLY | O_CLOEXEC) : -1;
    if (fd >= 0) {
        if (read(fd, mac, 17) != 17) mac[0] = '\0';
        close(fd);
        unsigned char r[6] = {0};
        if (strncmp(mac, "00:00:00:00:00:00", 17) == 0 && getrandom(r, sizeof(r), 0) == 6)
            snprintf(mac, sizeof(mac), "%02x:%02x:%02x:%02x:%02x:%02x", (r[0] & 0xfe) | 0x02, r[1],
                     r[2], r[3], r[4], r[5]); /* no ports, no MAC: a new one */
        if (mac[0] && strncmp(mac, "00:00:00:00:00:00", 17) != 0)
            snprintf(fix, sizeof(fix), "link set dev %s address %.17s\n", network, mac);
    }
    char *batch = ts_asprintf("%slink set dev %s type bridge_slave isolated on learning off "
                              "locked on\nneigh replace %s lladdr %s dev %s nud permanent\n",
                              fix, a->host_if, a->ip, a->mac, network);
    const char *ip_argv[] = {"ip", "-batch", "-", NULL};
    const char *br_argv[] = {"bridge",   "fdb",    "replace", a->mac, "dev",
                             a->host_if, "master", "static",  NULL};
    bool ok = _run(br_argv, NULL, err) && _run(ip_argv, batch, err);
    free(batch);
    return ok;
}

static bool _bridge_is_ours(const char *plugin)
{
    return strcmp(_type_of(plugin), "tessera-bridge") == 0;
}

/* The kernel's rules (netfilter.h): ADD (a, its address and MAC) or DEL.
 * Not beside the port plugin: two iptables-restore runs at once cost a third
 * more CPU in all (their transactions collide and one starts again) and
 * saved a millisecond or two. */
static bool _rules(const cni_conf *c, bool add, const char *kernel_id, const char *session_id,
                   const attached *a, ts_err *err)
{
    netfilter_policy nf;
    _policy(&nf, NULL, NULL);
    char *kdir = add ? NULL : _kernels_dir();
    netfilter_net n = _net(c->network, c->subnet, &nf, kdir);
    bool ok;
    if (add) {
        netfilter_kernel k;
        memset(&k, 0, sizeof(k));
        if (!session_id || !*session_id) { /* alone in its session: no rules */
            free(kdir);
            return true;
        }
        const char *sid = session_id;
        ts_strlcpy(k.id, kernel_id, sizeof(k.id));
        ts_strlcpy(k.ip, a->ip, sizeof(k.ip));
        ts_strlcpy(k.mac, a->mac, sizeof(k.mac));
        netfilter_session_key(c->network, sid, k.session);
        ok = netfilter_kernel_add(&n, &k, err);
    } else {
        ok = netfilter_kernel_del(&n, kernel_id, err);
    }
    free(kdir);
    return ok;
}

bool cni_add(const cni_conf *c, const char *kernel_id, const char *session_id, const char *netns,
             const kernel_ports *ports, int n_ports, char **result, char *ip, size_t ip_size,
             ts_err *err)
{
    *result = NULL;
    if (!_network_once(c, err)) return false;
    json_t *bc = _bridge_conf(c, c->bridge);
    char *res = NULL;
    bool ok = cni_plugin_run(c, c->bridge, "ADD", kernel_id, netns, "eth0", bc, &res, err);
    json_decref(bc);
    if (!ok) return false;
    attached a;
    if (!_parse_result(res, c->network, &a)) {
        ts_err_set(err, "CNI %s ADD: no IPv4 address in the result", _type_of(c->bridge));
        ok = false;
    }
    ts_strlcpy(ip, a.ip, ip_size);
    if (ok && !_isolate_port(c->network, &a, err)) {
        ts_err_prefix(err, "kernel %s: isolating its bridge port", kernel_id);
        ok = false;
    }
    if (ok) ok = _rules(c, true, kernel_id, session_id, &a, err);
    if (ok && n_ports > 0) {
        json_t *pc = _portmap_conf(c, c->portmap, ports, n_ports, res);
        ok = cni_plugin_run(c, c->portmap, "ADD", kernel_id, netns, "eth0", pc, NULL, err);
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
        if (!cni_plugin_run(c, pm, "DEL", kernel_id, netns, "eth0", pc, NULL, err)) ok = false;
        json_decref(pc);
    }
    /* before the bridge plugin frees the address */
    ts_err e1 = {{0}};
    if (!_rules(c, false, kernel_id, NULL, NULL, &e1)) {
        if (ok) *err = e1;
        ok = false;
    }
    const char *br = bridge && access(bridge, X_OK) == 0 ? bridge : c->bridge;
    attached a;
    /* the neighbour entry _isolate_port made, before the address is free */
    if (!_bridge_is_ours(br) && prev_result && _parse_result(prev_result, c->network, &a)) {
        const char *argv[] = {"ip", "neigh", "del", a.ip, "dev", c->network, NULL};
        ts_err ignored = {{0}};
        (void)_run(argv, NULL, &ignored); /* none there: not an error */
    }
    json_t *bc = _bridge_conf(c, br);
    if (prev_result) {
        json_t *p = json_loads(prev_result, 0, NULL);
        if (p) json_object_set_new(bc, "prevResult", p);
    }
    ts_err e2 = {{0}};
    if (!cni_plugin_run(c, br, "DEL", kernel_id, netns, "eth0", bc, NULL, &e2)) {
        if (ok) *err = e2;
        ok = false;
    }
    json_decref(bc);
    return ok;
}
