/* http_upgrade.c: upgraded connections (http.h, "upgraded connections"): the
 * 101 answer as libmicrohttpd's upgrade response, and the hand-over of the
 * socket to the handler's on_upgraded.
 *
 * The reply's source (SRC_UPGRADE) moves into a box when the response is
 * built. Two hold the box: the request (until libmicrohttpd says it is done:
 * http_impl_release) and, once the upgrade happened, the handle given to
 * on_upgraded (until http_upgraded_close). Whoever lets go last frees it;
 * when the request lets go before any upgrade, the handler's release(cls)
 * runs, so what it set aside for the stream is never left behind. */
#include "libcommon/http_upgrade.h"
#include "libcommon/log.h"

#include <microhttpd.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

struct http_upgrade_box {
    body_src src;
    atomic_int refs;
    atomic_bool upgraded; /* on_upgraded was called: release must not be */
    struct MHD_UpgradeResponseHandle *urh;
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
    (void)conn;
    (void)con_cls;
    struct http_upgrade_box *box = cls;
    box->urh = urh;
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
