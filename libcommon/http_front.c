/* http_front.c: see http_front.h. One thread, one epoll set: the listening
 * socket, an eventfd (wake-ups from other threads), the connections waiting
 * for their first head (edge-triggered: the bytes are only peeked, so a level
 * trigger would fire for ever) and the refused ones lingering before close.
 * Both connection lists are in deadline order (one timeout each), so expiry
 * looks at their heads only. */
#include "libcommon/http_front.h"
#include "libcommon/http.h"
#include "libcommon/http1.h"
#include "libcommon/http_tls.h"
#include "libcommon/log.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#define LINGER_MS 2000
#define MAX_WAITING 10000 /* connections waiting for a head; beyond: the oldest goes */
#define ACCEPT_BATCH 64

/* ---- judging a head ---------------------------------------------------------- */

static http_front_result bad(http_front_verdict *v, int status, const char *reason)
{
    v->status = status;
    v->reason = reason;
    return HTTP_FRONT_BAD;
}

http_front_result http_front_check(const char *buf, size_t len, const http_front_limits *lim,
                                   http_front_verdict *v)
{
    memset(v, 0, sizeof(*v));
    if (len == 0) return HTTP_FRONT_MORE;
    const char *lf = memchr(buf, '\n', len);
    if (!lf) {
        if (h1_request_start_bad(buf, len)) return bad(v, 400, "malformed request line");
        if (len > lim->max_line + 1) return bad(v, 414, "request line too long");
        return HTTP_FRONT_MORE;
    }
    size_t line_end = (size_t)(lf - buf); /* the LF */
    if (line_end == 0 || buf[line_end - 1] != '\r')
        return bad(v, 400, "request line not ended by CRLF");
    if (h1_request_start_bad(buf, line_end + 1)) return bad(v, 400, "malformed request line");
    if (line_end - 1 > lim->max_line) return bad(v, 414, "request line too long");
    size_t end = h1_head_end(buf, len, 0);
    size_t scan = end ? end : len;
    for (const char *p = lf + 1; (p = memchr(p, '\n', scan - (size_t)(p - buf))) != NULL; p++)
        if (p[-1] != '\r') return bad(v, 400, "bare LF in the request head");
    if (!end) {
        if (len >= lim->max_head) return bad(v, 431, "request head too large");
        return HTTP_FRONT_MORE;
    }
    if (end > lim->max_head) return bad(v, 431, "request head too large");
    h1_msg m;
    if (!h1_parse_request(buf, end, &m)) return bad(v, m.err_status, m.err_reason);
    v->head_len = end;
    return HTTP_FRONT_OK;
}

/* ---- answers ----------------------------------------------------------------- */

const char *http_front_kind(int status)
{
    switch (status) {
    case 400:
        return "bad-request";
    case 401:
        return "auth-failed";
    case 403:
        return "forbidden";
    case 404:
        return "not-found";
    case 408:
        return "request-timeout";
    case 409:
        return "conflict";
    case 413:
        return "request-too-large";
    case 414:
        return "uri-too-long";
    case 431:
        return "header-fields-too-large";
    case 501:
        return "not-implemented";
    case 502:
        return "bad-gateway";
    case 503:
        return "service-unavailable";
    case 504:
        return "gateway-timeout";
    case 505:
        return "http-version-not-supported";
    default:
        return status >= 500 ? "internal-server-error" : "bad-request";
    }
}

char *http_front_problem_response(int status, const char *msg, const char *request_id,
                                  const char *server, size_t *len)
{
    http_resp *resp = http_resp_new();
    http_problem(resp, status, http_front_kind(status), NULL, "%s", msg ? msg : "");
    size_t blen = 0;
    const char *body = http_resp_body(resp, &blen);
    char *out =
        ts_asprintf("HTTP/1.1 %d %s\r\nContent-Type: application/problem+json\r\n"
                    "Content-Length: %zu\r\n%s%s%s%s%s%sConnection: close\r\n\r\n%s",
                    status, http_status_text(status), blen, request_id ? "X-Request-ID: " : "",
                    request_id ? request_id : "", request_id ? "\r\n" : "",
                    server ? "Server: " : "", server ? server : "", server ? "\r\n" : "", body);
    http_resp_free(resp);
    *len = strlen(out);
    return out;
}

bool http_front_write_all(int fd, const char *data, size_t len, int timeout_ms)
{
    int64_t deadline = ts_now_mono_ms() + timeout_ms;
    size_t off = 0;
    while (off < len) {
        ssize_t n = send(fd, data + off, len - off, MSG_NOSIGNAL);
        if (n > 0) {
            off += (size_t)n;
            continue;
        }
        if (n < 0 && errno == EINTR) continue;
        if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK) return false;
        int64_t left = deadline - ts_now_mono_ms();
        if (left <= 0) return false;
        struct pollfd p = {.fd = fd, .events = POLLOUT};
        if (poll(&p, 1, (int)left) < 0 && errno != EINTR) return false;
    }
    return true;
}

/* ---- the thread ---------------------------------------------------------------- */

typedef struct fconn {
    int fd;
    bool lingering;
    int64_t deadline_ms;
    struct sockaddr_storage addr;
    socklen_t addr_len;
    struct fconn *prev, *next;
} fconn;

typedef struct flist {
    fconn *head, *tail;
    size_t n;
} flist;

struct http_front {
    http_front_opts o;
    char server[80];
    int ep, wake;
    pthread_t thread;
    bool listening, accept_paused;
    int64_t accept_resume_ms;
    /* the listening sockets: o.listen_fd first, then those added later
     * (http_front_add_listener: a shared address joined once ready) */
    int lfd[HTTP_FRONT_MAX_LISTENERS];
    atomic_int n_lfd;  /* entries published (set under mu) */
    int n_lfd_watched; /* entries in the epoll set (front thread only) */
    atomic_bool stopping, quiescing;
    flist waiting, lingering;
    char *peek;
    pthread_mutex_t mu; /* handed */
    int *handed;
    size_t n_handed, cap_handed;
};

static char k_wake_tag;

static void list_push(flist *l, fconn *c)
{
    c->next = NULL;
    c->prev = l->tail;
    if (l->tail)
        l->tail->next = c;
    else
        l->head = c;
    l->tail = c;
    l->n++;
}

static void list_unlink(flist *l, fconn *c)
{
    if (c->prev)
        c->prev->next = c->next;
    else
        l->head = c->next;
    if (c->next)
        c->next->prev = c->prev;
    else
        l->tail = c->prev;
    c->prev = c->next = NULL;
    l->n--;
}

static void conn_close(http_front *f, fconn *c)
{
    list_unlink(c->lingering ? &f->lingering : &f->waiting, c);
    /* Explicitly: close() alone leaves the epoll set only with the last
     * descriptor of the socket, and libmicrohttpd may still hold one of a
     * socket handed back to linger (http_front_linger gets a dup). */
    epoll_ctl(f->ep, EPOLL_CTL_DEL, c->fd, NULL);
    close(c->fd);
    free(c);
}

/* Start lingering on fd (not yet in the epoll set when c is new). */
static void linger_start(http_front *f, fconn *c, bool in_epoll)
{
    shutdown(c->fd, SHUT_WR);
    c->lingering = true;
    c->deadline_ms = ts_now_mono_ms() + LINGER_MS;
    list_push(&f->lingering, c);
    struct epoll_event ev = {.events = EPOLLIN | EPOLLRDHUP | EPOLLET, .data.ptr = c};
    if (!in_epoll && epoll_ctl(f->ep, EPOLL_CTL_ADD, c->fd, &ev) != 0) conn_close(f, c);
}

/* Read and drop; close at the client's end. */
static void linger_drain(http_front *f, fconn *c)
{
    char buf[16384];
    for (;;) {
        ssize_t n = recv(c->fd, buf, sizeof(buf), 0);
        if (n > 0) continue;
        if (n < 0 && errno == EINTR) continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
        conn_close(f, c);
        return;
    }
}

static void refuse(http_front *f, fconn *c, int status, const char *reason)
{
    char rid[TS_UUID_STRLEN];
    ts_uuid4(rid);
    TLOG_INFO("http request refused before routing", "status=%d reason=\"%s\" request_id=%s",
              status, reason, rid);
    size_t len;
    char *msg = http_front_problem_response(status, reason, rid, f->server, &len);
    /* A fresh connection's send buffer is empty: this does not wait. */
    bool sent = http_front_write_all(c->fd, msg, len, 100);
    free(msg);
    if (f->o.refused) f->o.refused(status, f->o.ctx);
    list_unlink(&f->waiting, c);
    if (!sent) {
        epoll_ctl(f->ep, EPOLL_CTL_DEL, c->fd, NULL);
        close(c->fd);
        free(c);
        return;
    }
    linger_start(f, c, true);
}

/* The connection goes to libmicrohttpd. */
static void hand_off(http_front *f, fconn *c)
{
    epoll_ctl(f->ep, EPOLL_CTL_DEL, c->fd, NULL);
    list_unlink(&f->waiting, c);
    f->o.handoff(c->fd, (const struct sockaddr *)&c->addr, c->addr_len, f->o.ctx);
    free(c);
}

static void judge(http_front *f, fconn *c, bool peer_closed)
{
    ssize_t n;
    do {
        n = recv(c->fd, f->peek, f->o.limits.max_head, MSG_PEEK);
    } while (n < 0 && errno == EINTR);
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
        if (peer_closed) conn_close(f, c);
        return;
    }
    if (n <= 0) { /* gone before a byte, or a socket error */
        conn_close(f, c);
        return;
    }
    if (f->o.tls) {
        if (!http_tls_hello_byte((unsigned char)f->peek[0])) {
            refuse(f, c, 400, "this port speaks TLS only: use https://");
            return;
        }
        hand_off(f, c);
        return;
    }
    http_front_verdict v;
    switch (http_front_check(f->peek, (size_t)n, &f->o.limits, &v)) {
    case HTTP_FRONT_MORE:
        if (peer_closed) refuse(f, c, 400, "request head incomplete");
        return;
    case HTTP_FRONT_BAD:
        refuse(f, c, v.status, v.reason);
        return;
    case HTTP_FRONT_OK:
        break;
    }
    hand_off(f, c);
}

/* The head did not come in time: 408 when something came, else just close. */
static void expire_waiting(http_front *f, fconn *c)
{
    char b;
    ssize_t n = recv(c->fd, &b, 1, MSG_PEEK | MSG_DONTWAIT);
    if (n > 0)
        refuse(f, c, 408, "request head not received in time (http.header_timeout)");
    else
        conn_close(f, c);
}

/* A listener's epoll tag: its index in f->lfd, as a pointer into it. */
static bool is_listener(http_front *f, void *p)
{
    return p >= (void *)&f->lfd[0] && p < (void *)&f->lfd[HTTP_FRONT_MAX_LISTENERS];
}

static void set_listening(http_front *f, bool on)
{
    if (on == f->listening) return;
    int n = f->n_lfd_watched;
    for (int i = 0; i < n; i++) {
        if (on) {
            struct epoll_event ev = {.events = EPOLLIN, .data.ptr = &f->lfd[i]};
            if (epoll_ctl(f->ep, EPOLL_CTL_ADD, f->lfd[i], &ev) != 0 && i == 0) return;
        } else {
            epoll_ctl(f->ep, EPOLL_CTL_DEL, f->lfd[i], NULL);
        }
    }
    f->listening = on;
}

/* Listeners added since the last look (front thread). */
static void watch_new_listeners(http_front *f)
{
    int n = atomic_load(&f->n_lfd);
    while (f->n_lfd_watched < n) {
        int i = f->n_lfd_watched++;
        struct epoll_event ev = {.events = EPOLLIN, .data.ptr = &f->lfd[i]};
        if (f->listening && epoll_ctl(f->ep, EPOLL_CTL_ADD, f->lfd[i], &ev) != 0)
            TLOG_WARN("http front: a listener not watched", "error=\"%s\"", strerror(errno));
    }
}

static void accept_some(http_front *f, int lfd)
{
    for (int i = 0; i < ACCEPT_BATCH; i++) {
        fconn *c = ts_calloc(1, sizeof(*c));
        c->addr_len = sizeof(c->addr);
        c->fd =
            accept4(lfd, (struct sockaddr *)&c->addr, &c->addr_len, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (c->fd < 0) {
            int e = errno;
            free(c);
            if (e == EINTR || e == ECONNABORTED) continue;
            if (e == EMFILE || e == ENFILE || e == ENOBUFS || e == ENOMEM) {
                TLOG_WARN("http accept paused", "error=\"%s\"", strerror(e));
                set_listening(f, false);
                f->accept_paused = true;
                f->accept_resume_ms = ts_now_mono_ms() + 100;
            }
            return;
        }
        if (f->waiting.n >= MAX_WAITING) {
            TLOG_WARN("http: too many connections without a request head; closing the oldest",
                      "waiting=%zu", f->waiting.n);
            conn_close(f, f->waiting.head);
        }
        c->deadline_ms = ts_now_mono_ms() + f->o.header_timeout_ms;
        list_push(&f->waiting, c);
        struct epoll_event ev = {.events = EPOLLIN | EPOLLRDHUP | EPOLLET, .data.ptr = c};
        if (epoll_ctl(f->ep, EPOLL_CTL_ADD, c->fd, &ev) != 0) {
            conn_close(f, c);
            continue;
        }
        judge(f, c, false); /* the head is often there already */
    }
}

static void take_handed(http_front *f)
{
    uint64_t v;
    while (read(f->wake, &v, sizeof(v)) > 0) {
    }
    pthread_mutex_lock(&f->mu);
    int *fds = f->handed;
    size_t n = f->n_handed;
    f->handed = NULL;
    f->n_handed = f->cap_handed = 0;
    pthread_mutex_unlock(&f->mu);
    for (size_t i = 0; i < n; i++) {
        fconn *c = ts_calloc(1, sizeof(*c));
        c->fd = fds[i];
        linger_start(f, c, false);
    }
    free(fds);
    if (!atomic_load(&f->quiescing)) watch_new_listeners(f);
    if (atomic_load(&f->quiescing)) {
        set_listening(f, false);
        f->accept_paused = false;
    }
}

static int next_timeout(http_front *f, int64_t now)
{
    int64_t t = INT64_MAX;
    if (f->waiting.head) t = f->waiting.head->deadline_ms;
    if (f->lingering.head && f->lingering.head->deadline_ms < t) t = f->lingering.head->deadline_ms;
    if (f->accept_paused && f->accept_resume_ms < t) t = f->accept_resume_ms;
    if (t == INT64_MAX) return -1;
    return t <= now ? 0 : (int)(t - now > 60000 ? 60000 : t - now);
}

static void *front_main(void *arg)
{
    http_front *f = arg;
    struct epoll_event evs[64];
    while (!atomic_load(&f->stopping)) {
        int64_t now = ts_now_mono_ms();
        while (f->waiting.head && f->waiting.head->deadline_ms <= now)
            expire_waiting(f, f->waiting.head);
        while (f->lingering.head && f->lingering.head->deadline_ms <= now)
            conn_close(f, f->lingering.head);
        if (f->accept_paused && now >= f->accept_resume_ms && !atomic_load(&f->quiescing)) {
            f->accept_paused = false;
            set_listening(f, true);
        }
        int n = epoll_wait(f->ep, evs, (int)TS_ARRAY_LEN(evs), next_timeout(f, now));
        for (int i = 0; i < n; i++) {
            void *p = evs[i].data.ptr;
            if (is_listener(f, p)) {
                if (f->listening) accept_some(f, *(int *)p);
            } else if (p == &k_wake_tag) {
                take_handed(f);
            } else {
                fconn *c = p;
                bool closed = evs[i].events & (EPOLLRDHUP | EPOLLHUP | EPOLLERR);
                if (c->lingering)
                    linger_drain(f, c);
                else
                    judge(f, c, closed);
            }
        }
    }
    while (f->waiting.head)
        conn_close(f, f->waiting.head);
    while (f->lingering.head)
        conn_close(f, f->lingering.head);
    return NULL;
}

/* ---- start and stop --------------------------------------------------------------- */

http_front *http_front_start(const http_front_opts *opts, ts_err *err)
{
    http_front *f = ts_calloc(1, sizeof(*f));
    f->o = *opts;
    ts_strlcpy(f->server, opts->server ? opts->server : "tessera", sizeof(f->server));
    f->o.server = NULL;
    if (f->o.limits.max_head < 64) f->o.limits.max_head = 64;
    if (f->o.header_timeout_ms <= 0) f->o.header_timeout_ms = 10000;
    f->peek = ts_malloc(f->o.limits.max_head);
    pthread_mutex_init(&f->mu, NULL);
    f->ep = epoll_create1(EPOLL_CLOEXEC);
    f->wake = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    f->lfd[0] = opts->listen_fd;
    atomic_store(&f->n_lfd, 1);
    f->n_lfd_watched = 1;
    struct epoll_event ev = {.events = EPOLLIN, .data.ptr = &k_wake_tag};
    if (f->ep < 0 || f->wake < 0 || epoll_ctl(f->ep, EPOLL_CTL_ADD, f->wake, &ev) != 0) {
        ts_err_set(err, "http front: epoll: %s", strerror(errno));
        goto fail;
    }
    set_listening(f, true);
    if (!f->listening) {
        ts_err_set(err, "http front: epoll on the listening socket: %s", strerror(errno));
        goto fail;
    }
    int rc = pthread_create(&f->thread, NULL, front_main, f);
    if (rc != 0) {
        ts_err_set(err, "http front: thread: %s", strerror(rc));
        goto fail;
    }
    return f;
fail:
    if (f->ep >= 0) close(f->ep);
    if (f->wake >= 0) close(f->wake);
    pthread_mutex_destroy(&f->mu);
    free(f->peek);
    free(f);
    return NULL;
}

static void wake(http_front *f)
{
    uint64_t one = 1;
    if (write(f->wake, &one, sizeof(one)) < 0 && errno != EAGAIN)
        TLOG_WARN("http front: wake-up lost", "error=\"%s\"", strerror(errno));
}

bool http_front_add_listener(http_front *f, int fd, ts_err *err)
{
    pthread_mutex_lock(&f->mu);
    int n = atomic_load(&f->n_lfd);
    if (n >= HTTP_FRONT_MAX_LISTENERS) {
        pthread_mutex_unlock(&f->mu);
        ts_err_set(err, "http front: at most %d listeners", HTTP_FRONT_MAX_LISTENERS);
        return false;
    }
    f->lfd[n] = fd;
    atomic_store(&f->n_lfd, n + 1);
    pthread_mutex_unlock(&f->mu);
    wake(f);
    return true;
}

void http_front_quiesce(http_front *f)
{
    if (!f) return;
    atomic_store(&f->quiescing, true);
    wake(f);
}

void http_front_linger(http_front *f, int fd)
{
    if (!f) {
        close(fd);
        return;
    }
    pthread_mutex_lock(&f->mu);
    if (f->n_handed == f->cap_handed) {
        f->cap_handed = f->cap_handed ? f->cap_handed * 2 : 8;
        f->handed = ts_realloc(f->handed, f->cap_handed * sizeof(int));
    }
    f->handed[f->n_handed++] = fd;
    pthread_mutex_unlock(&f->mu);
    wake(f);
}

bool http_front_answer(http_front *f, int fd, int status, const char *msg, const char *request_id,
                       const char *server)
{
    size_t len;
    char *raw = http_front_problem_response(status, msg, request_id, server, &len);
    bool ok = http_front_write_all(fd, raw, len, 1000);
    free(raw);
    int dupfd = ok ? dup(fd) : -1;
    if (dupfd >= 0) http_front_linger(f, dupfd);
    return ok;
}

void http_front_stop(http_front *f)
{
    if (!f) return;
    atomic_store(&f->stopping, true);
    wake(f);
    pthread_join(f->thread, NULL);
    for (size_t i = 0; i < f->n_handed; i++)
        close(f->handed[i]);
    free(f->handed);
    close(f->ep);
    close(f->wake);
    pthread_mutex_destroy(&f->mu);
    free(f->peek);
    free(f);
}
