/* test_cni.c: services/agent/cni.c without root: agent.cni_portmap
 * and agent.cni_bridge name a plugin (ours beside the agent, a plugin in
 * agent.cni_bin_dir, or an absolute path), and anything else, or a file that
 * is not an executable, is refused with the reason and the option;
 * agent.cni_publish_addrs gives the addresses published ports answer on, and
 * a bad network option is refused by name; a cluster session's network
 * configuration (cni_cluster.h: names, static address, VXLAN to the other
 * nodes, refusals). (The plugins themselves
 * run in test_runtime.c and tests/integration/test_portmap.py.) */
#include "services/agent/cni.h"
#include "services/agent/cni_cluster.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static void refused(const char *plugin, const char *bin_dir, const char *says)
{
    ts_err err = {{0}};
    char *got = cni_plugin_locate("agent.cni_portmap", plugin, "tessera-portmap", bin_dir, &err);
    if (got) fail_msg("'%s' accepted as %s", plugin, got);
    if (!strstr(err.msg, says)) fail_msg("'%s' does not say '%s'", err.msg, says);
}

static void test_portmap_locate(void **state)
{
    (void)state;
    char dir[] = "/tmp/test-cni-XXXXXX";
    assert_non_null(mkdtemp(dir));
    char exe[64], plain[64];
    snprintf(exe, sizeof(exe), "%s/myportmap", dir);
    snprintf(plain, sizeof(plain), "%s/notexec", dir);
    FILE *f = fopen(exe, "w");
    assert_non_null(f);
    fclose(f);
    chmod(exe, 0755);
    f = fopen(plain, "w");
    assert_non_null(f);
    fclose(f);
    chmod(plain, 0644);
    ts_err err = {{0}};
    /* a plain name: that plugin in the bin dir */
    char *got = cni_plugin_locate("agent.cni_portmap", "myportmap", "tessera-portmap", dir, &err);
    assert_non_null(got);
    assert_string_equal(got, exe);
    free(got);
    /* an absolute path: that file */
    got = cni_plugin_locate("agent.cni_portmap", exe, "tessera-portmap", "/nowhere", &err);
    assert_non_null(got);
    assert_string_equal(got, exe);
    free(got);
    refused("nosuch", dir, "nosuch: No such file");
    refused("notexec", dir, "is not an executable file");
    refused(plain, "/nowhere", "is not an executable file");
    refused("/tmp", "/nowhere", "is not an executable file"); /* a directory */
    refused("../myportmap", dir, "a plugin name or an absolute path");
    refused("sub/portmap", dir, "a plugin name or an absolute path");
    refused("..", dir, "a plugin name or an absolute path");
    /* tessera-portmap (and the empty default): beside this program, where
     * there is none (build/tests/agent) */
    refused("tessera-portmap", dir, "/tests/agent/tessera-portmap");
    refused("", dir, "/tests/agent/tessera-portmap");
    /* the option in the message, and the bridge plugin's own default */
    refused("nosuch", dir, "agent.cni_portmap: ");
    ts_err e2 = {{0}};
    assert_null(cni_plugin_locate("agent.cni_bridge", "", "tessera-bridge", dir, &e2));
    assert_non_null(strstr(e2.msg, "agent.cni_bridge: "));
    assert_non_null(strstr(e2.msg, "/tests/agent/tessera-bridge"));
    got = cni_plugin_locate("agent.cni_bridge", "myportmap", "tessera-bridge", dir, &e2);
    assert_non_null(got);
    assert_string_equal(got, exe);
    free(got);
    unlink(exe);
    unlink(plain);
    rmdir(dir);
}

/* agent.cni_publish_addrs: where published ports answer */
static void test_publish_addrs(void **state)
{
    (void)state;
    char out[8][16];
    int n = -1;
    ts_err err = {{0}};
    /* "*": every address (no hostIP) */
    assert_true(cni_publish_resolve("*", "192.0.2.5", out, 8, &n, &err));
    assert_int_equal(n, 0);
    /* a list: those */
    assert_true(cni_publish_resolve(" 192.0.2.5, 10.0.0.1 ,", "ignored", out, 8, &n, &err));
    assert_int_equal(n, 2);
    assert_string_equal(out[0], "192.0.2.5");
    assert_string_equal(out[1], "10.0.0.1");
    /* default: the kernel host wsproxy connects to, an address of this host */
    assert_true(cni_publish_resolve("", "127.0.0.1", out, 8, &n, &err));
    assert_int_equal(n, 1);
    assert_string_equal(out[0], "127.0.0.1");
    /* an address that is not this host's (NATed by someone else, say):
     * every address, since DNAT would never see it */
    assert_true(cni_publish_resolve(NULL, "198.51.100.7", out, 8, &n, &err));
    assert_int_equal(n, 0);
    /* a name that is loopback only here, one that does not resolve, none:
     * every address (what others resolve it to is not known here) */
    assert_true(cni_publish_resolve("", "localhost", out, 8, &n, &err));
    assert_int_equal(n, 0);
    assert_true(cni_publish_resolve("", "no-such-host.invalid", out, 8, &n, &err));
    assert_int_equal(n, 0);
    assert_true(cni_publish_resolve("", "", out, 8, &n, &err));
    assert_int_equal(n, 0);
    assert_false(cni_publish_resolve("10.0.0.1,host.example", "", out, 8, &n, &err));
    assert_non_null(strstr(err.msg, "agent.cni_publish_addrs: 'host.example'"));
    assert_false(cni_publish_resolve("1.1.1.1,1.1.1.2,1.1.1.3", "", out, 2, &n, &err));
    assert_non_null(strstr(err.msg, "at most 2"));
    /* the policy as a whole: a bad option is named */
    cni_policy p = {.deny = "169.254.0.0/16,nonsense"};
    assert_false(cni_policy_set(&p, &err));
    assert_non_null(strstr(err.msg, "agent.cni_deny: 'nonsense'"));
    p = (cni_policy){.outbound = "maybe"};
    assert_false(cni_policy_set(&p, &err));
    assert_non_null(strstr(err.msg, "agent.cni_outbound"));
    p = (cni_policy){.publish_addrs = "::1"};
    assert_false(cni_policy_set(&p, &err));
    assert_non_null(strstr(err.msg, "agent.cni_publish_addrs"));
}

static void test_cluster_conf(void **state)
{
    (void)state;
    cni_conf c = {.network = "tsnet245c1",
                  .subnet = "10.217.245.0/24",
                  .data_dir = "/var/lib/x/cni",
                  .cluster_bridge = "/usr/bin/true",
                  .vxlan_port = 4790};
    kernel_peer peers[] = {{"main1", "10.254.0.1/24"}, {"sub1", "10.254.0.2/24"}};
    const char *remotes[] = {"10.215.245.12"};
    kernel_cluster k = {.vni = 1,
                        .address = "10.254.0.1/24",
                        .local = "127.0.0.1",
                        .remotes = remotes,
                        .n_remotes = 1,
                        .peers = peers,
                        .n_peers = 2};
    char *conf = NULL;
    ts_err err = {{0}};
    assert_true(cni_cluster_conf(&c, &k, &conf, &err));
    json_t *j = json_loads(conf, 0, NULL);
    /* the suffix: FNV-1a of the network name, as dev-down.sh computes it */
    assert_string_equal(json_string_value(json_object_get(j, "bridge")), "tc000001e8e880");
    assert_string_equal(json_string_value(json_object_get(j, "type")), "tessera-bridge");
    assert_true(json_is_false(json_object_get(j, "isGateway")));
    assert_true(json_is_false(json_object_get(j, "bridgeNetfilter")));
    assert_true(json_is_true(json_object_get(j, "removeIdleBridge")));
    json_t *ipam = json_object_get(j, "ipam");
    assert_string_equal(json_string_value(json_object_get(ipam, "type")), "static");
    assert_string_equal(json_string_value(json_object_get(
                            json_array_get(json_object_get(ipam, "addresses"), 0), "address")),
                        "10.254.0.1/24");
    assert_string_equal(json_string_value(json_object_get(ipam, "dataDir")),
                        "/var/lib/x/cni/networks");
    json_t *vx = json_object_get(j, "vxlan");
    assert_string_equal(json_string_value(json_object_get(vx, "name")), "tv000001e8e880");
    assert_int_equal(json_integer_value(json_object_get(vx, "vni")), 1);
    assert_int_equal(json_integer_value(json_object_get(vx, "port")), 4790);
    assert_string_equal(json_string_value(json_object_get(vx, "local")), "127.0.0.1");
    assert_string_equal(json_string_value(json_array_get(json_object_get(vx, "remotes"), 0)),
                        "10.215.245.12");
    /* loopback's MTU less VXLAN's 50 */
    assert_true(json_integer_value(json_object_get(j, "mtu")) > 1000);
    json_decref(j);
    free(conf);
    /* one node: a device named (a DEL removes whatever an ADD made), no remotes, no MTU */
    k.n_remotes = 0;
    assert_true(cni_cluster_conf(&c, &k, &conf, &err));
    j = json_loads(conf, 0, NULL);
    assert_int_equal(json_array_size(json_object_get(json_object_get(j, "vxlan"), "remotes")), 0);
    assert_null(json_object_get(j, "mtu"));
    json_decref(j);
    free(conf);
    /* refused */
    k.address = "10.217.245.9/24";
    assert_false(cni_cluster_conf(&c, &k, &conf, &err));
    assert_non_null(strstr(err.msg, "overlaps this agent's agent.cni_subnet 10.217.245.0/24"));
    k.address = "10.254.0.1";
    assert_false(cni_cluster_conf(&c, &k, &conf, &err));
    k.address = "10.254.0.1/24";
    k.vni = 0;
    assert_false(cni_cluster_conf(&c, &k, &conf, &err));
    k.vni = 1;
    c.cluster_bridge = NULL;
    assert_false(cni_cluster_conf(&c, &k, &conf, &err));
    assert_non_null(strstr(err.msg, "tessera-bridge"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_portmap_locate),
        cmocka_unit_test(test_publish_addrs),
        cmocka_unit_test(test_cluster_conf),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
