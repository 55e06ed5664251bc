/* term_proc.h: whether a process group waits for input on a pipe, read from
 * /proc (tessera-term's /exec sends `w` then). A process waits when one of
 * its threads is blocked in read(2) or readv(2) on a descriptor that is the
 * pipe (/proc/<pid>/task/<tid>/syscall: the syscall number and its first
 * argument; /proc/<pid>/fd/<n>: the pipe), or, where the syscall file cannot
 * be read, when the thread sleeps in the kernel's pipe read (wchan) and its
 * fd 0 is the pipe. The parsers are pure; term_proc_group_reads scans /proc.
 * Plain C and libc (tessera-term is static). */
#ifndef TERM_PROC_H
#define TERM_PROC_H

#include "libcommon/common.h" /* TS_MUST_CHECK only: nothing of libcommon is linked */

#include <stdbool.h>
#include <sys/types.h>

/* The process group of a /proc/<pid>/stat line ("pid (comm) state ppid
 * pgrp ..."; comm may hold spaces and parentheses). */
bool term_proc_stat_pgrp(const char *stat, long *pgrp) TS_MUST_CHECK;

/* A /proc/<pid>/syscall line "nr arg0 arg1 ... sp pc": the syscall number and
 * its first argument. False for "running", a task not in a syscall ("-1 sp
 * pc") and anything unparsable. */
bool term_proc_syscall(const char *line, long *nr, unsigned long long *arg0) TS_MUST_CHECK;

/* Whether a syscall number is a read of a descriptor (read, readv). */
bool term_proc_is_read(long nr) TS_MUST_CHECK;

/* Whether a wchan (/proc/<pid>/wchan) is the kernel waiting in a pipe read. */
bool term_proc_wchan_pipe_read(const char *wchan) TS_MUST_CHECK;

/* Whether a process of group pgid is blocked reading the pipe whose inode is
 * (dev, ino). */
bool term_proc_group_reads(pid_t pgid, dev_t dev, ino_t ino) TS_MUST_CHECK;

#endif
