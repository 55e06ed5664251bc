/* http_workers.h: which of libmicrohttpd's worker threads are in a handler,
 * so that a new connection goes to one that is not.
 *
 * libmicrohttpd files a connection added from outside (MHD_add_connection,
 * as the front hands them over) under worker (fd % pool size), busy or not:
 * a handler that waits (a create waiting for RUNNING, a proxied call) would
 * hold every new connection filed there until it returns. The server counts
 * each worker's running handler calls (enter/leave); before a handoff,
 * http_workers_steer moves a connection whose worker is busy to a descriptor
 * whose number files it under an idle one (when there is one). Connections
 * already on a busy worker still wait for it. */
#ifndef TESSERA_HTTP_WORKERS_H
#define TESSERA_HTTP_WORKERS_H

#include "libcommon/common.h"

typedef struct http_workers http_workers;

/* n: the pool's size (1: no pool, nothing to steer). */
http_workers *http_workers_new(unsigned n);
void http_workers_free(http_workers *w);

/* The worker that serves the connection on socket fd. */
unsigned http_workers_of(const http_workers *w, int fd);
/* A handler call starts / ends on worker i. */
void http_workers_enter(http_workers *w, unsigned i);
void http_workers_leave(http_workers *w, unsigned i);

/* fd, or a descriptor of the same socket (fd then closed) that files the
 * connection under an idle worker. */
int http_workers_steer(http_workers *w, int fd);
/* Connections moved so far (tessera_http_connections_steered_total). */
uint64_t http_workers_steered(const http_workers *w);

#endif
