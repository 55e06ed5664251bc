/* test_ownership.c: what tessera-vfolder creates in folders belongs
 * to vfolder.file_owner (volumes.h), the host ids of the sessions' root, so a
 * session whose root is mapped there may write it: the folder directory
 * (0755, no longer 0777), mkdir (also mkdir -p's parents), a clone's
 * directories, files and symlinks (set-id bits dropped); "" leaves them as
 * created; a malformed owner stops the start. Uploads (tus.c) take the same
 * call (vf_own_fd) on the staged file before it is renamed into place.
 * Needs root (chown), like tessera-vfolder itself. */
#include "services/vfolder/files.h"
#include "services/vfolder/volumes.h"

#include "libcommon/log.h"

#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

/* The folder root, and mkdir as 0 / -errno (files.h answers bool + errno). */
static int open_root(const char *dir)
{
    int fd, err;
    return vf_fs_open_root(dir, &fd, &err) ? fd : -err;
}

static int mkdir_in(int root, const char *path, bool parents, bool exist_ok)
{
    int err;
    return vf_fs_mkdir(root, path, parents, exist_ok, &err) ? 0 : -err;
}

static char g_base[64];

static void assert_owner(const char *path, unsigned uid, unsigned gid, unsigned mode)
{
    struct stat st;
    if (lstat(path, &st) != 0) fail_msg("%s: %s", path, strerror(errno));
    if (st.st_uid != uid || st.st_gid != gid)
        fail_msg("%s is owned by %u:%u, want %u:%u", path, (unsigned)st.st_uid, (unsigned)st.st_gid,
                 uid, gid);
    if (mode && (st.st_mode & 07777) != mode)
        fail_msg("%s has mode %04o, want %04o", path, (unsigned)(st.st_mode & 07777), mode);
}

static int setup(void **state)
{
    (void)state;
    tlog_init("test", NULL);
    ts_strlcpy(g_base, "/tmp/test_vfolder_owner.XXXXXX", sizeof(g_base));
    if (!mkdtemp(g_base)) return -1;
    char spec[200];
    snprintf(spec, sizeof(spec), "local:%s/local", g_base);
    ts_err err = {{0}};
    if (!vf_volumes_init(spec, "local", &err)) {
        fprintf(stderr, "vf_volumes_init: %s\n", err.msg);
        return -1;
    }
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    char cmd[200];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", g_base);
    return system(cmd) == 0 ? 0 : -1;
}

static void test_owner_parse(void **state)
{
    (void)state;
    uid_t u;
    gid_t g;
    bool set;
    assert_true(vf_file_owner_parse(NULL, &u, &g, &set)); /* the default */
    assert_true(set);
    assert_int_equal(u, 100000);
    assert_int_equal(g, 100000);
    assert_true(vf_file_owner_parse("1000:1001", &u, &g, &set));
    assert_true(set && u == 1000 && g == 1001);
    assert_true(vf_file_owner_parse("", &u, &g, &set));
    assert_false(set);
    static const char *const bad[] = {"1000",    "a:b",   "1000:",      ":1000",        "-1:1000",
                                      "1000:-1", "1:2:3", "1000:1000 ", "4294967295:0", "0x10:1"};
    for (size_t i = 0; i < TS_ARRAY_LEN(bad); i++)
        if (vf_file_owner_parse(bad[i], &u, &g, &set)) fail_msg("'%s' was accepted", bad[i]);
    /* a malformed owner stops the start, saying so */
    char spec[200];
    snprintf(spec, sizeof(spec), "local:%s/local", g_base);
    ts_err err = {{0}};
    char *saved = vf_file_owner;
    vf_file_owner = "work";
    assert_false(vf_volumes_init(spec, "local", &err));
    assert_non_null(strstr(err.msg, "vfolder.file_owner"));
    vf_file_owner = saved;
    assert_true(vf_volumes_init(spec, "local", &err));
}

static void test_created_entries_belong_to_the_sessions_root(void **state)
{
    (void)state;
    if (geteuid() != 0) skip();
    const vf_volume *v = vf_volume_find("local");
    assert_non_null(v);
    ts_err err = {{0}};
    const char *id = "0123456789abcdef0123456789abcdef";
    if (!vf_volume_create_dir(v, id, 0, &err)) fail_msg("%s", err.msg);
    char dir[VF_PATH_MAX], p[VF_PATH_MAX + 64];
    vf_volume_folder_path(v, id, dir);
    assert_owner(dir, 100000, 100000, 0755);
    snprintf(p, sizeof(p), "%.*s", (int)(strrchr(dir, '/') - dir), dir);
    assert_owner(p, 0, 0, 0755); /* <volume>/01/23: tessera-vfolder's */

    int root = open_root(dir);
    assert_true(root >= 0);
    assert_int_equal(mkdir_in(root, "a/b/c", true, false), 0);
    assert_int_equal(mkdir_in(root, "d", false, false), 0);
    static const char *const made[] = {"a", "a/b", "a/b/c", "d"};
    for (size_t i = 0; i < TS_ARRAY_LEN(made); i++) {
        snprintf(p, sizeof(p), "%s/%s", dir, made[i]);
        assert_owner(p, 100000, 100000, 0755);
    }
    /* an existing directory keeps its owner (a session's, say) */
    snprintf(p, sizeof(p), "%s/mine", dir);
    assert_int_equal(mkdir(p, 0700), 0);
    assert_int_equal(chown(p, 101000, 101000), 0);
    assert_int_equal(mkdir_in(root, "mine", false, true), 0);
    assert_owner(p, 101000, 101000, 0700);
    close(root);

    /* a clone: every entry the owner's, set-id bits dropped */
    snprintf(p, sizeof(p),
             "cd '%s' && printf x > a/f && chmod 4755 a/f && chown 0:0 a/f && ln -s f a/l && "
             "chown -h 0:0 a/l",
             dir);
    assert_int_equal(system(p), 0);
    const char *clone_id = "fedcba9876543210fedcba9876543210";
    if (!vf_volume_create_dir(v, clone_id, 0, &err)) fail_msg("%s", err.msg);
    int64_t bytes = 0;
    if (!vf_volume_clone(v, id, v, clone_id, &bytes, &err)) fail_msg("%s", err.msg);
    assert_int_equal(bytes, 1);
    char cdir[VF_PATH_MAX];
    vf_volume_folder_path(v, clone_id, cdir);
    snprintf(p, sizeof(p), "%s/a", cdir);
    assert_owner(p, 100000, 100000, 0);
    snprintf(p, sizeof(p), "%s/a/b/c", cdir);
    assert_owner(p, 100000, 100000, 0);
    snprintf(p, sizeof(p), "%s/a/f", cdir);
    assert_owner(p, 100000, 100000, 0755);
    snprintf(p, sizeof(p), "%s/a/l", cdir);
    assert_owner(p, 100000, 100000, 0);

    /* "": as created (tessera-vfolder's own ids) */
    char *saved = vf_file_owner;
    vf_file_owner = "";
    const char *plain_id = "00112233445566778899aabbccddeeff";
    if (!vf_volume_create_dir(v, plain_id, 0, &err)) fail_msg("%s", err.msg);
    vf_volume_folder_path(v, plain_id, dir);
    assert_owner(dir, 0, 0, 0755);
    /* another owner: the one configured */
    vf_file_owner = "1000:1000";
    root = open_root(dir);
    assert_int_equal(mkdir_in(root, "x", false, false), 0);
    close(root);
    snprintf(p, sizeof(p), "%s/x", dir);
    assert_owner(p, 1000, 1000, 0755);
    vf_file_owner = saved;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_owner_parse),
        cmocka_unit_test(test_created_entries_belong_to_the_sessions_root),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
