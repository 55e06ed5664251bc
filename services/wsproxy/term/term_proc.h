/* term_proc.h: whether a process group waits for input on a pipe, read from
 * /proc (tessera-term's /exec sends `w` then). A process waits when one of
 * its threads is blocked (/proc/<pid>/task/<tid>/syscall: the syscall and its
 * arguments) in read(2) or readv(2) of a descriptor that is the pipe
 * (/proc/<pid>/fd/<n>), or in poll(2)/ppoll(2) or select(2)/pselect6(2)
 * waiting for the pipe to be readable (the pollfd array or the read set, read
 * from /proc/<pid>/mem: busybox's `read`, for one, polls before it reads), or
 * in epoll_wait(2) on an epoll instance that has the pipe (its
 * /proc/<pid>/fdinfo: node, asyncio);
 * where the syscall file cannot be read, when the thread sleeps in the
 * kernel's pipe read (wchan) and its fd 0 is the pipe. The parsers are pure;
 * term_proc_group_reads scans /proc. Plain C and libc (tessera-term is
 * static). */
#ifndef TERM_PROC_H
#define TERM_PROC_H

#include "libcommon/common.h" /* TS_MUST_CHECK only: nothing of libcommon is linked */

#include <stdbool.h>
#include <sys/types.h>

/* The process group of a /proc/<pid>/stat line ("pid (comm) state ppid
 * pgrp ..."; comm may hold spaces and parentheses). */
bool term_proc_stat_pgrp(const char *stat, long *pgrp) TS_MUST_CHECK;

/* A /proc/<pid>/syscall line "nr arg0 ... arg5 sp pc": the syscall number and
 * its six arguments. False for "running", a task not in a syscall ("-1 sp
 * pc") and anything unparsable. */
bool term_proc_syscall(const char *line, long *nr, unsigned long long args[6]) TS_MUST_CHECK;

typedef enum term_proc_wait {
    TP_OTHER,  /* not a wait for input */
    TP_READ,   /* read, readv: args[0] is the descriptor */
    TP_POLL,   /* poll, ppoll: args[0] the pollfd array, args[1] its length */
    TP_SELECT, /* select, pselect6: args[0] nfds, args[1] the read set */
    TP_EPOLL,  /* epoll_wait, epoll_pwait(2): args[0] the epoll descriptor */
} term_proc_wait;

/* What kind of wait for input a syscall number is. */
term_proc_wait term_proc_wait_kind(long nr);

/* The descriptors a pollfd array (n entries, as read from the process) waits
 * to read (POLLIN): up to max of them into fds; returns how many. */
int term_proc_poll_fds(const void *pollfds, size_t n, int *fds, int max);

/* The descriptors an epoll instance waits to read (EPOLLIN), from its
 * /proc/<pid>/fdinfo/<epfd> text ("tfd: <fd> events: <hex mask> ..."
 * lines): up to max of them into fds; returns how many. */
int term_proc_epoll_fds(const char *fdinfo, int *fds, int max);

/* The descriptors of a select read set of nfds bits (little-endian bit
 * order, (nfds + 7) / 8 bytes): up to max of them into fds; returns how many. */
int term_proc_select_fds(const unsigned char *set, int nfds, int *fds, int max);

/* Whether a wchan (/proc/<pid>/wchan) is the kernel waiting in a pipe read. */
bool term_proc_wchan_pipe_read(const char *wchan) TS_MUST_CHECK;

/* Whether a process of group pgid is blocked reading the pipe whose inode is
 * (dev, ino). */
bool term_proc_group_reads(pid_t pgid, dev_t dev, ino_t ino) TS_MUST_CHECK;

#endif
