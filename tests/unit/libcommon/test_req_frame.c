/* test_req_frame.c: the handlers' frame (libcommon/req_frame.h): who a
 * handler serves, and the 403 the others get. */
#include "libcommon/req_frame.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

/* Whether role passes need; a refusal is answered 403, a pass answers nothing. */
static bool passes(const char *role, req_need need)
{
    http_resp *resp = http_resp_new();
    req_frame f;
    req_frame_begin(&f, NULL, NULL, resp);
    bool ok = req_frame_role(&f, role, need, "only admins may do this");
    assert_int_equal(http_resp_status(resp), ok ? 0 : 403);
    req_frame_end(&f);
    http_resp_free(resp);
    return ok;
}

static void test_roles(void **state)
{
    (void)state;
    assert_true(passes("user", REQ_ANY));
    assert_true(passes("admin", REQ_ANY));
    assert_false(passes("user", REQ_ADMIN));
    assert_true(passes("admin", REQ_ADMIN));
    assert_true(passes("superadmin", REQ_ADMIN));
    assert_false(passes("user", REQ_SUPERADMIN));
    assert_false(passes("admin", REQ_SUPERADMIN));
    assert_true(passes("superadmin", REQ_SUPERADMIN));
    assert_false(passes("", REQ_ADMIN));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_roles),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
