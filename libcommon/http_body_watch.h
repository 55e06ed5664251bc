/* http_body_watch.h: a deadline for request bodies that stall. libmicrohttpd
 * calls the server only when bytes arrive, so a client that sends part of a
 * body and then nothing would otherwise meet only the connection's idle
 * timeout, and be closed without an answer. The server adds each request
 * whose body it is receiving (http_server.c), with a deadline: a buffered
 * body must be complete within http.body_timeout of its head; a streamed
 * body (uploads) must not pause longer than that between two chunks
 * (http_body_watch_touch). One thread sleeps until the earliest deadline and
 * hands each expired request to the expire callback, which answers it (408)
 * on the connection itself: libmicrohttpd writes nothing while it waits for
 * a body.
 *
 * A request is answered once: by the watch (expired) or by the server, which
 * claims it when the body is complete (http_body_watch_claim) and answers
 * only when the claim succeeds. Every call takes the watch's lock; expire
 * runs under it, so an entry is never removed while it is being answered. */
#ifndef TESSERA_HTTP_BODY_WATCH_H
#define TESSERA_HTTP_BODY_WATCH_H

#include "libcommon/common.h"

typedef enum http_body_state {
    HTTP_BODY_UNWATCHED, /* no body, or not added yet */
    HTTP_BODY_WATCHED,   /* receiving, under a deadline */
    HTTP_BODY_CLAIMED,   /* complete: the server answers */
    HTTP_BODY_EXPIRED,   /* stalled: the watch answered */
} http_body_state;

/* One watched request; lives in the server's per-request state. */
typedef struct http_body_entry {
    struct http_body_entry *prev, *next;
    http_body_state state;
    int64_t deadline_us; /* monotonic */
    int fd;              /* the connection's socket */
    void *owner;         /* the server's request */
} http_body_entry;

typedef struct http_body_watch http_body_watch;

/* expire(e, ctx): e's deadline passed (e->state is HTTP_BODY_EXPIRED). */
http_body_watch *http_body_watch_start(int64_t timeout_us,
                                       void (*expire)(http_body_entry *e, void *ctx), void *ctx,
                                       ts_err *err);
/* End the thread: nothing expires any more, the other calls still work (a
 * server stops the watch first, then its connections end). */
void http_body_watch_stop(http_body_watch *w);
/* After stop, once no request is left. */
void http_body_watch_free(http_body_watch *w);

/* Watch e (zeroed or removed before) for a body arriving on fd from now. */
void http_body_watch_add(http_body_watch *w, http_body_entry *e, int fd, void *owner);
/* A streamed body made progress: its deadline moves to now + the timeout. */
void http_body_watch_touch(http_body_watch *w, http_body_entry *e);
/* The body is complete: true when the server is to answer; false when the
 * watch already did (the request is then to be dropped). An entry never
 * added is the server's. */
bool http_body_watch_claim(http_body_watch *w, http_body_entry *e) TS_MUST_CHECK;
/* The request ends: e leaves the watch (any state). */
void http_body_watch_remove(http_body_watch *w, http_body_entry *e);
/* e's state, read under the lock. */
http_body_state http_body_watch_state(http_body_watch *w, const http_body_entry *e);

#endif
