/* test_unpack.c: services/agent/unpack.c on tarballs crafted here with
 * libarchive's writer: OCI whiteouts and opaque directories become overlayfs
 * whiteouts, hard links, symlinks, modes, owners and mtimes are kept, every
 * kind of escape is refused naming the entry with nothing written outside, and
 * the diff_id is the digest of the uncompressed stream; owners shifted for a
 * user namespace (every entry, the directories the tar does not list, the
 * layer root; ids past the mapping become its nobody). Needs root (device
 * whiteouts, trusted.* xattrs, chown), like the agent. */
#include "services/agent/digest.h"
#include "services/agent/unpack.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <archive.h>
#include <archive_entry.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>
#include <unistd.h>

typedef struct tent {
    const char *path;
    char type;        /* 'f' file, 'd' dir, 'l' symlink, 'h' hard link, 'c' char device, 'p' fifo */
    const char *data; /* file content, or link target */
    int mode;         /* 0: default */
    int uid, gid;
    long mtime;
} tent;

static char g_dir[256];

/* Write a tar (filter: "gzip", "zstd" or NULL) of the entries to path. */
static void write_tar(const char *path, const char *filter, const tent *ents, size_t n)
{
    struct archive *a = archive_write_new();
    archive_write_set_format_pax_restricted(a);
    if (filter && strcmp(filter, "gzip") == 0) archive_write_add_filter_gzip(a);
    if (filter && strcmp(filter, "zstd") == 0)
        assert_int_equal(archive_write_add_filter_zstd(a), ARCHIVE_OK);
    assert_int_equal(archive_write_open_filename(a, path), ARCHIVE_OK);
    for (size_t i = 0; i < n; i++) {
        const tent *t = &ents[i];
        struct archive_entry *e = archive_entry_new();
        archive_entry_set_pathname(e, t->path);
        archive_entry_set_uid(e, t->uid);
        archive_entry_set_gid(e, t->gid);
        archive_entry_set_mtime(e, t->mtime ? t->mtime : 1000000000, 0);
        size_t len = 0;
        switch (t->type) {
        case 'f':
            len = t->data ? strlen(t->data) : 0;
            archive_entry_set_filetype(e, AE_IFREG);
            archive_entry_set_perm(e, t->mode ? t->mode : 0644);
            archive_entry_set_size(e, (la_int64_t)len);
            break;
        case 'd':
            archive_entry_set_filetype(e, AE_IFDIR);
            archive_entry_set_perm(e, t->mode ? t->mode : 0755);
            break;
        case 'l':
            archive_entry_set_filetype(e, AE_IFLNK);
            archive_entry_set_perm(e, 0777);
            archive_entry_set_symlink(e, t->data);
            break;
        case 'h':
            archive_entry_set_filetype(e, AE_IFREG);
            archive_entry_set_perm(e, 0644);
            archive_entry_set_hardlink(e, t->data);
            archive_entry_set_size(e, 0);
            break;
        case 'c':
            archive_entry_set_filetype(e, AE_IFCHR);
            archive_entry_set_perm(e, 0666);
            archive_entry_set_rdev(e, makedev(1, 3));
            break;
        case 'p':
            archive_entry_set_filetype(e, AE_IFIFO);
            archive_entry_set_perm(e, t->mode ? t->mode : 0600);
            break;
        }
        assert_int_equal(archive_write_header(a, e), ARCHIVE_OK);
        if (len) assert_int_equal(archive_write_data(a, t->data, len), (la_ssize_t)len);
        archive_entry_free(e);
    }
    assert_int_equal(archive_write_close(a), ARCHIVE_OK);
    archive_write_free(a);
}

static char *path_in(const char *rel)
{
    static char buf[4][512];
    static int k;
    k = (k + 1) % 4;
    snprintf(buf[k], sizeof(buf[k]), "%s/%s", g_dir, rel);
    return buf[k];
}

static char *read_text(const char *path)
{
    static char buf[256];
    int fd = open(path, O_RDONLY);
    if (fd < 0) return NULL;
    ssize_t n = read(fd, buf, sizeof(buf) - 1);
    close(fd);
    buf[n < 0 ? 0 : n] = '\0';
    return buf;
}

static int setup(void **state)
{
    (void)state;
    snprintf(g_dir, sizeof(g_dir), "/tmp/tessera-unpack-XXXXXX");
    if (!mkdtemp(g_dir)) return -1;
    mkdir(path_in("tmp"), 0700);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    if (!unpack_remove_tree(g_dir)) return -1;
    return 0;
}

/* Unpack tar at rel path "t.tar" into "out-<tag>"; returns success. */
static bool unpack(const char *tag, const tent *ents, size_t n, const char *filter,
                   unpack_stats *st, ts_err *err)
{
    write_tar(path_in("t.tar"), filter, ents, n);
    char dest[512];
    snprintf(dest, sizeof(dest), "%s/out-%s", g_dir, tag);
    return unpack_layer(path_in("t.tar"), dest, path_in("tmp"), NULL, NULL, st, err);
}

static bool tmp_is_empty(void)
{
    char cmd[600];
    snprintf(cmd, sizeof(cmd), "test -z \"$(ls -A %s)\"", path_in("tmp"));
    return system(cmd) == 0;
}

static void test_basic_kinds(void **state)
{
    (void)state;
    static const tent ents[] = {
        {"./", 'd', NULL, 0755, 0, 0, 1500000000},
        {"./bin/", 'd', NULL, 0711, 0, 0, 1500000001},
        {"./bin/busybox", 'f', "#!busybox\n", 04755, 0, 0, 1500000002},
        {"./bin/sh", 'l', "/bin/busybox", 0, 0, 0, 0},
        {"./bin/ls", 'h', "bin/busybox", 0, 0, 0, 0},
        {"/etc/passwd", 'f', "root:x:0:0::/root:/bin/sh\n", 0640, 0, 42, 1600000000},
        {"home/work/", 'd', NULL, 0750, 1000, 1000, 0},
        {"home/work/notes", 'f', "hi", 0600, 1000, 1000, 0},
        {"dev/null", 'c', NULL, 0, 0, 0, 0},
        {"run/fifo", 'p', NULL, 0620, 0, 0, 0},
        {"dangling", 'l', "/nowhere/at/all", 0, 0, 0, 0},
    };
    unpack_stats st;
    ts_err err = {{0}};
    if (!unpack("basic", ents, TS_ARRAY_LEN(ents), "gzip", &st, &err)) fail_msg("%s", err.msg);
    assert_int_equal(st.entries, (int64_t)TS_ARRAY_LEN(ents));
    assert_int_equal(st.skipped, 1); /* dev/null */

    struct stat s;
    assert_int_equal(lstat(path_in("out-basic/bin/busybox"), &s), 0);
    assert_int_equal(s.st_mode & 07777, 04755);
    assert_int_equal(s.st_mtime, 1500000002);
    assert_int_equal(s.st_nlink, 2);
    struct stat h;
    assert_int_equal(lstat(path_in("out-basic/bin/ls"), &h), 0);
    assert_int_equal(h.st_ino, s.st_ino);
    assert_string_equal(read_text(path_in("out-basic/bin/ls")), "#!busybox\n");

    char target[256] = {0};
    assert_true(readlink(path_in("out-basic/bin/sh"), target, sizeof(target) - 1) > 0);
    assert_string_equal(target, "/bin/busybox");
    memset(target, 0, sizeof(target));
    assert_true(readlink(path_in("out-basic/dangling"), target, sizeof(target) - 1) > 0);
    assert_string_equal(target, "/nowhere/at/all");

    assert_int_equal(lstat(path_in("out-basic/etc/passwd"), &s), 0);
    assert_int_equal(s.st_mode & 07777, 0640);
    assert_int_equal(s.st_gid, 42);
    assert_int_equal(s.st_mtime, 1600000000);
    /* implied parent directory */
    assert_int_equal(lstat(path_in("out-basic/etc"), &s), 0);
    assert_true(S_ISDIR(s.st_mode));
    assert_int_equal(s.st_mode & 07777, 0755);

    assert_int_equal(lstat(path_in("out-basic/home/work"), &s), 0);
    assert_int_equal(s.st_mode & 07777, 0750);
    assert_int_equal(s.st_uid, 1000);
    assert_int_equal(s.st_mtime, 1000000000); /* kept although a file was created in it */
    assert_int_equal(lstat(path_in("out-basic/bin"), &s), 0);
    assert_int_equal(s.st_mode & 07777, 0711);
    assert_int_equal(s.st_mtime, 1500000001);
    assert_int_equal(lstat(path_in("out-basic"), &s), 0);
    assert_int_equal(s.st_mode & 07777, 0755);

    assert_int_equal(lstat(path_in("out-basic/dev/null"), &s), -1); /* device skipped */
    assert_int_equal(lstat(path_in("out-basic/run/fifo"), &s), 0);
    assert_true(S_ISFIFO(s.st_mode));
    assert_int_equal(s.st_mode & 07777, 0620);
    assert_true(tmp_is_empty());

    /* diff_id = sha256 of the uncompressed tar: unpack the same entries plain. */
    unpack_stats st2;
    if (!unpack("basic-plain", ents, TS_ARRAY_LEN(ents), NULL, &st2, &err)) fail_msg("%s", err.msg);
    assert_string_equal(st.diff_id, st2.diff_id);
    char d[DIGEST_STRLEN];
    int64_t size = 0;
    assert_true(digest_file(path_in("t.tar"), d, &size, &err));
    assert_string_equal(d, st2.diff_id);
    assert_int_equal(size, st2.uncompressed_bytes);
}

static void test_zstd_and_diffid_check(void **state)
{
    (void)state;
    static const tent ents[] = {{"a/b/c.txt", 'f', "zstd!", 0, 0, 0, 0}};
    unpack_stats st;
    ts_err err = {{0}};
    if (!unpack("zstd", ents, 1, "zstd", &st, &err)) fail_msg("%s", err.msg);
    assert_string_equal(read_text(path_in("out-zstd/a/b/c.txt")), "zstd!");

    /* a wrong expected diff_id keeps nothing */
    write_tar(path_in("t.tar"), "gzip", ents, 1);
    const char *wrong = "sha256:0000000000000000000000000000000000000000000000000000000000000000";
    assert_false(unpack_layer(path_in("t.tar"), path_in("out-wrong"), path_in("tmp"), wrong, NULL,
                              NULL, &err));
    assert_non_null(strstr(err.msg, "does not match the image config's diff_id"));
    struct stat s;
    assert_int_equal(lstat(path_in("out-wrong"), &s), -1);
    assert_true(tmp_is_empty());

    /* not a tar at all */
    FILE *f = fopen(path_in("junk"), "w");
    fputs("this is not a tar archive, not even close, really not......", f);
    fclose(f);
    assert_false(
        unpack_layer(path_in("junk"), path_in("out-junk"), path_in("tmp"), NULL, NULL, NULL, &err));
    assert_true(tmp_is_empty());
}

static void test_whiteouts(void **state)
{
    (void)state;
    static const tent ents[] = {
        {"etc/", 'd', NULL, 0, 0, 0, 0},
        {"etc/.wh.motd", 'f', "", 0, 0, 0, 0},
        {"var/cache/", 'd', NULL, 0, 0, 0, 0},
        {"var/cache/.wh..wh..opq", 'f', "", 0, 0, 0, 0},
        {"var/cache/kept", 'f', "new", 0, 0, 0, 0},
        {".wh.oldfile", 'f', "", 0, 0, 0, 0},
    };
    ts_err err = {{0}};
    if (!unpack("wh", ents, TS_ARRAY_LEN(ents), "gzip", NULL, &err)) fail_msg("%s", err.msg);
    struct stat s;
    assert_int_equal(lstat(path_in("out-wh/etc/motd"), &s), 0);
    assert_true(S_ISCHR(s.st_mode));
    assert_int_equal(s.st_rdev, makedev(0, 0));
    assert_int_equal(lstat(path_in("out-wh/etc/.wh.motd"), &s), -1);
    assert_int_equal(lstat(path_in("out-wh/oldfile"), &s), 0);
    assert_true(S_ISCHR(s.st_mode));
    char v[8] = {0};
    assert_int_equal(lgetxattr(path_in("out-wh/var/cache"), "trusted.overlay.opaque", v, sizeof(v)),
                     1);
    assert_string_equal(v, "y");
    assert_int_equal(lstat(path_in("out-wh/var/cache/.wh..wh..opq"), &s), -1);
    assert_string_equal(read_text(path_in("out-wh/var/cache/kept")), "new");
    /* not opaque: etc */
    assert_int_equal(lgetxattr(path_in("out-wh/etc"), "trusted.overlay.opaque", v, sizeof(v)), -1);
}

static void expect_refused(const char *tag, const tent *ents, size_t n, const char *entry_name)
{
    ts_err err = {{0}};
    char dest[512];
    snprintf(dest, sizeof(dest), "%s/out-%s", g_dir, tag);
    write_tar(path_in("t.tar"), "gzip", ents, n);
    if (unpack_layer(path_in("t.tar"), dest, path_in("tmp"), NULL, NULL, NULL, &err))
        fail_msg("%s: unpacked, should have been refused", tag);
    char want[256];
    snprintf(want, sizeof(want), "entry '%s' escapes the layer root", entry_name);
    if (!strstr(err.msg, want)) fail_msg("%s: got '%s', want '%s'", tag, err.msg, want);
    struct stat s;
    assert_int_equal(lstat(dest, &s), -1);
    assert_true(tmp_is_empty());
}

static void test_escapes_refused(void **state)
{
    (void)state;
    char outside_name[64];
    snprintf(outside_name, sizeof(outside_name), "tessera-unpack-escape-%d", (int)getpid());
    char etc_victim[128];
    snprintf(etc_victim, sizeof(etc_victim), "/etc/%s", outside_name);
    char dotdot[128], through[128], through_dotdot[128], abs_sneak[128];
    snprintf(dotdot, sizeof(dotdot), "../%s", outside_name);
    snprintf(through, sizeof(through), "link/%s", outside_name);
    snprintf(through_dotdot, sizeof(through_dotdot), "link/../../%s", outside_name);
    snprintf(abs_sneak, sizeof(abs_sneak), "/a/../../%s", outside_name);

    const tent t1[] = {{"ok", 'f', "x", 0, 0, 0, 0}, {dotdot, 'f', "pwned", 0, 0, 0, 0}};
    expect_refused("dotdot", t1, 2, dotdot);
    const tent t2[] = {{"link", 'l', "/etc", 0, 0, 0, 0}, {through, 'f', "pwned", 0, 0, 0, 0}};
    expect_refused("through", t2, 2, through);
    const tent t3[] = {{"link", 'l', "/etc", 0, 0, 0, 0},
                       {through_dotdot, 'f', "pwned", 0, 0, 0, 0}};
    expect_refused("through-dotdot", t3, 2, through_dotdot);
    const tent t4[] = {{abs_sneak, 'f', "pwned", 0, 0, 0, 0}};
    expect_refused("abs-dotdot", t4, 1, abs_sneak);
    /* relative symlink to the outside, then a directory and a file through it */
    const tent t5[] = {{"up", 'l', "..", 0, 0, 0, 0}, {"up/sub/", 'd', NULL, 0, 0, 0, 0}};
    expect_refused("dir-through", t5, 2, "up/sub/");
    /* hard link to a file outside the root */
    const tent t6[] = {{"passwd", 'h', "../../../../etc/passwd", 0, 0, 0, 0}};
    expect_refused("hardlink-out", t6, 1, "passwd");
    /* hard link through a symlink */
    const tent t7[] = {{"link", 'l', "/etc", 0, 0, 0, 0}, {"pw", 'h', "link/passwd", 0, 0, 0, 0}};
    ts_err err = {{0}};
    write_tar(path_in("t.tar"), "gzip", t7, 2);
    assert_false(unpack_layer(path_in("t.tar"), path_in("out-hl-through"), path_in("tmp"), NULL,
                              NULL, NULL, &err));
    assert_non_null(strstr(err.msg, "entry 'pw'"));
    assert_non_null(strstr(err.msg, "symlink 'link'"));
    /* whiteout through a symlink */
    const tent t8[] = {{"link", 'l', "/etc", 0, 0, 0, 0}, {"link/.wh.passwd", 'f', "", 0, 0, 0, 0}};
    expect_refused("wh-through", t8, 2, "link/.wh.passwd");

    struct stat s;
    assert_int_equal(lstat(etc_victim, &s), -1);
    char parent_victim[600];
    snprintf(parent_victim, sizeof(parent_victim), "%s/../%s", g_dir, outside_name);
    assert_int_equal(lstat(parent_victim, &s), -1);
    snprintf(parent_victim, sizeof(parent_victim), "%s/%s", g_dir, outside_name);
    assert_int_equal(lstat(parent_victim, &s), -1);
    assert_int_equal(lstat("/etc/passwd", &s), 0);
    assert_int_equal(s.st_nlink, 1);
}

static void test_absolute_made_relative_and_replacements(void **state)
{
    (void)state;
    /* an absolute path lands inside; a symlink replaced by a file is replaced,
     * not written through; a file replaced by a directory */
    static const tent ents[] = {
        {"/abs/file", 'f', "inside", 0, 0, 0, 0},
        {"link", 'l', "/etc/hostname", 0, 0, 0, 0},
        {"link", 'f', "replaced", 0, 0, 0, 0},
        {"x", 'f', "file first", 0, 0, 0, 0},
        {"x/", 'd', NULL, 0, 0, 0, 0},
        {"x/y", 'f', "in dir", 0, 0, 0, 0},
    };
    ts_err err = {{0}};
    if (!unpack("abs", ents, TS_ARRAY_LEN(ents), NULL, NULL, &err)) fail_msg("%s", err.msg);
    assert_string_equal(read_text(path_in("out-abs/abs/file")), "inside");
    struct stat s;
    assert_int_equal(lstat(path_in("out-abs/link"), &s), 0);
    assert_true(S_ISREG(s.st_mode));
    assert_string_equal(read_text(path_in("out-abs/link")), "replaced");
    assert_string_equal(read_text(path_in("out-abs/x/y")), "in dir");
}

static void test_existing_dest_is_success(void **state)
{
    (void)state;
    static const tent ents[] = {{"f", 'f', "one", 0, 0, 0, 0}};
    ts_err err = {{0}};
    if (!unpack("twice", ents, 1, NULL, NULL, &err)) fail_msg("%s", err.msg);
    static const tent ents2[] = {{"f", 'f', "two", 0, 0, 0, 0}};
    if (!unpack("twice", ents2, 1, NULL, NULL, &err)) fail_msg("%s", err.msg);
    assert_string_equal(read_text(path_in("out-twice/f")), "one");
    assert_true(tmp_is_empty());
}

static void assert_owner(const char *rel, uid_t uid, gid_t gid)
{
    struct stat s;
    if (lstat(path_in(rel), &s) != 0) fail_msg("%s: %s", rel, strerror(errno));
    if (s.st_uid != uid || s.st_gid != gid)
        fail_msg("%s is owned by %u:%u, want %u:%u", rel, (unsigned)s.st_uid, (unsigned)s.st_gid,
                 (unsigned)uid, (unsigned)gid);
}

/* With a shift (the agent's user namespace), owner N is base + N on disk:
 * files, directories, symlinks, fifos, hard links; directories the tar
 * implies without listing them and the layer root belong to the mapped
 * root; an id past the mapping becomes its nobody. The same tar unpacked
 * without a shift keeps its owners: the two differ, so a cache of one
 * cannot stand in for the other. */
static void test_owners_shifted(void **state)
{
    (void)state;
    static const tent ents[] = {
        {"etc/", 'd', NULL, 0755, 0, 0, 0},
        {"etc/passwd", 'f', "root:x:0:0::/root:/bin/sh\n", 0644, 0, 0, 0},
        {"home/work/", 'd', NULL, 0750, 1000, 1000, 0},
        {"home/work/.profile", 'f', "x", 0600, 1000, 100, 0},
        {"home/work/link", 'l', ".profile", 0, 1000, 1000, 0},
        {"home/work/fifo", 'p', NULL, 0600, 1000, 1000, 0},
        {"implied/below/file", 'f', "x", 0644, 7, 7, 0},
        {"suid", 'f', "x", 04755, 0, 0, 0},
        {"far", 'f', "x", 0644, 70000, 1000000, 0},
    };
    unpack_ids ids = {.base = 200000, .count = 65536};
    write_tar(path_in("t.tar"), NULL, ents, TS_ARRAY_LEN(ents));
    unpack_stats st;
    ts_err err = {{0}};
    if (!unpack_layer(path_in("t.tar"), path_in("out-shift"), path_in("tmp"), NULL, &ids, &st,
                      &err))
        fail_msg("%s", err.msg);
    assert_owner("out-shift", 200000, 200000);
    assert_owner("out-shift/etc", 200000, 200000);
    assert_owner("out-shift/etc/passwd", 200000, 200000);
    assert_owner("out-shift/home", 200000, 200000); /* implied by home/work/ */
    assert_owner("out-shift/home/work", 201000, 201000);
    assert_owner("out-shift/home/work/.profile", 201000, 200100);
    assert_owner("out-shift/home/work/link", 201000, 201000);
    assert_owner("out-shift/home/work/fifo", 201000, 201000);
    assert_owner("out-shift/implied", 200000, 200000);
    assert_owner("out-shift/implied/below", 200000, 200000);
    assert_owner("out-shift/implied/below/file", 200007, 200007);
    assert_owner("out-shift/far", 200000 + 65534, 200000 + 65534);
    assert_int_equal(st.ids_clamped, 2);
    struct stat s;
    assert_int_equal(lstat(path_in("out-shift/suid"), &s), 0);
    assert_int_equal(s.st_mode & 07777, 04755); /* set after the chown, which clears it */
    assert_int_equal(lstat(path_in("out-shift/home/work"), &s), 0);
    assert_int_equal(s.st_mode & 07777, 0750);

    /* no shift: the owners of the tar */
    if (!unpack_layer(path_in("t.tar"), path_in("out-noshift"), path_in("tmp"), NULL, NULL, &st,
                      &err))
        fail_msg("%s", err.msg);
    assert_owner("out-noshift/etc/passwd", 0, 0);
    assert_owner("out-noshift/home/work", 1000, 1000);
    assert_owner("out-noshift/far", 70000, 1000000);
    assert_int_equal(st.ids_clamped, 0);
    assert_true(tmp_is_empty());
}

int main(void)
{
    if (geteuid() != 0) {
        fprintf(stderr,
                "test_agent_unpack: skipped: needs root (whiteout device nodes, trusted xattrs)\n");
        return 0;
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_basic_kinds),
        cmocka_unit_test(test_zstd_and_diffid_check),
        cmocka_unit_test(test_whiteouts),
        cmocka_unit_test(test_escapes_refused),
        cmocka_unit_test(test_absolute_made_relative_and_replacements),
        cmocka_unit_test(test_existing_dest_is_success),
        cmocka_unit_test(test_owners_shifted),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
