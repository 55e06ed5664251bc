/* http_events.c: event streams (server-sent events, http.h) on
 * libmicrohttpd's suspend/resume. The stream is a queue of bytes behind a
 * reader (http_reply_reader's body source): the reader hands out what is
 * queued, and when nothing is, suspends its connection and answers
 * HTTP_READ_SUSPENDED (libmicrohttpd calls it again once resumed); a send
 * queues and resumes. The connection is reached only while the response
 * holds the stream (conn is cleared, under the stream's lock, when the
 * response lets go), so a resume never reaches a freed connection.
 *
 * Locks: g_mu (the list of open streams) before a stream's mu; a stream's mu
 * is held across MHD_suspend_connection / MHD_resume_connection, which take
 * only libmicrohttpd's own locks and call nothing of ours. */
#include "libcommon/http_request.h"
#include "libcommon/buf.h"
#include "libcommon/log.h"

#include <microhttpd.h>
#include <poll.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

struct http_event_stream {
    pthread_mutex_t mu;
    int refs;                    /* the response's and the owner's */
    struct MHD_Connection *conn; /* NULL: a local request, or the response let go */
    ts_buf q;                    /* queued bytes; q.data[off..] not yet handed out */
    size_t off;
    bool suspended;                 /* the reader suspended conn and nobody resumed it */
    bool ended;                     /* end after the queue (http_events_end, overflow) */
    bool gone;                      /* the client hung up: cut without a proper end */
    bool finished;                  /* the response let go */
    http_event_stream *prev, *next; /* g_head: open streams */
};

static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
static http_event_stream *g_head;
static int g_open;

static void _unref(http_event_stream *es)
{
    pthread_mutex_lock(&es->mu);
    bool last = --es->refs == 0;
    pthread_mutex_unlock(&es->mu);
    if (!last) return;
    ts_buf_free(&es->q);
    pthread_mutex_destroy(&es->mu);
    free(es);
}

/* Under es->mu: let the reader run again. */
static void _wake(http_event_stream *es)
{
    if (es->suspended && es->conn) {
        es->suspended = false;
        MHD_resume_connection(es->conn);
    }
}

static long _read(void *cls, uint64_t pos, char *buf, size_t max)
{
    (void)pos;
    http_event_stream *es = cls;
    pthread_mutex_lock(&es->mu);
    long n;
    if (es->gone) {
        n = -1;
    } else if (es->off < es->q.len) {
        size_t k = es->q.len - es->off;
        if (k > max) k = max;
        memcpy(buf, es->q.data + es->off, k);
        es->off += k;
        if (es->off == es->q.len) {
            es->q.len = 0;
            es->off = 0;
        }
        n = (long)k;
    } else if (es->ended || !es->conn) {
        n = 0; /* the end (a local request ends with what was queued) */
    } else {
        es->suspended = true;
        MHD_suspend_connection(es->conn);
        n = HTTP_READ_SUSPENDED;
    }
    pthread_mutex_unlock(&es->mu);
    return n;
}

/* The response lets go (sent, failed or never sent). */
static void _release_response(void *cls)
{
    http_event_stream *es = cls;
    pthread_mutex_lock(&g_mu);
    if (es->prev)
        es->prev->next = es->next;
    else
        g_head = es->next;
    if (es->next) es->next->prev = es->prev;
    es->prev = es->next = NULL;
    g_open--;
    pthread_mutex_unlock(&g_mu);
    pthread_mutex_lock(&es->mu);
    es->conn = NULL;
    es->suspended = false;
    es->finished = true;
    pthread_mutex_unlock(&es->mu);
    _unref(es);
}

http_event_stream *http_reply_events(http_req *req, http_resp *resp)
{
    http_event_stream *es = ts_calloc(1, sizeof(*es));
    pthread_mutex_init(&es->mu, NULL);
    es->refs = 2;
    struct http_req_impl *impl = req->impl;
    es->conn = impl ? impl->conn : NULL;
    pthread_mutex_lock(&g_mu);
    es->next = g_head;
    if (g_head) g_head->prev = es;
    g_head = es;
    g_open++;
    pthread_mutex_unlock(&g_mu);
    http_reply_reader(req, resp, 200, "text/event-stream", HTTP_SIZE_UNKNOWN, _read,
                      _release_response, es);
    http_set_header(resp, "Cache-Control", "no-cache");
    http_set_header(resp, "X-Accel-Buffering", "no");
    return es;
}

/* Queue len bytes of text and wake the reader. */
static bool _queue(http_event_stream *es, const char *const *parts, size_t n)
{
    pthread_mutex_lock(&es->mu);
    bool ok = !es->finished && !es->ended && !es->gone;
    if (ok) {
        for (size_t i = 0; i < n; i++)
            ts_buf_append(&es->q, parts[i], strlen(parts[i]));
        if (es->q.len - es->off > HTTP_EVENTS_MAX_QUEUED) {
            /* the client does not read: drop it rather than hold its backlog */
            TLOG_INFO("event stream dropped: client does not read", "queued=%zu",
                      es->q.len - es->off);
            es->gone = true;
            ok = false;
        }
        _wake(es);
    }
    pthread_mutex_unlock(&es->mu);
    return ok;
}

bool http_events_send(http_event_stream *es, const char *event, const char *data)
{
    const char *parts[] = {event ? "event: " : "", event ? event : "",
                           event ? "\n" : "",      "data: ",
                           data ? data : "",       "\n\n"};
    return _queue(es, parts, TS_ARRAY_LEN(parts));
}

bool http_events_comment(http_event_stream *es, const char *text)
{
    const char *parts[] = {": ", text ? text : "", "\n\n"};
    return _queue(es, parts, TS_ARRAY_LEN(parts));
}

void http_events_end(http_event_stream *es)
{
    pthread_mutex_lock(&es->mu);
    es->ended = true;
    _wake(es);
    pthread_mutex_unlock(&es->mu);
}

bool http_events_alive(http_event_stream *es)
{
    pthread_mutex_lock(&es->mu);
    if (es->suspended && es->conn && !es->gone) {
        const union MHD_ConnectionInfo *ci =
            MHD_get_connection_info(es->conn, MHD_CONNECTION_INFO_CONNECTION_FD);
        struct pollfd p = {.fd = ci ? ci->connect_fd : -1, .events = POLLRDHUP};
        if (p.fd >= 0 && poll(&p, 1, 0) == 1 && (p.revents & (POLLRDHUP | POLLHUP | POLLERR))) {
            es->gone = true; /* resumed below: the reader cuts the connection */
            _wake(es);
        }
    }
    bool alive = !es->finished && !es->ended && !es->gone;
    pthread_mutex_unlock(&es->mu);
    return alive;
}

void http_events_release(http_event_stream *es)
{
    if (es) _unref(es);
}

int http_events_open_count(void)
{
    pthread_mutex_lock(&g_mu);
    int n = g_open;
    pthread_mutex_unlock(&g_mu);
    return n;
}

void http_events_end_all(void)
{
    pthread_mutex_lock(&g_mu);
    for (http_event_stream *es = g_head; es; es = es->next)
        http_events_end(es);
    pthread_mutex_unlock(&g_mu);
}
