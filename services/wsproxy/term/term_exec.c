/* term_exec.c: tessera-term's /exec WebSocket (term_exec.h). */
#include "services/wsproxy/term/term_exec.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "services/wsproxy/term/term_proc.h"
#include "services/wsproxy/term/term_ws.h"

#define FIRST_TIMEOUT_MS 60000 /* the first message must come within this */
#define QUIET_MS 100           /* no output nor input this long before `w` */
#define SCAN_MS 50             /* /proc looked at this often while it may wait */
#define SCAN_SLOW_MS 250       /* ... and this often after 2 s of silence */
#define DRAIN_MS 200           /* output still read this long after the end */
#define KILL_AFTER_MS 3000     /* SIGINT, then SIGKILL this much later */
#define MAX_PENDING (4u << 20) /* stdin bytes held before the socket is not read */
#define OUT_CHUNK 65536

static tw_in g_in;

typedef struct ex {
    int sock;
    pid_t pid;        /* the program, leader of its process group */
    int out, err, in; /* our ends of its pipes; -1: closed */
    dev_t in_dev;
    ino_t in_ino;
    uint8_t *pend; /* input not yet written to its stdin */
    size_t pend_len, pend_cap;
    bool close_in; /* `c`: close stdin once pend is written */
    bool ended;
    int status;
    long long ended_at, last_out, last_in, last_scan;
    bool w_sent;
} ex;

static long long _now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Send our close, then read (and drop) what the client still sends until it
 * closes or 1 s passes, so that closing does not reset the connection before
 * the client has read the last frames. */
static void _close_gracefully(int sock, unsigned code, const char *reason)
{
    if (code) tw_send_close(sock, code, reason);
    shutdown(sock, SHUT_WR);
    long long until = _now_ms() + 1000;
    char buf[4096];
    for (;;) {
        long long left = until - _now_ms();
        struct pollfd p = {.fd = sock, .events = POLLIN};
        if (left <= 0 || poll(&p, 1, (int)left) <= 0) break;
        if (read(sock, buf, sizeof(buf)) <= 0) break;
    }
}

/* The first message: the mode and the code (heap, NUL-terminated) in *code;
 * false when the connection ended or the message was refused (a close sent). */
static bool _first(int sock, char *mode, char **code)
{
    long long until = _now_ms() + FIRST_TIMEOUT_MS;
    for (;;) {
        tw_next_result r = tw_in_next(&g_in, sock);
        if (r == TW_CLOSED || r == TW_FAIL) return false;
        if (r == TW_MESSAGE) break;
        long long left = until - _now_ms();
        struct pollfd p = {.fd = sock, .events = POLLIN};
        int k = left > 0 ? poll(&p, 1, (int)left) : 0;
        if (k < 0 && errno == EINTR) continue;
        if (k == 0) {
            tw_send_close(sock, 1008, "no command within 60 s");
            return false;
        }
        long n = tw_in_read(&g_in, sock);
        if (n == 0 || (n < 0 && errno != EINTR && errno != EAGAIN)) return false;
    }
    const uint8_t *m = g_in.msg;
    size_t len = g_in.msg_len;
    if (len < 1 || (m[0] != 'q' && m[0] != 'b')) {
        tw_send_close(sock, 1008, "the first message is q<code> or b<command>");
        return false;
    }
    if (memchr(m + 1, '\0', len - 1)) {
        tw_send_close(sock, 1008, "the code holds a NUL byte");
        return false;
    }
    *mode = (char)m[0];
    *code = malloc(len);
    if (!*code) {
        tw_send_close(sock, 1011, "out of memory");
        return false;
    }
    memcpy(*code, m + 1, len - 1);
    (*code)[len - 1] = '\0';
    return true;
}

static void _move_fd(int from, int to)
{
    if (from == to)
        fcntl(to, F_SETFD, 0); /* keep it across exec */
    else
        dup2(from, to);
}

/* Start prog -c code with pipes for stdin, stdout and stderr. */
static bool _spawn(ex *x, const char *prog, const char *code)
{
    int pin[2], pout[2], perr[2];
    if (pipe2(pin, O_CLOEXEC) != 0) return false;
    if (pipe2(pout, O_CLOEXEC) != 0) {
        close(pin[0]), close(pin[1]);
        return false;
    }
    if (pipe2(perr, O_CLOEXEC) != 0) {
        close(pin[0]), close(pin[1]), close(pout[0]), close(pout[1]);
        return false;
    }
    pid_t pid = fork();
    if (pid == 0) {
        setsid();
        _move_fd(pin[0], 0);
        _move_fd(pout[1], 1);
        _move_fd(perr[1], 2);
        static const int sigs[] = {SIGPIPE, SIGINT, SIGQUIT, SIGHUP, SIGTERM, SIGCHLD};
        for (size_t i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++)
            signal(sigs[i], SIG_DFL);
        sigset_t none;
        sigemptyset(&none);
        sigprocmask(SIG_SETMASK, &none, NULL);
        char *argv[] = {(char *)prog, "-c", (char *)code, NULL};
        execvp(prog, argv); /* a runtime without a slash is looked up in PATH */
        dprintf(2, "tessera-term: cannot run %s: %s\n", prog, strerror(errno));
        _exit(127);
    }
    close(pin[0]), close(pout[1]), close(perr[1]);
    if (pid < 0) {
        close(pin[1]), close(pout[0]), close(perr[0]);
        return false;
    }
    x->pid = pid;
    x->in = pin[1];
    x->out = pout[0];
    x->err = perr[0];
    struct stat st;
    if (fstat(x->in, &st) == 0) {
        x->in_dev = st.st_dev;
        x->in_ino = st.st_ino;
    }
    fcntl(x->in, F_SETFL, O_NONBLOCK);
    fcntl(x->out, F_SETFL, O_NONBLOCK);
    fcntl(x->err, F_SETFL, O_NONBLOCK);
    return true;
}

/* Reap what has ended (the program; descendants orphaned to us). */
static void _reap(ex *x)
{
    int st;
    pid_t p;
    while ((p = waitpid(-1, &st, WNOHANG)) > 0) {
        if (p != x->pid || x->ended) continue;
        x->ended = true;
        x->ended_at = _now_ms();
        x->status = WIFEXITED(st) ? WEXITSTATUS(st) : WIFSIGNALED(st) ? 128 + WTERMSIG(st) : 255;
    }
}

/* Whether any of the group is left, once the ended are reaped. */
static bool _group_left(ex *x)
{
    _reap(x);
    return kill(-x->pid, 0) == 0;
}

/* SIGINT to what is left of the group, SIGKILL 3 s later; everything reaped. */
static void _end_group(ex *x)
{
    if (_group_left(x)) {
        kill(-x->pid, SIGINT);
        long long until = _now_ms() + KILL_AFTER_MS;
        while (_group_left(x) && _now_ms() < until)
            usleep(10000);
        if (_group_left(x)) {
            kill(-x->pid, SIGKILL);
            until = _now_ms() + 2000;
            while (_group_left(x) && _now_ms() < until)
                usleep(5000);
        }
    }
    _reap(x);
}

static void _close_in(ex *x)
{
    if (x->in >= 0) close(x->in);
    x->in = -1;
    x->pend_len = 0;
}

/* Write what input is pending (as much as the pipe takes). */
static void _flush_in(ex *x)
{
    while (x->in >= 0 && x->pend_len > 0) {
        ssize_t n = write(x->in, x->pend, x->pend_len);
        if (n < 0) {
            if (errno == EINTR) continue;
            if (errno == EAGAIN) return;
            _close_in(x); /* EPIPE: nobody reads it any more */
            return;
        }
        memmove(x->pend, x->pend + n, x->pend_len - (size_t)n);
        x->pend_len -= (size_t)n;
    }
    if (x->in >= 0 && x->pend_len == 0 && x->close_in) _close_in(x);
}

/* A message after the first; false: refused (a close 1008 sent). */
static bool _control(ex *x, const uint8_t *m, size_t len)
{
    char kind = len ? (char)m[0] : '\0';
    if (kind == 'i' && len == 1) return true;
    if (kind == 'i') {
        if (x->in < 0 || x->close_in) return true; /* stdin is closed: dropped */
        if (x->pend_len + len - 1 > x->pend_cap) {
            size_t cap = x->pend_cap ? x->pend_cap : 4096;
            while (cap < x->pend_len + len - 1)
                cap *= 2;
            uint8_t *p = realloc(x->pend, cap);
            if (!p) {
                tw_send_close(x->sock, 1011, "out of memory");
                return false;
            }
            x->pend = p;
            x->pend_cap = cap;
        }
        memcpy(x->pend + x->pend_len, m + 1, len - 1);
        x->pend_len += len - 1;
        x->last_in = _now_ms();
        x->w_sent = false;
        _flush_in(x);
    } else if (kind == 'c' && len == 1) {
        x->close_in = true;
        _flush_in(x);
    } else if (kind == 'x' && len == 1) {
        kill(-x->pid, SIGINT);
    } else if (kind == 'k' && len == 1) {
        kill(-x->pid, SIGKILL);
    } else {
        tw_send_close(x->sock, 1008, "unknown message kind");
        return false;
    }
    return true;
}

/* Read what one output pipe has and send it (kind 'o' or 'e'); false when
 * the socket failed. */
static bool _pump(ex *x, int *fd, char kind)
{
    static uint8_t buf[1 + OUT_CHUNK];
    buf[0] = (uint8_t)kind;
    ssize_t n = read(*fd, buf + 1, OUT_CHUNK);
    if (n < 0 && (errno == EINTR || errno == EAGAIN)) return true;
    if (n <= 0) {
        close(*fd);
        *fd = -1;
        return true;
    }
    x->last_out = _now_ms();
    return tw_send(x->sock, WSF_BINARY, buf, 1 + (size_t)n) == 0;
}

/* Whether the program may be waiting for input and /proc is worth a look:
 * the time of the next look, or -1. */
static long long _next_scan(const ex *x)
{
    if (x->ended || x->in < 0 || x->pend_len || x->w_sent) return -1;
    long long quiet = x->last_out > x->last_in ? x->last_out : x->last_in;
    long long at = quiet + QUIET_MS;
    long long every = _now_ms() - quiet > 2000 ? SCAN_SLOW_MS : SCAN_MS;
    if (x->last_scan + every > at) at = x->last_scan + every;
    return at;
}

/* Run the program until it ends or the connection does; true: it ended. */
static bool _run(ex *x, int sigfd)
{
    for (;;) {
        _reap(x);
        long long now = _now_ms();
        if (x->ended && ((x->out < 0 && x->err < 0) || now >= x->ended_at + DRAIN_MS)) return true;
        struct pollfd p[5] = {
            {.fd = x->pend_len < MAX_PENDING ? x->sock : -1, .events = POLLIN},
            {.fd = x->out, .events = POLLIN},
            {.fd = x->err, .events = POLLIN},
            {.fd = x->pend_len ? x->in : -1, .events = POLLOUT},
            {.fd = sigfd, .events = POLLIN},
        };
        long long timeout = -1, scan = _next_scan(x);
        if (x->ended) timeout = x->ended_at + DRAIN_MS - now;
        if (scan >= 0 && (timeout < 0 || scan - now < timeout)) timeout = scan - now;
        if (timeout < 0 && (x->ended || scan >= 0)) timeout = 0;
        int k = poll(p, 5, (int)timeout);
        if (k < 0 && errno != EINTR) return false;
        now = _now_ms();
        /* only when nothing came meanwhile: output just read (a prompt, say)
         * goes out before the `w`, which then waits for quiet again */
        if (scan >= 0 && k == 0 && now >= scan) {
            x->last_scan = now;
            if (term_proc_group_reads(x->pid, x->in_dev, x->in_ino)) {
                if (tw_send(x->sock, WSF_BINARY, "w", 1) != 0) return false;
                x->w_sent = true;
            }
        }
        if (k <= 0) continue;
        if (p[4].revents & POLLIN) {
            struct signalfd_siginfo si;
            while (read(sigfd, &si, sizeof(si)) == (ssize_t)sizeof(si)) {
            }
        }
        if (p[1].revents && !_pump(x, &x->out, 'o')) return false;
        if (p[2].revents && !_pump(x, &x->err, 'e')) return false;
        if (p[3].revents) _flush_in(x);
        if (p[0].revents) {
            long n = tw_in_read(&g_in, x->sock);
            if (n == 0 || (n < 0 && errno != EINTR && errno != EAGAIN)) return false;
            for (;;) {
                tw_next_result r = tw_in_next(&g_in, x->sock);
                if (r == TW_MORE) break;
                if (r != TW_MESSAGE) return false;
                if (!_control(x, g_in.msg, g_in.msg_len)) return false;
            }
        }
    }
}

void term_exec(int sock, const char *runtime)
{
    char mode, *code = NULL;
    if (!_first(sock, &mode, &code)) {
        _close_gracefully(sock, 0, NULL);
        return;
    }
    /* orphans of the program come to us, so that they are reaped */
    prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
    sigset_t chld;
    sigemptyset(&chld);
    sigaddset(&chld, SIGCHLD);
    sigprocmask(SIG_BLOCK, &chld, NULL);
    int sigfd = signalfd(-1, &chld, SFD_NONBLOCK | SFD_CLOEXEC);
    ex x = {.sock = sock, .out = -1, .err = -1, .in = -1};
    const char *prog = mode == 'q' && runtime && *runtime ? runtime : "/bin/sh";
    if (sigfd < 0 || !_spawn(&x, prog, code)) {
        free(code);
        _close_gracefully(sock, 1011, "cannot start the program");
        if (sigfd >= 0) close(sigfd);
        return;
    }
    free(code);
    x.last_out = x.last_in = _now_ms();
    bool ended = _run(&x, sigfd);
    if (ended) {
        char b[16];
        int n = snprintf(b, sizeof(b), "x%d", x.status);
        if (tw_send(sock, WSF_BINARY, b, (size_t)n) == 0) _close_gracefully(sock, 1000, NULL);
    } else {
        _close_gracefully(sock, 0, NULL); /* the close, if any, is sent */
    }
    shutdown(sock, SHUT_RDWR);
    if (x.out >= 0) close(x.out);
    if (x.err >= 0) close(x.err);
    _close_in(&x);
    free(x.pend);
    _end_group(&x);
    close(sigfd);
}
