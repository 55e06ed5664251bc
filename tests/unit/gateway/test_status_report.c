/* Unit tests: the platform status's data (status_report.h): the
 * gateway.status_targets list, one probe's row (ready, not ready with its
 * failed checks, unreachable before and after /healthz) and the
 * dependencies merged from several services' /readyz; and Redis INFO's
 * fields (libcommon/depinfo.h). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "libcommon/depinfo.h"
#include "services/gateway/status_report.h"

#include <string.h>

static void test_targets(void **state)
{
    (void)state;
    status_target t[3];
    size_t n = 99;
    ts_err err = {{0}};
    assert_true(status_targets_parse("", t, 3, &n, &err));
    assert_int_equal(n, 0);
    assert_true(status_targets_parse(NULL, t, 3, &n, &err));
    assert_int_equal(n, 0);
    assert_true(status_targets_parse(" scheduler = http://127.0.0.1:8093/ ,, devbus=https://h:1 ,",
                                     t, 3, &n, &err));
    assert_int_equal(n, 2);
    assert_string_equal(t[0].name, "scheduler");
    assert_string_equal(t[0].url, "http://127.0.0.1:8093");
    assert_string_equal(t[0].kind, "service");
    assert_string_equal(t[1].name, "devbus");
    assert_string_equal(t[1].url, "https://h:1");
    static const char *const bad[] = {
        "scheduler", "=http://h:1",      "s=ftp://h:1",
        "s=http://", "s=127.0.0.1:8093", "a=http://a,b=http://b,c=http://c,d=http://d"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        err = (ts_err){{0}};
        assert_false(status_targets_parse(bad[i], t, 3, &n, &err));
        assert_non_null(strstr(err.msg, "gateway.status_targets"));
    }
}

static status_probe probe(const char *name, const char *health, long rs, const char *ready)
{
    status_probe p = {.t = {.kind = "service"}};
    snprintf(p.t.name, sizeof(p.t.name), "%s", name);
    snprintf(p.t.url, sizeof(p.t.url), "http://127.0.0.1:1/%s", name);
    if (health) {
        p.reached = true;
        p.health_status = 200;
        p.health = json_loads(health, 0, NULL);
        p.latency_ms = 3;
    }
    p.ready_status = rs;
    if (ready) p.ready = json_loads(ready, 0, NULL);
    return p;
}

static const char HEALTH[] = "{\"status\":\"ok\",\"version\":\"9.9.9\"}";

static void test_rows(void **state)
{
    (void)state;
    status_probe ok =
        probe("auth", HEALTH, 200, "{\"status\":\"ready\",\"checks\":{\"postgresql\":\"ok\"}}");
    json_t *r = status_row(&ok);
    assert_string_equal(json_string_value(json_object_get(r, "state")), "ready");
    assert_true(json_is_true(json_object_get(r, "ready")));
    assert_string_equal(json_string_value(json_object_get(r, "version")), "9.9.9");
    assert_int_equal(json_integer_value(json_object_get(r, "latency_ms")), 3);
    assert_int_equal(json_object_size(json_object_get(r, "failed_checks")), 0);
    assert_null(json_object_get(r, "error"));
    json_decref(r);
    status_probe_clear(&ok);

    status_probe nr = probe("registry", HEALTH, 503,
                            "{\"status\":\"not-ready\",\"checks\":{\"postgresql\":\"ok\","
                            "\"kafka\":\"no broker\"}}");
    r = status_row(&nr);
    assert_string_equal(json_string_value(json_object_get(r, "state")), "not-ready");
    assert_false(json_is_true(json_object_get(r, "ready")));
    json_t *failed = json_object_get(r, "failed_checks");
    assert_int_equal(json_object_size(failed), 1);
    assert_string_equal(json_string_value(json_object_get(failed, "kafka")), "no broker");
    json_decref(r);
    status_probe_clear(&nr);

    /* a 200 that says not-ready is not ready */
    status_probe odd = probe("x", HEALTH, 200, "{\"status\":\"not-ready\",\"checks\":{}}");
    r = status_row(&odd);
    assert_string_equal(json_string_value(json_object_get(r, "state")), "not-ready");
    json_decref(r);
    status_probe_clear(&odd);

    status_probe dead = probe("vfolder", NULL, 0, NULL);
    snprintf(dead.error, sizeof(dead.error), "Connection refused");
    r = status_row(&dead);
    assert_string_equal(json_string_value(json_object_get(r, "state")), "unreachable");
    assert_string_equal(json_string_value(json_object_get(r, "error")),
                        "unreachable: Connection refused");
    assert_true(json_is_null(json_object_get(r, "latency_ms")));
    assert_true(json_is_null(json_object_get(r, "version")));
    json_decref(r);

    /* /healthz answered, /readyz did not: unreachable, with the version */
    status_probe half = probe("wsproxy", HEALTH, 0, NULL);
    snprintf(half.error, sizeof(half.error), "no answer in time");
    r = status_row(&half);
    assert_string_equal(json_string_value(json_object_get(r, "state")), "unreachable");
    assert_string_equal(json_string_value(json_object_get(r, "error")),
                        "unreachable: GET /readyz: no answer in time");
    assert_string_equal(json_string_value(json_object_get(r, "version")), "9.9.9");
    json_decref(r);
    status_probe_clear(&half);

    /* /readyz answered something else than JSON */
    status_probe html = probe("h", HEALTH, 502, NULL);
    r = status_row(&html);
    assert_string_equal(json_string_value(json_object_get(r, "state")), "unreachable");
    assert_non_null(strstr(json_string_value(json_object_get(r, "error")), "without JSON"));
    json_decref(r);
    status_probe_clear(&html);
}

static void test_dependencies(void **state)
{
    (void)state;
    status_probe p[3];
    p[0] = probe("auth", HEALTH, 200,
                 "{\"status\":\"ready\",\"checks\":{\"kafka\":\"ok\"},\"dependencies\":"
                 "{\"postgresql\":{\"status\":\"ok\",\"version\":\"16.4\"}}}");
    p[1] =
        probe("registry", HEALTH, 503,
              "{\"status\":\"not-ready\",\"checks\":{\"kafka\":\"broker down\"},"
              "\"dependencies\":{\"postgresql\":{\"status\":\"ok\",\"version\":\"16.4\"},"
              "\"redis\":{\"status\":\"ok\",\"version\":\"7.0.15\"},"
              "\"oci-registry\":{\"status\":\"unreachable: refused\",\"url\":\"http://o/v2/\"}}}");
    p[2] = probe("vfolder", NULL, 0, NULL);
    json_t *d = status_dependencies(p, 3);
    json_t *pg = json_object_get(d, "postgresql");
    assert_string_equal(json_string_value(json_object_get(pg, "status")), "ok");
    assert_string_equal(json_string_value(json_object_get(pg, "version")), "16.4");
    assert_int_equal(json_array_size(json_object_get(pg, "reported_by")), 2);
    json_t *redis = json_object_get(d, "redis");
    assert_string_equal(json_string_value(json_object_get(redis, "version")), "7.0.15");
    json_t *bus = json_object_get(d, "kafka");
    assert_string_equal(json_string_value(json_object_get(bus, "status")),
                        "broker down (seen by registry)");
    assert_null(json_object_get(bus, "version"));
    json_t *oci = json_object_get(d, "oci-registry");
    assert_string_equal(json_string_value(json_object_get(oci, "status")),
                        "unreachable: refused (seen by registry)");
    assert_string_equal(json_string_value(json_object_get(oci, "url")), "http://o/v2/");
    json_decref(d);
    /* nobody reported: unknown, never absent */
    d = status_dependencies(&p[2], 1);
    assert_string_equal(json_string_value(json_object_get(json_object_get(d, "redis"), "status")),
                        "unknown: no service reported it");
    assert_int_equal(json_object_size(d), 4);
    json_decref(d);
    for (int i = 0; i < 3; i++)
        status_probe_clear(&p[i]);
}

static void test_info_field(void **state)
{
    (void)state;
    const char *info = "# Server\r\nredis_version:7.0.15\r\nredis_git_sha1:00000000\r\n"
                       "redis_mode:standalone\r\nempty:\r\n";
    char v[16];
    assert_true(depinfo_info_field(info, "redis_version", v, sizeof(v)));
    assert_string_equal(v, "7.0.15");
    assert_true(depinfo_info_field(info, "redis_mode", v, sizeof(v)));
    assert_string_equal(v, "standalone");
    assert_false(depinfo_info_field(info, "redis", v, sizeof(v)));
    assert_false(depinfo_info_field(info, "empty", v, sizeof(v)));
    assert_false(depinfo_info_field("", "redis_version", v, sizeof(v)));
    assert_true(depinfo_info_field("a:b\nredis_version:1.2.3", "redis_version", v, 4));
    assert_string_equal(v, "1.2"); /* cut to the buffer */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_targets),
        cmocka_unit_test(test_rows),
        cmocka_unit_test(test_dependencies),
        cmocka_unit_test(test_info_field),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
