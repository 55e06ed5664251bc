/* test_files.c: tessera-vfolder's confined file operations
 * (services/vfolder/files.c), with openat2 and with the component-walking
 * fallback: "..", absolute paths, symlinks pointing out and symlinks swapped
 * in while we list, open and delete; plus the streamed zip writer
 * (zipstream.c, checked with python3's zipfile) and transfer tokens. */
#include "services/vfolder/files.h"
#include "services/vfolder/tokens.h"
#include "services/vfolder/zipstream.h"

#include "libcommon/log.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

/* The file operations as -errno / fd / count results, so that each check
 * below reads as one comparison (files.h answers bool + the errno value). */
static int fs_open_root(const char *path)
{
    int fd, err;
    return vf_fs_open_root(path, &fd, &err) ? fd : -err;
}

static int fs_open(int root, const char *path, int flags, mode_t mode)
{
    int fd, err;
    return vf_fs_open(root, path, flags, mode, &fd, &err) ? fd : -err;
}

static int fs_list(int root, const char *path, json_t **items)
{
    int err;
    return vf_fs_list(root, path, items, &err) ? 0 : -err;
}

static int fs_mkdir(int root, const char *path, bool parents, bool exist_ok)
{
    int err;
    return vf_fs_mkdir(root, path, parents, exist_ok, &err) ? 0 : -err;
}

static int fs_rename(int root, const char *path, const char *new_name)
{
    int err;
    return vf_fs_rename(root, path, new_name, &err) ? 0 : -err;
}

static int fs_move(int root, const char *src, const char *dst)
{
    int err;
    return vf_fs_move(root, src, dst, &err) ? 0 : -err;
}

static int fs_delete(int root, const char *path, bool recursive, int64_t *freed)
{
    int err;
    return vf_fs_delete(root, path, recursive, freed, &err) ? 0 : -err;
}

static long zip_read(vf_zip *z, char *buf, size_t max)
{
    size_t n;
    return vf_zip_read(z, buf, max, &n) ? (long)n : -1;
}

static char g_base[64];  /* a fresh temp dir */
static char g_root[128]; /* the folder: <base>/folder */
static char g_out[128];  /* outside: <base>/outside with secret, marker */
static int g_rootfd = -1;

static void write_file(const char *path, const char *content)
{
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(content, f);
    fclose(f);
}

static char *read_fd(int fd)
{
    static char buf[256];
    ssize_t n = pread(fd, buf, sizeof(buf) - 1, 0);
    buf[n < 0 ? 0 : n] = '\0';
    return buf;
}

static void outside_intact(void)
{
    char p[256];
    snprintf(p, sizeof(p), "%s/secret", g_out);
    int fd = open(p, O_RDONLY);
    assert_true(fd >= 0);
    assert_string_equal(read_fd(fd), "outside");
    close(fd);
    snprintf(p, sizeof(p), "%s/marker", g_out);
    assert_int_equal(access(p, F_OK), 0);
    snprintf(p, sizeof(p), "%s/sub/deep", g_out);
    assert_int_equal(access(p, F_OK), 0);
}

static int setup(void **state)
{
    (void)state;
    tlog_init("test", NULL);
    ts_strlcpy(g_base, "/tmp/test_vfolder_files.XXXXXX", sizeof(g_base));
    if (!mkdtemp(g_base)) return -1;
    snprintf(g_root, sizeof(g_root), "%s/folder", g_base);
    snprintf(g_out, sizeof(g_out), "%s/outside", g_base);
    mkdir(g_root, 0755);
    mkdir(g_out, 0755);
    char p[256];
    snprintf(p, sizeof(p), "%s/secret", g_out);
    write_file(p, "outside");
    snprintf(p, sizeof(p), "%s/marker", g_out);
    write_file(p, "x");
    snprintf(p, sizeof(p), "%s/sub", g_out);
    mkdir(p, 0755);
    snprintf(p, sizeof(p), "%s/sub/deep", g_out);
    write_file(p, "deep");
    g_rootfd = fs_open_root(g_root);
    return g_rootfd >= 0 ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    close(g_rootfd);
    char cmd[200];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", g_base);
    return system(cmd) == 0 ? 0 : -1;
}

/* A fresh folder tree: a/f.txt, in -> a, out -> ../outside, abs -> <outside>. */
static void fresh_tree(void)
{
    char cmd[600];
    snprintf(cmd, sizeof(cmd),
             "cd '%s' && rm -rf ./* && mkdir -p a/b && printf inside > a/f.txt && "
             "printf 12345 > a/b/g && ln -s a in && ln -s ../outside out && ln -s '%s' abs && "
             "ln -s /etc/passwd pw",
             g_root, g_out);
    assert_int_equal(system(cmd), 0);
}

static void confinement_checks(bool fallback)
{
    vf_fs_force_fallback = fallback;
    fresh_tree();
    static const char *const escapes[] = {
        "../outside/secret",      "/etc/passwd",  "out/secret", "abs/secret",
        "a/../../outside/secret", "a/b/../../..", "pw",         "out",
        "./out/sub/deep",         "..",           "/"};
    for (size_t i = 0; i < TS_ARRAY_LEN(escapes); i++) {
        int fd = fs_open(g_rootfd, escapes[i], O_RDONLY, 0);
        if (fd >= 0) fail_msg("opened %s (fallback=%d)", escapes[i], fallback);
        assert_true(fd == -EXDEV || fd == -ELOOP);
    }
    /* Inside is fine. */
    int fd = fs_open(g_rootfd, "a/../a/f.txt", O_RDONLY, 0);
    assert_true(fd >= 0);
    assert_string_equal(read_fd(fd), "inside");
    close(fd);
    fd = fs_open(g_rootfd, "in/f.txt", O_RDONLY, 0);
    if (fallback) { /* the fallback refuses every symlink */
        assert_int_equal(fd, -EXDEV);
    } else {
        assert_true(fd >= 0);
        close(fd);
    }

    /* Listing: entries with lstat semantics; symlinks out are not listed into. */
    json_t *items = NULL;
    assert_int_equal(fs_list(g_rootfd, "", &items), 0);
    assert_int_equal(json_array_size(items), 5); /* a abs in out pw */
    json_t *it = json_array_get(items, 3);
    assert_string_equal(json_string_value(json_object_get(it, "name")), "out");
    assert_string_equal(json_string_value(json_object_get(it, "type")), "SYMLINK");
    it = json_array_get(items, 0);
    assert_string_equal(json_string_value(json_object_get(it, "type")), "DIRECTORY");
    assert_string_equal(json_string_value(json_object_get(it, "mode")), "755");
    json_decref(items);
    assert_int_equal(fs_list(g_rootfd, "out", &items), -EXDEV);
    assert_int_equal(fs_list(g_rootfd, "../outside", &items), -EXDEV);
    assert_int_equal(fs_list(g_rootfd, "a/f.txt", &items), -ENOTDIR);
    assert_int_equal(fs_list(g_rootfd, "nope", &items), -ENOENT);

    /* mkdir, rename, move never land outside. */
    assert_int_equal(fs_mkdir(g_rootfd, "out/x", false, false), -EXDEV);
    assert_int_equal(fs_mkdir(g_rootfd, "../x", true, false), -EXDEV);
    assert_int_equal(fs_mkdir(g_rootfd, "/tmp/x", true, true), -EXDEV);
    assert_int_equal(fs_mkdir(g_rootfd, "abs/x/y", true, true), -EXDEV);
    assert_int_equal(fs_rename(g_rootfd, "a/f.txt", "../f.txt"), -EINVAL);
    assert_int_equal(fs_rename(g_rootfd, "a/f.txt", "x/y"), -EINVAL);
    assert_int_equal(fs_rename(g_rootfd, "out/secret", "mine"), -EXDEV);
    assert_int_equal(fs_move(g_rootfd, "a/f.txt", "out"), -EXDEV);
    assert_int_equal(fs_move(g_rootfd, "a/f.txt", "out/f.txt"), -EXDEV);
    assert_int_equal(fs_move(g_rootfd, "../outside/secret", "stolen"), -EXDEV);
    assert_int_equal(fs_move(g_rootfd, "a/f.txt", "../f.txt"), -EXDEV);

    /* Deleting: a symlink out is removed as a link; its target stays. */
    int64_t freed = -1;
    assert_int_equal(fs_delete(g_rootfd, "out/secret", false, &freed), -EXDEV);
    assert_int_equal(fs_delete(g_rootfd, "../outside", true, &freed), -EXDEV);
    assert_int_equal(fs_delete(g_rootfd, "", true, &freed), -EINVAL);
    assert_int_equal(fs_delete(g_rootfd, ".", true, &freed), -EINVAL);
    assert_int_equal(fs_delete(g_rootfd, "a/..", true, &freed), -EINVAL);
    assert_int_equal(fs_delete(g_rootfd, "out", true, &freed), 0);
    assert_int_equal(freed, 0);
    assert_int_equal(fs_delete(g_rootfd, "abs/", true, &freed), 0);
    assert_int_equal(fs_delete(g_rootfd, "pw", false, &freed), 0);
    outside_intact();
    assert_int_equal(access("/etc/passwd", F_OK), 0);
}

static void test_confinement_openat2(void **state)
{
    (void)state;
    confinement_checks(false);
}

static void test_confinement_fallback(void **state)
{
    (void)state;
    confinement_checks(true);
    vf_fs_force_fallback = false;
}

static void test_operations(void **state)
{
    (void)state;
    fresh_tree();
    assert_int_equal(fs_mkdir(g_rootfd, "x", false, false), 0);
    assert_int_equal(fs_mkdir(g_rootfd, "x", false, false), -EEXIST);
    assert_int_equal(fs_mkdir(g_rootfd, "x", false, true), 0);
    assert_int_equal(fs_mkdir(g_rootfd, "a/f.txt", false, true), -EEXIST); /* a file */
    assert_int_equal(fs_mkdir(g_rootfd, "p/q/r", false, false), -ENOENT);
    assert_int_equal(fs_mkdir(g_rootfd, "p/q/r", true, false), 0);
    assert_int_equal(fs_mkdir(g_rootfd, "p//q/./s/", true, false), 0);
    assert_int_equal(fs_mkdir(g_rootfd, "p/q/r", true, true), 0);
    assert_int_equal(fs_mkdir(g_rootfd, "p/q/r", true, false), -EEXIST);
    assert_int_equal(fs_mkdir(g_rootfd, "", true, false), -EINVAL);

    assert_int_equal(fs_rename(g_rootfd, "a/f.txt", "g.txt"), 0);
    assert_int_equal(fs_rename(g_rootfd, "a/g.txt", "b"), -EEXIST);
    assert_int_equal(fs_rename(g_rootfd, "a/none", "z"), -ENOENT);
    assert_int_equal(fs_move(g_rootfd, "a/g.txt", "x"), 0); /* into x/ */
    int fd = fs_open(g_rootfd, "x/g.txt", O_RDONLY, 0);
    assert_true(fd >= 0);
    close(fd);
    assert_int_equal(fs_move(g_rootfd, "x/g.txt", "p/q/h.txt"), 0);
    assert_int_equal(fs_move(g_rootfd, "a/b/g", "p/q/h.txt"), -EEXIST);
    assert_int_equal(fs_move(g_rootfd, "p", "p/q/r"), -EINVAL); /* into itself */

    int64_t freed = 0;
    assert_int_equal(fs_delete(g_rootfd, "a", false, &freed), -ENOTEMPTY);
    assert_int_equal(fs_delete(g_rootfd, "a", true, &freed), 0);
    assert_int_equal(freed, 5); /* a/b/g */
    assert_int_equal(fs_delete(g_rootfd, "p/q/h.txt", false, &freed), 0);
    assert_int_equal(freed, 6);
    assert_int_equal(fs_delete(g_rootfd, "p/q/h.txt", false, &freed), -ENOENT);
    assert_int_equal(fs_delete(g_rootfd, "x", false, &freed), 0);
    outside_intact();
}

/* ---- a symlink swapped in mid-operation ------------------------------------------------ */

static atomic_bool g_stop;
static atomic_long g_swaps;

/* Exchange <root>/<a> and <root>/<b> (a directory and a symlink out) in a loop. */
typedef struct swapper {
    const char *a, *b;
} swapper;

static void *swap_loop(void *arg)
{
    swapper *sw = arg;
    while (!atomic_load(&g_stop)) {
        if (renameat2(g_rootfd, sw->a, g_rootfd, sw->b, RENAME_EXCHANGE) == 0)
            atomic_fetch_add(&g_swaps, 1);
    }
    return NULL;
}

static void race_checks(bool fallback)
{
    vf_fs_force_fallback = fallback;
    char cmd[600];
    snprintf(cmd, sizeof(cmd),
             "cd '%s' && rm -rf ./* && mkdir victim && printf inside > victim/secret && "
             "mkdir victim/sub && printf d > victim/sub/deep && ln -s '%s' link",
             g_root, g_out);
    assert_int_equal(system(cmd), 0);
    atomic_store(&g_stop, false);
    atomic_store(&g_swaps, 0);
    swapper sw = {"victim", "link"};
    pthread_t t;
    pthread_create(&t, NULL, swap_loop, &sw);
    int opened = 0, listed = 0;
    for (int i = 0; i < 20000; i++) {
        int fd = fs_open(g_rootfd, "victim/secret", O_RDONLY, 0);
        if (fd >= 0) {
            assert_string_equal(read_fd(fd), "inside");
            close(fd);
            opened++;
        } else {
            assert_true(fd == -EXDEV || fd == -ENOENT || fd == -ELOOP || fd == -ENOTDIR);
        }
        json_t *items = NULL;
        if (fs_list(g_rootfd, "victim", &items) == 0) {
            for (size_t k = 0; k < json_array_size(items); k++) {
                const char *n =
                    json_string_value(json_object_get(json_array_get(items, k), "name"));
                assert_string_not_equal(n, "marker");
            }
            listed++;
        }
        json_decref(items);
        /* Writes go nowhere outside either. */
        int w = fs_open(g_rootfd, "victim/new", O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (w >= 0) close(w);
        int64_t freed;
        (void)fs_delete(g_rootfd, "victim/new", false, &freed);
        (void)fs_delete(g_rootfd, "victim/marker", false, &freed);
        (void)fs_delete(g_rootfd, "victim/sub/deep", false, &freed);
        (void)fs_mkdir(g_rootfd, "victim/sub", false, true);
    }
    atomic_store(&g_stop, true);
    pthread_join(t, NULL);
    print_message("fallback=%d swaps=%ld opened=%d listed=%d\n", fallback, atomic_load(&g_swaps),
                  opened, listed);
    assert_true(atomic_load(&g_swaps) > 100);
    char p[256];
    snprintf(p, sizeof(p), "%s/new", g_out);
    assert_int_equal(access(p, F_OK), -1);
    outside_intact();
}

static void test_swap_race_openat2(void **state)
{
    (void)state;
    race_checks(false);
}

static void test_swap_race_fallback(void **state)
{
    (void)state;
    race_checks(true);
    vf_fs_force_fallback = false;
}

/* A recursive delete while t/sub and t/link (-> outside) keep swapping. */
static void test_recursive_delete_race(void **state)
{
    (void)state;
    for (int round = 0; round < 200; round++) {
        char cmd[600];
        snprintf(cmd, sizeof(cmd),
                 "cd '%s' && rm -rf ./* && mkdir -p t/sub/x && printf 1 > t/sub/f && "
                 "printf 2 > t/sub/x/g && ln -s '%s' t/link",
                 g_root, g_out);
        assert_int_equal(system(cmd), 0);
        atomic_store(&g_stop, false);
        swapper sw = {"t/sub", "t/link"};
        pthread_t t;
        pthread_create(&t, NULL, swap_loop, &sw);
        int64_t freed;
        int rc = -1;
        for (int tries = 0; tries < 50 && rc != 0 && rc != -ENOENT; tries++)
            rc = fs_delete(g_rootfd, "t", true, &freed);
        atomic_store(&g_stop, true);
        pthread_join(t, NULL);
        outside_intact();
    }
}

/* ---- zip ------------------------------------------------------------------------------ */

static void test_zip_stream(void **state)
{
    (void)state;
    char cmd[900];
    snprintf(cmd, sizeof(cmd),
             "cd '%s' && rm -rf ./* && mkdir -p z/d/e z/empty && head -c 300000 /dev/urandom > "
             "z/big && printf hello > 'z/d/h\xc3\xa9llo.txt' && : > z/d/e/zero && "
             "ln -s '%s' z/out && ln -s ../z/big z/inlink && mkfifo z/fifo",
             g_root, g_out);
    assert_int_equal(system(cmd), 0);
    int dfd = fs_open(g_rootfd, "z", O_PATH | O_DIRECTORY, 0);
    assert_true(dfd >= 0);
    int err = 0;
    vf_zip *z = vf_zip_new(dfd, 0, &err);
    assert_non_null(z);
    assert_int_equal(vf_zip_entries(z), 6); /* big d/ d/e/ d/e/zero d/hello empty/ */
    char zpath[256];
    snprintf(zpath, sizeof(zpath), "%s/out.zip", g_base);
    FILE *f = fopen(zpath, "wb");
    char buf[7777];
    long n;
    size_t sizes[] = {1, 7, 100, 7777};
    for (int i = 0; (n = zip_read(z, buf, sizes[i % 4])) > 0; i++)
        fwrite(buf, 1, (size_t)n, f);
    assert_int_equal(n, 0);
    fclose(f);
    vf_zip_free(z);
    snprintf(cmd, sizeof(cmd),
             "python3 -c \"import zipfile,sys; z=zipfile.ZipFile('%s'); "
             "assert z.testzip() is None; n=sorted(z.namelist()); print(n); "
             "assert n==['big','d/','d/e/','d/e/zero','d/h\\u00e9llo.txt','empty/'], n; "
             "assert z.read('big')==open('%s/z/big','rb').read(); "
             "assert z.read('d/h\\u00e9llo.txt')==b'hello'\"",
             zpath, g_root);
    assert_int_equal(system(cmd), 0);

    /* An empty directory: a valid empty archive. */
    dfd = fs_open(g_rootfd, "z/empty", O_PATH | O_DIRECTORY, 0);
    z = vf_zip_new(dfd, 0, &err);
    f = fopen(zpath, "wb");
    while ((n = zip_read(z, buf, sizeof(buf))) > 0)
        fwrite(buf, 1, (size_t)n, f);
    fclose(f);
    vf_zip_free(z);
    snprintf(cmd, sizeof(cmd),
             "python3 -c \"import zipfile; assert zipfile.ZipFile('%s').namelist()==[]\"", zpath);
    assert_int_equal(system(cmd), 0);
    /* Too many entries. */
    dfd = fs_open(g_rootfd, "z", O_PATH | O_DIRECTORY, 0);
    assert_null(vf_zip_new(dfd, 3, &err));
    assert_int_equal(err, E2BIG);
}

/* ---- tokens ---------------------------------------------------------------------------- */

static void test_tokens(void **state)
{
    (void)state;
    char *secret = vf_token_new_secret();
    assert_true(strlen(secret) >= 32);
    vf_token_set_secret(secret);
    vf_token t = {.op = VF_TOKEN_UPLOAD,
                  .path = "dir/file name.bin",
                  .size = 12345,
                  .exp = 2000,
                  .archive = false};
    ts_strlcpy(t.fid, "11111111-1111-4111-8111-111111111111", sizeof(t.fid));
    ts_strlcpy(t.uid, "22222222-2222-4222-8222-222222222222", sizeof(t.uid));
    ts_strlcpy(t.id, "33333333-3333-4333-8333-333333333333", sizeof(t.id));
    char *text = vf_token_sign(&t);
    vf_token v;
    assert_int_equal(vf_token_verify(text, 1000, &v), VF_TOKEN_OK);
    assert_int_equal(v.op, VF_TOKEN_UPLOAD);
    assert_string_equal(v.path, "dir/file name.bin");
    assert_int_equal(v.size, 12345);
    assert_string_equal(v.fid, t.fid);
    assert_string_equal(v.id, t.id);
    vf_token_free(&v);
    assert_int_equal(vf_token_verify(text, 2001, &v), VF_TOKEN_EXPIRED);
    /* Tampered payload or signature, garbage, another secret. */
    char *bad = ts_strdup(text);
    bad[3] = bad[3] == 'A' ? 'B' : 'A';
    assert_int_equal(vf_token_verify(bad, 1000, &v), VF_TOKEN_MALFORMED);
    free(bad);
    bad = ts_strdup(text);
    bad[strlen(bad) - 2] = bad[strlen(bad) - 2] == 'A' ? 'B' : 'A';
    assert_int_equal(vf_token_verify(bad, 1000, &v), VF_TOKEN_MALFORMED);
    free(bad);
    assert_int_equal(vf_token_verify("", 1000, &v), VF_TOKEN_MALFORMED);
    assert_int_equal(vf_token_verify("abc", 1000, &v), VF_TOKEN_MALFORMED);
    assert_int_equal(vf_token_verify("abc.def", 1000, &v), VF_TOKEN_MALFORMED);
    vf_token_set_secret("another-secret-of-enough-length");
    assert_int_equal(vf_token_verify(text, 1000, &v), VF_TOKEN_MALFORMED);
    free(text);
    free(secret);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_confinement_openat2), cmocka_unit_test(test_confinement_fallback),
        cmocka_unit_test(test_operations),          cmocka_unit_test(test_swap_race_openat2),
        cmocka_unit_test(test_swap_race_fallback),  cmocka_unit_test(test_recursive_delete_race),
        cmocka_unit_test(test_zip_stream),          cmocka_unit_test(test_tokens),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
