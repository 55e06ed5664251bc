/* wsio.c: blocking socket I/O for the bench-wsproxy programs (wsio.h). */
#include "bench/wsproxy/wsio.h"

#include "libcommon/http1.h"

#include <stdint.h>
#include <unistd.h>

bool wsio_read_full(int fd, void *p, size_t n)
{
    uint8_t *q = p;
    while (n) {
        ssize_t k = read(fd, q, n);
        if (k <= 0) return false;
        q += k;
        n -= (size_t)k;
    }
    return true;
}

bool wsio_write_full(int fd, const void *p, size_t n)
{
    const uint8_t *q = p;
    while (n) {
        ssize_t k = write(fd, q, n);
        if (k <= 0) return false;
        q += k;
        n -= (size_t)k;
    }
    return true;
}

size_t wsio_read_head(int fd, char *buf, size_t cap)
{
    size_t have = 0, end = 0;
    while (!end && have < cap) {
        ssize_t n = read(fd, buf + have, cap - have);
        if (n <= 0) return 0;
        have += (size_t)n;
        end = h1_head_end(buf, have, 0);
    }
    return end;
}
