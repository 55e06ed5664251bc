/* test_home_files.c: what a session's kernels get in their home
 * (home_files.c): the owner's dotfiles with their permissions, the SSH public
 * key as .ssh/authorized_keys (0600, ending in a newline) unless a dotfile
 * has that path, entries auth would not have stored left out, and the stored
 * array turned into CreateKernel.home_files; a cluster session's public key
 * added to authorized_keys and its .ssh/config. */
#include "services/registry/home_files.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <string.h>

static void test_from_context(void **state)
{
    (void)state;
    json_t *ctx =
        json_loads("{\"dotfiles\": ["
                   " {\"path\": \".bashrc\", \"perm\": \"600\", \"data\": \"export A=1\\n\"},"
                   " {\"path\": \"../x\", \"perm\": \"644\", \"data\": \"no\"},"
                   " {\"path\": \"/etc/x\", \"perm\": \"644\", \"data\": \"no\"},"
                   " {\"path\": \"a//b\", \"perm\": \"644\", \"data\": \"no\"},"
                   " {\"path\": \".odd\", \"perm\": \"9z\", \"data\": \"default mode\"},"
                   " {\"path\": \".nodata\", \"perm\": \"644\"}],"
                   " \"ssh_public_key\": \"ssh-ed25519 AAAA me\"}",
                   0, NULL);
    assert_non_null(ctx);
    json_t *f = home_files_from_context(ctx);
    assert_int_equal(json_array_size(f), 3);
    json_t *e = json_array_get(f, 0);
    assert_string_equal(json_string_value(json_object_get(e, "path")), ".bashrc");
    assert_int_equal(json_integer_value(json_object_get(e, "mode")), 0600);
    e = json_array_get(f, 1);
    assert_string_equal(json_string_value(json_object_get(e, "path")), ".odd");
    assert_int_equal(json_integer_value(json_object_get(e, "mode")), 0644);
    e = json_array_get(f, 2);
    assert_string_equal(json_string_value(json_object_get(e, "path")), ".ssh/authorized_keys");
    assert_int_equal(json_integer_value(json_object_get(e, "mode")), 0600);
    assert_string_equal(json_string_value(json_object_get(e, "data")), "ssh-ed25519 AAAA me\n");

    /* to the command */
    char *text = json_dumps(f, JSON_COMPACT);
    arena a = {0};
    size_t n = 0;
    Tessera__V1__HomeFile **pb = home_files_pb(&a, text, &n);
    assert_int_equal(n, 3);
    assert_string_equal(pb[0]->path, ".bashrc");
    assert_int_equal(pb[0]->mode, 0600);
    assert_int_equal(pb[0]->data.len, strlen("export A=1\n"));
    assert_memory_equal(pb[0]->data.data, "export A=1\n", pb[0]->data.len);
    ar_free(&a);
    free(text);
    json_decref(f);
    json_decref(ctx);
}

static void test_dotfile_wins_and_nothing(void **state)
{
    (void)state;
    json_t *ctx = json_loads("{\"dotfiles\": [{\"path\": \".ssh/authorized_keys\", \"perm\": "
                             "\"644\", \"data\": \"mine\\n\"}], \"ssh_public_key\": \"k\\n\"}",
                             0, NULL);
    json_t *f = home_files_from_context(ctx);
    assert_int_equal(json_array_size(f), 1);
    assert_string_equal(json_string_value(json_object_get(json_array_get(f, 0), "data")), "mine\n");
    json_decref(f);
    json_decref(ctx);
    /* no dotfiles key, an empty key, a context of the wrong shape */
    ctx = json_loads("{\"ssh_public_key\": \"\"}", 0, NULL);
    f = home_files_from_context(ctx);
    assert_int_equal(json_array_size(f), 0);
    json_decref(f);
    json_decref(ctx);
    f = home_files_from_context(NULL);
    assert_int_equal(json_array_size(f), 0);
    json_decref(f);
    arena a = {0};
    size_t n = 7;
    (void)home_files_pb(&a, "not json", &n);
    assert_int_equal(n, 0);
    (void)home_files_pb(&a, "[{\"path\": 1}]", &n);
    assert_int_equal(n, 0);
    ar_free(&a);
}

static const char *data_of(const json_t *files, const char *path)
{
    size_t i;
    const json_t *e;
    json_array_foreach(files, i, e)
    {
        if (strcmp(json_string_value(json_object_get(e, "path")), path) == 0)
            return json_string_value(json_object_get(e, "data"));
    }
    return NULL;
}

static void test_cluster_keys(void **state)
{
    (void)state;
    /* the owner's key first, the session's after it */
    json_t *ctx = json_loads("{\"ssh_public_key\": \"ssh-ed25519 AAAA me\"}", 0, NULL);
    json_t *f = home_files_from_context(ctx);
    home_files_add_cluster(f, "ssh-ed25519 BBBB tessera-cluster-x");
    assert_string_equal(data_of(f, ".ssh/authorized_keys"),
                        "ssh-ed25519 AAAA me\nssh-ed25519 BBBB tessera-cluster-x\n");
    const char *cfg = data_of(f, ".ssh/config");
    assert_non_null(cfg);
    assert_non_null(strstr(cfg, "Host main*\n\tPort 2200\n"));
    assert_non_null(strstr(cfg, "Host sub*\n\tPort 2200\n"));
    assert_non_null(strstr(cfg, "IdentityFile /home/config/ssh/id_cluster\n"));
    json_decref(f);
    json_decref(ctx);
    /* no key of the owner's: the session's alone, 0600; a dotfile .ssh/config wins */
    ctx = json_loads("{\"dotfiles\": [{\"path\": \".ssh/config\", \"perm\": \"600\", \"data\": "
                     "\"mine\"}]}",
                     0, NULL);
    f = home_files_from_context(ctx);
    home_files_add_cluster(f, "ssh-ed25519 BBBB c\n");
    assert_string_equal(data_of(f, ".ssh/authorized_keys"), "ssh-ed25519 BBBB c\n");
    assert_string_equal(data_of(f, ".ssh/config"), "mine");
    assert_int_equal(json_array_size(f), 2);
    /* none: nothing added */
    home_files_add_cluster(f, NULL);
    assert_int_equal(json_array_size(f), 2);
    json_decref(f);
    json_decref(ctx);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_from_context),
        cmocka_unit_test(test_dotfile_wins_and_nothing),
        cmocka_unit_test(test_cluster_keys),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
