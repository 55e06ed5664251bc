/* tessera-portmap: a CNI plugin that publishes container ports on host ports
 * (chained after bridge, as the reference `portmap` plugin with snat), in
 * two iptables runs per ADD or DEL instead of about thirty.
 *
 * CNI_COMMAND ADD / DEL / CHECK / VERSION, CNI_CONTAINERID, CNI_NETNS,
 * CNI_IFNAME; the network configuration on stdin (pm_conf.h). ADD prints
 * prevResult back; an error is CNI error JSON on stdout and exit status 1.
 * Every run that changes rules holds PM_LOCK_PATH from its iptables-save to
 * the end of its iptables-restore, so runs on one host cannot interleave
 * their check-then-create of the shared chains. The rules: pm_rules.h. */
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "services/agent/cni-portmap/pm_conf.h"
#include "services/agent/cni-portmap/pm_host.h"
#include "services/agent/cni-portmap/pm_rules.h"

#define STDIN_MAX (4u << 20)

static int _fail(const char *version, const pm_error *e)
{
    json_t *j = json_pack("{s:s, s:i, s:s, s:s}", "cniVersion", version ? version : "1.0.0", "code",
                          e->code, "msg", e->msg, "details", e->details);
    json_dumpf(j, stdout, JSON_COMPACT);
    fputc('\n', stdout);
    json_decref(j);
    return 1;
}

static int _version(void)
{
    json_t *v = json_array();
    for (int i = 0; pm_supported_versions[i]; i++)
        json_array_append_new(v, json_string(pm_supported_versions[i]));
    json_t *j = json_pack("{s:s, s:o}", "cniVersion", "1.0.0", "supportedVersions", v);
    json_dumpf(j, stdout, JSON_COMPACT);
    fputc('\n', stdout);
    json_decref(j);
    return 0;
}

static char *_read_stdin(size_t *len, pm_error *e)
{
    size_t cap = 8192, n = 0;
    char *buf = ts_malloc(cap);
    for (;;) {
        if (n == cap) {
            if (cap >= STDIN_MAX) {
                pm_error_set(e, PM_E_IO, "network configuration too large", "over %u bytes",
                             STDIN_MAX);
                free(buf);
                return NULL;
            }
            cap *= 2;
            buf = ts_realloc(buf, cap);
        }
        ssize_t r = read(0, buf + n, cap - n);
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) {
            pm_error_set(e, PM_E_IO, "cannot read the network configuration", "stdin: %s",
                         strerror(errno));
            free(buf);
            return NULL;
        }
        if (r == 0) break;
        n += (size_t)r;
    }
    *len = n;
    return buf;
}

static bool _env(pm_cmd cmd, const char **cid, pm_error *e)
{
    *cid = getenv("CNI_CONTAINERID");
    const char *netns = getenv("CNI_NETNS"), *ifname = getenv("CNI_IFNAME");
    if (!*cid || !**cid) {
        pm_error_set(e, PM_E_ENV, "invalid environment", "CNI_CONTAINERID is not set");
    } else if (!pm_valid_name(*cid, PM_MAX_ID)) {
        pm_error_set(e, PM_E_ENV, "invalid environment",
                     "CNI_CONTAINERID %.80s: want letters, digits, '_', '.', '-' (at most %d)",
                     *cid, PM_MAX_ID);
    } else if (!ifname || !*ifname) {
        pm_error_set(e, PM_E_ENV, "invalid environment", "CNI_IFNAME is not set");
    } else if (cmd != PM_DEL && (!netns || !*netns)) {
        pm_error_set(e, PM_E_ENV, "invalid environment", "CNI_NETNS is not set");
    } else {
        return true;
    }
    return false;
}

/* Under the lock: read the nat table; *t parsed. */
static bool _load(pm_table *t, pm_error *e)
{
    char *save = NULL;
    ts_err err = {{0}};
    if (!pm_ipt_save(&save, &err)) {
        pm_error_set(e, PM_E_IPTABLES, "cannot read the nat table", "%s", err.msg);
        return false;
    }
    bool ok = pm_table_parse(save, t, &err);
    if (!ok) pm_error_set(e, PM_E_IPTABLES, "cannot read the nat table", "%s", err.msg);
    free(save);
    return ok;
}

static bool _apply(const char *rules, pm_error *e)
{
    ts_err err = {{0}};
    if (pm_ipt_restore(rules, &err)) return true;
    pm_error_set(e, PM_E_IPTABLES, "cannot apply the port mapping rules", "%s", err.msg);
    return false;
}

/* Under the host's lock: read the nat table, plan ADD's or DEL's changes and
 * apply them in one iptables-restore (a DEL with nothing to remove applies
 * nothing). */
static bool _change(bool add, const pm_conf *c, const char *cid, pm_error *e)
{
    ts_err err = {{0}};
    int lock = pm_lock(PM_LOCK_PATH, &err);
    if (lock < 0) {
        pm_error_set(e, PM_E_IO, "cannot take the lock", "%s", err.msg);
        return false;
    }
    pm_table t;
    bool ok = _load(&t, e);
    if (ok) {
        char *rules = add ? pm_plan_add(c, cid, &t) : pm_plan_del(c->name, cid, &t);
        if (rules) ok = _apply(rules, e);
        free(rules);
        pm_table_free(&t);
    }
    close(lock);
    return ok;
}

static bool _add(const pm_conf *c, const char *cid, pm_error *e)
{
    if (c->n_maps == 0) return true;
    ts_err err = {{0}};
    char ifname[IF_NAMESIZE];
    /* 127.0.0.1 DNATed to the container leaves through this interface:
     * without route_localnet the kernel drops it as a martian */
    if (c->snat && pm_route_iface(c->container_ip, ifname) &&
        !pm_route_localnet_set(ifname, &err)) {
        pm_error_set(e, PM_E_IO, "cannot enable route_localnet", "%s", err.msg);
        return false;
    }
    return _change(true, c, cid, e);
}

static bool _del(const pm_conf *c, const char *cid, pm_error *e)
{
    return _change(false, c, cid, e);
}

static bool _check(const pm_conf *c, const char *cid, pm_error *e)
{
    if (c->n_maps == 0) return true;
    pm_table t;
    if (!_load(&t, e)) return false;
    bool ok = pm_plan_check(c, cid, &t, e);
    pm_table_free(&t);
    char ifname[IF_NAMESIZE];
    if (ok && c->snat && pm_route_iface(c->container_ip, ifname) && !pm_route_localnet_on(ifname)) {
        pm_error_set(e, PM_E_MISSING, "port mapping rules missing",
                     "net.ipv4.conf.%s.route_localnet is not 1", ifname);
        ok = false;
    }
    return ok;
}

int main(void)
{
    pm_error e = {0};
    const char *cmd_s = getenv("CNI_COMMAND");
    pm_cmd cmd;
    if (!cmd_s || !*cmd_s) {
        pm_error_set(&e, PM_E_ENV, "invalid environment", "CNI_COMMAND is not set");
        return _fail(NULL, &e);
    } else if (strcmp(cmd_s, "ADD") == 0) {
        cmd = PM_ADD;
    } else if (strcmp(cmd_s, "DEL") == 0) {
        cmd = PM_DEL;
    } else if (strcmp(cmd_s, "CHECK") == 0) {
        cmd = PM_CHECK;
    } else if (strcmp(cmd_s, "VERSION") == 0) {
        return _version();
    } else {
        pm_error_set(&e, PM_E_ENV, "invalid environment",
                     "CNI_COMMAND %.40s: want ADD, DEL, CHECK or VERSION", cmd_s);
        return _fail(NULL, &e);
    }
    const char *cid;
    if (!_env(cmd, &cid, &e)) return _fail(NULL, &e);
    size_t len = 0;
    char *text = _read_stdin(&len, &e);
    if (!text) return _fail(NULL, &e);
    pm_conf c;
    bool ok = pm_conf_parse(text, len, cmd, &c, &e);
    free(text);
    if (!ok) return _fail(NULL, &e);
    if (cmd == PM_ADD)
        ok = _add(&c, cid, &e);
    else if (cmd == PM_DEL)
        ok = _del(&c, cid, &e);
    else
        ok = _check(&c, cid, &e);
    int rc = 0;
    if (!ok) {
        rc = _fail(c.cni_version, &e);
    } else if (cmd == PM_ADD) {
        /* a chained plugin passes the previous result on, unchanged */
        json_dumpf(c.prev_result, stdout, JSON_COMPACT);
        fputc('\n', stdout);
    }
    pm_conf_free(&c);
    if (fflush(stdout) != 0) rc = 1;
    return rc;
}
