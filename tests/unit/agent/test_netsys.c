/* test_netsys.c: where the agent reads its network devices (netsys.c). In
 * the host's network namespace: /sys. In a namespace of its own (the dev
 * stack's nodes): a sysfs mounted for that namespace under the state dir,
 * which lists that namespace's devices (here only lo), not the host's; the
 * teardown unmounts it. The second part needs root (unshare, mount); it runs
 * in a child process so the test's own namespaces stay as they were. */
#include "services/agent/netsys.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <dirent.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static void test_host_namespace_reads_sys(void **state)
{
    (void)state;
    char path[256];
    ts_err err = {{0}};
    assert_true(netsys_setup("/nonexistent-state", &err)); /* host namespace: nothing mounted */
    netsys_path(path, sizeof(path), "tessera0", "brif");
    assert_string_equal(path, "/sys/class/net/tessera0/brif");
    netsys_path(path, sizeof(path), "eth0", "");
    assert_string_equal(path, "/sys/class/net/eth0");
    netsys_teardown();
}

/* In a child: a new network (and mount) namespace, netsys_setup, the devices
 * listed there. Exit 0 when they are only lo; 77 when this host cannot. */
static int child(const char *dir)
{
    if (unshare(CLONE_NEWNET | CLONE_NEWNS) != 0) return 77;
    if (mount("", "/", NULL, MS_REC | MS_PRIVATE, NULL) != 0) return 77;
    ts_err err = {{0}};
    if (!netsys_setup(dir, &err)) {
        fprintf(stderr, "netsys_setup: %s\n", err.msg);
        return 1;
    }
    char path[512];
    netsys_path(path, sizeof(path), "lo", "");
    char want[512];
    snprintf(want, sizeof(want), "%s/sys/class/net/lo", dir);
    if (strcmp(path, want) != 0 || access(path, F_OK) != 0) {
        fprintf(stderr, "path %s want %s\n", path, want);
        return 2;
    }
    snprintf(path, sizeof(path), "%s/sys/class/net", dir);
    DIR *d = opendir(path);
    if (!d) return 3;
    int others = 0;
    struct dirent *e;
    while ((e = readdir(d)))
        others += e->d_name[0] != '.' && strcmp(e->d_name, "lo") != 0;
    closedir(d);
    if (others) return 4;
    netsys_teardown();
    snprintf(path, sizeof(path), "%s/sys/class", dir);
    if (access(path, F_OK) == 0) return 5; /* unmounted */
    netsys_path(path, sizeof(path), "lo", "");
    return strcmp(path, "/sys/class/net/lo") == 0 ? 0 : 6;
}

static void test_own_namespace_mounts_its_sysfs(void **state)
{
    (void)state;
    if (geteuid() != 0) skip();
    char dir[] = "/tmp/netsys-XXXXXX";
    assert_non_null(mkdtemp(dir));
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) _exit(child(dir));
    int st = 0;
    assert_int_equal(waitpid(pid, &st, 0), pid);
    char sys[64];
    snprintf(sys, sizeof(sys), "%s/sys", dir);
    rmdir(sys);
    rmdir(dir);
    assert_true(WIFEXITED(st));
    if (WEXITSTATUS(st) == 77) skip();
    assert_int_equal(WEXITSTATUS(st), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_host_namespace_reads_sys),
        cmocka_unit_test(test_own_namespace_mounts_its_sysfs),
    };
    return cmocka_run_group_tests_name("agent_netsys", tests, NULL, NULL);
}
