/* logs.h: a kernel's console output, kept under a size cap.
 *
 * The writer (run by the kernel's supervisor, see runtime.c) appends to
 * <dir>/output.log; once that holds cap/2 bytes it becomes output.log.1 (the
 * previous .1 is dropped) and a new output.log starts. So at most cap bytes are
 * on disk and at least the last cap/2 bytes are always there. The writer uses
 * no heap: it runs in a process forked from the threaded agent. */
#ifndef AGENT_LOGS_H
#define AGENT_LOGS_H

#include "container.h"

typedef struct log_writer {
    int fd;
    int64_t size;    /* bytes in the current segment */
    int64_t seg_cap; /* cap / 2 */
    char path[512];  /* <dir>/output.log */
    char old[520];   /* <dir>/output.log.1 */
} log_writer;

bool logw_open(log_writer *w, const char *dir, int64_t cap_bytes) TS_MUST_CHECK;
void logw_write(log_writer *w, const char *p, size_t n);
/* All of p to fd (retried after EINTR and short writes); stops at an error. */
void logs_write_all(int fd, const char *p, size_t n);
void logw_close(log_writer *w);

/* The last max bytes of the log in dir (both segments), heap, NUL-terminated. */
char *logs_tail(const char *dir, size_t max, size_t *len, ts_err *err);

#endif
