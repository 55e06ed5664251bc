/* tessera-portmap: a CNI plugin that publishes container ports on host ports
 * (chained after bridge, as the reference `portmap` plugin with snat), in
 * two iptables runs per ADD or DEL instead of about thirty.
 *
 * CNI_COMMAND ADD / DEL / CHECK / VERSION, CNI_CONTAINERID, CNI_NETNS,
 * CNI_IFNAME; the network configuration on stdin (pm_conf.h). ADD prints
 * prevResult back; an error is CNI error JSON on stdout and exit status 1.
 * Every run that changes rules holds PM_LOCK_PATH from its iptables-save to
 * the end of its iptables-restore, so runs on one host cannot interleave
 * their check-then-create of the shared chains. The rules: pm_rules.h.
 *
 * Fast paths, without iptables-save (half the iptables runs):
 * - every ADD records its container's jump lines in PM_STATE_DIR/<chain>
 *   (tmpfs: gone at a reboot, with the rules), and a DEL that finds the
 *   record deletes exactly those and the chain in one restore;
 * - an ADD of a container without a record, within PM_VERIFY_MS of the last
 *   ADD that read the whole table (PM_STATE_DIR/verified.<net>), trusts the
 *   shared chains and rules that one made or found, and only adds its own.
 * A fast restore the kernel refuses (a shared chain or a recorded rule is
 * gone) falls back to the full read-plan-apply run, which repairs. Between
 * two full runs, shared entry rules someone else deleted are not noticed
 * (at most PM_VERIFY_MS while ADDs keep coming). */
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "services/cni-portmap/pm_conf.h"
#include "services/cni-portmap/pm_host.h"
#include "services/cni-portmap/pm_rules.h"

#define PM_STATE_DIR "/run/tessera-portmap"
#define PM_VERIFY_MS 10000

static char *_record_path(const char *net, const char *cid)
{
    char chain[PM_CHAIN_LEN];
    pm_chain_name(net, cid, chain);
    return ts_asprintf(PM_STATE_DIR "/%s", chain);
}

static char *_read_record(const char *path)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0) return NULL;
    char buf[16384];
    ssize_t n = read(fd, buf, sizeof(buf) - 1);
    close(fd);
    if (n <= 0 || n == (ssize_t)sizeof(buf) - 1) return NULL; /* empty or cut: not trusted */
    buf[n] = '\0';
    return ts_strdup(buf);
}

/* A record that cannot be written is removed: DEL then reads the table. */
static void _write_record(const char *path, const char *text)
{
    (void)mkdir(PM_STATE_DIR, 0700);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
    size_t n = strlen(text);
    bool ok = fd >= 0 && write(fd, text, n) == (ssize_t)n;
    if (fd >= 0 && close(fd) != 0) ok = false;
    if (!ok) unlink(path);
}

static char *_stamp_path(const char *net)
{
    return ts_asprintf(PM_STATE_DIR "/verified.%s", net);
}

static bool _stamp_fresh(const char *net)
{
    char *path = _stamp_path(net);
    struct stat st;
    bool fresh = false;
    if (stat(path, &st) == 0) {
        struct timespec now;
        clock_gettime(CLOCK_REALTIME, &now);
        int64_t age = ((int64_t)now.tv_sec - st.st_mtim.tv_sec) * 1000 +
                      (now.tv_nsec - st.st_mtim.tv_nsec) / 1000000;
        fresh = age >= 0 && age < PM_VERIFY_MS;
    }
    free(path);
    return fresh;
}

static void _stamp_touch(const char *net)
{
    (void)mkdir(PM_STATE_DIR, 0700);
    char *path = _stamp_path(net);
    int fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd >= 0) {
        (void)futimens(fd, NULL);
        close(fd);
    }
    free(path);
}

/* Under the lock: read the nat table; *t parsed. */
static bool _load(ipt_table *t, cnip_error *e)
{
    char *save = NULL;
    ts_err err = {{0}};
    if (!pm_ipt_save(&save, &err)) {
        cnip_error_set(e, PM_E_IPTABLES, "cannot read the nat table", "%s", err.msg);
        return false;
    }
    bool ok = ipt_table_parse(save, "nat", t, &err);
    if (!ok) cnip_error_set(e, PM_E_IPTABLES, "cannot read the nat table", "%s", err.msg);
    free(save);
    return ok;
}

static bool _apply(const char *rules, cnip_error *e)
{
    ts_err err = {{0}};
    if (pm_ipt_restore(rules, &err)) return true;
    cnip_error_set(e, PM_E_IPTABLES, "cannot apply the port mapping rules", "%s", err.msg);
    return false;
}

/* The fast path (see the top): true when its one iptables-restore was applied. */
static bool _fast(bool add, const pm_conf *c, const char *cid, const char *record,
                  const char *jumps)
{
    char *rules = NULL;
    if (add && access(record, F_OK) != 0 && _stamp_fresh(c->name))
        rules = pm_plan_add_fast(c, cid, jumps);
    else if (!add && jumps)
        rules = pm_plan_del_fast(c->name, cid, jumps);
    if (!rules) return false;
    ts_err err = {{0}};
    bool ok = pm_ipt_restore(rules, &err);
    free(rules);
    return ok;
}

/* Under the host's lock: the fast path where it applies; otherwise (or when
 * the kernel refused it) read the nat table, plan ADD's or DEL's changes and
 * apply them in one iptables-restore (a DEL with nothing to remove applies
 * nothing). */
static bool _change(bool add, const pm_conf *c, const char *cid, cnip_error *e)
{
    ts_err err = {{0}};
    int lock = -1;
    if (!pm_lock(PM_LOCK_PATH, &lock, &err)) {
        cnip_error_set(e, CNIP_E_IO, "cannot take the lock", "%s", err.msg);
        return false;
    }
    char *record = _record_path(c->name, cid);
    char *jumps = add ? pm_jump_lines(c, cid) : _read_record(record);
    bool ok = true;
    if (!_fast(add, c, cid, record, jumps)) {
        ipt_table t;
        ok = _load(&t, e);
        if (ok) {
            char *rules = add ? pm_plan_add(c, cid, &t) : pm_plan_del(c->name, cid, &t);
            if (rules) ok = _apply(rules, e);
            free(rules);
            ipt_table_free(&t);
        }
        if (ok && add) _stamp_touch(c->name);
    }
    if (ok && add)
        _write_record(record, jumps);
    else if (ok)
        unlink(record);
    free(jumps);
    free(record);
    close(lock);
    return ok;
}

static bool _add(const pm_conf *c, const char *cid, cnip_error *e)
{
    if (c->n_maps == 0) return true;
    ts_err err = {{0}};
    char ifname[IF_NAMESIZE];
    /* 127.0.0.1 DNATed to the container leaves through this interface:
     * without route_localnet the kernel drops it as a martian. Only where a
     * mapping answers on loopback: the setting also lets that interface
     * take packets to 127.0.0.0/8 in (the agent drops them, netfilter.h). */
    if (c->snat && pm_conf_on_loopback(c) && pm_route_iface(c->container_ip, ifname) &&
        !pm_route_localnet_set(ifname, &err)) {
        cnip_error_set(e, CNIP_E_IO, "cannot enable route_localnet", "%s", err.msg);
        return false;
    }
    return _change(true, c, cid, e);
}

static bool _del(const pm_conf *c, const char *cid, cnip_error *e)
{
    return _change(false, c, cid, e);
}

static bool _check(const pm_conf *c, const char *cid, cnip_error *e)
{
    if (c->n_maps == 0) return true;
    ipt_table t;
    if (!_load(&t, e)) return false;
    bool ok = pm_plan_check(c, cid, &t, e);
    ipt_table_free(&t);
    char ifname[IF_NAMESIZE];
    if (ok && c->snat && pm_conf_on_loopback(c) && pm_route_iface(c->container_ip, ifname) &&
        !pm_route_localnet_on(ifname)) {
        cnip_error_set(e, PM_E_MISSING, "port mapping rules missing",
                       "net.ipv4.conf.%s.route_localnet is not 1", ifname);
        ok = false;
    }
    return ok;
}

static bool _parse_cb(void *self, const cnip_request *r, const char *text, size_t len,
                      cnip_error *e)
{
    return pm_conf_parse(text, len, r->cmd, self, e);
}

static bool _add_cb(void *self, const cnip_request *r, cnip_error *e)
{
    return _add(self, r->cid, e);
}

static bool _del_cb(void *self, const cnip_request *r, cnip_error *e)
{
    return _del(self, r->cid, e);
}

static bool _check_cb(void *self, const cnip_request *r, cnip_error *e)
{
    return _check(self, r->cid, e);
}

/* A chained plugin passes the previous result on, unchanged. */
static void _print_cb(void *self, const cnip_request *r)
{
    (void)r;
    const pm_conf *c = self;
    json_dumpf(c->prev_result, stdout, JSON_COMPACT);
    fputc('\n', stdout);
}

static const char *_version_cb(void *self)
{
    const pm_conf *c = self;
    return c->cni_version;
}

static void _release_cb(void *self)
{
    pm_conf_free(self);
}

int main(void)
{
    pm_conf c;
    memset(&c, 0, sizeof(c));
    cnip_plugin p = {.self = &c,
                     .parse = _parse_cb,
                     .add = _add_cb,
                     .del = _del_cb,
                     .check = _check_cb,
                     .print_result = _print_cb,
                     .version = _version_cb,
                     .release = _release_cb};
    return cnip_main(&p);
}
