/* test_portmap_conf.c: tessera-portmap's input checks (services/cni-portmap/pm_conf.c):
 * a good configuration in each shape the runtimes send, and every bad one
 * refused with the CNI error code and a message naming what is wrong. */
#include "services/cni-portmap/pm_conf.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#define PREV "{\"cniVersion\":\"1.0.0\",\"ips\":[{\"address\":\"10.231.9.7/24\"}]}"

static bool parse(const char *text, cnip_cmd cmd, pm_conf *c, cnip_error *e)
{
    memset(e, 0, sizeof(*e));
    return pm_conf_parse(text, strlen(text), cmd, c, e);
}

/* text must be refused with code, and the message or details must say want. */
static void refused(const char *text, cnip_cmd cmd, int code, const char *want)
{
    pm_conf c;
    cnip_error e;
    if (parse(text, cmd, &c, &e)) {
        pm_conf_free(&c);
        fail_msg("accepted: %s", text);
    }
    if (e.code != code)
        fail_msg("code %d, want %d (%s: %s) for %s", e.code, code, e.msg, e.details, text);
    if (!strstr(e.msg, want) && !strstr(e.details, want))
        fail_msg("'%s: %s' does not say '%s'", e.msg, e.details, want);
}

static void test_good(void **state)
{
    (void)state;
    pm_conf c;
    cnip_error e;
    const char *t = "{\"cniVersion\":\"1.0.0\",\"name\":\"tsdev83\",\"type\":\"tessera-portmap\","
                    "\"capabilities\":{\"portMappings\":true},\"runtimeConfig\":{\"portMappings\":["
                    "{\"hostPort\":30001,\"containerPort\":7681,\"protocol\":\"tcp\"},"
                    "{\"hostPort\":30002,\"containerPort\":53,\"protocol\":\"UDP\"},"
                    "{\"hostPort\":30003,\"containerPort\":80}]},\"prevResult\":" PREV "}";
    assert_true(parse(t, CNIP_ADD, &c, &e));
    assert_string_equal(c.cni_version, "1.0.0");
    assert_string_equal(c.name, "tsdev83");
    assert_true(c.snat); /* the default, as portmap's */
    assert_int_equal(c.n_maps, 3);
    assert_int_equal(c.maps[0].host_port, 30001);
    assert_int_equal(c.maps[0].container_port, 7681);
    assert_string_equal(c.maps[0].proto, "tcp");
    assert_string_equal(c.maps[1].proto, "udp");
    assert_string_equal(c.maps[2].proto, "tcp"); /* no protocol: tcp */
    assert_string_equal(c.maps[0].host_ip, "");
    assert_string_equal(c.container_ip, "10.231.9.7");
    assert_string_equal(c.container_net, "10.231.9.0/24");
    assert_non_null(c.prev_result);
    assert_non_null(json_object_get(c.prev_result, "ips"));
    pm_conf_free(&c);
}

static void test_snat_hostip_and_families(void **state)
{
    (void)state;
    pm_conf c;
    cnip_error e;
    /* snat off; a v4 hostIP kept, a v6 one left out (IPv4 only); the first
     * IPv4 address of prevResult wins, v6 ones are passed over */
    const char *t =
        "{\"cniVersion\":\"0.4.0\",\"name\":\"n\",\"snat\":false,\"runtimeConfig\":{"
        "\"portMappings\":[{\"hostPort\":1,\"containerPort\":2,\"hostIP\":\"192.0.2.9\"},"
        "{\"hostPort\":3,\"containerPort\":4,\"hostIP\":\"2001:db8::1\"},"
        "{\"hostPort\":5,\"containerPort\":6,\"hostIP\":\"\"}]},"
        "\"prevResult\":{\"ips\":[{\"address\":\"fd00::5/64\"},"
        "{\"address\":\"10.1.2.3\"},{\"address\":\"10.9.9.9/8\"}]}}";
    assert_true(parse(t, CNIP_CHECK, &c, &e));
    assert_false(c.snat);
    assert_int_equal(c.n_maps, 2);
    assert_string_equal(c.maps[0].host_ip, "192.0.2.9");
    assert_int_equal(c.maps[1].host_port, 5);
    assert_string_equal(c.maps[1].host_ip, "");
    assert_string_equal(c.container_ip, "10.1.2.3");
    assert_string_equal(c.container_net, "10.1.2.3/32");
    /* one mapping on every address (hostIP ""): loopback among them */
    assert_true(pm_conf_on_loopback(&c));
    pm_conf_free(&c);
    /* route_localnet is needed only for a mapping that answers on loopback */
    t = "{\"cniVersion\":\"1.0.0\",\"name\":\"n\",\"runtimeConfig\":{\"portMappings\":["
        "{\"hostPort\":1,\"containerPort\":2,\"hostIP\":\"192.0.2.9\"},"
        "{\"hostPort\":1,\"containerPort\":2,\"hostIP\":\"10.0.0.1\"}]},"
        "\"prevResult\":{\"ips\":[{\"address\":\"10.1.2.3/24\"}]}}";
    assert_true(parse(t, CNIP_ADD, &c, &e));
    assert_false(pm_conf_on_loopback(&c));
    pm_conf_free(&c);
    t = "{\"cniVersion\":\"1.0.0\",\"name\":\"n\",\"runtimeConfig\":{\"portMappings\":["
        "{\"hostPort\":1,\"containerPort\":2,\"hostIP\":\"192.0.2.9\"},"
        "{\"hostPort\":1,\"containerPort\":2,\"hostIP\":\"127.0.0.1\"}]},"
        "\"prevResult\":{\"ips\":[{\"address\":\"10.1.2.3/24\"}]}}";
    assert_true(parse(t, CNIP_ADD, &c, &e));
    assert_true(pm_conf_on_loopback(&c));
    pm_conf_free(&c);
    /* nothing to publish: no IPv4 address needed */
    t = "{\"cniVersion\":\"1.0.0\",\"name\":\"n\",\"prevResult\":{\"ips\":[{\"address\":\"fd00::5/"
        "64\"}]}}";
    assert_true(parse(t, CNIP_ADD, &c, &e));
    assert_int_equal(c.n_maps, 0);
    assert_string_equal(c.container_ip, "");
    pm_conf_free(&c);
    /* a /0 network */
    t = "{\"cniVersion\":\"1.0.0\",\"name\":\"n\",\"runtimeConfig\":{\"portMappings\":[{"
        "\"hostPort\":1,\"containerPort\":2}]},\"prevResult\":{\"ips\":[{\"address\":\"10.1.2.3/"
        "0\"}]}}";
    assert_true(parse(t, CNIP_ADD, &c, &e));
    assert_string_equal(c.container_net, "0.0.0.0/0");
    pm_conf_free(&c);
}

static void test_del_needs_only_the_name(void **state)
{
    (void)state;
    pm_conf c;
    cnip_error e;
    /* DEL must clean up even when the rest of what the runtime kept is bad */
    const char *t = "{\"cniVersion\":\"1.0.0\",\"name\":\"n\",\"runtimeConfig\":{\"portMappings\":"
                    "[{\"hostPort\":0}]},\"prevResult\":\"lost\"}";
    assert_true(parse(t, CNIP_DEL, &c, &e));
    assert_string_equal(c.name, "n");
    pm_conf_free(&c);
    refused("{\"cniVersion\":\"1.0.0\"}", CNIP_DEL, CNIP_E_CONFIG, "name is missing");
}

static void test_bad_input(void **state)
{
    (void)state;
    refused("", CNIP_ADD, CNIP_E_DECODE, "decode");
    refused("not json", CNIP_ADD, CNIP_E_DECODE, "decode");
    refused("[1,2]", CNIP_ADD, CNIP_E_DECODE, "not a JSON object");
    refused("{\"cniVersion\":\"1.0.0\",\"name\":\"n\"", CNIP_ADD, CNIP_E_DECODE, "decode");
    refused("{\"name\":\"n\"}", CNIP_ADD, CNIP_E_CONFIG, "cniVersion is missing");
    refused("{\"cniVersion\":\"9.9.9\",\"name\":\"n\"}", CNIP_ADD, CNIP_E_VERSION, "9.9.9");
    refused("{\"cniVersion\":1,\"name\":\"n\"}", CNIP_ADD, CNIP_E_CONFIG, "cniVersion");
    refused("{\"cniVersion\":\"0.3.1\",\"name\":\"n\",\"prevResult\":" PREV "}", CNIP_CHECK,
            CNIP_E_VERSION, "CHECK needs");
    refused("{\"cniVersion\":\"1.0.0\"}", CNIP_ADD, CNIP_E_CONFIG, "name is missing");
    refused("{\"cniVersion\":\"1.0.0\",\"name\":\"a b\"}", CNIP_ADD, CNIP_E_CONFIG, "name a b");
    refused("{\"cniVersion\":\"1.0.0\",\"name\":\"-n\"}", CNIP_ADD, CNIP_E_CONFIG, "name -n");
    refused("{\"cniVersion\":\"1.0.0\",\"name\":\"n\\\"x\"}", CNIP_ADD, CNIP_E_CONFIG, "name");
    refused("{\"cniVersion\":\"1.0.0\",\"name\":\"n\",\"snat\":\"yes\"}", CNIP_ADD, CNIP_E_CONFIG,
            "snat");
#define CONF(maps)                                                                                 \
    "{\"cniVersion\":\"1.0.0\",\"name\":\"n\",\"runtimeConfig\":" maps ",\"prevResult\":" PREV "}"
    refused(CONF("[]"), CNIP_ADD, CNIP_E_CONFIG, "runtimeConfig is not an object");
    refused(CONF("{\"portMappings\":{}}"), CNIP_ADD, CNIP_E_CONFIG, "not an array");
    refused(CONF("{\"portMappings\":[7]}"), CNIP_ADD, CNIP_E_CONFIG,
            "portMappings[0] is not an object");
    refused(CONF("{\"portMappings\":[{\"containerPort\":80}]}"), CNIP_ADD, CNIP_E_CONFIG,
            "hostPort is missing");
    refused(CONF("{\"portMappings\":[{\"hostPort\":80}]}"), CNIP_ADD, CNIP_E_CONFIG,
            "containerPort is missing");
    refused(CONF("{\"portMappings\":[{\"hostPort\":0,\"containerPort\":80}]}"), CNIP_ADD,
            CNIP_E_CONFIG, "hostPort 0 is not a port");
    refused(CONF("{\"portMappings\":[{\"hostPort\":65536,\"containerPort\":80}]}"), CNIP_ADD,
            CNIP_E_CONFIG, "hostPort 65536");
    refused(CONF("{\"portMappings\":[{\"hostPort\":-1,\"containerPort\":80}]}"), CNIP_ADD,
            CNIP_E_CONFIG, "hostPort -1");
    refused(CONF("{\"portMappings\":[{\"hostPort\":\"80\",\"containerPort\":80}]}"), CNIP_ADD,
            CNIP_E_CONFIG, "hostPort \"80\"");
    refused(CONF("{\"portMappings\":[{\"hostPort\":80.5,\"containerPort\":80}]}"), CNIP_ADD,
            CNIP_E_CONFIG, "hostPort 80.5");
    refused(CONF("{\"portMappings\":[{\"hostPort\":80,\"containerPort\":99999}]}"), CNIP_ADD,
            CNIP_E_CONFIG, "containerPort 99999");
    refused(
        CONF("{\"portMappings\":[{\"hostPort\":80,\"containerPort\":80,\"protocol\":\"sctp\"}]}"),
        CNIP_ADD, CNIP_E_CONFIG, "protocol sctp");
    refused(CONF("{\"portMappings\":[{\"hostPort\":80,\"containerPort\":80,\"protocol\":6}]}"),
            CNIP_ADD, CNIP_E_CONFIG, "protocol");
    refused(CONF("{\"portMappings\":[{\"hostPort\":80,\"containerPort\":80,\"hostIP\":\"x\"}]}"),
            CNIP_ADD, CNIP_E_CONFIG, "hostIP x");
    refused(CONF("{\"portMappings\":[{\"hostPort\":80,\"containerPort\":80,\"hostIP\":1}]}"),
            CNIP_ADD, CNIP_E_CONFIG, "hostIP");
    refused(CONF("{\"portMappings\":[{\"hostPort\":80,\"containerPort\":80},"
                 "{\"hostPort\":80,\"containerPort\":81,\"protocol\":\"TCP\"}]}"),
            CNIP_ADD, CNIP_E_CONFIG, "mapped twice");
    /* prevResult */
    const char *maps =
        "\"runtimeConfig\":{\"portMappings\":[{\"hostPort\":80,\"containerPort\":80}]}";
    char t[1024];
    snprintf(t, sizeof(t), "{\"cniVersion\":\"1.0.0\",\"name\":\"n\",%s}", maps);
    refused(t, CNIP_ADD, CNIP_E_CONFIG, "chained plugin");
    refused(t, CNIP_CHECK, CNIP_E_CONFIG, "chained plugin");
    refused("{\"cniVersion\":\"1.0.0\",\"name\":\"n\"}", CNIP_ADD, CNIP_E_CONFIG, "chained plugin");
    snprintf(t, sizeof(t), "{\"cniVersion\":\"1.0.0\",\"name\":\"n\",%s,\"prevResult\":[]}", maps);
    refused(t, CNIP_ADD, CNIP_E_CONFIG, "prevResult is not an object");
    snprintf(t, sizeof(t), "{\"cniVersion\":\"1.0.0\",\"name\":\"n\",%s,\"prevResult\":{}}", maps);
    refused(t, CNIP_ADD, CNIP_E_CONFIG, "no IPv4 address");
    snprintf(t, sizeof(t),
             "{\"cniVersion\":\"1.0.0\",\"name\":\"n\",%s,\"prevResult\":{\"ips\":[{\"address\":"
             "\"fd00::1/64\"}]}}",
             maps);
    refused(t, CNIP_ADD, CNIP_E_CONFIG, "no IPv4 address");
    snprintf(t, sizeof(t),
             "{\"cniVersion\":\"1.0.0\",\"name\":\"n\",%s,\"prevResult\":{\"ips\":7}}", maps);
    refused(t, CNIP_ADD, CNIP_E_CONFIG, "ips is not an array");
    snprintf(t, sizeof(t),
             "{\"cniVersion\":\"1.0.0\",\"name\":\"n\",%s,\"prevResult\":{\"ips\":[{}]}}", maps);
    refused(t, CNIP_ADD, CNIP_E_CONFIG, "address is missing");
    const char *bad_addr[] = {"10.1.2/24",  "10.1.2.3/33", "10.1.2.3/",
                              "10.1.2.3/x", "300.1.2.3/8", "10.1.2.3/24x"};
    for (size_t i = 0; i < sizeof(bad_addr) / sizeof(bad_addr[0]); i++) {
        snprintf(
            t, sizeof(t),
            "{\"cniVersion\":\"1.0.0\",\"name\":\"n\",%s,\"prevResult\":{\"ips\":[{\"address\":"
            "\"%s\"}]}}",
            maps, bad_addr[i]);
        refused(t, CNIP_ADD, CNIP_E_CONFIG, bad_addr[i]);
    }
}

static void test_names(void **state)
{
    (void)state;
    assert_true(cnip_valid_name("abc", 10));
    assert_true(cnip_valid_name("k1a2b3c4d5e6f7a8b9c0d", 64));
    assert_true(cnip_valid_name("52c8720a-dadf-4ba9-9fe8-2000e171b677", 64));
    assert_true(cnip_valid_name("a_b.c-d", 10));
    assert_false(cnip_valid_name("", 10));
    assert_false(cnip_valid_name(NULL, 10));
    assert_false(cnip_valid_name("_ab", 10));
    assert_false(cnip_valid_name(".ab", 10));
    assert_false(cnip_valid_name("a b", 10));
    assert_false(cnip_valid_name("a\"b", 10));
    assert_false(cnip_valid_name("a:b", 10));
    assert_false(cnip_valid_name("a\nb", 10));
    assert_false(cnip_valid_name("abcdefghijk", 10));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_good),
        cmocka_unit_test(test_snat_hostip_and_families),
        cmocka_unit_test(test_del_needs_only_the_name),
        cmocka_unit_test(test_bad_input),
        cmocka_unit_test(test_names),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
