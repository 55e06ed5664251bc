/* test_home_seed.c: the owner's files written into a new kernel's home
 * (home_fs_seed, CreateKernel.home_files): contents and permission bits,
 * parent directories made, a file already there left alone (a kept home keeps
 * its own), a symlink never followed, and paths that would leave the home
 * refused. */
#include "services/agent/home_fs.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char *_read(const char *dir, const char *rel)
{
    char path[512];
    snprintf(path, sizeof(path), "%s/%s", dir, rel);
    FILE *f = fopen(path, "r");
    if (!f) return NULL;
    char *buf = calloc(1, 4096);
    size_t n = fread(buf, 1, 4095, f);
    buf[n] = '\0';
    fclose(f);
    return buf;
}

static unsigned _mode(const char *dir, const char *rel)
{
    char path[512];
    snprintf(path, sizeof(path), "%s/%s", dir, rel);
    struct stat st;
    return lstat(path, &st) == 0 ? (unsigned)(st.st_mode & 07777) : 0;
}

static void test_seed(void **state)
{
    (void)state;
    char home[] = "/tmp/tessera-seed-XXXXXX", out[] = "/tmp/tessera-seed-out-XXXXXX";
    assert_non_null(mkdtemp(home));
    assert_non_null(mkdtemp(out));
    /* already there: kept */
    char kept[600];
    snprintf(kept, sizeof(kept), "%s/.bashrc", home);
    FILE *f = fopen(kept, "w");
    assert_non_null(f);
    fputs("mine\n", f);
    fclose(f);
    /* a symlink planted where a file would go, pointing out of the home */
    char link[600], target[600];
    snprintf(link, sizeof(link), "%s/.profile", home);
    snprintf(target, sizeof(target), "%s/stolen", out);
    assert_int_equal(symlink(target, link), 0);
    home_file files[] = {
        {".bashrc", 0644, "theirs\n", 7},
        {".ssh/authorized_keys", 0600, "ssh-ed25519 AAAA k\n", 19},
        {".config/x/y.conf", 04755, "k=v\n", 4},
        {".profile", 0644, "x\n", 2},
        {"../escape", 0644, "x\n", 2},
        {"/etc/passwd", 0644, "x\n", 2},
        {"", 0644, "x\n", 2},
    };
    int n = home_fs_seed(home, files, (int)(sizeof(files) / sizeof(files[0])));
    assert_int_equal(n, 2);
    char *s = _read(home, ".bashrc");
    assert_string_equal(s, "mine\n");
    free(s);
    s = _read(home, ".ssh/authorized_keys");
    assert_string_equal(s, "ssh-ed25519 AAAA k\n");
    free(s);
    assert_int_equal(_mode(home, ".ssh/authorized_keys"), 0600);
    assert_int_equal(_mode(home, ".ssh"), 0755);
    s = _read(home, ".config/x/y.conf");
    assert_string_equal(s, "k=v\n");
    free(s);
    assert_int_equal(_mode(home, ".config/x/y.conf"), 0755); /* setuid dropped */
    /* nothing went through the symlink, nor out of the home */
    assert_int_equal(access(target, F_OK), -1);
    char esc[600];
    snprintf(esc, sizeof(esc), "%s/../escape", home);
    assert_int_equal(access(esc, F_OK), -1);
    /* none, or an unreadable home: nothing, no crash */
    assert_int_equal(home_fs_seed(home, NULL, 0), 0);
    assert_int_equal(home_fs_seed("/no/such/home", files, 1), 0);
    char cmd[1200];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s' '%s'", home, out);
    assert_int_equal(system(cmd), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_seed),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
