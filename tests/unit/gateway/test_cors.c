/* Unit tests: the gateway's CORS guard (cors.h) on local requests: no list,
 * a list (listed origin, another, none, a preflight of each), and "*". */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "services/gateway/cors.h"

#include <string.h>

/* Run the guard on method target with an Origin (NULL: none) and, when
 * preflight, Access-Control-Request-Method; true when it let the request
 * through. *out: the response (the caller frees it). */
static bool guard(const char *list, const char *method, const char *origin, bool preflight,
                  http_resp **out)
{
    char o[256];
    const char *headers[4];
    size_t n = 0;
    if (origin) {
        snprintf(o, sizeof(o), "Origin: %s", origin);
        headers[n++] = o;
    }
    if (preflight) headers[n++] = "Access-Control-Request-Method: POST";
    headers[n] = NULL;
    http_req *req = http_req_new_local(method, "/admin/gql", headers, NULL, 0);
    *out = http_resp_new();
    bool through = cors_guard(list, req, *out);
    http_req_free_local(req);
    return through;
}

static void test_no_list_no_header(void **state)
{
    (void)state;
    for (int i = 0; i < 2; i++) {
        http_resp *r;
        assert_true(guard(i ? "" : NULL, "OPTIONS", "https://a.example", true, &r));
        assert_null(http_resp_header(r, "Access-Control-Allow-Origin"));
        assert_null(http_resp_header(r, "Vary"));
        http_resp_free(r);
    }
}

static void test_listed_origin(void **state)
{
    (void)state;
    const char *list = "https://a.example, http://b.example:8080/";
    http_resp *r;
    assert_true(guard(list, "GET", "HTTP://B.example:8080", false, &r));
    assert_string_equal(http_resp_header(r, "Access-Control-Allow-Origin"),
                        "HTTP://B.example:8080");
    assert_string_equal(http_resp_header(r, "Access-Control-Allow-Credentials"), "true");
    assert_non_null(strstr(http_resp_header(r, "Access-Control-Expose-Headers"), "X-Request-ID"));
    assert_string_equal(http_resp_header(r, "Vary"), "Origin");
    assert_int_equal(http_resp_status(r), 0); /* nothing answered yet */
    http_resp_free(r);
    /* its preflight is answered here */
    assert_false(guard(list, "OPTIONS", "https://a.example", true, &r));
    assert_int_equal(http_resp_status(r), 204);
    assert_non_null(strstr(http_resp_header(r, "Access-Control-Allow-Headers"), "Authorization"));
    assert_non_null(strstr(http_resp_header(r, "Access-Control-Allow-Methods"), "PATCH"));
    assert_string_equal(http_resp_header(r, "Access-Control-Max-Age"), CORS_MAX_AGE);
    http_resp_free(r);
    /* an OPTIONS without Access-Control-Request-Method is no preflight */
    assert_true(guard(list, "OPTIONS", "https://a.example", false, &r));
    assert_int_equal(http_resp_status(r), 0);
    http_resp_free(r);
}

static void test_other_or_no_origin(void **state)
{
    (void)state;
    const char *list = "https://a.example";
    const char *origins[] = {"https://evil.example", "https://a.example.evil", "null", NULL};
    for (size_t i = 0; i < 4; i++) {
        http_resp *r;
        assert_true(guard(list, "OPTIONS", origins[i], true, &r));
        assert_null(http_resp_header(r, "Access-Control-Allow-Origin"));
        assert_null(http_resp_header(r, "Access-Control-Allow-Credentials"));
        assert_string_equal(http_resp_header(r, "Vary"), "Origin");
        assert_int_equal(http_resp_status(r), 0);
        http_resp_free(r);
    }
}

static void test_star_never_with_credentials(void **state)
{
    (void)state;
    http_resp *r;
    assert_false(guard("*", "OPTIONS", "https://any.example", true, &r));
    assert_int_equal(http_resp_status(r), 204);
    assert_string_equal(http_resp_header(r, "Access-Control-Allow-Origin"), "*");
    assert_null(http_resp_header(r, "Access-Control-Allow-Credentials"));
    http_resp_free(r);
    /* a listed origin beside "*" is answered with itself and credentials */
    assert_true(guard("*, https://a.example", "GET", "https://a.example", false, &r));
    assert_string_equal(http_resp_header(r, "Access-Control-Allow-Origin"), "https://a.example");
    assert_string_equal(http_resp_header(r, "Access-Control-Allow-Credentials"), "true");
    http_resp_free(r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_no_list_no_header),
        cmocka_unit_test(test_listed_origin),
        cmocka_unit_test(test_other_or_no_origin),
        cmocka_unit_test(test_star_never_with_credentials),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
