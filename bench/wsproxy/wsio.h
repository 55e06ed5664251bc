/* wsio.h: the blocking socket I/O that the bench-wsproxy programs (ws_echo,
 * ws_rtt) share. Plain C over libcommon/http1.c, like tessera-term. */
#ifndef TESSERA_BENCH_WSIO_H
#define TESSERA_BENCH_WSIO_H

#include "libcommon/common.h" /* TS_MUST_CHECK */

#include <stdbool.h>
#include <stddef.h>

/* Exactly n bytes; false when the peer closed or a call failed. */
bool wsio_read_full(int fd, void *p, size_t n) TS_MUST_CHECK;
bool wsio_write_full(int fd, const void *p, size_t n) TS_MUST_CHECK;
/* Read into buf (cap bytes) until it holds a complete HTTP head: the head's
 * length; 0 when the peer closed first or the head does not fit. */
size_t wsio_read_head(int fd, char *buf, size_t cap);

#endif
