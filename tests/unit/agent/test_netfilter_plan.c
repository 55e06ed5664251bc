/* test_netfilter_plan.c: the agent's iptables rules for a CNI network as
 * text (netfilter_policy.c, netfilter_plan.c), without root: the options
 * (agent.cni_deny, agent.cni_publish_from, agent.cni_host_ports,
 * agent.cni_outbound) parsed and refused, and the iptables-restore input
 * each change makes from iptables-save output and the kernels' records:
 * setup on an empty table and over leftovers (duplicate jumps, a stale
 * session chain, a masquerade rule of the wrong subnet or mode), a kernel's
 * ADD (first of its session, second, replacing a kernel whose DEL never
 * came), DEL (last of its session or not), and the network's removal, which
 * leaves other networks alone. On the host: test_netfilter_host.c. */
#include "services/agent/netfilter.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "tests/unit/agent/shell_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_policy),           cmocka_unit_test(test_session_key),
        cmocka_unit_test(test_plan_setup_fresh), cmocka_unit_test(test_plan_setup_repairs),
        cmocka_unit_test(test_plan_add_del),     cmocka_unit_test(test_plan_remove),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
