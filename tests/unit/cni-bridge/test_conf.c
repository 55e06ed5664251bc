/* test_bridge_conf.c: tessera-bridge's input checks and address leases
 * (services/cni-bridge/br_conf.c, br_ipam.c), without root: the
 * configuration the agent sends and the older host-local shape, defaults,
 * every bad one refused with the CNI error code and a message naming what
 * is wrong; leases in host-local's layout (content, reuse, the gateway
 * skipped, wrap-around, exhaustion, release, an older host-local lease);
 * portIsolation and disableIPv6 (off unless asked for); a cluster session's
 * network (a static address, VXLAN, bridgeNetfilter, removeIdleBridge). The
 * plugin itself runs in test_runtime.c (real namespaces, beside
 * Debian's bridge). */
#include "services/cni-bridge/br_conf.h"
#include "services/cni-bridge/br_ipam.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define AGENT_CONF(extra)                                                                          \
    "{\"cniVersion\":\"1.0.0\",\"name\":\"tessera0\",\"type\":\"tessera-bridge\","                 \
    "\"bridge\":\"tessera0\",\"isGateway\":true,\"ipMasq\":false,\"hairpinMode\":true," extra      \
    "\"ipam\":{\"type\":\"host-local\",\"ranges\":[[{\"subnet\":\"10.88.0.0/16\"}]],"              \
    "\"routes\":[{\"dst\":\"0.0.0.0/0\"}],\"dataDir\":\"/var/lib/tessera/cni/networks\"}}"

static bool parse(const char *text, cnip_cmd cmd, br_conf *c, cnip_error *e)
{
    memset(e, 0, sizeof(*e));
    return br_conf_parse(text, strlen(text), cmd, c, e);
}

static void refused(const char *text, cnip_cmd cmd, int code, const char *want)
{
    br_conf c;
    cnip_error e;
    if (parse(text, cmd, &c, &e)) fail_msg("accepted: %s", text);
    if (e.code != code)
        fail_msg("code %d, want %d (%s: %s) for %s", e.code, code, e.msg, e.details, text);
    if (!strstr(e.msg, want) && !strstr(e.details, want))
        fail_msg("'%s: %s' does not say '%s'", e.msg, e.details, want);
}

static const char *ip(struct in_addr a)
{
    static char buf[4][INET_ADDRSTRLEN];
    static int k;
    k = (k + 1) % 4;
    return inet_ntop(AF_INET, &a, buf[k], sizeof(buf[k]));
}

static void test_agent_conf(void **state)
{
    (void)state;
    br_conf c;
    cnip_error e;
    assert_true(parse(AGENT_CONF(""), CNIP_ADD, &c, &e));
    assert_string_equal(c.cni_version, "1.0.0");
    assert_string_equal(c.name, "tessera0");
    assert_string_equal(c.bridge, "tessera0");
    assert_true(c.is_gateway);
    assert_true(c.hairpin);
    assert_false(c.default_route);
    assert_int_equal(c.mtu, 0);
    assert_true(c.has_ipam);
    assert_string_equal(ip(c.subnet), "10.88.0.0");
    assert_int_equal(c.prefix, 16);
    assert_string_equal(ip(c.gateway), "10.88.0.1");
    assert_string_equal(ip(c.range_start), "10.88.0.1");
    assert_string_equal(ip(c.range_end), "10.88.255.254");
    assert_int_equal(c.n_routes, 1);
    assert_int_equal(c.routes[0].prefix, 0);
    assert_int_equal(c.routes[0].gw.s_addr, 0);
    assert_string_equal(c.data_dir, "/var/lib/tessera/cni/networks");
    /* isolation is asked for (the agent always does) */
    assert_false(c.port_isolation);
    assert_false(c.disable_ipv6);
    assert_true(
        parse(AGENT_CONF("\"portIsolation\":true,\"disableIPv6\":true,"), CNIP_ADD, &c, &e));
    assert_true(c.port_isolation);
    assert_true(c.disable_ipv6);
    assert_true(
        parse(AGENT_CONF("\"portIsolation\":false,\"disableIPv6\":null,"), CNIP_ADD, &c, &e));
    assert_false(c.port_isolation);
    assert_false(c.disable_ipv6);
}

static void test_older_shape_and_defaults(void **state)
{
    (void)state;
    br_conf c;
    cnip_error e;
    /* host-local's older form: the range at the top of ipam; a subnet that is
     * not its network address is masked; no bridge, no dataDir */
    const char *t = "{\"cniVersion\":\"0.3.1\",\"name\":\"n1\",\"isDefaultGateway\":true,"
                    "\"mtu\":1400,\"ipam\":{\"type\":\"host-local\",\"subnet\":\"192.168.7.9/24\","
                    "\"rangeStart\":\"192.168.7.100\",\"rangeEnd\":\"192.168.7.102\","
                    "\"gateway\":\"192.168.7.254\",\"routes\":[{\"dst\":\"10.1.2.3/8\","
                    "\"gw\":\"192.168.7.253\"}]},\"unknown\":{\"ignored\":1}}";
    assert_true(parse(t, CNIP_ADD, &c, &e));
    assert_string_equal(c.bridge, "cni0");
    assert_true(c.default_route);
    assert_true(c.is_gateway); /* implied */
    assert_int_equal(c.mtu, 1400);
    assert_string_equal(ip(c.subnet), "192.168.7.0");
    assert_string_equal(ip(c.range_start), "192.168.7.100");
    assert_string_equal(ip(c.range_end), "192.168.7.102");
    assert_string_equal(ip(c.gateway), "192.168.7.254");
    assert_string_equal(c.data_dir, "/var/lib/cni/networks");
    assert_string_equal(ip(c.routes[0].dst), "10.0.0.0");
    assert_int_equal(c.routes[0].prefix, 8);
    assert_string_equal(ip(c.routes[0].gw), "192.168.7.253");
    /* DEL needs no ipam */
    assert_true(parse("{\"cniVersion\":\"1.0.0\",\"name\":\"n1\"}", CNIP_DEL, &c, &e));
    assert_false(c.has_ipam);
}

static void test_bad_conf(void **state)
{
    (void)state;
    refused("", CNIP_ADD, CNIP_E_DECODE, "decode");
    refused("{\"cniVersion\":", CNIP_ADD, CNIP_E_DECODE, "decode");
    refused("[1]", CNIP_ADD, CNIP_E_DECODE, "not a JSON object");
    refused("{\"name\":\"n\",\"name\":\"m\",\"cniVersion\":\"1.0.0\"}", CNIP_DEL, CNIP_E_DECODE,
            "duplicate");
    refused("{\"name\":\"n\"}", CNIP_DEL, CNIP_E_CONFIG, "cniVersion is missing");
    refused("{\"cniVersion\":\"2.0.0\",\"name\":\"n\"}", CNIP_DEL, CNIP_E_VERSION, "2.0.0");
    refused("{\"cniVersion\":1,\"name\":\"n\"}", CNIP_DEL, CNIP_E_CONFIG,
            "cniVersion is not a "
            "string");
    refused("{\"cniVersion\":\"1.0.0\"}", CNIP_DEL, CNIP_E_CONFIG, "name is missing");
    refused(AGENT_CONF("\"portIsolation\":\"yes\","), CNIP_ADD, CNIP_E_CONFIG,
            "portIsolation is not true or false");
    refused(AGENT_CONF("\"disableIPv6\":1,"), CNIP_ADD, CNIP_E_CONFIG,
            "disableIPv6 is not true or false");
    refused("{\"cniVersion\":\"1.0.0\",\"name\":\"../etc\"}", CNIP_DEL, CNIP_E_CONFIG,
            "name ../etc");
    refused("{\"cniVersion\":\"1.0.0\",\"name\":\"n\\u00e9t\"}", CNIP_DEL, CNIP_E_CONFIG, "name ");
    refused("{\"cniVersion\":\"1.0.0\",\"name\":\"n\",\"bridge\":\"a-name-too-long-for-linux\"}",
            CNIP_DEL, CNIP_E_CONFIG, "not an interface name");
    refused("{\"cniVersion\":\"1.0.0\",\"name\":\"n\",\"bridge\":\"a/b\"}", CNIP_DEL, CNIP_E_CONFIG,
            "not an interface name");
    refused("{\"cniVersion\":\"1.0.0\",\"name\":\"n\",\"bridge\":\"\"}", CNIP_DEL, CNIP_E_CONFIG,
            "not an interface name");
    refused("{\"cniVersion\":\"1.0.0\",\"name\":\"n\",\"mtu\":10}", CNIP_DEL, CNIP_E_CONFIG, "mtu");
    refused("{\"cniVersion\":\"1.0.0\",\"name\":\"n\",\"mtu\":\"1500\"}", CNIP_DEL, CNIP_E_CONFIG,
            "mtu");
    refused("{\"cniVersion\":\"1.0.0\",\"name\":\"n\",\"isGateway\":\"yes\"}", CNIP_DEL,
            CNIP_E_CONFIG, "isGateway is not true or false");
    refused(AGENT_CONF("\"ipMasq\":true,"), CNIP_ADD, CNIP_E_DECODE, "duplicate");
    refused("{\"cniVersion\":\"1.0.0\",\"name\":\"n\",\"ipMasq\":true}", CNIP_DEL, CNIP_E_CONFIG,
            "ipMasq is not supported");
    /* ipam */
    const char *h = "{\"cniVersion\":\"1.0.0\",\"name\":\"n\",\"ipam\":";
    char t[512];
    struct {
        const char *ipam, *want;
    } bad[] = {
        {"1}", "ipam is not an object"},
        {"{}}", "ipam.type (missing)"},
        {"{\"type\":\"dhcp\"}}", "want \"host-local\""},
        {"{\"type\":\"host-local\"}}", "ipam.subnet is missing"},
        {"{\"type\":\"host-local\",\"subnet\":\"10.0.0.0\"}}", "want an IPv4 network"},
        {"{\"type\":\"host-local\",\"subnet\":\"fd00::/64\"}}", "IPv4 only"},
        {"{\"type\":\"host-local\",\"subnet\":\"10.0.0.0/33\"}}", "want an IPv4 network"},
        {"{\"type\":\"host-local\",\"subnet\":\"10.0.0.0/31\"}}", "prefix length from 8 to 30"},
        {"{\"type\":\"host-local\",\"subnet\":\"10.0.0.0/4\"}}", "prefix length from 8 to 30"},
        {"{\"type\":\"host-local\",\"subnet\":\"10.0.0.0/x4\"}}", "want an IPv4 network"},
        {"{\"type\":\"host-local\",\"ranges\":[]}}", "one range set of one range"},
        {"{\"type\":\"host-local\",\"ranges\":[[{\"subnet\":\"10.0.0.0/24\"}],"
         "[{\"subnet\":\"10.0.1.0/24\"}]]}}",
         "one range set of one range"},
        {"{\"type\":\"host-local\",\"ranges\":[[\"10.0.0.0/24\"]]}}", "one range set of one range"},
        {"{\"type\":\"host-local\",\"subnet\":\"10.0.0.0/24\",\"gateway\":\"10.0.1.1\"}}",
         "gateway is not a host address"},
        {"{\"type\":\"host-local\",\"subnet\":\"10.0.0.0/24\",\"rangeStart\":\"10.0.0.0\"}}",
         "rangeStart is not a host address"},
        {"{\"type\":\"host-local\",\"subnet\":\"10.0.0.0/24\",\"rangeEnd\":\"10.0.0.255\"}}",
         "rangeEnd is not a host address"},
        {"{\"type\":\"host-local\",\"subnet\":\"10.0.0.0/24\",\"rangeEnd\":\"ten\"}}",
         "not an IPv4 address"},
        {"{\"type\":\"host-local\",\"subnet\":\"10.0.0.0/24\",\"rangeStart\":\"10.0.0.9\","
         "\"rangeEnd\":\"10.0.0.8\"}}",
         "rangeStart is after rangeEnd"},
        {"{\"type\":\"host-local\",\"subnet\":\"10.0.0.0/24\",\"routes\":{}}}", "ipam.routes"},
        {"{\"type\":\"host-local\",\"subnet\":\"10.0.0.0/24\",\"routes\":[1]}}",
         "ipam.routes[0] is not an object"},
        {"{\"type\":\"host-local\",\"subnet\":\"10.0.0.0/24\",\"routes\":[{}]}}",
         "ipam.routes[0].dst"},
        {"{\"type\":\"host-local\",\"subnet\":\"10.0.0.0/24\",\"routes\":[{\"dst\":\"0.0.0.0/0\","
         "\"gw\":\"x\"}]}}",
         "ipam.routes[0].gw"},
        {"{\"type\":\"host-local\",\"subnet\":\"10.0.0.0/24\",\"dataDir\":\"rel/dir\"}}",
         "want an absolute path"},
        {"{\"type\":\"host-local\",\"subnet\":\"10.0.0.0/24\",\"dataDir\":\"/a/../etc\"}}",
         "without '..'"},
        {"{\"type\":\"host-local\",\"subnet\":\"10.0.0.0/24\",\"dataDir\":\"/a/..\"}}",
         "without '..'"},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        snprintf(t, sizeof(t), "%s%s", h, bad[i].ipam);
        refused(t, CNIP_ADD, CNIP_E_CONFIG, bad[i].want);
    }
    /* ADD without ipam */
    refused("{\"cniVersion\":\"1.0.0\",\"name\":\"n\"}", CNIP_ADD, CNIP_E_CONFIG,
            "ipam is missing");
    /* 22 routes */
    char many[2048] = "{\"cniVersion\":\"1.0.0\",\"name\":\"n\",\"ipam\":{\"type\":\"host-local\","
                      "\"subnet\":\"10.0.0.0/24\",\"routes\":[";
    for (int i = 0; i < 22; i++)
        strcat(many, i ? ",{\"dst\":\"10.9.0.0/16\"}" : "{\"dst\":\"10.9.0.0/16\"}");
    strcat(many, "]}}");
    refused(many, CNIP_ADD, CNIP_E_CONFIG, "at most 16 routes");
}

/* ---- leases ---------------------------------------------------------------------- */

static char g_dir[64];

static br_conf small_range(void)
{
    br_conf c;
    cnip_error e;
    char t[512];
    snprintf(t, sizeof(t),
             "{\"cniVersion\":\"1.0.0\",\"name\":\"lease-test\",\"ipam\":{\"type\":\"host-local\","
             "\"subnet\":\"10.9.0.0/29\",\"dataDir\":\"%s/networks\"}}",
             g_dir);
    if (!parse(t, CNIP_ADD, &c, &e)) fail_msg("%s: %s", e.msg, e.details);
    return c;
}

static struct in_addr take(br_ipam *s, const br_conf *c, const char *cid, bool want_fresh)
{
    struct in_addr a;
    bool fresh;
    cnip_error e = {0};
    if (!br_ipam_alloc(s, c, cid, "eth0", &a, &fresh, &e)) fail_msg("%s: %s", e.msg, e.details);
    assert_int_equal(fresh, want_fresh);
    return a;
}

static char *read_file(const char *path)
{
    static char buf[256];
    int fd = open(path, O_RDONLY);
    if (fd < 0) return NULL;
    ssize_t n = read(fd, buf, sizeof(buf) - 1);
    close(fd);
    buf[n > 0 ? n : 0] = '\0';
    return buf;
}

static void test_leases(void **state)
{
    (void)state;
    snprintf(g_dir, sizeof(g_dir), "/tmp/test-bridge-XXXXXX");
    assert_non_null(mkdtemp(g_dir));
    br_conf c = small_range(); /* 10.9.0.1 (gateway) .. 10.9.0.6 */
    br_ipam s;
    cnip_error e = {0};
    assert_true(br_ipam_open(&s, &c, &e));
    /* the gateway is skipped; leases in host-local's layout */
    assert_string_equal(ip(take(&s, &c, "k1", true)), "10.9.0.2");
    char path[256];
    snprintf(path, sizeof(path), "%s/networks/lease-test/10.9.0.2", g_dir);
    assert_string_equal(read_file(path), "k1\r\neth0");
    snprintf(path, sizeof(path), "%s/networks/lease-test/last_reserved_ip.0", g_dir);
    assert_string_equal(read_file(path), "10.9.0.2");
    /* a repeated ADD gets its own lease back, not a second one */
    assert_string_equal(ip(take(&s, &c, "k1", false)), "10.9.0.2");
    assert_string_equal(ip(take(&s, &c, "k2", true)), "10.9.0.3");
    /* a lease older host-local wrote (the id alone) is found and kept */
    snprintf(path, sizeof(path), "%s/networks/lease-test/10.9.0.4", g_dir);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs("old", f);
    fclose(f);
    struct in_addr a;
    assert_true(br_ipam_find(&s, "old", "eth0", &a));
    assert_string_equal(ip(a), "10.9.0.4");
    assert_false(br_ipam_find(&s, "ol", "eth0", &a)); /* a prefix is not the id */
    assert_false(br_ipam_find(&s, "k1", "eth1", &a)); /* nor another interface */
    assert_string_equal(ip(take(&s, &c, "k3", true)), "10.9.0.5");
    assert_string_equal(ip(take(&s, &c, "k4", true)), "10.9.0.6");
    /* full: the error says which range */
    bool fresh;
    assert_false(br_ipam_alloc(&s, &c, "k5", "eth0", &a, &fresh, &e));
    assert_int_equal(e.code, BR_E_IPAM);
    assert_non_null(strstr(e.details, "10.9.0.1 to 10.9.0.6"));
    /* release, then the search wraps around from the last one handed out */
    assert_int_equal(br_ipam_release(&s, "k2", "eth0"), 1);
    assert_int_equal(br_ipam_release(&s, "k2", "eth0"), 0);
    assert_int_equal(br_ipam_release(&s, "old", "eth0"), 1);
    assert_string_equal(ip(take(&s, &c, "k5", true)), "10.9.0.3");
    assert_string_equal(ip(take(&s, &c, "k6", true)), "10.9.0.4");
    br_ipam_close(&s);
    /* a garbage last_reserved_ip.0 is only a hint */
    snprintf(path, sizeof(path), "%s/networks/lease-test/last_reserved_ip.0", g_dir);
    f = fopen(path, "w");
    fputs("not an address", f);
    fclose(f);
    assert_true(br_ipam_open(&s, &c, &e));
    assert_int_equal(br_ipam_release(&s, "k1", "eth0"), 1);
    assert_string_equal(ip(take(&s, &c, "k7", true)), "10.9.0.2");
    br_ipam_close(&s);
    char cmd[128];
    snprintf(cmd, sizeof(cmd), "rm -rf %s", g_dir);
    assert_int_equal(system(cmd), 0);
}

static void test_store_unwritable(void **state)
{
    (void)state;
    br_conf c = small_range();
    snprintf(c.data_dir, sizeof(c.data_dir), "/proc/self/no-such-dir");
    br_ipam s;
    cnip_error e = {0};
    assert_false(br_ipam_open(&s, &c, &e));
    assert_int_equal(e.code, BR_E_IPAM);
    assert_non_null(strstr(e.details, "/proc/self/no-such-dir/lease-test"));
}

#define CLUSTER_CONF(ipam, vxlan)                                                                  \
    "{\"cniVersion\":\"1.0.0\",\"name\":\"tc000001abcdef\",\"type\":\"tessera-bridge\","           \
    "\"bridge\":\"tc000001abcdef\",\"isGateway\":false,\"ipMasq\":false,\"disableIPv6\":true,"     \
    "\"bridgeNetfilter\":false,\"removeIdleBridge\":true,\"mtu\":1450," vxlan "\"ipam\":" ipam "}"
#define STATIC_IPAM(addr)                                                                          \
    "{\"type\":\"static\",\"addresses\":[{\"address\":\"" addr "\"}],\"dataDir\":\"/tmp/x\"}"
#define VXLAN(body) "\"vxlan\":{" body "},"

/* A cluster session's network (br_conf.h): a static address, no gateway,
 * the bridge kept from iptables and removed when idle, a VXLAN device to
 * the other nodes; every bad one refused naming what is wrong. */
static void test_cluster_conf(void **state)
{
    (void)state;
    br_conf c;
    cnip_error e;
    assert_true(parse(CLUSTER_CONF(STATIC_IPAM("10.254.0.3/24"),
                                   VXLAN("\"name\":\"tv000001abcdef\",\"vni\":1,\"port\":4790,"
                                         "\"local\":\"10.215.1.11\",\"remotes\":[\"10.215.1.12\","
                                         "\"10.215.1.13\"]")),
                      CNIP_ADD, &c, &e));
    assert_true(c.static_ipam && c.has_ipam && c.no_netfilter && c.remove_idle);
    assert_false(c.is_gateway || c.port_isolation || c.hairpin);
    assert_string_equal(ip(c.range_start), "10.254.0.3");
    assert_string_equal(ip(c.subnet), "10.254.0.0");
    assert_int_equal(c.prefix, 24);
    assert_int_equal(c.gateway.s_addr, 0);
    assert_int_equal(c.n_routes, 0);
    assert_int_equal(c.mtu, 1450);
    assert_true(c.vxlan.on);
    assert_string_equal(c.vxlan.name, "tv000001abcdef");
    assert_int_equal(c.vxlan.vni, 1);
    assert_int_equal(c.vxlan.port, 4790);
    assert_string_equal(ip(c.vxlan.local), "10.215.1.11");
    assert_int_equal(c.vxlan.n_remotes, 2);
    assert_string_equal(ip(c.vxlan.remotes[1]), "10.215.1.13");
    /* no remotes, no port: the default port, a device only named (made only
     * with remotes, so that a DEL finds what an ADD made) */
    assert_true(parse(
        CLUSTER_CONF(STATIC_IPAM("10.254.0.1/24"), VXLAN("\"name\":\"tv1\",\"vni\":16777215,"
                                                         "\"local\":\"0.0.0.0\",\"remotes\":[]")),
        CNIP_DEL, &c, &e));
    assert_int_equal(c.vxlan.port, 4789);
    assert_int_equal(c.vxlan.n_remotes, 0);
    /* the agent's network keeps its defaults */
    assert_true(parse(AGENT_CONF(""), CNIP_ADD, &c, &e));
    assert_false(c.static_ipam || c.no_netfilter || c.remove_idle || c.vxlan.on);
    /* refused */
    refused(CLUSTER_CONF(STATIC_IPAM("10.254.0.0/24"), ""), CNIP_ADD, CNIP_E_CONFIG,
            "not a host address");
    refused(CLUSTER_CONF(STATIC_IPAM("10.254.0.255/24"), ""), CNIP_ADD, CNIP_E_CONFIG,
            "not a host address");
    refused(CLUSTER_CONF(STATIC_IPAM("10.254.0.2"), ""), CNIP_ADD, CNIP_E_CONFIG, "addresses");
    refused(CLUSTER_CONF("{\"type\":\"static\",\"addresses\":[]}", ""), CNIP_ADD, CNIP_E_CONFIG,
            "addresses");
    refused(CLUSTER_CONF(STATIC_IPAM("fd00::2/64"), ""), CNIP_ADD, CNIP_E_CONFIG, "IPv4 only");
    static const char *const bad_vxlan[] = {
        VXLAN("\"name\":\"tv1\",\"vni\":0,\"local\":\"10.0.0.1\",\"remotes\":[]"),
        VXLAN("\"name\":\"tv1\",\"vni\":16777216,\"local\":\"10.0.0.1\",\"remotes\":[]"),
        VXLAN("\"name\":\"tv1\",\"vni\":1,\"port\":0,\"local\":\"10.0.0.1\",\"remotes\":[]"),
        VXLAN("\"name\":\"tv1/x\",\"vni\":1,\"local\":\"10.0.0.1\",\"remotes\":[]"),
        VXLAN("\"name\":\"tv0123456789abcdef\",\"vni\":1,\"local\":\"10.0.0.1\","
              "\"remotes\":[]"),
        VXLAN("\"name\":\"tv1\",\"vni\":1,\"remotes\":[]"),
        VXLAN("\"name\":\"tv1\",\"vni\":1,\"local\":\"10.0.0.1\""),
    };
    for (size_t i = 0; i < sizeof(bad_vxlan) / sizeof(bad_vxlan[0]); i++) {
        char text[1024];
        snprintf(text, sizeof(text), CLUSTER_CONF(STATIC_IPAM("10.254.0.3/24"), "%s"),
                 bad_vxlan[i]);
        refused(text, CNIP_ADD, CNIP_E_CONFIG, "vxlan");
    }
    refused(CLUSTER_CONF(STATIC_IPAM("10.254.0.3/24"),
                         VXLAN("\"name\":\"tv1\",\"vni\":1,\"local\":\"10.0.0.1\","
                               "\"remotes\":[\"nope\"]")),
            CNIP_ADD, CNIP_E_CONFIG, "vxlan.remotes[0]");
    /* a static address has no gateway of its own */
    refused("{\"cniVersion\":\"1.0.0\",\"name\":\"n\",\"type\":\"tessera-bridge\",\"bridge\":"
            "\"b\",\"isGateway\":true,\"ipam\":" STATIC_IPAM("10.254.0.3/24") "}",
            CNIP_ADD, CNIP_E_CONFIG, "without a gateway");
    refused("{\"cniVersion\":\"1.0.0\",\"name\":\"n\",\"type\":\"tessera-bridge\",\"bridge\":"
            "\"b\",\"bridgeNetfilter\":\"no\",\"ipam\":" STATIC_IPAM("10.254.0.3/24") "}",
            CNIP_ADD, CNIP_E_CONFIG, "bridgeNetfilter");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_agent_conf),       cmocka_unit_test(test_older_shape_and_defaults),
        cmocka_unit_test(test_bad_conf),         cmocka_unit_test(test_leases),
        cmocka_unit_test(test_store_unwritable), cmocka_unit_test(test_cluster_conf),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
