/* test_cni.c: services/agent/cni.c without root: agent.cni_portmap
 * and agent.cni_bridge name a plugin (ours beside the agent, a plugin in
 * agent.cni_bin_dir, or an absolute path), and anything else, or a file that
 * is not an executable, is refused with the reason and the option;
 * agent.cni_publish_addrs gives the addresses published ports answer on, and
 * a bad network option is refused by name. (The plugins themselves
 * run in test_runtime.c and tests/integration/test_portmap.py.) */
#include "services/agent/cni.h"

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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_portmap_locate),
        cmocka_unit_test(test_publish_addrs),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
