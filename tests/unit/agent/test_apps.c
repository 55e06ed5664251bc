/* test_apps.c: services/agent/term_app.c and the start commands of
 * service_ports.c: the built-in ttyd port is added only when the image has
 * no terminal app and there is room, start commands come from
 * tessera.app.<name>.start labels (too long: an error), agent.term_path must
 * name an executable file, and the mount is read-only. */
#include "services/agent/service_ports.h"
#include "services/agent/term_app.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static void test_ttyd_added_unless_the_image_has_one(void **state)
{
    (void)state;
    kernel_service_port p[KERNEL_MAX_PORTS];
    ts_err err = {{0}};
    int n = 0;
    assert_true(service_ports_parse("echo:http:8080", NULL, 0, p, &n, &err));
    assert_int_equal(n, 1);
    n = term_app_add_port(p, n, NULL);
    assert_int_equal(n, 2);
    assert_string_equal(p[1].name, "ttyd");
    assert_string_equal(p[1].protocol, "http");
    assert_int_equal(p[1].container_port, 7681);
    assert_string_equal(p[1].start, "/opt/tessera/bin/tessera-term --listen 0.0.0.0:7681");
    assert_string_equal(p[0].start, "");

    /* the image's own ttyd, or its use of 7681, wins */
    assert_true(service_ports_parse("ttyd:http:9999", NULL, 0, p, &n, &err));
    assert_int_equal(term_app_add_port(p, n, "/usr/bin/python3"), 1);
    assert_true(service_ports_parse("web:http:7681", NULL, 0, p, &n, &err));
    assert_int_equal(term_app_add_port(p, n, "/usr/bin/python3"), 1);
    assert_string_equal(p[0].name, "web");

    /* no room left: nothing added */
    int32_t pre[KERNEL_MAX_PORTS];
    for (int i = 0; i < KERNEL_MAX_PORTS; i++)
        pre[i] = 9000 + i;
    assert_true(service_ports_parse(NULL, pre, KERNEL_MAX_PORTS, p, &n, &err));
    assert_int_equal(n, KERNEL_MAX_PORTS);
    assert_int_equal(term_app_add_port(p, n, NULL), KERNEL_MAX_PORTS);
}

/* The image's runtime path goes into the start command (/exec's query mode
 * runs it) when it needs no quoting for /bin/sh -c; otherwise it is left
 * out and tessera-term falls back to /bin/sh. */
static void test_ttyd_start_command_has_the_runtime(void **state)
{
    (void)state;
    kernel_service_port p[KERNEL_MAX_PORTS];
    assert_int_equal(term_app_add_port(p, 0, "/usr/local/bin/python3.11"), 1);
    assert_string_equal(p[0].start, "/opt/tessera/bin/tessera-term --listen 0.0.0.0:7681 "
                                    "--runtime /usr/local/bin/python3.11");
    assert_int_equal(term_app_add_port(p, 0, "/opt/conda/bin/R_x+y-z"), 1);
    assert_string_equal(p[0].start, "/opt/tessera/bin/tessera-term --listen 0.0.0.0:7681 "
                                    "--runtime /opt/conda/bin/R_x+y-z");
    assert_int_equal(term_app_add_port(p, 0, ""), 1);
    assert_string_equal(p[0].start, "/opt/tessera/bin/tessera-term --listen 0.0.0.0:7681");
    static const char *bad[] = {"/bin/python; rm -rf /",
                                "/usr/bin/py thon",
                                "/bin/$(id)",
                                "/bin/py`x`",
                                "/bin/py'",
                                "/bin/py\"",
                                "/bin/py\nx",
                                "/bin/a&b",
                                "/bin/a|b",
                                "/bin/a>b",
                                "/bin/*"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        assert_false(term_app_runtime_ok(bad[i]));
        assert_int_equal(term_app_add_port(p, 0, bad[i]), 1);
        assert_string_equal(p[0].start, "/opt/tessera/bin/tessera-term --listen 0.0.0.0:7681");
    }
    /* too long for the start command: left out, not cut */
    char longp[600];
    memset(longp, 'a', sizeof(longp) - 1);
    longp[0] = '/';
    longp[sizeof(longp) - 1] = '\0';
    assert_true(term_app_runtime_ok(longp));
    assert_int_equal(term_app_add_port(p, 0, longp), 1);
    assert_string_equal(p[0].start, "/opt/tessera/bin/tessera-term --listen 0.0.0.0:7681");
}

static void test_start_commands_from_labels(void **state)
{
    (void)state;
    kernel_service_port p[KERNEL_MAX_PORTS];
    ts_err err = {{0}};
    int n = 0;
    assert_true(service_ports_parse("echo:http:8080,tcpecho:tcp:9000", NULL, 0, p, &n, &err));
    assert_int_equal(n, 2);
    assert_true(service_ports_start_commands(
        "{\"tessera.app.tcpecho.start\": \"nc -ll -p 9000 -e /bin/cat\", \"x\": \"y\"}", p, n,
        &err));
    assert_string_equal(p[0].start, "");
    assert_string_equal(p[1].start, "nc -ll -p 9000 -e /bin/cat");
    /* no labels, or not JSON: nothing */
    assert_true(service_ports_parse("echo:http:8080", NULL, 0, p, &n, &err));
    assert_true(service_ports_start_commands(NULL, p, n, &err));
    assert_true(service_ports_start_commands("not json", p, n, &err));
    assert_string_equal(p[0].start, "");
    /* too long for the field: refused, naming the label */
    char *big = malloc(2000), *labels;
    memset(big, 'a', 1999);
    big[1999] = '\0';
    labels = ts_asprintf("{\"tessera.app.echo.start\": \"%s\"}", big);
    assert_false(service_ports_start_commands(labels, p, n, &err));
    assert_non_null(strstr(err.msg, "tessera.app.echo.start"));
    free(labels);
    free(big);
}

static void test_locate(void **state)
{
    (void)state;
    ts_err err = {{0}};
    assert_null(term_app_locate("relative/tessera-term", &err));
    assert_non_null(strstr(err.msg, "absolute"));
    assert_null(term_app_locate("/no/such/tessera-term", &err));
    assert_non_null(strstr(err.msg, "/no/such/tessera-term"));
    assert_null(term_app_locate("/tmp", &err)); /* a directory */
    assert_non_null(strstr(err.msg, "not an executable file"));
    char path[] = "/tmp/test-term-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    close(fd);
    chmod(path, 0644);
    assert_null(term_app_locate(path, &err));
    chmod(path, 0755);
    char *got = term_app_locate(path, &err);
    assert_non_null(got);
    assert_string_equal(got, path);
    free(got);
    unlink(path);
    /* the default: next to this program (none next to the test binary) */
    got = term_app_locate("", &err);
    if (got) {
        assert_non_null(strstr(got, "/tessera-term"));
        free(got);
    } else {
        assert_non_null(strstr(err.msg, "/tessera-term"));
    }
}

static void test_mount_is_read_only(void **state)
{
    (void)state;
    json_t *m = json_array();
    term_app_mount(m, NULL);
    term_app_mount(m, "");
    assert_int_equal(json_array_size(m), 0);
    term_app_mount(m, "/usr/bin/tessera-term");
    assert_int_equal(json_array_size(m), 1);
    json_t *e = json_array_get(m, 0);
    assert_string_equal(json_string_value(json_object_get(e, "destination")),
                        "/opt/tessera/bin/tessera-term");
    assert_string_equal(json_string_value(json_object_get(e, "source")), "/usr/bin/tessera-term");
    assert_string_equal(json_string_value(json_object_get(e, "type")), "bind");
    bool ro = false;
    size_t i;
    json_t *o;
    json_array_foreach(json_object_get(e, "options"), i, o)
    {
        if (strcmp(json_string_value(o), "ro") == 0) ro = true;
    }
    assert_true(ro);
    json_decref(m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ttyd_added_unless_the_image_has_one),
        cmocka_unit_test(test_ttyd_start_command_has_the_runtime),
        cmocka_unit_test(test_start_commands_from_labels),
        cmocka_unit_test(test_locate),
        cmocka_unit_test(test_mount_is_read_only),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
