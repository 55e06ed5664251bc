/* test_idle_scopes.c: where a session's idle timeout comes from
 * (services/registry/idle_scopes.h): the inputs a session keeps from its
 * owner's context, and which tessera.auth.v1 events change them (a keypair
 * policy's create or update, a domain's or a project's change; not a user or
 * project policy, not a deleted policy, not a payload that does not decode). */
#include "services/registry/idle_scopes.h"
#include "tessera/v1/auth.pb-c.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>

static void test_inputs_from_the_context(void **state)
{
    (void)state;
    json_t *owner = json_loads("{\"keypair_policy\": {\"name\": \"p1\", \"idle_timeout\": -1},"
                               " \"project\": {\"idle_timeout\": 600},"
                               " \"domain\": {\"idle_timeout\": 0}}",
                               0, NULL);
    assert_non_null(owner);
    char *text = idle_scopes_inputs(owner);
    json_t *in = json_loads(text, 0, NULL);
    assert_string_equal(json_string_value(json_object_get(in, "policy_name")), "p1");
    assert_int_equal(json_integer_value(json_object_get(in, "policy")), -1);
    assert_int_equal(json_integer_value(json_object_get(in, "project")), 600);
    assert_int_equal(json_integer_value(json_object_get(in, "domain")), 0);
    json_decref(in);
    free(text);
    json_decref(owner);
    /* no project (a session without one), nothing said: zeros */
    owner = json_loads("{\"keypair_policy\": {\"name\": \"p\"}}", 0, NULL);
    text = idle_scopes_inputs(owner);
    in = json_loads(text, 0, NULL);
    assert_int_equal(json_integer_value(json_object_get(in, "project")), 0);
    assert_int_equal(json_integer_value(json_object_get(in, "policy")), 0);
    json_decref(in);
    free(text);
    json_decref(owner);
}

static bool read_policy(const char *kind, Tessera__V1__ChangeKind change, int value,
                        idle_scope *scope, char *id, int *out)
{
    Tessera__V1__PolicyChanged m = TESSERA__V1__POLICY_CHANGED__INIT;
    m.policy_name = "gpu-users";
    m.policy_kind = (char *)kind;
    m.change = change;
    m.idle_timeout_s = value;
    uint8_t buf[256];
    size_t len = tessera__v1__policy_changed__pack(&m, buf);
    return idle_scopes_read_event("tessera.v1.PolicyChanged", buf, len, scope, id, 128, out);
}

static void test_policy_events(void **state)
{
    (void)state;
    idle_scope scope;
    char id[128];
    int value = 0;
    assert_true(read_policy("keypair", TESSERA__V1__CHANGE_KIND__CHANGE_KIND_UPDATED, -1, &scope,
                            id, &value));
    assert_int_equal(scope, IDLE_SCOPE_POLICY);
    assert_string_equal(id, "gpu-users");
    assert_int_equal(value, -1);
    /* a user or project policy says nothing about idle timeouts */
    assert_false(
        read_policy("user", TESSERA__V1__CHANGE_KIND__CHANGE_KIND_UPDATED, 5, &scope, id, &value));
    /* a deleted policy has no keypairs (auth refuses to delete one in use) */
    assert_false(read_policy("keypair", TESSERA__V1__CHANGE_KIND__CHANGE_KIND_DELETED, 5, &scope,
                             id, &value));
}

static void test_domain_and_project_events(void **state)
{
    (void)state;
    idle_scope scope;
    char id[128];
    int value = 0;
    uint8_t buf[256];
    Tessera__V1__DomainChanged d = TESSERA__V1__DOMAIN_CHANGED__INIT;
    d.domain_name = "lab";
    d.idle_timeout_s = 300;
    size_t len = tessera__v1__domain_changed__pack(&d, buf);
    assert_true(
        idle_scopes_read_event("tessera.v1.DomainChanged", buf, len, &scope, id, 128, &value));
    assert_int_equal(scope, IDLE_SCOPE_DOMAIN);
    assert_string_equal(id, "lab");
    assert_int_equal(value, 300);

    Tessera__V1__ProjectChanged p = TESSERA__V1__PROJECT_CHANGED__INIT;
    p.project_id = "0b7e4a4e-3f0c-4a43-9d4e-2f6f7b0e9a11";
    p.idle_timeout_s = 0;
    len = tessera__v1__project_changed__pack(&p, buf);
    value = 7;
    assert_true(
        idle_scopes_read_event("tessera.v1.ProjectChanged", buf, len, &scope, id, 128, &value));
    assert_int_equal(scope, IDLE_SCOPE_PROJECT);
    assert_string_equal(id, p.project_id);
    assert_int_equal(value, 0);
    /* a project id that is no UUID is not used in a query */
    p.project_id = "x'; DROP";
    len = tessera__v1__project_changed__pack(&p, buf);
    assert_false(
        idle_scopes_read_event("tessera.v1.ProjectChanged", buf, len, &scope, id, 128, &value));
}

static void test_other_events_and_garbage(void **state)
{
    (void)state;
    idle_scope scope;
    char id[128];
    int value;
    static const uint8_t junk[] = {0xff, 0xff, 0xff, 0x01};
    assert_false(idle_scopes_read_event("tessera.v1.UserChanged", junk, sizeof(junk), &scope, id,
                                        128, &value));
    assert_false(idle_scopes_read_event("tessera.v1.DomainChanged", junk, sizeof(junk), &scope, id,
                                        128, &value));
    assert_false(idle_scopes_read_event(NULL, junk, sizeof(junk), &scope, id, 128, &value));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_inputs_from_the_context),
        cmocka_unit_test(test_policy_events),
        cmocka_unit_test(test_domain_and_project_events),
        cmocka_unit_test(test_other_events_and_garbage),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
