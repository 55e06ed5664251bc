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

/* Under the lock: read the nat table; *t parsed. */
static bool _load(pm_table *t, cnip_error *e)
{
    char *save = NULL;
    ts_err err = {{0}};
    if (!pm_ipt_save(&save, &err)) {
        cnip_error_set(e, PM_E_IPTABLES, "cannot read the nat table", "%s", err.msg);
        return false;
    }
    bool ok = pm_table_parse(save, t, &err);
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

/* Under the host's lock: read the nat table, plan ADD's or DEL's changes and
 * apply them in one iptables-restore (a DEL with nothing to remove applies
 * nothing). */
static bool _change(bool add, const pm_conf *c, const char *cid, cnip_error *e)
{
    ts_err err = {{0}};
    int lock = pm_lock(PM_LOCK_PATH, &err);
    if (lock < 0) {
        cnip_error_set(e, CNIP_E_IO, "cannot take the lock", "%s", err.msg);
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

static bool _add(const pm_conf *c, const char *cid, cnip_error *e)
{
    if (c->n_maps == 0) return true;
    ts_err err = {{0}};
    char ifname[IF_NAMESIZE];
    /* 127.0.0.1 DNATed to the container leaves through this interface:
     * without route_localnet the kernel drops it as a martian */
    if (c->snat && pm_route_iface(c->container_ip, ifname) &&
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
    pm_table t;
    if (!_load(&t, e)) return false;
    bool ok = pm_plan_check(c, cid, &t, e);
    pm_table_free(&t);
    char ifname[IF_NAMESIZE];
    if (ok && c->snat && pm_route_iface(c->container_ip, ifname) && !pm_route_localnet_on(ifname)) {
        cnip_error_set(e, PM_E_MISSING, "port mapping rules missing",
                     "net.ipv4.conf.%s.route_localnet is not 1", ifname);
        ok = false;
    }
    return ok;
}

int main(void)
{
    cnip_error e = {0};
    cnip_cmd cmd;
    if (!cnip_command(&cmd, &e)) return cnip_fail(NULL, &e);
    if (cmd == CNIP_VERSION) return cnip_version();
    const char *cid, *netns, *ifname;
    if (!cnip_env(cmd, &cid, &netns, &ifname, &e)) return cnip_fail(NULL, &e);
    size_t len = 0;
    char *text = cnip_read_stdin(&len, &e);
    if (!text) return cnip_fail(NULL, &e);
    pm_conf c;
    bool ok = pm_conf_parse(text, len, cmd, &c, &e);
    free(text);
    if (!ok) return cnip_fail(NULL, &e);
    if (cmd == CNIP_ADD)
        ok = _add(&c, cid, &e);
    else if (cmd == CNIP_DEL)
        ok = _del(&c, cid, &e);
    else
        ok = _check(&c, cid, &e);
    int rc = 0;
    if (!ok) {
        rc = cnip_fail(c.cni_version, &e);
    } else if (cmd == CNIP_ADD) {
        /* a chained plugin passes the previous result on, unchanged */
        json_dumpf(c.prev_result, stdout, JSON_COMPACT);
        fputc('\n', stdout);
    }
    pm_conf_free(&c);
    if (fflush(stdout) != 0) rc = 1;
    return rc;
}
