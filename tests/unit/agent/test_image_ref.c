/* test_image_ref.c: what a pull starts from, without a registry: image
 * references (libcommon/image_ref.c: registry, repository, tag, digest,
 * Docker Hub's names, a default registry, what is refused) and the
 * registry's WWW-Authenticate challenges (oci_client.c: Bearer with realm,
 * service, scope and escapes; Basic). */
#include "libcommon/image_ref.h"
#include "services/agent/oci_client.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

static void test_ref_parse(void **state)
{
    (void)state;
    image_ref r;
    ts_err err = {{0}};
    assert_true(image_ref_parse("127.0.0.1:5000/tessera/busybox:1.36", NULL, &r, &err));
    assert_string_equal(r.registry, "127.0.0.1:5000");
    assert_string_equal(r.repository, "tessera/busybox");
    assert_string_equal(r.tag, "1.36");
    assert_null(r.digest);
    image_ref_free(&r);
    assert_true(image_ref_parse("localhost/x", NULL, &r, &err));
    assert_string_equal(r.tag, "latest");
    image_ref_free(&r);
    const char *d = "sha256:872f72f53681e16e2a23a7825a78d61c8c12735dde7bb43772c7117dd7a3f251";
    char text[200];
    snprintf(text, sizeof(text), "reg.example.com:443/a/b/c@%s", d);
    assert_true(image_ref_parse(text, NULL, &r, &err));
    assert_string_equal(r.repository, "a/b/c");
    assert_null(r.tag);
    assert_string_equal(r.digest, d);
    image_ref_free(&r);
    assert_true(image_ref_parse("docker.io/busybox", NULL, &r, &err));
    assert_string_equal(r.api_host, "registry-1.docker.io");
    assert_string_equal(r.repository, "library/busybox");
    image_ref_free(&r);
    assert_false(image_ref_parse("tessera/busybox:latest", NULL, &r, &err));
    assert_non_null(strstr(err.msg, "names no registry"));
    assert_true(image_ref_parse("tessera/busybox:latest", "10.0.0.1:5000", &r, &err));
    assert_string_equal(r.registry, "10.0.0.1:5000");
    assert_string_equal(r.repository, "tessera/busybox");
    image_ref_free(&r);
    assert_false(image_ref_parse("h:1/UPPER:x", NULL, &r, &err));
    assert_false(image_ref_parse("h:1/a:b@sha256:1234", NULL, &r, &err));
    assert_false(image_ref_parse("h:1/a:b@md5:1234", NULL, &r, &err));
    assert_non_null(strstr(err.msg, "unsupported digest algorithm"));
    assert_false(image_ref_parse("h:1/a:ba d", NULL, &r, &err));
}

static void test_challenge_parse(void **state)
{
    (void)state;
    oci_challenge ch;
    assert_true(oci_challenge_parse(
        "Bearer realm=\"https://auth.docker.io/token\",service=\"registry.docker.io\","
        "scope=\"repository:library/busybox:pull\"",
        &ch));
    assert_string_equal(ch.scheme, "Bearer");
    assert_string_equal(ch.realm, "https://auth.docker.io/token");
    assert_string_equal(ch.service, "registry.docker.io");
    assert_string_equal(ch.scope, "repository:library/busybox:pull");
    oci_challenge_free(&ch);
    assert_true(oci_challenge_parse(
        "Bearer realm=\"http://h/t?a=\\\"b\\\"\", error=\"insufficient_scope\"", &ch));
    assert_string_equal(ch.realm, "http://h/t?a=\"b\"");
    assert_null(ch.service);
    oci_challenge_free(&ch);
    assert_true(oci_challenge_parse("Basic realm=Registry", &ch));
    assert_string_equal(ch.scheme, "Basic");
    assert_string_equal(ch.realm, "Registry");
    oci_challenge_free(&ch);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ref_parse),
        cmocka_unit_test(test_challenge_parse),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
