/* Unit tests: OpenSSH key formats (services/auth/ssh_keys.c). That OpenSSH
 * itself reads the keys is tests/integration/test_user_config.py's
 * ssh-keygen check. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "libcommon/ssh_keys.h"

#include <stdlib.h>
#include <string.h>

static void test_generate_shapes(void **state)
{
    (void)state;
    char *pub, *priv;
    ts_err err = {{0}};
    assert_true(ssh_keys_generate("me@host", &pub, &priv, &err));
    assert_int_equal(strncmp(pub, "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAI", 37), 0);
    assert_non_null(strstr(pub, " me@host\n"));
    assert_int_equal(strncmp(priv, "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjE", 55),
                     0);
    assert_non_null(strstr(priv, "\n-----END OPENSSH PRIVATE KEY-----\n"));
    for (char *line = strchr(priv, '\n') + 1; *line != '-'; line = strchr(line, '\n') + 1)
        assert_true(strcspn(line, "\n") <= 70);
    assert_true(ssh_keys_check_pair(pub, priv, &err));
    free(pub);
    free(priv);
}

static void test_check_refuses_mismatch_and_garbage(void **state)
{
    (void)state;
    char *pub1, *priv1, *pub2, *priv2;
    ts_err err = {{0}};
    assert_true(ssh_keys_generate("", &pub1, &priv1, &err));
    assert_true(ssh_keys_generate("", &pub2, &priv2, &err));
    assert_false(ssh_keys_check_pair(pub1, priv2, &err));
    assert_non_null(strstr(err.msg, "does not belong"));
    assert_false(ssh_keys_check_pair("garbage", priv1, &err));
    assert_false(ssh_keys_check_pair("ssh-rsa AAAA", priv1, &err));
    assert_false(ssh_keys_check_pair(pub1, "-----BEGIN RSA PRIVATE KEY-----\nAAAA\n", &err));
    assert_false(
        ssh_keys_check_pair(pub1,
                            "-----BEGIN OPENSSH PRIVATE KEY-----\n"
                            "b3BlbnNzaC1rZXktdjEAAAAA\n-----END OPENSSH PRIVATE KEY-----\n",
                            &err));
    free(pub1);
    free(priv1);
    free(pub2);
    free(priv2);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_generate_shapes),
        cmocka_unit_test(test_check_refuses_mismatch_and_garbage),
    };
    return cmocka_run_group_tests_name("auth_ssh_keys", tests, NULL, NULL);
}
