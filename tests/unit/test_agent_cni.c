/* test_agent_cni.c: services/agent/cni.c without root: agent.cni_portmap
 * and agent.cni_bridge name a plugin (ours beside the agent, a plugin in
 * agent.cni_bin_dir, or an absolute path), and anything else, or a file that
 * is not an executable, is refused with the reason and the option. (The plugins themselves
 * run in test_agent_runtime.c and tests/integration/test_portmap.py.) */
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
     * there is none (build/tests) */
    refused("tessera-portmap", dir, "/tests/tessera-portmap");
    refused("", dir, "/tests/tessera-portmap");
    /* the option in the message, and the bridge plugin's own default */
    refused("nosuch", dir, "agent.cni_portmap: ");
    ts_err e2 = {{0}};
    assert_null(cni_plugin_locate("agent.cni_bridge", "", "tessera-bridge", dir, &e2));
    assert_non_null(strstr(e2.msg, "agent.cni_bridge: "));
    assert_non_null(strstr(e2.msg, "/tests/tessera-bridge"));
    got = cni_plugin_locate("agent.cni_bridge", "myportmap", "tessera-bridge", dir, &e2);
    assert_non_null(got);
    assert_string_equal(got, exe);
    free(got);
    unlink(exe);
    unlink(plain);
    rmdir(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_portmap_locate),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
