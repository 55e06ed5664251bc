/* ws.c: WebSocket connections, server and client side (ws.h). */
#include "libcommon/ws.h"

#include "libcommon/http1.h"

#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <unistd.h>

#define READ_CHUNK (64 * 1024)
#define MAX_HANDSHAKE_HEAD 8192

struct ws_conn {
    int fd;
    ws_role role;
    size_t max_msg;
    uint8_t *in; /* raw bytes read, not yet handed out */
    size_t in_len, in_cap, consumed;
    uint8_t *msg; /* the message being reassembled, then handed out */
    size_t msg_len, msg_cap;
    int msg_op;
    bool in_fragments;
    pthread_mutex_t wlock;
    bool close_sent;
};

ws_conn *ws_conn_new(int fd, ws_role role, const void *pre, size_t pre_len, size_t max_msg)
{
    ws_conn *c = ts_calloc(1, sizeof(*c));
    c->fd = fd;
    c->role = role;
    c->max_msg = max_msg;
    c->in_cap = pre_len > READ_CHUNK ? pre_len : READ_CHUNK;
    c->in = ts_malloc(c->in_cap);
    if (pre_len) memcpy(c->in, pre, pre_len);
    c->in_len = pre_len;
    pthread_mutex_init(&c->wlock, NULL);
    return c;
}

void ws_conn_free(ws_conn *c)
{
    if (!c) return;
    if (c->fd >= 0) close(c->fd);
    pthread_mutex_destroy(&c->wlock);
    free(c->in);
    free(c->msg);
    free(c);
}

int ws_conn_fd(const ws_conn *c)
{
    return c->fd;
}

void ws_conn_forget_fd(ws_conn *c)
{
    c->fd = -1;
}

static void _compact(ws_conn *c)
{
    if (!c->consumed) return;
    memmove(c->in, c->in + c->consumed, c->in_len - c->consumed);
    c->in_len -= c->consumed;
    c->consumed = 0;
}

bool ws_conn_fill(ws_conn *c)
{
    _compact(c);
    size_t limit = c->max_msg + WSF_MAX_HEADER + READ_CHUNK;
    if (c->in_cap - c->in_len < READ_CHUNK / 4 && c->in_cap < limit) {
        c->in_cap = c->in_cap * 2 < limit ? c->in_cap * 2 : limit;
        c->in = ts_realloc(c->in, c->in_cap);
    }
    if (c->in_len == c->in_cap) return true; /* ws_conn_next refuses what fills it */
    for (;;) {
        ssize_t n = recv(c->fd, c->in + c->in_len, c->in_cap - c->in_len, 0);
        if (n > 0) {
            c->in_len += (size_t)n;
            return true;
        }
        if (n < 0 && errno == EINTR) continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return true;
        return false;
    }
}

static bool _msg_append(ws_conn *c, const uint8_t *p, size_t n)
{
    if (c->msg_len + n > c->max_msg) return false;
    if (c->msg_len + n + 1 > c->msg_cap) {
        c->msg_cap = (c->msg_len + n + 1) * 2;
        if (c->msg_cap > c->max_msg + 1) c->msg_cap = c->max_msg + 1;
        c->msg = ts_realloc(c->msg, c->msg_cap);
    }
    if (n) memcpy(c->msg + c->msg_len, p, n);
    c->msg_len += n;
    c->msg[c->msg_len] = '\0';
    return true;
}

ws_next ws_conn_next(ws_conn *c, int *opcode, const uint8_t **data, size_t *len, int *close_code)
{
    for (;;) {
        _compact(c);
        wsf_frame f;
        wsf_parse_result r = wsf_parse_header(c->in, c->in_len, &f);
        if (r == WSF_NEED_MORE) return WS_NEXT_NONE;
        if (r == WSF_BAD_FRAME || f.masked != (c->role == WS_SERVER)) {
            *close_code = WSF_CLOSE_PROTOCOL;
            return WS_NEXT_ERROR;
        }
        if (f.len > c->max_msg) {
            *close_code = WSF_CLOSE_TOO_BIG;
            return WS_NEXT_ERROR;
        }
        if (c->in_len - f.header_len < f.len) return WS_NEXT_NONE;
        uint8_t *pl = c->in + f.header_len;
        size_t n = (size_t)f.len;
        if (f.masked) wsf_mask(pl, n, f.mask, 0);
        c->consumed = f.header_len + n;
        switch (f.opcode) {
        case WSF_PING:
            if (!ws_conn_send(c, WSF_PONG, pl, n)) { /* the peer is gone: fill will say so */
            }
            continue;
        case WSF_PONG:
            continue;
        case WSF_CLOSE: {
            int code = wsf_close_code(pl, n);
            if (code < 0) {
                *close_code = WSF_CLOSE_PROTOCOL;
                return WS_NEXT_ERROR;
            }
            *close_code = code;
            return WS_NEXT_CLOSE;
        }
        case WSF_TEXT:
        case WSF_BINARY:
            if (c->in_fragments) {
                *close_code = WSF_CLOSE_PROTOCOL;
                return WS_NEXT_ERROR;
            }
            c->msg_len = 0;
            c->msg_op = f.opcode;
            break;
        default: /* WSF_CONT */
            if (!c->in_fragments) {
                *close_code = WSF_CLOSE_PROTOCOL;
                return WS_NEXT_ERROR;
            }
            break;
        }
        if (!_msg_append(c, pl, n)) {
            *close_code = WSF_CLOSE_TOO_BIG;
            return WS_NEXT_ERROR;
        }
        c->in_fragments = !f.fin;
        if (!f.fin) continue;
        *opcode = c->msg_op;
        *data = c->msg;
        *len = c->msg_len;
        return WS_NEXT_MESSAGE;
    }
}

static bool _write_all(int fd, const uint8_t *p, size_t n)
{
    int64_t deadline = ts_now_mono_ms() + WS_WRITE_TIMEOUT_MS;
    while (n > 0) {
        ssize_t k = send(fd, p, n, MSG_NOSIGNAL);
        if (k > 0) {
            p += k;
            n -= (size_t)k;
            continue;
        }
        if (k < 0 && errno == EINTR) continue;
        if (k < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            int64_t left = deadline - ts_now_mono_ms();
            struct pollfd pf = {.fd = fd, .events = POLLOUT};
            if (left <= 0 || poll(&pf, 1, (int)left) <= 0) return false;
            continue;
        }
        return false;
    }
    return true;
}

static bool _send_locked(ws_conn *c, int opcode, const void *data, size_t len)
{
    uint8_t h[WSF_MAX_HEADER], mask[4];
    bool client = c->role == WS_CLIENT;
    if (client && getrandom(mask, sizeof(mask), 0) != (ssize_t)sizeof(mask))
        memset(mask, 0x5a, sizeof(mask)); /* the mask guards proxies' caches, not secrets */
    size_t hl = wsf_write_header(h, true, opcode, len, client ? mask : NULL);
    if (!client || len == 0)
        return _write_all(c->fd, h, hl) && (len == 0 || _write_all(c->fd, data, len));
    uint8_t *buf = ts_malloc(hl + len);
    memcpy(buf, h, hl);
    memcpy(buf + hl, data, len);
    wsf_mask(buf + hl, len, mask, 0);
    bool ok = _write_all(c->fd, buf, hl + len);
    free(buf);
    return ok;
}

bool ws_conn_send(ws_conn *c, int opcode, const void *data, size_t len)
{
    pthread_mutex_lock(&c->wlock);
    bool ok = !c->close_sent && _send_locked(c, opcode, data, len);
    pthread_mutex_unlock(&c->wlock);
    return ok;
}

void ws_conn_close(ws_conn *c, int code, const char *reason)
{
    pthread_mutex_lock(&c->wlock);
    if (!c->close_sent) {
        uint8_t p[125];
        size_t n = wsf_close_payload(p, code, reason);
        if (!_send_locked(c, WSF_CLOSE, p, n)) { /* best effort: the peer may be gone */
        }
        c->close_sent = true;
    }
    pthread_mutex_unlock(&c->wlock);
}

void ws_conn_linger(ws_conn *c, int timeout_ms)
{
    if (c->fd < 0) return;
    pthread_mutex_lock(&c->wlock);
    c->close_sent = true; /* nothing more goes out */
    shutdown(c->fd, SHUT_WR);
    pthread_mutex_unlock(&c->wlock);
    int64_t deadline = ts_now_mono_ms() + timeout_ms;
    char buf[16384];
    for (;;) {
        int64_t left = deadline - ts_now_mono_ms();
        struct pollfd pf = {.fd = c->fd, .events = POLLIN};
        if (left <= 0 || poll(&pf, 1, (int)left) <= 0) return;
        ssize_t n = recv(c->fd, buf, sizeof(buf), 0);
        if (n == 0 || (n < 0 && errno != EINTR && errno != EAGAIN && errno != EWOULDBLOCK)) return;
    }
}

bool ws_conn_close_sent(const ws_conn *c)
{
    return c->close_sent;
}

/* ---- handshakes ------------------------------------------------------------------ */

bool ws_handshake_check(const char *method, const char *upgrade, const char *connection,
                        const char *version, const char *key, char accept[WSF_ACCEPT_LEN + 1],
                        const char **why)
{
    if (!method || strcmp(method, "GET") != 0) {
        *why = "a WebSocket opens with a GET request";
    } else if (!upgrade || !h1_list_has(upgrade, strlen(upgrade), "websocket")) {
        *why = "not a WebSocket request: Upgrade: websocket is missing";
    } else if (!connection || !h1_list_has(connection, strlen(connection), "upgrade")) {
        *why = "not a WebSocket request: Connection: Upgrade is missing";
    } else if (!version || strcmp(version, "13") != 0) {
        *why = "Sec-WebSocket-Version must be 13";
    } else if (!key || !wsf_key_valid(key, strlen(key))) {
        *why = "Sec-WebSocket-Key must be 16 bytes in base64";
    } else {
        wsf_accept(key, strlen(key), accept);
        return true;
    }
    return false;
}

int ws_tcp_connect(const char *host, int port, int timeout_ms, ts_err *err)
{
    char ports[16];
    snprintf(ports, sizeof(ports), "%d", port);
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM}, *res = NULL;
    int rc = getaddrinfo(host, ports, &hints, &res);
    if (rc != 0) {
        ts_err_set(err, "cannot resolve %s: %s", host, gai_strerror(rc));
        return -1;
    }
    int fd = -1, e = 0;
    for (struct addrinfo *a = res; a && fd < 0; a = a->ai_next) {
        fd = socket(a->ai_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        if (fd < 0) continue;
        int ce = 0;
        if (connect(fd, a->ai_addr, a->ai_addrlen) != 0) {
            ce = errno;
            if (ce == EINPROGRESS) {
                struct pollfd pf = {.fd = fd, .events = POLLOUT};
                socklen_t sl = sizeof(ce);
                if (poll(&pf, 1, timeout_ms) != 1)
                    ce = ETIMEDOUT;
                else if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &ce, &sl) != 0)
                    ce = errno;
            }
        }
        if (ce) {
            e = ce;
            close(fd);
            fd = -1;
        }
    }
    freeaddrinfo(res);
    if (fd < 0) {
        ts_err_set(err, "cannot connect to %s:%d: %s", host, port, strerror(e ? e : ECONNREFUSED));
        return -1;
    }
    int fl = fcntl(fd, F_GETFL);
    if (fl >= 0 && fcntl(fd, F_SETFL, fl & ~O_NONBLOCK) != 0) { /* stays non-blocking: fine */
    }
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    return fd;
}

ws_conn *ws_client_open(const char *host, int port, const char *path, int timeout_ms,
                        size_t max_msg, ts_err *err)
{
    int fd = ws_tcp_connect(host, port, timeout_ms, err);
    if (fd < 0) return NULL;
    uint8_t raw[16];
    if (getrandom(raw, sizeof(raw), 0) != (ssize_t)sizeof(raw))
        memset(raw, 0x42, sizeof(raw)); /* the key proves a WebSocket server, not a secret */
    char key[32], want[WSF_ACCEPT_LEN + 1];
    wsf_base64(raw, sizeof(raw), key);
    wsf_accept(key, strlen(key), want);
    bool v6 = strchr(host, ':') != NULL;
    char *head = ts_asprintf("GET %s HTTP/1.1\r\nHost: %s%s%s:%d\r\nUpgrade: websocket\r\n"
                             "Connection: Upgrade\r\nSec-WebSocket-Key: %s\r\n"
                             "Sec-WebSocket-Version: 13\r\n\r\n",
                             path, v6 ? "[" : "", host, v6 ? "]" : "", port, key);
    bool sent = _write_all(fd, (const uint8_t *)head, strlen(head));
    free(head);
    char buf[MAX_HANDSHAKE_HEAD];
    size_t have = 0, end = 0;
    bool bare = false;
    int64_t deadline = ts_now_mono_ms() + timeout_ms;
    while (sent && !end && have < sizeof(buf)) {
        struct pollfd pf = {.fd = fd, .events = POLLIN};
        int64_t left = deadline - ts_now_mono_ms();
        if (left <= 0 || poll(&pf, 1, (int)left) <= 0) break;
        ssize_t n = recv(fd, buf + have, sizeof(buf) - have, 0);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;
        have += (size_t)n;
        end = h1_response_head_end(buf, have, &bare);
    }
    h1_msg m;
    const h1_header *acc = NULL;
    if (!end) {
        ts_err_set(err, "%s:%d: no WebSocket handshake answer", host, port);
    } else if (bare || !h1_parse_response(buf, end, false, &m)) {
        ts_err_set(err, "%s:%d: a malformed handshake answer", host, port);
    } else if (m.status != 101) {
        ts_err_set(err, "%s:%d answered %d to the WebSocket handshake", host, port, m.status);
    } else if (!(acc = h1_find(&m, "sec-websocket-accept")) || acc->value_len != WSF_ACCEPT_LEN ||
               memcmp(acc->value, want, WSF_ACCEPT_LEN) != 0) {
        ts_err_set(err, "%s:%d: a wrong Sec-WebSocket-Accept", host, port);
    } else {
        return ws_conn_new(fd, WS_CLIENT, buf + end, have - end, max_msg);
    }
    close(fd);
    return NULL;
}
