/* test_term_proc.c: services/wsproxy/term/term_proc.c, how tessera-term's
 * /exec sees that a program waits for input: /proc/<pid>/stat's process
 * group (a comm with spaces and parentheses), /proc/<pid>/syscall lines (a
 * blocked read, "running", not in a syscall, garbage), the pipe-read wchan,
 * and the scan itself on a real child blocked reading a pipe. */
#include "services/wsproxy/term/term_proc.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <poll.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/select.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static void test_stat_pgrp(void **state)
{
    (void)state;
    long pg = 0;
    assert_true(term_proc_stat_pgrp("1234 (sh) S 1200 1234 1234 0 -1 4194560 ...", &pg));
    assert_int_equal(pg, 1234);
    /* comm is the program's name: spaces and ')' in it must not shift fields */
    assert_true(term_proc_stat_pgrp("77 (a) b) (c) R 5 66 66 0", &pg));
    assert_int_equal(pg, 66);
    assert_false(term_proc_stat_pgrp("77 no parenthesis", &pg));
    assert_false(term_proc_stat_pgrp("77 (x) S", &pg));
    assert_false(term_proc_stat_pgrp("", &pg));
}

static void test_syscall_lines(void **state)
{
    (void)state;
    long nr = -5;
    unsigned long long a[6] = {99};
    assert_true(term_proc_syscall("0 0x0 0x55d0c1a2b000 0x1 0x0 0x0 0x0 0x7ffd 0x7f12\n", &nr, a));
    assert_int_equal(nr, 0);
    assert_int_equal(a[0], 0);
    assert_int_equal(a[1], 0x55d0c1a2b000ULL);
    assert_int_equal(a[2], 1);
    assert_true(term_proc_syscall("63 0x7 0x1 0x2 0x3 0x4 0x5 0x6 0x7", &nr, a));
    assert_int_equal(nr, 63);
    assert_int_equal(a[0], 7);
    assert_int_equal(a[5], 5);
    assert_true(
        term_proc_syscall("7 0x7ffd26c6ab18 0x1 0xffffffff 0x0 0x0 0x0 0x7ffd 0x47cc80", &nr, a));
    assert_int_equal(a[2], 0xffffffffULL);
    assert_false(term_proc_syscall("running", &nr, a));
    assert_false(term_proc_syscall("-1 0x7ffd5 0x7f123", &nr, a)); /* not in a syscall */
    assert_false(term_proc_syscall("", &nr, a));
    assert_false(term_proc_syscall("0", &nr, a));
    assert_false(term_proc_syscall("0 7", &nr, a));
    assert_false(term_proc_syscall("0 0x", &nr, a));
    assert_false(term_proc_syscall("0 0x1 0x2 0x3", &nr, a)); /* fewer than six arguments */
    assert_false(term_proc_syscall("x 0x1", &nr, a));
}

static void test_wait_kinds_and_wchan(void **state)
{
    (void)state;
    assert_int_equal(term_proc_wait_kind(SYS_read), TP_READ);
    assert_int_equal(term_proc_wait_kind(SYS_readv), TP_READ);
    assert_int_equal(term_proc_wait_kind(SYS_ppoll), TP_POLL);
    assert_int_equal(term_proc_wait_kind(SYS_pselect6), TP_SELECT);
#ifdef SYS_poll
    assert_int_equal(term_proc_wait_kind(SYS_poll), TP_POLL);
    assert_int_equal(term_proc_wait_kind(SYS_select), TP_SELECT);
#endif
    assert_int_equal(term_proc_wait_kind(SYS_epoll_pwait), TP_EPOLL);
#ifdef SYS_epoll_wait
    assert_int_equal(term_proc_wait_kind(SYS_epoll_wait), TP_EPOLL);
#endif
    assert_int_equal(term_proc_wait_kind(SYS_write), TP_OTHER);
    assert_int_equal(term_proc_wait_kind(SYS_nanosleep), TP_OTHER);
    assert_int_equal(term_proc_wait_kind(-1), TP_OTHER);
    assert_true(term_proc_wchan_pipe_read("pipe_read"));
    assert_true(term_proc_wchan_pipe_read("pipe_wait"));
    assert_false(term_proc_wchan_pipe_read("do_wait"));
    assert_false(term_proc_wchan_pipe_read("0"));
    assert_false(term_proc_wchan_pipe_read(""));
}

static void test_poll_and_select_sets(void **state)
{
    (void)state;
    struct pollfd p[4] = {{.fd = 5, .events = POLLOUT},
                          {.fd = 0, .events = POLLIN},
                          {.fd = -1, .events = POLLIN},
                          {.fd = 9, .events = POLLIN | POLLPRI}};
    int fds[8];
    assert_int_equal(term_proc_poll_fds(p, 4, fds, 8), 2);
    assert_int_equal(fds[0], 0);
    assert_int_equal(fds[1], 9);
    assert_int_equal(term_proc_poll_fds(p, 4, fds, 1), 1); /* at most max */
    assert_int_equal(term_proc_poll_fds(p, 0, fds, 8), 0);
    unsigned char set[3] = {0x01, 0x84, 0xff}; /* 0, 10, 15, 16.. */
    assert_int_equal(term_proc_select_fds(set, 17, fds, 8), 4);
    assert_int_equal(fds[0], 0);
    assert_int_equal(fds[1], 10);
    assert_int_equal(fds[2], 15);
    assert_int_equal(fds[3], 16);
    assert_int_equal(term_proc_select_fds(set, 10, fds, 8), 1); /* only bits below nfds */

    /* an epoll instance's fdinfo: EPOLLIN (0x1) targets only */
    const char *info = "pos:\t0\nflags:\t02000002\nmnt_id:\t17\nino:\t1038\n"
                       "tfd:        4 events:       19 data:                4  pos:0 ino:553b5a "
                       "sdev:f\n"
                       "tfd:       12 events:        4 data:                c  pos:0 ino:1 sdev:f\n"
                       "tfd:        0 events:       1 data:                0  pos:0 ino:2 sdev:f\n";
    assert_int_equal(term_proc_epoll_fds(info, fds, 8), 2);
    assert_int_equal(fds[0], 4);
    assert_int_equal(fds[1], 0);
    assert_int_equal(term_proc_epoll_fds("pos:\t0\n", fds, 8), 0);
    assert_int_equal(term_proc_epoll_fds("", fds, 8), 0);
    assert_int_equal(term_proc_epoll_fds("tfd: x events: 1\n", fds, 8), 0);
}

/* A child in a group of its own, blocked in read(2) on a pipe: seen; the
 * same child asleep (nanosleep) or another pipe: not. */
static void test_scan_sees_a_blocked_reader(void **state)
{
    (void)state;
    int p[2], q[2];
    assert_int_equal(pipe(p), 0);
    assert_int_equal(pipe(q), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        setpgid(0, 0);
        char c;
        dup2(p[0], 0);
        if (read(0, &c, 1) != 1) _exit(1);
        sleep(30); /* then asleep, not reading */
        _exit(0);
    }
    setpgid(pid, pid);
    struct stat st, other;
    assert_int_equal(fstat(p[1], &st), 0);
    assert_int_equal(fstat(q[1], &other), 0);
    bool seen = false;
    for (int i = 0; i < 200 && !seen; i++) {
        seen = term_proc_group_reads(pid, st.st_dev, st.st_ino);
        if (!seen) usleep(10000);
    }
    assert_true(seen);
    assert_false(term_proc_group_reads(pid, other.st_dev, other.st_ino));
    assert_false(term_proc_group_reads(getpgrp(), st.st_dev, st.st_ino)); /* not our group */
    assert_int_equal(write(p[1], "x", 1), 1);
    usleep(200000);
    assert_false(term_proc_group_reads(pid, st.st_dev, st.st_ino));
    kill(pid, SIGKILL);
    waitpid(pid, NULL, 0);
    close(p[0]), close(p[1]), close(q[0]), close(q[1]);
}

/* A child waiting in poll(2) for the pipe on fd 7, then in select(2), then in
 * epoll_wait(2) for it: seen (the pollfd array and the read set come from
 * /proc/<pid>/mem, the epoll set from its fdinfo); a child polling another
 * pipe: not. */
static void test_scan_sees_a_poller(void **state)
{
    (void)state;
    int p[2], q[2];
    assert_int_equal(pipe(p), 0);
    assert_int_equal(pipe(q), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        setpgid(0, 0);
        dup2(p[0], 7);
        struct pollfd w[2] = {{.fd = q[0], .events = POLLIN}, {.fd = 7, .events = POLLIN}};
        char c;
        poll(w, 2, -1);
        if (read(7, &c, 1) != 1) _exit(1);
        fd_set rs;
        FD_ZERO(&rs);
        FD_SET(7, &rs);
        select(8, &rs, NULL, NULL, NULL);
        if (read(7, &c, 1) != 1) _exit(1);
        int ep = epoll_create1(0);
        struct epoll_event ev = {.events = EPOLLIN, .data.fd = 7};
        epoll_ctl(ep, EPOLL_CTL_ADD, 7, &ev);
        struct epoll_event out;
        epoll_wait(ep, &out, 1, -1);
        if (read(7, &c, 1) != 1) _exit(1);
        struct pollfd o = {.fd = q[0], .events = POLLIN};
        poll(&o, 1, -1); /* only the other pipe */
        _exit(0);
    }
    setpgid(pid, pid);
    struct stat st;
    assert_int_equal(fstat(p[1], &st), 0);
    for (int round = 0; round < 3; round++) { /* poll, select, epoll */
        bool seen = false;
        for (int i = 0; i < 200 && !seen; i++) {
            seen = term_proc_group_reads(pid, st.st_dev, st.st_ino);
            if (!seen) usleep(10000);
        }
        assert_true(seen);
        assert_int_equal(write(p[1], "x", 1), 1);
        usleep(100000);
    }
    usleep(100000);
    assert_false(term_proc_group_reads(pid, st.st_dev, st.st_ino));
    kill(pid, SIGKILL);
    waitpid(pid, NULL, 0);
    close(p[0]), close(p[1]), close(q[0]), close(q[1]);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_stat_pgrp),
        cmocka_unit_test(test_syscall_lines),
        cmocka_unit_test(test_wait_kinds_and_wchan),
        cmocka_unit_test(test_poll_and_select_sets),
        cmocka_unit_test(test_scan_sees_a_poller),
        cmocka_unit_test(test_scan_sees_a_blocked_reader),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
