/* http_upgrade.c: upgraded connections (http.h, "upgraded connections"): the
 * 101 answer as libmicrohttpd's upgrade response, and the hand-over of the
 * socket to the handler's on_upgraded.
 *
 * The reply's source (SRC_UPGRADE) moves into a box when the response is
 * built. Two hold the box: the request (until libmicrohttpd says it is done:
 * http_impl_release) and, once the upgrade happened, the handle given to
 * on_upgraded (until http_upgraded_close). Whoever lets go last frees it;
 * when the request lets go before any upgrade, the handler's release(cls)
 * runs, so what it set aside for the stream is never left behind.
 *
 * Under TLS the handler's fd is one end of a socket pair that libmicrohttpd
 * (0.9.75) carries over the TLS session, and a client that goes away is
 * not passed on to it: the handler would wait on its end for ever. So the
 * connection's TCP socket is watched here (a duplicate of it, in one epoll
 * set and thread for all): when the client hangs up, the handler's end is
 * shut down (its reads see the end, as on a plain socket). The watch, and
 * the duplicates, end in http_upgraded_close, before libmicrohttpd closes
 * the connection. */
#include "libcommon/http_upgrade.h"
#include "libcommon/log.h"

#include <errno.h>
#include <fcntl.h>
#include <microhttpd.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

/* ---- TLS: the client's hang-up (see above) --------------------------------------- */

typedef struct hup_watch {
    uint64_t id; /* the epoll tag: a stale event finds no watch */
    int tcp;     /* duplicate of the connection's TCP socket */
    int app;     /* duplicate of the handler's end of the pair */
    bool armed;  /* in the epoll set */
    struct hup_watch *next;
} hup_watch;

static pthread_once_t g_hup_once = PTHREAD_ONCE_INIT;
static pthread_mutex_t g_hup_mu = PTHREAD_MUTEX_INITIALIZER;
static int g_hup_ep = -1;
static hup_watch *g_hups;
static uint64_t g_hup_next_id = 1;

static void *_hup_main(void *arg)
{
    (void)arg;
    struct epoll_event evs[32];
    for (;;) {
        int n = epoll_wait(g_hup_ep, evs, (int)TS_ARRAY_LEN(evs), -1);
        if (n < 0 && errno != EINTR) {
            TLOG_ERROR("upgraded TLS connections: epoll failed; hang-ups not seen", "error=\"%s\"",
                       strerror(errno));
            return NULL;
        }
        pthread_mutex_lock(&g_hup_mu);
        for (int i = 0; i < n; i++) {
            for (hup_watch *w = g_hups; w; w = w->next) {
                if (w->id != evs[i].data.u64 || !w->armed) continue;
                epoll_ctl(g_hup_ep, EPOLL_CTL_DEL, w->tcp, NULL);
                w->armed = false;
                shutdown(w->app, SHUT_RDWR); /* the handler reads the end */
                break;
            }
        }
        pthread_mutex_unlock(&g_hup_mu);
    }
}

static void _hup_start(void)
{
    g_hup_ep = epoll_create1(EPOLL_CLOEXEC);
    pthread_t t;
    if (g_hup_ep < 0 || pthread_create(&t, NULL, _hup_main, NULL) != 0) {
        TLOG_ERROR("upgraded TLS connections: no watch thread; hang-ups not seen", "");
        if (g_hup_ep >= 0) close(g_hup_ep);
        g_hup_ep = -1;
        return;
    }
    pthread_detach(t);
}

/* Watch tcp for the client's hang-up; 0 when it cannot be watched. */
static uint64_t _hup_watch(int tcp, int app)
{
    pthread_once(&g_hup_once, _hup_start);
    if (g_hup_ep < 0) return 0;
    hup_watch *w = ts_calloc(1, sizeof(*w));
    w->tcp = fcntl(tcp, F_DUPFD_CLOEXEC, 0);
    w->app = fcntl(app, F_DUPFD_CLOEXEC, 0);
    pthread_mutex_lock(&g_hup_mu);
    w->id = g_hup_next_id++;
    struct epoll_event ev = {.events = EPOLLRDHUP | EPOLLHUP | EPOLLERR, .data.u64 = w->id};
    w->armed = w->tcp >= 0 && w->app >= 0 && epoll_ctl(g_hup_ep, EPOLL_CTL_ADD, w->tcp, &ev) == 0;
    uint64_t id = w->armed ? w->id : 0;
    if (w->armed) {
        w->next = g_hups;
        g_hups = w;
    }
    pthread_mutex_unlock(&g_hup_mu);
    if (!id) {
        TLOG_WARN("upgraded TLS connection not watched for the client's hang-up", "error=\"%s\"",
                  strerror(errno));
        if (w->tcp >= 0) close(w->tcp);
        if (w->app >= 0) close(w->app);
        free(w);
    }
    return id;
}

static void _hup_unwatch(uint64_t id)
{
    if (!id) return;
    pthread_mutex_lock(&g_hup_mu);
    for (hup_watch **p = &g_hups; *p; p = &(*p)->next) {
        hup_watch *w = *p;
        if (w->id != id) continue;
        *p = w->next;
        if (w->armed) epoll_ctl(g_hup_ep, EPOLL_CTL_DEL, w->tcp, NULL);
        close(w->tcp);
        close(w->app);
        free(w);
        break;
    }
    pthread_mutex_unlock(&g_hup_mu);
}

struct http_upgrade_box {
    body_src src;
    atomic_int refs;
    atomic_bool upgraded; /* on_upgraded was called: release must not be */
    struct MHD_UpgradeResponseHandle *urh;
    uint64_t hup; /* TLS: the hang-up watch (0: none) */
};

struct http_upgraded {
    struct http_upgrade_box box;
};

void http_reply_upgrade(http_req *req, http_resp *resp, http_on_upgraded on_upgraded,
                        void (*release)(void *cls), void *cls)
{
    http_reply(resp, 101, NULL, "", 0);
    struct http_req_impl *impl = req->impl;
    body_src src = {.kind = SRC_UPGRADE,
                    .status = 101,
                    .fd = -1,
                    .upgraded = on_upgraded,
                    .release = release,
                    .cls = cls};
    if (!impl) { /* not a request of a server: nothing will upgrade it */
        http_src_release(&src);
        return;
    }
    http_src_release(&impl->src);
    impl->src = src;
}

static void _unref(struct http_upgrade_box *box)
{
    if (atomic_fetch_sub(&box->refs, 1) == 1) free(box);
}

void http_upgrade_unref(struct http_upgrade_box *box)
{
    /* The request is done: an upgrade that has not happened by now never will
     * (libmicrohttpd calls the upgrade handler while the request lives). */
    if (!atomic_exchange(&box->upgraded, true)) http_src_release(&box->src);
    _unref(box);
}

static void _on_upgrade(void *cls, struct MHD_Connection *conn, void *con_cls, const char *extra,
                        size_t extra_len, MHD_socket sock, struct MHD_UpgradeResponseHandle *urh)
{
    (void)con_cls;
    struct http_upgrade_box *box = cls;
    box->urh = urh;
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);
    if (ci && ci->connect_fd != sock) box->hup = _hup_watch(ci->connect_fd, sock); /* TLS */
    atomic_fetch_add(&box->refs, 1);
    if (atomic_exchange(&box->upgraded, true)) { /* the request let go first: cannot be */
        http_upgraded_close((http_upgraded *)box);
        return;
    }
    box->src.upgraded(sock, extra, extra_len, box->src.cls, (http_upgraded *)box);
}

void http_upgraded_close(http_upgraded *handle)
{
    struct http_upgrade_box *box = &handle->box;
    _hup_unwatch(box->hup);
    if (MHD_upgrade_action(box->urh, MHD_UPGRADE_ACTION_CLOSE) != MHD_YES)
        TLOG_WARN("upgraded connection not closed cleanly", "");
    _unref(box);
}

struct MHD_Response *http_upgrade_response(struct http_req_impl *impl, body_src *src)
{
    struct http_upgrade_box *box = ts_calloc(1, sizeof(*box));
    box->src = *src;
    memset(src, 0, sizeof(*src));
    atomic_init(&box->refs, 1);
    atomic_init(&box->upgraded, false);
    struct MHD_Response *mr = MHD_create_response_for_upgrade(_on_upgrade, box);
    if (!mr) {
        http_src_release(&box->src);
        free(box);
        return NULL;
    }
    if (impl->upgrade) http_upgrade_unref(impl->upgrade);
    impl->upgrade = box;
    return mr;
}
