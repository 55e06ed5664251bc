/* test_listeners.c: reading the listening sockets of a network namespace
 * from /proc/<pid>/net/tcp text (runtime_listeners.c), which decides what
 * shutdown-service stops: sockets whose local end is the port asked for
 * (listening or accepted), not connections to that port elsewhere, IPv4 and
 * IPv6 lines alike, and nothing from malformed lines. */
#include "services/agent/runtime_listeners.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <stdio.h>

static const char k_tcp[] =
    "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  "
    "timeout inode\n"
    /* 0.0.0.0:7681 LISTEN, inode 1111 */
    "   0: 00000000:1E01 00000000:0000 0A 00000000:00000000 00:00000000 00000000  1000        "
    "0 1111 1 0000000000000000 100 0 0 10 0\n"
    /* 127.0.0.1:8888 LISTEN, inode 2222 */
    "   1: 0100007F:22B8 00000000:0000 0A 00000000:00000000 00:00000000 00000000  1000        "
    "0 2222 1 0000000000000000 100 0 0 10 0\n"
    /* an ESTABLISHED connection accepted on port 7681: its server's too */
    "   2: 0200A8C0:1E01 0100A8C0:D431 01 00000000:00000000 00:00000000 00000000  1000        "
    "0 3333 1 0000000000000000 20 4 30 10 -1\n"
    /* a LISTEN socket whose inode is 0 (being torn down): skipped */
    "   4: 00000000:1E01 00000000:0000 0A 00000000:00000000 00:00000000 00000000  1000        "
    "0 0 1 0000000000000000 100 0 0 10 0\n"
    /* a connection to someone else's port 7681 (local 54321): not ours */
    "   5: 0200A8C0:D431 0100A8C0:1E01 01 00000000:00000000 00:00000000 00000000  1000        "
    "0 5555 1 0000000000000000 20 4 30 10 -1\n"
    "   3: 00000000:1E01 00000000:0000 0A 00000000:00000000 00:00000000 00000000  1000        "
    "0 0 1 0000000000000000 100 0 0 10 0\n"
    "garbage line\n";

static const char k_tcp6[] =
    "  sl  local_address                         remote_address                        st "
    "tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n"
    "   0: 00000000000000000000000000000000:1E01 00000000000000000000000000000000:0000 0A "
    "00000000:00000000 00:00000000 00000000  1000        0 4444 1 0000000000000000 100 0 0 10 0\n";

static void test_listen_inodes(void **state)
{
    (void)state;
    unsigned long in[8];
    assert_int_equal(listeners_parse_inodes(k_tcp, 7681, in, 8), 2);
    assert_int_equal(in[0], 1111);
    assert_int_equal(in[1], 3333);
    assert_int_equal(listeners_parse_inodes(k_tcp, 8888, in, 8), 1);
    assert_int_equal(in[0], 2222);
    /* the client end of line 5, asked for by its own (ephemeral) port */
    assert_int_equal(listeners_parse_inodes(k_tcp, 54321, in, 8), 1);
    assert_int_equal(in[0], 5555);
    assert_int_equal(listeners_parse_inodes(k_tcp, 9999, in, 8), 0);
    assert_int_equal(listeners_parse_inodes(k_tcp6, 7681, in, 8), 1);
    assert_int_equal(in[0], 4444);
}

static void test_limits_and_bad_text(void **state)
{
    (void)state;
    unsigned long in[1];
    assert_int_equal(listeners_parse_inodes(NULL, 7681, in, 1), 0);
    assert_int_equal(listeners_parse_inodes("", 7681, in, 1), 0);
    assert_int_equal(listeners_parse_inodes("header only", 7681, in, 1), 0);
    assert_int_equal(listeners_parse_inodes("h\n   0: zz:1E01 x 0A\n", 7681, in, 1), 0);
    /* max is honoured */
    char two[1024];
    snprintf(two, sizeof(two), "h\n%s%s",
             "   0: 00000000:1E01 00000000:0000 0A 0:0 0:0 0 1 0 5 1\n",
             "   1: 00000000:1E01 00000000:0000 0A 0:0 0:0 0 1 0 6 1\n");
    assert_int_equal(listeners_parse_inodes(two, 7681, in, 1), 1);
    assert_int_equal(in[0], 5);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_listen_inodes),
        cmocka_unit_test(test_limits_and_bad_text),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
