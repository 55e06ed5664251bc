/* test_cors.c: CORS of the transfer endpoints (cors.h): which origin the
 * list allows, and the headers on a preflight OPTIONS, on a problem of the
 * download route (no token: 401) and for an origin the list leaves out
 * (none). The integration test (test_vfolder_files.py) covers the default
 * list on a running tessera-vfolder: tus OPTIONS, PATCH and a download. */
#include "services/vfolder/cors.h"
#include "services/vfolder/tokens.h"
#include "services/vfolder/transfer.h"

#include "libcommon/log.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

static void test_allow_origin(void **state)
{
    (void)state;
    const char *o = "http://127.0.0.1:8090";
    /* no list: anyone, also a request without Origin */
    assert_string_equal(vf_cors_allow_origin(NULL, o), "*");
    assert_string_equal(vf_cors_allow_origin("", NULL), "*");
    assert_string_equal(vf_cors_allow_origin(" , ", o), "*");
    assert_false(vf_cors_varies(NULL));
    assert_false(vf_cors_varies(""));
    /* a list: the origin itself when listed (spaces, case, a trailing '/') */
    const char *list = "https://console.example.com, HTTP://127.0.0.1:8090/ ,http://x:1";
    assert_true(vf_cors_varies(list));
    assert_ptr_equal(vf_cors_allow_origin(list, o), o);
    assert_string_equal(vf_cors_allow_origin(list, "http://x:1"), "http://x:1");
    assert_string_equal(vf_cors_allow_origin(list, "https://console.example.com"),
                        "https://console.example.com");
    assert_null(vf_cors_allow_origin(list, "http://127.0.0.1:8091"));
    assert_null(vf_cors_allow_origin(list, "http://127.0.0.1:809"));
    assert_null(vf_cors_allow_origin(list, "https://console.example.com.evil"));
    assert_null(vf_cors_allow_origin(list, "null"));
    assert_null(vf_cors_allow_origin(list, ""));
    assert_null(vf_cors_allow_origin(list, NULL));
    /* "*" in a list: anyone */
    assert_string_equal(vf_cors_allow_origin("http://a, *", "http://b"), "*");
    assert_false(vf_cors_varies("http://a, *"));
}

/* A request to target with Origin origin (NULL: none) and extra headers. */
static http_req *req_from(const char *method, const char *target, const char *origin,
                          const char *extra)
{
    static char oh[256];
    const char *h[3] = {NULL, NULL, NULL};
    int n = 0;
    if (origin) {
        snprintf(oh, sizeof(oh), "Origin: %s", origin);
        h[n++] = oh;
    }
    if (extra) h[n++] = extra;
    return http_req_new_local(method, target, h, NULL, 0);
}

static void assert_actual_headers(http_resp *resp, const char *allow)
{
    assert_string_equal(http_resp_header(resp, "Access-Control-Allow-Origin"), allow);
    assert_string_equal(http_resp_header(resp, "Access-Control-Expose-Headers"),
                        VF_CORS_EXPOSE_HEADERS);
}

static void assert_no_cors(http_resp *resp)
{
    const char *name, *value;
    for (size_t i = 0; http_resp_header_at(resp, i, &name, &value); i++)
        if (strncasecmp(name, "Access-Control-", 15) == 0) fail_msg("%s: %s is set", name, value);
}

static void test_preflight_default(void **state)
{
    (void)state;
    vf_cors_origins = NULL;
    http_req *req = req_from("OPTIONS", "/v1/transfer/download", "http://127.0.0.1:8090",
                             "Access-Control-Request-Method: GET");
    http_resp *resp = http_resp_new();
    vf_cors_h_options(req, resp, NULL);
    assert_int_equal(http_resp_status(resp), 204);
    assert_actual_headers(resp, "*");
    assert_string_equal(http_resp_header(resp, "Access-Control-Allow-Methods"),
                        "GET, HEAD, POST, PATCH, DELETE, OPTIONS");
    assert_non_null(strstr(http_resp_header(resp, "Access-Control-Allow-Headers"),
                           "Tus-Resumable, Upload-Length, Upload-Offset"));
    assert_non_null(strstr(http_resp_header(resp, "Access-Control-Allow-Headers"), "If-Range"));
    assert_string_equal(http_resp_header(resp, "Access-Control-Max-Age"), "600");
    assert_null(http_resp_header(resp, "Vary"));
    http_resp_free(resp);
    http_req_free_local(req);
}

static void test_listed_origin_and_problem(void **state)
{
    (void)state;
    vf_cors_origins = "https://console.example.com,http://127.0.0.1:8090";
    /* a problem (no token) carries them too */
    http_req *req = req_from("GET", "/v1/transfer/download", "http://127.0.0.1:8090", NULL);
    http_resp *resp = http_resp_new();
    vf_h_download(req, resp, NULL);
    assert_int_equal(http_resp_status(resp), 401);
    assert_actual_headers(resp, "http://127.0.0.1:8090");
    assert_string_equal(http_resp_header(resp, "Vary"), "Origin");
    http_resp_free(resp);
    http_req_free_local(req);
    /* and the preflight */
    req = req_from("OPTIONS", "/v1/transfer/download", "https://console.example.com", NULL);
    resp = http_resp_new();
    vf_cors_h_options(req, resp, NULL);
    assert_actual_headers(resp, "https://console.example.com");
    assert_string_equal(http_resp_header(resp, "Access-Control-Max-Age"), "600");
    http_resp_free(resp);
    http_req_free_local(req);
    vf_cors_origins = NULL;
}

static void test_unlisted_origin_gets_none(void **state)
{
    (void)state;
    vf_cors_origins = "https://console.example.com";
    const char *origins[] = {"http://evil.example.com", NULL};
    for (size_t i = 0; i < 2; i++) {
        http_req *req = req_from("GET", "/v1/transfer/download?token=x", origins[i], NULL);
        http_resp *resp = http_resp_new();
        vf_h_download(req, resp, NULL);
        assert_int_equal(http_resp_status(resp), 401); /* a malformed token */
        assert_no_cors(resp);
        assert_string_equal(http_resp_header(resp, "Vary"), "Origin");
        http_resp_free(resp);
        http_req_free_local(req);
        req = req_from("OPTIONS", "/v1/transfer/download", origins[i],
                       "Access-Control-Request-Method: GET");
        resp = http_resp_new();
        vf_cors_h_options(req, resp, NULL);
        assert_int_equal(http_resp_status(resp), 204);
        assert_no_cors(resp);
        http_resp_free(resp);
        http_req_free_local(req);
    }
    vf_cors_origins = NULL;
}

static int setup(void **state)
{
    (void)state;
    tlog_init("test", NULL);
    vf_token_set_secret("0123456789abcdef0123456789abcdef");
    return 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_allow_origin),
        cmocka_unit_test(test_preflight_default),
        cmocka_unit_test(test_listed_origin_and_problem),
        cmocka_unit_test(test_unlisted_origin_gets_none),
    };
    return cmocka_run_group_tests(tests, setup, NULL);
}
