/* http_workers.c: see http_workers.h. */
#include "libcommon/http_workers.h"

#include <fcntl.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <unistd.h>

struct http_workers {
    unsigned n;
    atomic_uint_fast64_t steered;
    atomic_int busy[]; /* per worker: handler calls running now */
};

http_workers *http_workers_new(unsigned n)
{
    if (n < 1) n = 1;
    http_workers *w = ts_calloc(1, sizeof(*w) + n * sizeof(w->busy[0]));
    w->n = n;
    return w;
}

void http_workers_free(http_workers *w)
{
    free(w);
}

unsigned http_workers_of(const http_workers *w, int fd)
{
    return w->n > 1 && fd >= 0 ? (unsigned)fd % w->n : 0;
}

void http_workers_enter(http_workers *w, unsigned i)
{
    atomic_fetch_add(&w->busy[i], 1);
}

void http_workers_leave(http_workers *w, unsigned i)
{
    atomic_fetch_sub(&w->busy[i], 1);
}

int http_workers_steer(http_workers *w, int fd)
{
    unsigned n = w->n;
    if (n <= 1 || fd < 0 || atomic_load(&w->busy[(unsigned)fd % n]) == 0) return fd;
    for (unsigned k = 1; k < n; k++) {
        unsigned to = ((unsigned)fd + k) % n;
        if (atomic_load(&w->busy[to]) != 0) continue;
        /* F_DUPFD takes the lowest free number from base on: a few tries */
        for (int base = fd + (int)k, tries = 0; tries < 8; tries++, base += (int)n) {
            int nfd = fcntl(fd, F_DUPFD_CLOEXEC, base);
            if (nfd < 0) return fd;
            if ((unsigned)nfd % n == to) {
                close(fd);
                atomic_fetch_add(&w->steered, 1);
                return nfd;
            }
            close(nfd);
        }
    }
    return fd;
}

uint64_t http_workers_steered(const http_workers *w)
{
    return atomic_load(&((http_workers *)w)->steered);
}
