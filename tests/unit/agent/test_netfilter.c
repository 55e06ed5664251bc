/* test_agent_netfilter.c: services/agent/netfilter.c, the agent's iptables
 * rules for a CNI network.
 *
 * Without root: the options (agent.cni_deny, agent.cni_publish_from,
 * agent.cni_host_ports, agent.cni_outbound) parsed and refused, and the
 * iptables-restore input each change makes from iptables-save output and
 * the kernels' records: setup on an empty table and over leftovers
 * (duplicate jumps, a stale session chain, a masquerade rule of the wrong
 * subnet or mode), a kernel's ADD (first of its session, second, replacing
 * a kernel whose DEL never came), DEL (last of its session or not), and the
 * network's removal, which leaves other networks alone.
 *
 * As root, with the real plugins (tessera-bridge, tessera-portmap) through
 * cni_add / cni_del on a bridge of the test's own (tstnf0, 10.231.190.0/24),
 * namespaces standing in for kernels, servers in them and on the host:
 * kernels of two sessions cannot reach each other (TCP, UDP, ICMP), two of
 * one session can; a kernel reaches no listener on the host (127.0.0.1,
 * also with a raw frame to the gateway's MAC; the bridge address; another
 * address of the host); a forged source address or MAC gets nowhere; the
 * published port answers on the published address and not from a kernel
 * of another session; 169.254.0.0/16 is dropped; a kernel attached by
 * Debian's bridge plugin gets the same isolation; the rules are back after
 * they were flushed and the agent set the network up again (its restart),
 * also for a kernel known only from its state.json (an agent from before
 * the records); DEL and the network's removal leave no rule, chain or
 * record; eight kernels added and deleted at once each get their rules
 * exactly once. */
#include "services/agent/cni.h"
#include "services/agent/netfilter.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "tests/unit/agent/shell_util.h"

#include <fcntl.h>
#include <jansson.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "libcommon/proc.h"

/* ---- the options ------------------------------------------------------------------ */

static void refused(const char *deny, const char *from, const char *ports, const char *out,
                    const char *says)
{
    netfilter_policy p;
    ts_err err = {{0}};
    if (netfilter_policy_parse(deny, from, ports, out, &p, &err))
        fail_msg("accepted deny=%s from=%s ports=%s outbound=%s", deny, from, ports, out);
    if (!strstr(err.msg, says)) fail_msg("'%s' does not say '%s'", err.msg, says);
}

static void test_policy(void **state)
{
    (void)state;
    netfilter_policy p;
    netfilter_policy_default(&p);
    assert_int_equal(p.n_deny, 1);
    assert_string_equal(p.deny[0], "169.254.0.0/16");
    assert_int_equal(p.n_publish_from, 0);
    assert_int_equal(p.n_host_ports, 0);
    assert_int_equal(p.outbound, NETFILTER_OUT_NAT);
    ts_err err = {{0}};
    assert_true(netfilter_policy_parse(" 169.254.0.0/16, 10.1.2.3/8,192.0.2.7 ", "192.0.2.0/24",
                                       "udp/53, TCP/53,8080", "none", &p, &err));
    assert_int_equal(p.n_deny, 3);
    assert_string_equal(p.deny[1], "10.0.0.0/8"); /* host bits cleared */
    assert_string_equal(p.deny[2], "192.0.2.7/32");
    assert_int_equal(p.n_publish_from, 1);
    assert_string_equal(p.publish_from[0], "192.0.2.0/24");
    assert_int_equal(p.n_host_ports, 3);
    assert_string_equal(p.host_ports[0].proto, "udp");
    assert_int_equal(p.host_ports[0].port, 53);
    assert_string_equal(p.host_ports[1].proto, "tcp");
    assert_string_equal(p.host_ports[2].proto, "tcp");
    assert_int_equal(p.host_ports[2].port, 8080);
    assert_int_equal(p.outbound, NETFILTER_OUT_NONE);
    assert_true(netfilter_policy_parse("", NULL, "", "routed", &p, &err));
    assert_int_equal(p.n_deny, 0);
    assert_int_equal(p.outbound, NETFILTER_OUT_ROUTED);
    assert_true(netfilter_policy_parse(NULL, NULL, NULL, NULL, &p, &err));
    assert_int_equal(p.outbound, NETFILTER_OUT_NAT);
    refused("10.0.0.0/33", "", "", "nat", "agent.cni_deny: '10.0.0.0/33' is not an IPv4");
    refused("fd00::/8", "", "", "nat", "agent.cni_deny: 'fd00::/8'");
    refused("", "10.0.0.0/", "", "nat", "agent.cni_publish_from: '10.0.0.0/'");
    refused("", "", "sctp/9", "nat", "agent.cni_host_ports: 'sctp/9': the protocol");
    refused("", "", "udp/0", "nat", "agent.cni_host_ports: '0' is not a port");
    refused("", "", "70000", "nat", "'70000' is not a port");
    refused("", "", "udp/", "nat", "'' is not a port");
    refused("", "", "", "open", "agent.cni_outbound: 'open'");
    char many[40 * 20] = "";
    for (int i = 0; i < 33; i++)
        snprintf(many + strlen(many), sizeof(many) - strlen(many), "10.0.%d.0/24,", i);
    refused(many, "", "", "nat", "at most 32");
    char cidr[NETFILTER_CIDR_LEN];
    assert_true(netfilter_cidr_parse("0.0.0.0/0", cidr));
    assert_string_equal(cidr, "0.0.0.0/0");
    assert_false(netfilter_cidr_parse("1.2.3.4/8 ", cidr));
    assert_false(netfilter_cidr_parse("", cidr));
}

static void test_session_key(void **state)
{
    (void)state;
    char a[17], b[17], c[17], d[17];
    netfilter_session_key("tessera0", "s1", a);
    netfilter_session_key("tessera0", "s1", b);
    netfilter_session_key("tessera0", "s2", c);
    netfilter_session_key("tessera1", "s1", d);
    assert_int_equal(strlen(a), 16);
    assert_string_equal(a, b);
    assert_string_not_equal(a, c);
    assert_string_not_equal(a, d);
    /* the network and the session are not simply glued together */
    netfilter_session_key("tessera0s", "1", d);
    assert_string_not_equal(a, d);
}

/* ---- the rules -------------------------------------------------------------------- */

static netfilter_policy g_pol;

static netfilter_net net_of(const char *name)
{
    return (netfilter_net){.network = name,
                           .subnet = "10.88.0.0/16",
                           .policy = &g_pol,
                           .records_dir = "/nonexistent",
                           .kernels_dir = NULL};
}

static netfilter_kernel kern(const char *id, const char *ip, const char *session)
{
    netfilter_kernel k;
    memset(&k, 0, sizeof(k));
    snprintf(k.id, sizeof(k.id), "%s", id);
    snprintf(k.ip, sizeof(k.ip), "%s", ip);
    snprintf(k.mac, sizeof(k.mac), "02:00:00:00:00:%02x", (unsigned)strlen(id) + (unsigned)ip[7]);
    netfilter_session_key("tessera0", session, k.session);
    return k;
}

/* The line is in text (whole lines). */
static bool has(const char *text, const char *line)
{
    size_t n = strlen(line);
    for (const char *p = text; (p = strstr(p, line)); p++)
        if ((p == text || p[-1] == '\n') && (p[n] == '\n' || p[n] == '\0')) return true;
    return false;
}

#define HAS(text, line)                                                                            \
    do {                                                                                           \
        if (!has(text, line)) fail_msg("missing line:\n%s\nin:\n%s", line, text);                  \
    } while (0)
#define HASNT(text, line)                                                                          \
    do {                                                                                           \
        if (has(text, line)) fail_msg("unexpected line:\n%s\nin:\n%s", line, text);                \
    } while (0)

/* a before b in text */
static void before(const char *text, const char *a, const char *b)
{
    const char *pa = strstr(text, a), *pb = strstr(text, b);
    if (!pa || !pb || pa > pb) fail_msg("'%s' is not before '%s' in:\n%s", a, b, text);
}

static int count(const char *text, const char *what)
{
    int n = 0;
    for (const char *p = text; (p = strstr(p, what)); p++)
        n++;
    return n;
}

static char *ses_rule(const char *op, const netfilter_kernel *k)
{
    return ts_asprintf("%s TESSERA-SES-tessera0%s -s %s/32 -m mac --mac-source %s -m comment "
                       "--comment \"tessera:tessera0:%s\" -g TESSERA-S-%s",
                       op, strcmp(op, "-I") == 0 ? " 1" : "", k->ip, k->mac, k->id, k->session);
}

static char *member_rule(const char *op, const netfilter_kernel *k)
{
    return ts_asprintf("%s TESSERA-S-%s -d %s/32 -m comment --comment \"tessera:tessera0:%s\" -j "
                       "ACCEPT",
                       op, k->session, k->ip, k->id);
}

static void has_kernel(const char *text, const char *op, const netfilter_kernel *k)
{
    char *a = ses_rule(op, k), *b = member_rule(strcmp(op, "-I") == 0 ? "-A" : op, k);
    HAS(text, a);
    HAS(text, b);
    free(a);
    free(b);
}

static void test_plan_setup_fresh(void **state)
{
    (void)state;
    netfilter_policy_default(&g_pol);
    g_pol.host_ports[0] = (netfilter_port){"udp", 53};
    g_pol.n_host_ports = 1;
    netfilter_net n = net_of("tessera0");
    netfilter_kernel ks[3] = {kern("k1", "10.88.0.2", "s1"), kern("k2", "10.88.0.3", "s1"),
                              kern("k3", "10.88.0.4", "s2")};
    char *t = netfilter_plan_setup(&n, ks, 3, "");
    /* the chains, declared (and so flushed) before anything is filled */
    HAS(t, ":TESSERA-IN-tessera0 - [0:0]");
    HAS(t, ":TESSERA-FWD-tessera0 - [0:0]");
    HAS(t, ":TESSERA-SES-tessera0 - [0:0]");
    char decl[64];
    snprintf(decl, sizeof(decl), ":TESSERA-S-%s - [0:0]", ks[0].session);
    assert_int_equal(count(t, decl), 1); /* one per session */
    snprintf(decl, sizeof(decl), ":TESSERA-S-%s - [0:0]", ks[2].session);
    HAS(t, decl);
    /* the entry jumps */
    HAS(t, "-I INPUT 1 -i tessera0 -m comment --comment \"tessera:tessera0\" -j "
           "TESSERA-IN-tessera0");
    HAS(t, "-I FORWARD 1 -i tessera0 -m comment --comment \"tessera:tessera0\" -j "
           "TESSERA-FWD-tessera0");
    HAS(t, "-I FORWARD 1 -o tessera0 -m comment --comment \"tessera:tessera0\" -j "
           "TESSERA-FWD-tessera0");
    /* to the host: loopback first, replies, the allowed port, nothing else */
    HAS(t, "-A TESSERA-IN-tessera0 -s 127.0.0.0/8 -j DROP");
    HAS(t, "-A TESSERA-IN-tessera0 -d 127.0.0.0/8 -m conntrack ! --ctstate "
           "RELATED,ESTABLISHED,DNAT -j DROP");
    HAS(t, "-A TESSERA-IN-tessera0 -p udp -m udp --dport 53 -j ACCEPT");
    before(t, "-A TESSERA-IN-tessera0 -s 127.0.0.0/8 -j DROP",
           "-A TESSERA-IN-tessera0 -m conntrack --ctstate RELATED,ESTABLISHED -j ACCEPT");
    before(t, "-A TESSERA-IN-tessera0 -p udp", "-A TESSERA-IN-tessera0 -j DROP");
    /* through the host */
    HAS(t, "-A TESSERA-FWD-tessera0 -m conntrack --ctstate DNAT --ctorigdst 127.0.0.0/8 -j DROP");
    HAS(t, "-A TESSERA-FWD-tessera0 -i tessera0 -o tessera0 -j TESSERA-SES-tessera0");
    HAS(t, "-A TESSERA-FWD-tessera0 -i tessera0 -o tessera0 -j DROP");
    HAS(t, "-A TESSERA-FWD-tessera0 -o tessera0 -m conntrack --ctstate DNAT -j RETURN");
    HAS(t, "-A TESSERA-FWD-tessera0 -o tessera0 -j DROP");
    HAS(t, "-A TESSERA-FWD-tessera0 -i tessera0 -j TESSERA-SES-tessera0");
    HAS(t, "-A TESSERA-FWD-tessera0 -d 169.254.0.0/16 -j DROP");
    HASNT(t, "-A TESSERA-FWD-tessera0 -j DROP"); /* outbound nat */
    before(t, "-i tessera0 -o tessera0 -j TESSERA-SES", "-i tessera0 -o tessera0 -j DROP");
    before(t, "-i tessera0 -o tessera0 -j DROP", "--ctstate RELATED,ESTABLISHED -j RETURN");
    before(t, "--ctstate RELATED,ESTABLISHED -j RETURN", "-o tessera0 -m conntrack --ctstate DNAT");
    before(t, "-o tessera0 -j DROP", "-A TESSERA-FWD-tessera0 -i tessera0 -j TESSERA-SES");
    before(t, "-A TESSERA-FWD-tessera0 -i tessera0 -j TESSERA-SES", "-d 169.254.0.0/16 -j DROP");
    /* the kernels, then the final DROP of forged senders */
    for (int i = 0; i < 3; i++)
        has_kernel(t, "-A", &ks[i]);
    HAS(t, "-A TESSERA-SES-tessera0 ! -s 10.88.0.0/16 -j DROP");
    HASNT(t, "-A TESSERA-SES-tessera0 -j DROP"); /* a kernel alone goes on, out or dropped */
    before(t, "-A TESSERA-SES-tessera0 -s 10.88.0.4/32",
           "-A TESSERA-SES-tessera0 ! -s 10.88.0.0/16 -j DROP");
    /* outbound NAT */
    HAS(t, "-A POSTROUTING -s 10.88.0.0/16 ! -d 10.88.0.0/16 -m comment --comment "
           "\"tessera:tessera0\" -j MASQUERADE");
    before(t, "*filter", "COMMIT\n*nat");
    free(t);
    /* published ports from listed networks only; no outbound at all */
    assert_true(netfilter_policy_parse("", "192.0.2.0/24,198.51.100.7", "", "none", &g_pol, NULL));
    t = netfilter_plan_setup(&n, NULL, 0, "");
    HAS(t, "-A TESSERA-FWD-tessera0 -s 192.0.2.0/24 -o tessera0 -m conntrack --ctstate DNAT -j "
           "RETURN");
    HAS(t, "-A TESSERA-FWD-tessera0 -s 198.51.100.7/32 -o tessera0 -m conntrack --ctstate DNAT -j "
           "RETURN");
    HASNT(t, "-A TESSERA-FWD-tessera0 -o tessera0 -m conntrack --ctstate DNAT -j RETURN");
    HAS(t, "-A TESSERA-FWD-tessera0 -j DROP");
    assert_int_equal(count(t, "MASQUERADE"), 0);
    assert_int_equal(count(t, ":TESSERA-S-"), 0);
    HAS(t, "-A TESSERA-IN-tessera0 -j DROP");
    HASNT(t, "-A TESSERA-IN-tessera0 -p udp -m udp --dport 53 -j ACCEPT");
    free(t);
}

/* What iptables-save printed after an older setup, with leftovers. */
static const char *const SAVE =
    "# Generated by iptables-save\n"
    "*filter\n"
    ":INPUT ACCEPT [0:0]\n"
    ":FORWARD ACCEPT [0:0]\n"
    ":OUTPUT ACCEPT [0:0]\n"
    ":TESSERA-FWD-tessera0 - [0:0]\n"
    ":TESSERA-IN-tessera0 - [0:0]\n"
    ":TESSERA-S-00000000000000aa - [0:0]\n"
    ":TESSERA-S-00000000000000bb - [0:0]\n"
    ":TESSERA-SES-tessera0 - [0:0]\n"
    ":TESSERA-FWD-other0 - [0:0]\n"
    "-A INPUT -i tessera0 -m comment --comment \"tessera:tessera0\" -j TESSERA-IN-tessera0\n"
    "-A INPUT -i other0 -m comment --comment \"tessera:other0\" -j TESSERA-IN-other0\n"
    "-A FORWARD -o tessera0 -m comment --comment \"tessera:tessera0\" -j TESSERA-FWD-tessera0\n"
    "-A FORWARD -o tessera0 -m comment --comment \"tessera:tessera0\" -j TESSERA-FWD-tessera0\n"
    "-A FORWARD -i other0 -j TESSERA-FWD-other0\n"
    "-A FORWARD -s 10.0.0.0/8 -j TESSERA-FWD-tessera0\n"
    "-A TESSERA-FWD-tessera0 -i tessera0 -o tessera0 -j TESSERA-SES-tessera0\n"
    "-A TESSERA-S-00000000000000aa -d 10.88.0.9/32 -m comment --comment "
    "\"tessera:tessera0:gone\" -j ACCEPT\n"
    "-A TESSERA-SES-tessera0 -s 10.88.0.9/32 -m mac --mac-source 02:00:00:00:00:09 -m comment "
    "--comment \"tessera:tessera0:gone\" -g TESSERA-S-00000000000000aa\n"
    "-A TESSERA-SES-tessera0 -j DROP\n"
    "COMMIT\n"
    "*nat\n"
    ":PREROUTING ACCEPT [0:0]\n"
    ":POSTROUTING ACCEPT [0:0]\n"
    "-A POSTROUTING -s 10.77.0.0/16 ! -d 10.77.0.0/16 -m comment --comment \"tessera:tessera0\" "
    "-j MASQUERADE\n"
    "-A POSTROUTING -s 10.88.0.0/16 ! -d 10.88.0.0/16 -m comment --comment \"tessera:tessera0\" "
    "-j MASQUERADE\n"
    "-A POSTROUTING -s 10.88.0.0/16 ! -d 10.88.0.0/16 -m comment --comment \"tessera:tessera0\" "
    "-j MASQUERADE\n"
    "-A POSTROUTING -s 10.99.0.0/16 ! -d 10.99.0.0/16 -m comment --comment \"tessera:other0\" "
    "-j MASQUERADE\n"
    "COMMIT\n";

static void test_plan_setup_repairs(void **state)
{
    (void)state;
    netfilter_policy_default(&g_pol);
    netfilter_net n = net_of("tessera0");
    netfilter_kernel k = kern("k1", "10.88.0.2", "s1");
    char *t = netfilter_plan_setup(&n, &k, 1, SAVE);
    /* the INPUT jump is there: not again; FORWARD -o twice: once; -i missing */
    HASNT(t, "-I INPUT 1 -i tessera0 -m comment --comment \"tessera:tessera0\" -j "
             "TESSERA-IN-tessera0");
    assert_int_equal(count(t, "-D FORWARD -o tessera0 -m comment --comment \"tessera:tessera0\" "
                              "-j TESSERA-FWD-tessera0"),
                     1);
    HAS(t, "-I FORWARD 1 -i tessera0 -m comment --comment \"tessera:tessera0\" -j "
           "TESSERA-FWD-tessera0");
    /* a jump to our chain that is not ours goes; another network's stay */
    HAS(t, "-D FORWARD -s 10.0.0.0/8 -j TESSERA-FWD-tessera0");
    assert_int_equal(count(t, "other0"), 0);
    /* the session chain of a kernel no longer recorded goes; the unreferenced
     * one is not known to be ours and stays */
    HAS(t, "-F TESSERA-S-00000000000000aa");
    HAS(t, "-X TESSERA-S-00000000000000aa");
    before(t, ":TESSERA-SES-tessera0 - [0:0]", "-X TESSERA-S-00000000000000aa");
    assert_int_equal(count(t, "00000000000000bb"), 0);
    has_kernel(t, "-A", &k);
    assert_int_equal(count(t, "tessera:tessera0:gone"), 0);
    /* masquerade: the wrong subnet and the copy deleted, one kept */
    HAS(t, "-D POSTROUTING -s 10.77.0.0/16 ! -d 10.77.0.0/16 -m comment --comment "
           "\"tessera:tessera0\" -j MASQUERADE");
    assert_int_equal(count(t, "-D POSTROUTING -s 10.88.0.0/16"), 1);
    assert_int_equal(count(t, "-A POSTROUTING"), 0);
    free(t);
    /* routed: no masquerade rule left */
    g_pol.outbound = NETFILTER_OUT_ROUTED;
    t = netfilter_plan_setup(&n, &k, 1, SAVE);
    assert_int_equal(count(t, "-D POSTROUTING -s 10.88.0.0/16"), 2);
    assert_int_equal(count(t, "-A POSTROUTING"), 0);
    HASNT(t, "-A TESSERA-FWD-tessera0 -j DROP");
    free(t);
}

static void test_plan_add_del(void **state)
{
    (void)state;
    netfilter_policy_default(&g_pol);
    netfilter_net n = net_of("tessera0");
    netfilter_kernel a = kern("ka", "10.88.0.2", "s1"), b = kern("kb", "10.88.0.3", "s1"),
                     c = kern("kc", "10.88.0.4", "s2");
    char decl_s1[64], decl_s2[64], x_s1[64], x_s2[64];
    snprintf(decl_s1, sizeof(decl_s1), ":TESSERA-S-%s - [0:0]", a.session);
    snprintf(decl_s2, sizeof(decl_s2), ":TESSERA-S-%s - [0:0]", c.session);
    snprintf(x_s1, sizeof(x_s1), "-X TESSERA-S-%s", a.session);
    snprintf(x_s2, sizeof(x_s2), "-X TESSERA-S-%s", c.session);
    /* the first of its session: the session's chain is made */
    char *t = netfilter_plan_add(&n, &a, NULL, 0);
    HAS(t, decl_s1);
    has_kernel(t, "-I", &a);
    assert_int_equal(count(t, "-D "), 0);
    before(t, decl_s1, "-I TESSERA-SES");
    free(t);
    /* the second: the chain is there */
    netfilter_kernel recs[3] = {a};
    t = netfilter_plan_add(&n, &b, recs, 1);
    HASNT(t, decl_s1);
    has_kernel(t, "-I", &b);
    free(t);
    /* ADD again: its old rules out, the new ones in, the chain kept */
    recs[1] = b;
    t = netfilter_plan_add(&n, &b, recs, 2);
    HASNT(t, decl_s1);
    has_kernel(t, "-D", &b);
    has_kernel(t, "-I", &b);
    HASNT(t, x_s1);
    free(t);
    /* an address given again whose DEL never came: the old kernel's rules
     * and, as it was the last of its session, its chain go */
    netfilter_kernel c2 = kern("kc2", "10.88.0.2", "s2");
    recs[0] = a;
    t = netfilter_plan_add(&n, &c2, recs, 1);
    has_kernel(t, "-D", &a);
    HAS(t, x_s1);
    HAS(t, decl_s2);
    has_kernel(t, "-I", &c2);
    before(t, "-D TESSERA-S-", x_s1);
    free(t);
    /* ... not when the session has other kernels */
    recs[1] = b;
    t = netfilter_plan_add(&n, &c2, recs, 2);
    has_kernel(t, "-D", &a);
    HASNT(t, x_s1);
    free(t);
    /* DEL: the last of its session takes the chain with it */
    recs[2] = c;
    t = netfilter_plan_del(&n, &c, recs, 3);
    has_kernel(t, "-D", &c);
    HAS(t, x_s2);
    free(t);
    t = netfilter_plan_del(&n, &a, recs, 3);
    has_kernel(t, "-D", &a);
    HASNT(t, x_s1);
    free(t);
    /* a kernel whose bridge plugin said no MAC: matched by address only */
    netfilter_kernel d = kern("kd", "10.88.0.5", "s3");
    d.mac[0] = '\0';
    t = netfilter_plan_add(&n, &d, NULL, 0);
    assert_int_equal(count(t, "--mac-source"), 0);
    char *want = ts_asprintf("-I TESSERA-SES-tessera0 1 -s 10.88.0.5/32 -m comment --comment "
                             "\"tessera:tessera0:kd\" -g TESSERA-S-%s",
                             d.session);
    HAS(t, want);
    free(want);
    free(t);
}

static void test_plan_remove(void **state)
{
    (void)state;
    char *t = netfilter_plan_remove("tessera0", SAVE);
    HAS(t, "-D INPUT -i tessera0 -m comment --comment \"tessera:tessera0\" -j "
           "TESSERA-IN-tessera0");
    assert_int_equal(count(t, "-D FORWARD -o tessera0"), 2);
    HAS(t, "-D FORWARD -s 10.0.0.0/8 -j TESSERA-FWD-tessera0");
    const char *chains[] = {"TESSERA-IN-tessera0", "TESSERA-FWD-tessera0", "TESSERA-SES-tessera0",
                            "TESSERA-S-00000000000000aa"};
    for (size_t i = 0; i < TS_ARRAY_LEN(chains); i++) {
        char f[64], x[64];
        snprintf(f, sizeof(f), "-F %s", chains[i]);
        snprintf(x, sizeof(x), "-X %s", chains[i]);
        HAS(t, f);
        HAS(t, x);
        before(t, "-F TESSERA-S-00000000000000aa", x);
    }
    assert_int_equal(count(t, "-D POSTROUTING"), 3);
    assert_int_equal(count(t, "other0"), 0);
    assert_int_equal(count(t, "00000000000000bb"), 0);
    free(t);
    assert_null(netfilter_plan_remove("nothere0", SAVE));
    assert_null(netfilter_plan_remove("tessera0", ""));
}

/* ---- as root: kernels on a bridge of the test's own ---------------------------------- */

#define NET "tstnf0"
#define SUBNET "10.231.190.0/24"
#define GATEWAY "10.231.190.1"
#define HOST_PORT 39993 /* a listener of the host's, on every address */
#define PUB_A 39990     /* a1's published port (its 8080) */
#define PUB_B 39991     /* b1's */

static const char *g_skip;
static char g_tmp[128];
static char *g_bridge, *g_portmap;
static cni_conf g_conf;
static char g_other[64]; /* an address of the host not on the bridge, or "" */
static pid_t g_host_server;

typedef struct box {
    char id[64], netns[160], ns[128], ip[64], session[16];
    char *result;
    pid_t server;
    kernel_ports port;
    int n_ports;
} box;
static box g_a1, g_a2, g_b1, g_b2, g_c1;

/* TCP on one port (answers "tcp <name> from <peer>"), UDP on the next
 * ("udp <name>"); "ready" once listening. */
static const char SERVER[] =
    "import socket, sys, threading\n"
    "name, host, port = sys.argv[1], sys.argv[2], int(sys.argv[3])\n"
    "t = socket.socket(); t.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)\n"
    "t.bind((host, port)); t.listen(64)\n"
    "u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); u.bind((host, port + 1))\n"
    "def udp():\n"
    "    while True:\n"
    "        data, peer = u.recvfrom(100); u.sendto(('udp ' + name).encode(), peer)\n"
    "threading.Thread(target=udp, daemon=True).start()\n"
    "print('ready', flush=True)\n"
    "while True:\n"
    "    c, peer = t.accept(); c.sendall(('tcp %s from %s' % (name, peer[0])).encode()); "
    "c.close()\n";

/* tcp|udp|icmp host [port]: "ok <answer>" or "fail ...". raw dst port
 * gw_mac src_ip: a TCP SYN in an Ethernet frame of our own to gw_mac (so the
 * routing decision is the host's), "answered" when its SYN-ACK comes back
 * (a fresh source port and sequence number: the host retransmits SYN-ACKs
 * of an earlier probe, which the namespace drops as martians unanswered). */
static const char PROBE[] =
    "import random, socket, struct, sys, time\n"
    "mode, a = sys.argv[1], sys.argv[2:]\n"
    "def csum(b):\n"
    "    if len(b) % 2: b += b'\\0'\n"
    "    s = sum(struct.unpack('!%dH' % (len(b) // 2), b)); s = (s >> 16) + (s & 0xffff)\n"
    "    return ~(s + (s >> 16)) & 0xffff\n"
    "try:\n"
    "    if mode == 'tcp':\n"
    "        s = socket.create_connection((a[0], int(a[1])), timeout=1); s.settimeout(1)\n"
    "        print('ok ' + s.recv(100).decode())\n"
    "    elif mode == 'udp':\n"
    "        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.settimeout(1)\n"
    "        s.sendto(b'hi', (a[0], int(a[1]))); print('ok ' + s.recv(100).decode())\n"
    "    elif mode == 'icmp':\n"
    "        s = socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP)\n"
    "        s.settimeout(1); body = struct.pack('!HH', 0x7e55, 1) + b'tessera'\n"
    "        s.sendto(struct.pack('!BBH', 8, 0, csum(b'\\x08\\0\\0\\0' + body)) + body, (a[0], "
    "0))\n"
    "        end = time.time() + 1\n"
    "        while time.time() < end:\n"
    "            d, peer = s.recvfrom(200)\n"
    "            if peer[0] == a[0] and d[20] == 0: print('ok'); break\n"
    "        else: print('fail no reply')\n"
    "    elif mode == 'raw':\n"
    "        dst, port, gw, src = a[0], int(a[1]), bytes.fromhex(a[2].replace(':', '')), a[3]\n"
    "        me = bytes.fromhex(open('/sys/class/net/eth0/address').read().strip()"
    ".replace(':', ''))\n"
    "        s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(0x0800))\n"
    "        s.bind(('eth0', 0)); s.settimeout(0.3)\n"
    "        sip, dip = socket.inet_aton(src), socket.inet_aton(dst)\n"
    "        sport, seq = random.randint(20000, 60000), random.randint(1, 1 << 30)\n"
    "        tcp = struct.pack('!HHIIBBHHH', sport, port, seq, 0, 5 << 4, 0x02, 64240, 0, 0)\n"
    "        c = csum(sip + dip + struct.pack('!BBH', 0, 6, len(tcp)) + tcp)\n"
    "        tcp = tcp[:16] + struct.pack('!H', c) + tcp[18:]\n"
    "        ip = struct.pack('!BBHHHBBH4s4s', 0x45, 0, 20 + len(tcp), 1, 0, 64, 6, 0, sip, dip)\n"
    "        ip = ip[:10] + struct.pack('!H', csum(ip)) + ip[12:]\n"
    "        frame = gw + me + b'\\x08\\x00' + ip + tcp\n"
    "        end, got = time.time() + 1.2, False\n"
    "        while time.time() < end and not got:\n"
    "            s.send(frame)\n"
    "            t2 = time.time() + 0.4\n"
    "            while time.time() < t2 and not got:\n"
    "                try: d = s.recv(2000)\n"
    "                except OSError: continue\n"
    "                h = d[14:]\n"
    "                if len(h) >= 40 and h[9] == 6 and h[12:16] == dip:\n"
    "                    sp, dp, _, ack = struct.unpack('!HHII', h[20:32])\n"
    "                    got = (sp, dp, ack) == (port, sport, seq + 1) and h[33] & 0x12 == 0x12\n"
    "        print('answered' if got else 'silent')\n"
    "except OSError as e:\n"
    "    print('fail %s' % e)\n";

/* Start argv with its stdout on a pipe; wait for its first line ("ready"). */
static pid_t start_server(const char *const argv[])
{
    int fds[2];
    if (pipe(fds) != 0) return -1;
    pid_t pid = fork();
    if (pid == 0) {
        dup2(fds[1], 1);
        close(fds[0]);
        close(fds[1]);
        setpgid(0, 0);
        execvp(argv[0], (char *const *)argv);
        _exit(127);
    }
    close(fds[1]);
    char line[64] = "";
    FILE *f = fdopen(fds[0], "r");
    if (!fgets(line, sizeof(line), f) || strncmp(line, "ready", 5) != 0) {
        fclose(f);
        kill(pid, SIGKILL);
        waitpid(pid, NULL, 0);
        return -1;
    }
    fclose(f); /* the server writes nothing more */
    return pid;
}

static void stop(pid_t *pid)
{
    if (*pid > 0) {
        kill(*pid, SIGKILL);
        waitpid(*pid, NULL, 0);
    }
    *pid = 0;
}

/* The probe run in b's namespace ("" for the host's). */
static char *probe(const box *b, const char *args)
{
    if (!b) return out_of("python3 -c \"$TSTNF_PROBE\" %s 2>&1", args);
    return out_of("ip netns exec %s python3 -c \"$TSTNF_PROBE\" %s 2>&1", b->ns, args);
}

static void reaches(const box *b, const char *args, const char *want)
{
    char *got = probe(b, args);
    if (strncmp(got, want, strlen(want)) != 0)
        fail_msg("%s %s: '%s', want '%s'", b ? b->id : "host", args, got, want);
    free(got);
}

/* What runtime_start records before the ADD, and the ADD's result after it. */
static void write_state(const box *b)
{
    char path[400];
    snprintf(path, sizeof(path), "%s/kernels/%s", g_tmp, b->id);
    mkdir(path, 0700);
    snprintf(path + strlen(path), sizeof(path) - strlen(path), "/state.json");
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fprintf(f, "{\"kernel_id\":\"%s\",\"session_id\":\"%s\"%s%s}", b->id, b->session,
            b->result ? ",\"cni_result\":" : "", b->result ? b->result : "");
    fclose(f);
}

static void box_add(box *b, const char *name, const char *session, int pub)
{
    snprintf(b->id, sizeof(b->id), "tstnf-%d-%s", (int)getpid(), name);
    snprintf(b->session, sizeof(b->session), "%s", session);
    cni_netns_path(b->id, b->netns, sizeof(b->netns));
    snprintf(b->ns, sizeof(b->ns), "%s", strrchr(b->netns, '/') + 1);
    b->port = (kernel_ports){.container_port = 8080, .host_port = pub};
    b->n_ports = pub ? 1 : 0;
    write_state(b);
    ts_err err = {{0}};
    assert_true(cni_netns_create(b->netns, &err));
    if (!cni_add(&g_conf, b->id, *b->session ? b->session : NULL, b->netns, &b->port, b->n_ports,
                 &b->result, b->ip, sizeof(b->ip), &err))
        fail_msg("cni_add %s: %s", b->id, err.msg);
    write_state(b);
    const char *argv[] = {"ip",   "netns", "exec",    b->ns,  "python3", "-c",
                          SERVER, name,    "0.0.0.0", "8080", NULL};
    b->server = start_server(argv);
    assert_true(b->server > 0);
}

static void box_del(box *b)
{
    stop(&b->server);
    if (b->result) {
        ts_err err = {{0}};
        if (!cni_del(&g_conf, b->id, b->netns, &b->port, b->n_ports, b->result, NULL, NULL, &err))
            fail_msg("cni_del %s: %s", b->id, err.msg);
        free(b->result);
        b->result = NULL;
    }
    ts_err err = {{0}};
    if (b->netns[0] && !cni_netns_delete(b->netns, &err)) fprintf(stderr, "%s\n", err.msg);
}

/* Lines of iptables-save that are this network's. */
static int our_lines(void)
{
    char *n = out_of("iptables-save | grep -c -e '-" NET "' -e 'tessera:" NET "'");
    int v = atoi(n);
    free(n);
    return v;
}

static const char *why_skip(void)
{
    if (geteuid() != 0) return "not root";
    if (sh("command -v iptables-restore >/dev/null && command -v python3 >/dev/null") != 0)
        return "no iptables-restore or python3";
    g_bridge = proc_sibling_path("../../bin/tessera-bridge", NULL);
    if (!g_bridge || access(g_bridge, X_OK) != 0) return "no ../../bin/tessera-bridge (make)";
    g_portmap = proc_sibling_path("../../bin/tessera-portmap", NULL);
    if (!g_portmap || access(g_portmap, X_OK) != 0) return "no ../../bin/tessera-portmap (make)";
    if (sh("ip link show " NET " >/dev/null 2>&1") == 0) return "link " NET " exists already";
    return NULL;
}

static int root_setup(void **state)
{
    (void)state;
    g_skip = why_skip();
    if (g_skip) {
        fprintf(stderr, "test_agent_netfilter: root tests skipped: %s\n", g_skip);
        return 0;
    }
    setenv("TSTNF_PROBE", PROBE, 1);
    snprintf(g_tmp, sizeof(g_tmp), "/var/tmp/tessera-nf-XXXXXX");
    if (!mkdtemp(g_tmp)) return -1;
    char path[200];
    snprintf(path, sizeof(path), "%s/kernels", g_tmp);
    mkdir(path, 0700);
    snprintf(path, sizeof(path), "%s/cni", g_tmp);
    mkdir(path, 0700);
    static char data[200];
    snprintf(data, sizeof(data), "%s/cni", g_tmp);
    g_conf = (cni_conf){.bin_dir = "/usr/lib/cni",
                        .network = NET,
                        .subnet = SUBNET,
                        .data_dir = data,
                        .portmap = g_portmap,
                        .bridge = g_bridge};
    cni_policy pol = {.state_dir = g_tmp,
                      .kernel_host = "127.0.0.1",
                      .publish_addrs = "",
                      .publish_from = "",
                      .host_ports = "",
                      .deny = "169.254.0.0/16",
                      .outbound = "nat"};
    ts_err err = {{0}};
    if (!cni_policy_set(&pol, &err)) return -1;
    char *other = out_of("ip -4 -o addr show scope global | awk '$2 != \"" NET
                         "\" {split($4, a, \"/\"); print a[1]; exit}'");
    snprintf(g_other, sizeof(g_other), "%s", other);
    free(other);
    char port[16];
    snprintf(port, sizeof(port), "%d", HOST_PORT);
    const char *argv[] = {"python3", "-c", SERVER, "host", "0.0.0.0", port, NULL};
    g_host_server = start_server(argv);
    return g_host_server > 0 ? 0 : -1;
}

static int root_teardown(void **state)
{
    (void)state;
    if (g_skip) return 0;
    box_del(&g_a1);
    box_del(&g_a2);
    box_del(&g_b1);
    box_del(&g_b2);
    box_del(&g_c1);
    stop(&g_host_server);
    sh("ip link del " NET " 2>/dev/null");
    cni_masq_remove(NET, SUBNET);
    sh("rm -rf %s", g_tmp);
    free(g_bridge);
    free(g_portmap);
    return 0;
}

#define SKIP_IF_UNAVAILABLE()                                                                      \
    do {                                                                                           \
        if (g_skip) {                                                                              \
            fprintf(stderr, "skipped: %s\n", g_skip);                                              \
            skip();                                                                                \
        }                                                                                          \
    } while (0)

static void check_sessions(void)
{
    char a[128];
    /* one session: TCP, UDP, ICMP */
    snprintf(a, sizeof(a), "tcp %s 8080", g_a2.ip);
    reaches(&g_a1, a, "ok tcp a2 from ");
    snprintf(a, sizeof(a), "udp %s 8081", g_a2.ip);
    reaches(&g_a1, a, "ok udp a2");
    snprintf(a, sizeof(a), "icmp %s", g_a2.ip);
    reaches(&g_a1, a, "ok");
    snprintf(a, sizeof(a), "tcp %s 8080", g_a1.ip);
    reaches(&g_a2, a, "ok tcp a1 from ");
    /* two sessions: nothing, either way */
    snprintf(a, sizeof(a), "tcp %s 8080", g_b1.ip);
    reaches(&g_a1, a, "fail");
    snprintf(a, sizeof(a), "udp %s 8081", g_b1.ip);
    reaches(&g_a1, a, "fail");
    snprintf(a, sizeof(a), "icmp %s", g_b1.ip);
    reaches(&g_a1, a, "fail");
    snprintf(a, sizeof(a), "tcp %s 8080", g_a1.ip);
    reaches(&g_b1, a, "fail");
    snprintf(a, sizeof(a), "icmp %s", g_a2.ip);
    reaches(&g_b1, a, "fail");
}

static void check_host_closed(const char *gw_mac)
{
    char a[160];
    snprintf(a, sizeof(a), "tcp %s %d", GATEWAY, HOST_PORT);
    reaches(&g_a1, a, "fail");
    snprintf(a, sizeof(a), "icmp %s", GATEWAY);
    reaches(&g_a1, a, "fail");
    if (g_other[0]) {
        snprintf(a, sizeof(a), "tcp %s %d", g_other, HOST_PORT);
        reaches(&g_a1, a, "fail");
    }
    /* 127.0.0.1 in a frame of its own to the gateway's MAC */
    snprintf(a, sizeof(a), "raw 127.0.0.1 %d %s %s", HOST_PORT, gw_mac, g_a1.ip);
    reaches(&g_a1, a, "silent");
    /* ... also to a published port (of its own session's or another's) */
    snprintf(a, sizeof(a), "raw 127.0.0.1 %d %s %s", PUB_B, gw_mac, g_a1.ip);
    reaches(&g_a1, a, "silent");
    snprintf(a, sizeof(a), "raw 127.0.0.1 %d %s %s", PUB_A, gw_mac, g_a2.ip);
    reaches(&g_a2, a, "silent");
    /* the same frame to a neighbour of its session is answered: the probe works */
    snprintf(a, sizeof(a), "raw %s 8080 %s %s", g_a2.ip, gw_mac, g_a1.ip);
    reaches(&g_a1, a, "answered");
}

static void test_isolation(void **state)
{
    (void)state;
    SKIP_IF_UNAVAILABLE();
    box_add(&g_a1, "a1", "session-a", PUB_A);
    box_add(&g_a2, "a2", "session-a", 0);
    box_add(&g_b1, "b1", "session-b", PUB_B);
    char *gw_mac = out_of("cat /sys/class/net/" NET "/address");
    /* the host listens; it answers itself */
    char a[160];
    snprintf(a, sizeof(a), "tcp 127.0.0.1 %d", HOST_PORT);
    reaches(NULL, a, "ok tcp host");
    /* route_localnet is on (127.0.0.1 is published), the DROP with it */
    char *rl = out_of("cat /proc/sys/net/ipv4/conf/" NET "/route_localnet");
    assert_string_equal(rl, "1");
    free(rl);
    /* no IPv6 on the bridge or in the kernel */
    char *v6 = out_of(
        "ip -6 -o addr show dev " NET "; ip netns exec %s ip -6 -o addr show dev eth0", g_a1.ns);
    assert_string_equal(v6, "");
    free(v6);
    check_sessions();
    check_host_closed(gw_mac);
    /* published ports: on the published address (127.0.0.1, the kernel
     * host), from the host; not on another address; not from a kernel of
     * another session through the host's address */
    snprintf(a, sizeof(a), "tcp 127.0.0.1 %d", PUB_B);
    reaches(NULL, a, "ok tcp b1 from ");
    snprintf(a, sizeof(a), "tcp 127.0.0.1 %d", PUB_A);
    reaches(NULL, a, "ok tcp a1 from ");
    if (g_other[0]) {
        snprintf(a, sizeof(a), "tcp %s %d", g_other, PUB_B);
        reaches(NULL, a, "fail");
    }
    snprintf(a, sizeof(a), "tcp %s %d", GATEWAY, PUB_B);
    reaches(&g_a1, a, "fail");
    /* forged: a1's MAC on b1's port (the port is locked to b1's MAC), and
     * a2's address from b1's MAC (no session rule matches: the
     * bridge-to-bridge DROP) */
    char *drops0 =
        out_of("iptables -w -L TESSERA-FWD-" NET " -v -x -n | awk '$3 == \"DROP\" && $6 == \"" NET
               "\" && $7 == \"" NET "\" {print $1}'");
    char *a1_mac = out_of("ip netns exec %s cat /sys/class/net/eth0/address", g_a1.ns);
    char *b1_mac = out_of("ip netns exec %s cat /sys/class/net/eth0/address", g_b1.ns);
    sh("ip -n %s link set eth0 address %s", g_b1.ns, a1_mac);
    snprintf(a, sizeof(a), "icmp %s", g_a2.ip);
    reaches(&g_b1, a, "fail");
    sh("ip -n %s link set eth0 address %s", g_b1.ns, b1_mac);
    sh("ip -n %s addr add %s/32 dev eth0", g_b1.ns, g_a2.ip);
    snprintf(a, sizeof(a), "raw %s 8080 %s %s", g_a1.ip, gw_mac, g_a2.ip);
    reaches(&g_b1, a, "silent");
    sh("ip -n %s addr del %s/32 dev eth0", g_b1.ns, g_a2.ip);
    char *drops1 =
        out_of("iptables -w -L TESSERA-FWD-" NET " -v -x -n | awk '$3 == \"DROP\" && $6 == \"" NET
               "\" && $7 == \"" NET "\" {print $1}'");
    if (atoi(drops1) <= atoi(drops0))
        fail_msg("forged source not dropped: %s -> %s", drops0, drops1);
    snprintf(a, sizeof(a), "tcp %s 8080", g_a1.ip);
    reaches(&g_b1, a, "fail"); /* and b1 as itself still cannot */
    free(drops0);
    free(drops1);
    free(a1_mac);
    free(b1_mac);
    /* a kernel attached by Debian's bridge plugin (agent.cni_bridge =
     * bridge), which knows no portIsolation: cni_add isolates its port */
    if (access("/usr/lib/cni/bridge", X_OK) == 0) {
        g_conf.bridge = "/usr/lib/cni/bridge";
        box_add(&g_b2, "b2", "session-b", 0);
        g_conf.bridge = g_bridge;
        json_t *res = json_loads(g_b2.result, 0, NULL);
        const char *veth = json_string_value(
            json_object_get(json_array_get(json_object_get(res, "interfaces"), 1), "name"));
        assert_non_null(veth);
        char *bl = out_of("bridge -d link show dev %s", veth);
        if (!strstr(bl, "isolated on") || !strstr(bl, "locked on")) fail_msg("%s: %s", veth, bl);
        free(bl);
        json_decref(res);
        /* every address still pinned to its MAC (the bridge's MAC did not
         * follow the new port's, which would have flushed them) */
        char *neigh = out_of("ip neigh show dev " NET " nud permanent");
        const box *all[] = {&g_a1, &g_a2, &g_b1, &g_b2};
        for (int i = 0; i < 4; i++) {
            char *want = ts_asprintf("%s lladdr", all[i]->ip);
            if (!strstr(neigh, want)) fail_msg("no permanent entry for %s: %s", all[i]->id, neigh);
            free(want);
        }
        free(neigh);
        snprintf(a, sizeof(a), "tcp %s 8080", g_b1.ip);
        reaches(&g_b2, a, "ok tcp b1 from ");
        snprintf(a, sizeof(a), "tcp %s 8080", g_b2.ip);
        reaches(&g_a1, a, "fail");
        reaches(&g_b1, a, "ok tcp b2 from ");
    }
    /* the metadata range is dropped on the way out */
    char *deny0 =
        out_of("iptables -w -L TESSERA-FWD-" NET " -v -x -n | grep 169.254 | awk '{print $1}'");
    snprintf(a, sizeof(a), "tcp 169.254.169.254 80");
    reaches(&g_a1, a, "fail");
    char *deny1 =
        out_of("iptables -w -L TESSERA-FWD-" NET " -v -x -n | grep 169.254 | awk '{print $1}'");
    if (atoi(deny1) <= atoi(deny0)) fail_msg("169.254.169.254 not dropped: %s -> %s", deny0, deny1);
    free(deny0);
    free(deny1);
    /* a kernel alone in its session (no session id: cluster_size 1) gets no
     * rules of its own: it reaches no other kernel and none reaches it, and
     * its way out still goes through the deny list */
    char *rules0 = out_of("iptables-save -t filter | wc -l");
    box_add(&g_c1, "c1", "", 0);
    char *rules1 = out_of("iptables-save -t filter | wc -l");
    assert_string_equal(rules0, rules1);
    free(rules0);
    free(rules1);
    snprintf(a, sizeof(a), "tcp %s 8080", g_a1.ip);
    reaches(&g_c1, a, "fail");
    snprintf(a, sizeof(a), "icmp %s", g_b1.ip);
    reaches(&g_c1, a, "fail");
    snprintf(a, sizeof(a), "tcp %s 8080", g_c1.ip);
    reaches(&g_a1, a, "fail");
    reaches(&g_b1, a, "fail");
    snprintf(a, sizeof(a), "tcp %s %d", GATEWAY, HOST_PORT);
    reaches(&g_c1, a, "fail");
    deny0 = out_of("iptables -w -L TESSERA-FWD-" NET " -v -x -n | grep 169.254 | awk '{print $1}'");
    reaches(&g_c1, "tcp 169.254.169.254 80", "fail");
    deny1 = out_of("iptables -w -L TESSERA-FWD-" NET " -v -x -n | grep 169.254 | awk '{print $1}'");
    if (atoi(deny1) <= atoi(deny0)) fail_msg("c1: 169.254.169.254 not dropped by the deny list");
    free(deny0);
    free(deny1);
    box_del(&g_c1);
    free(gw_mac);
}

/* The rules gone (the host's firewall flushed, say) come back when the
 * agent sets the network up, as it does at every start. */
static void test_restart(void **state)
{
    (void)state;
    SKIP_IF_UNAVAILABLE();
    char *gw_mac = out_of("cat /sys/class/net/" NET "/address");
    int before_n = our_lines();
    char *jumps = out_of("iptables-save -t filter | grep -c 'tessera:" NET "\"'");
    assert_string_equal(jumps, "3");
    free(jumps);
    /* without them: the hole this is about (the raw frame is answered, the
     * sessions reach each other): the checks above can fail */
    sh("iptables -w -D INPUT -i " NET " -m comment --comment tessera:" NET " -j TESSERA-IN-" NET);
    sh("iptables -w -F TESSERA-FWD-" NET);
    sh("iptables -w -F TESSERA-SES-" NET);
    /* and a1 as a kernel of an agent from before the records: its state.json
     * is all there is */
    sh("rm /run/tessera-agent/netfilter/" NET "/*,%s", g_a1.id);
    char a[160];
    snprintf(a, sizeof(a), "raw 127.0.0.1 %d %s %s", HOST_PORT, gw_mac, g_a1.ip);
    reaches(&g_a1, a, "answered");
    snprintf(a, sizeof(a), "tcp %s 8080", g_b1.ip);
    reaches(&g_a1, a, "ok tcp b1");
    /* an agent's start */
    ts_err err = {{0}};
    if (!cni_network_setup(NET, SUBNET, &err)) fail_msg("cni_network_setup: %s", err.msg);
    assert_int_equal(our_lines(), before_n);
    check_sessions();
    check_host_closed(gw_mac);
    /* and again: nothing changes, nothing is duplicated */
    assert_true(cni_network_setup(NET, SUBNET, &err));
    assert_int_equal(our_lines(), before_n);
    free(gw_mac);
}

static void test_del_and_remove(void **state)
{
    (void)state;
    SKIP_IF_UNAVAILABLE();
    char *n = out_of("iptables-save | grep -c 'tessera:" NET ":%s\"'", g_b1.id);
    assert_string_equal(n, "2");
    free(n);
    char sess_b[17];
    netfilter_session_key(NET, "session-b", sess_b);
    box_del(&g_b2); /* b1 is the last of session b then */
    box_del(&g_b1);
    n = out_of("iptables-save | grep -c -e 'tessera:" NET ":%s\"' -e 'TESSERA-S-%s'", g_b1.id,
               sess_b);
    assert_string_equal(n, "0"); /* its rules, and its session's chain */
    free(n);
    box_del(&g_a1);
    char a[128];
    snprintf(a, sizeof(a), "tcp %s 8080", g_a1.ip);
    reaches(&g_a2, a, "fail");
    box_del(&g_a2);
    char sess_a[17];
    netfilter_session_key(NET, "session-a", sess_a);
    n = out_of("iptables-save | grep -c -e 'tessera:" NET ":' -e 'TESSERA-S-%s' -e 'TESSERA-S-%s'",
               sess_a, sess_b);
    assert_string_equal(n, "0");
    free(n);
    n = out_of("ls /run/tessera-agent/netfilter/" NET " | wc -l");
    assert_string_equal(n, "0");
    free(n);
    /* the network: every chain, jump and the masquerade rule */
    sh("ip link del " NET);
    ts_err err = {{0}};
    if (!cni_network_remove(NET, SUBNET, &err)) fail_msg("cni_network_remove: %s", err.msg);
    assert_int_equal(our_lines(), 0);
    assert_int_equal(sh("test -e /run/tessera-agent/netfilter/" NET), 1 << 8);
}

/* Kernels' ADDs and DELs at once (applied a batch at a time): every rule
 * once, in its place. No bridge needed: rules only. */
typedef struct job {
    pthread_t t;
    const netfilter_net *net;
    netfilter_kernel k;
    bool add, ok;
    ts_err err;
} job;

static void *job_run(void *arg)
{
    job *j = arg;
    j->ok = j->add ? netfilter_kernel_add(j->net, &j->k, &j->err)
                   : netfilter_kernel_del(j->net, j->k.id, &j->err);
    return NULL;
}

static void run_jobs(job *jobs, int n, bool add)
{
    for (int i = 0; i < n; i++) {
        jobs[i].add = add;
        assert_int_equal(pthread_create(&jobs[i].t, NULL, job_run, &jobs[i]), 0);
    }
    for (int i = 0; i < n; i++) {
        pthread_join(jobs[i].t, NULL);
        if (!jobs[i].ok) fail_msg("%s %s: %s", add ? "add" : "del", jobs[i].k.id, jobs[i].err.msg);
    }
}

static void test_concurrent_changes(void **state)
{
    (void)state;
    SKIP_IF_UNAVAILABLE();
    netfilter_policy pol;
    netfilter_policy_default(&pol);
    char records[200];
    snprintf(records, sizeof(records), "%s/records", g_tmp);
    netfilter_net n = {.network = "tstnf1",
                       .subnet = "10.231.191.0/24",
                       .policy = &pol,
                       .records_dir = records,
                       .kernels_dir = NULL};
    ts_err err = {{0}};
    if (!netfilter_setup(&n, &err)) fail_msg("setup: %s", err.msg);
    job jobs[8];
    memset(jobs, 0, sizeof(jobs));
    for (int i = 0; i < 8; i++) {
        jobs[i].net = &n;
        snprintf(jobs[i].k.id, sizeof(jobs[i].k.id), "tstnf1-k%d", i);
        snprintf(jobs[i].k.ip, sizeof(jobs[i].k.ip), "10.231.191.%d", 10 + i);
        snprintf(jobs[i].k.mac, sizeof(jobs[i].k.mac), "02:00:00:00:01:%02x", i);
        netfilter_session_key("tstnf1", i % 2 ? "odd" : "even", jobs[i].k.session);
    }
    run_jobs(jobs, 8, true);
    char *t = out_of("iptables-save -t filter | grep -e 'TESSERA-SES-tstnf1' -e '%s' -e '%s'",
                     jobs[0].k.session, jobs[1].k.session);
    for (int i = 0; i < 8; i++) {
        char *a = ts_asprintf("-A TESSERA-SES-tstnf1 -s %s/32", jobs[i].k.ip);
        char *b = ts_asprintf("-A TESSERA-S-%s -d %s/32", jobs[i].k.session, jobs[i].k.ip);
        assert_int_equal(count(t, a), 1);
        assert_int_equal(count(t, b), 1);
        free(a);
        free(b);
    }
    char *last = strrchr(t, '\n');
    assert_non_null(last);
    last = strstr(t, "-A TESSERA-SES-tstnf1 ! -s ");
    assert_non_null(last); /* the forged-source DROP stays last of its chain */
    assert_null(strstr(last + 1, "-A TESSERA-SES-tstnf1 "));
    free(t);
    char *nrec = out_of("ls %s/tstnf1 | wc -l", records);
    assert_string_equal(nrec, "8");
    free(nrec);
    run_jobs(jobs, 8, false);
    t = out_of("iptables-save -t filter | grep -c -e 'tessera:tstnf1:' -e '%s' -e '%s'",
               jobs[0].k.session, jobs[1].k.session);
    assert_string_equal(t, "0"); /* the kernels' rules and both session chains */
    free(t);
    assert_true(netfilter_remove("tstnf1", records, &err));
    t = out_of("iptables-save | grep -c tstnf1");
    assert_string_equal(t, "0");
    free(t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_policy),           cmocka_unit_test(test_session_key),
        cmocka_unit_test(test_plan_setup_fresh), cmocka_unit_test(test_plan_setup_repairs),
        cmocka_unit_test(test_plan_add_del),     cmocka_unit_test(test_plan_remove),
    };
    const struct CMUnitTest root[] = {
        cmocka_unit_test(test_isolation),
        cmocka_unit_test(test_restart),
        cmocka_unit_test(test_del_and_remove),
        cmocka_unit_test(test_concurrent_changes),
    };
    int failed = cmocka_run_group_tests(tests, NULL, NULL);
    return failed + cmocka_run_group_tests_name("as root", root, root_setup, root_teardown);
}
