/* tessera-term: the built-in terminal app. A small static program that the
 * agent mounts into every kernel: it listens on a port inside the container,
 * serves a minimal page at "/" and, at "/ws", a WebSocket (RFC 6455) bridged
 * to a pty running a shell, one shell per connection; at "/exec" (a path
 * ending in /exec), a WebSocket that runs one program per connection with
 * pipes (term_exec.h: q<code> runs `<runtime> -c <code>`, b<command> runs
 * `/bin/sh -c <command>`; output, input, interrupt and exit status as
 * frames), which the gateway's streamed execution uses. Access control is
 * tessera-wsproxy's job: only a route to this port reaches it.
 *
 *   tessera-term [--listen ADDR:PORT] [--shell PATH] [--runtime PATH]
 *     defaults: 0.0.0.0:7681, /bin/sh, /bin/sh; --runtime is the kernel
 *     image's runtime (ai.backend.runtime-path), passed by the agent
 *
 * /ws: frames from the browser: text or binary = keyboard input; a text frame
 * "\x01<cols>,<rows>" resizes the pty. Frames to the browser: binary, the
 * pty's output. Ping is answered, close closes, the shell's exit sends close.
 * Plain C and libc: built statically from the files of this folder,
 * ../wsframe.c and libcommon/http1.c (no other libcommon). */
#include "libcommon/http1.h"
#include "services/wsproxy/term/term_exec.h"
#include "services/wsproxy/term/term_ws.h"
#include "services/wsproxy/wsframe.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pty.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#define MAX_HEAD 8192
#define MAX_FRAME TW_MAX_FRAME

static const char k_page[] =
    "<!doctype html>\n<html><head><meta charset=\"utf-8\"><title>Terminal</title>\n"
    "<style>body{margin:0;background:#111;color:#ddd;font:14px monospace}"
    "#out{white-space:pre-wrap;word-break:break-all;padding:8px;margin:0;height:calc(100vh - 60px);"
    "overflow-y:auto}#bar{display:flex;gap:4px;padding:4px "
    "8px}#in{flex:1;background:#222;color:#eee;"
    "border:1px solid #444;font:inherit;padding:4px}button{font:inherit}</style></head>\n"
    "<body><pre id=\"out\"></pre><div id=\"bar\"><input id=\"in\" autofocus autocomplete=\"off\" "
    "placeholder=\"command, Enter to send\"><button id=\"c\">Ctrl-C</button>"
    "<button id=\"d\">Ctrl-D</button><button id=\"t\">Tab</button></div>\n<script>\n"
    "const out=document.getElementById('out'),inp=document.getElementById('in');\n"
    "const ws=new WebSocket((location.protocol==='https:'?'wss://':'ws://')+location.host+"
    "location.pathname.replace(/\\/[^/]*$/,'')+'/ws');\n"
    "ws.binaryType='arraybuffer';const dec=new TextDecoder();\n"
    "const strip=s=>s.replace(/\\x1b\\[[0-9;?]*[ "
    "-\\/]*[@-~]|\\x1b\\][^\\x07\\x1b]*(\\x07|\\x1b\\\\)|"
    "\\x1b[()][0-9A-Za-z]|\\x1b[=>]|\\r/g,'');\n"
    "function put(s){for(const ch of s){if(ch==='\\b'){out.textContent=out.textContent.slice(0,-1)}"
    "else out.textContent+=ch}if(out.textContent.length>200000)out.textContent=out.textContent."
    "slice(-100000);out.scrollTop=out.scrollHeight}\n"
    "ws.onmessage=e=>put(strip(dec.decode(new Uint8Array(e.data),{stream:true})));\n"
    "ws.onopen=()=>ws.send('\\x01'+Math.floor(out.clientWidth/8.4)+','+Math.floor(out.clientHeight/"
    "17));\n"
    "ws.onclose=()=>put('\\n[connection closed]\\n');\n"
    "inp.addEventListener('keydown',e=>{if(e.key==='Enter'){ws.send(inp.value+'\\n');inp.value=''}}"
    ");\n"
    "document.getElementById('c').onclick=()=>ws.send('\\x03');\n"
    "document.getElementById('d').onclick=()=>ws.send('\\x04');\n"
    "document.getElementById('t').onclick=()=>{ws.send(inp.value+'\\t');inp.value=''};\n"
    "</script></body></html>\n";

static void reply(int fd, const char *status, const char *type, const char *body)
{
    char head[512];
    int n = snprintf(head, sizeof(head),
                     "HTTP/1.1 %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\n"
                     "Cache-Control: no-store\r\nConnection: close\r\n\r\n",
                     status, type, strlen(body));
    if (tw_write_all(fd, head, (size_t)n) == 0) tw_write_all(fd, body, strlen(body));
}

/* Bridge a WebSocket and a pty until either ends. */
static void bridge(int fd, const char *shell)
{
    int master;
    struct winsize ws = {.ws_row = 24, .ws_col = 80};
    pid_t pid = forkpty(&master, NULL, NULL, &ws);
    if (pid < 0) {
        tw_send(fd, WSF_CLOSE, "\x03\xf3pty", 5); /* 1011 */
        return;
    }
    if (pid == 0) {
        signal(SIGPIPE, SIG_DFL);
        setenv("TERM", "dumb", 1);
        const char *home = getenv("HOME");
        if (home && chdir(home) != 0) {
        }
        execl(shell, shell, "-i", (char *)NULL);
        _exit(127);
    }
    static uint8_t in[MAX_FRAME + WSF_MAX_HEADER];
    size_t have = 0;
    char buf[16384];
    for (;;) {
        struct pollfd p[2] = {{.fd = fd, .events = POLLIN}, {.fd = master, .events = POLLIN}};
        if (poll(p, 2, -1) < 0) {
            if (errno == EINTR) continue;
            break;
        }
        if (p[1].revents & (POLLIN | POLLHUP | POLLERR)) {
            ssize_t n = read(master, buf, sizeof(buf));
            if (n <= 0) {
                tw_send(fd, WSF_CLOSE, "\x03\xe8", 2); /* 1000: the shell ended */
                break;
            }
            if (tw_send(fd, WSF_BINARY, buf, (size_t)n) != 0) break;
        }
        if (p[0].revents & (POLLIN | POLLHUP | POLLERR)) {
            ssize_t n = read(fd, in + have, sizeof(in) - have);
            if (n <= 0) break;
            have += (size_t)n;
            bool done = false;
            for (;;) {
                wsf_frame f;
                wsf_parse_result r = wsf_parse_header(in, have, &f);
                if (r == WSF_BAD_FRAME || (r == WSF_HEADER && (!f.masked || f.len > MAX_FRAME))) {
                    tw_send(fd, WSF_CLOSE, "\x03\xea", 2); /* 1002 */
                    done = true;
                    break;
                }
                if (r == WSF_NEED_MORE || have < f.header_len + f.len) break;
                uint8_t *pl = in + f.header_len;
                wsf_mask(pl, (size_t)f.len, f.mask, 0);
                if (f.opcode == WSF_CLOSE) {
                    tw_send(fd, WSF_CLOSE, pl, f.len >= 2 ? 2 : 0);
                    done = true;
                    break;
                } else if (f.opcode == WSF_PING) {
                    tw_send(fd, WSF_PONG, pl, (size_t)f.len);
                } else if (f.opcode == WSF_TEXT && f.len > 1 && pl[0] == 0x01) {
                    unsigned cols = 0, rows = 0;
                    char tmp[32];
                    size_t l = f.len - 1 < sizeof(tmp) - 1 ? (size_t)f.len - 1 : sizeof(tmp) - 1;
                    memcpy(tmp, pl + 1, l);
                    tmp[l] = '\0';
                    if (sscanf(tmp, "%u,%u", &cols, &rows) == 2 && cols && rows && cols < 1000 &&
                        rows < 1000) {
                        struct winsize w2 = {.ws_row = (unsigned short)rows,
                                             .ws_col = (unsigned short)cols};
                        ioctl(master, TIOCSWINSZ, &w2);
                    }
                } else if (f.opcode == WSF_TEXT || f.opcode == WSF_BINARY || f.opcode == WSF_CONT) {
                    if (tw_write_all(master, pl, (size_t)f.len) != 0) done = true;
                }
                size_t used = f.header_len + (size_t)f.len;
                memmove(in, in + used, have - used);
                have -= used;
                if (done) break;
            }
            if (done) break;
        }
    }
    close(master);
    kill(-pid, SIGHUP);
    kill(pid, SIGHUP);
    waitpid(pid, NULL, 0);
}

/* Whether the request's path (before any query) ends in "/exec": the
 * program runner, rather than the shell. A prefix (a proxy's) is allowed. */
static bool is_exec(const h1_msg *m)
{
    size_t n = m->target_len;
    const char *q = memchr(m->target, '?', n);
    if (q) n = (size_t)(q - m->target);
    return n >= 5 && memcmp(m->target + n - 5, "/exec", 5) == 0;
}

static void serve(int fd, const char *shell, const char *runtime)
{
    char head[MAX_HEAD];
    size_t have = 0, end = 0;
    while (!end) {
        if (have == sizeof(head)) {
            reply(fd, "431 Request Header Fields Too Large", "text/plain", "too large\n");
            return;
        }
        ssize_t n = read(fd, head + have, sizeof(head) - have);
        if (n <= 0) return;
        have += (size_t)n;
        end = h1_head_end(head, have, 0);
    }
    h1_msg m;
    if (!h1_parse_request(head, end, &m)) {
        reply(fd, "400 Bad Request", "text/plain", "bad request\n");
        return;
    }
    if (m.upgrade && h1_span_eq(m.upgrade, m.upgrade_len, "websocket")) {
        const h1_header *k = h1_find(&m, "sec-websocket-key");
        if (!k || !wsf_key_valid(k->value, k->value_len)) {
            reply(fd, "400 Bad Request", "text/plain", "bad Sec-WebSocket-Key\n");
            return;
        }
        char acc[WSF_ACCEPT_LEN + 1];
        wsf_accept(k->value, k->value_len, acc);
        char r[256];
        int n = snprintf(r, sizeof(r),
                         "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n"
                         "Connection: Upgrade\r\nSec-WebSocket-Accept: %s\r\n\r\n",
                         acc);
        if (tw_write_all(fd, r, (size_t)n) != 0) return;
        /* Bytes after the head (an eager client) are not expected: ignored. */
        if (is_exec(&m))
            term_exec(fd, runtime);
        else
            bridge(fd, shell);
        return;
    }
    if (h1_span_eq(m.method, m.method_len, "GET") || h1_span_eq(m.method, m.method_len, "HEAD")) {
        reply(fd, "200 OK", "text/html; charset=utf-8", k_page);
        return;
    }
    reply(fd, "405 Method Not Allowed", "text/plain", "GET only\n");
}

static void usage(FILE *f)
{
    fprintf(f,
            "usage: tessera-term [--listen ADDR:PORT] [--shell PATH] [--runtime PATH]\n"
            "  a terminal in the browser: a WebSocket at /ws bridged to a pty running the shell;\n"
            "  at /exec, one program per connection with pipes: q<code> runs the runtime\n"
            "  (RUNTIME -c CODE), b<command> runs /bin/sh -c COMMAND\n"
            "  defaults: --listen 0.0.0.0:7681 --shell /bin/sh --runtime /bin/sh\n");
}

int main(int argc, char **argv)
{
    const char *listen_addr = "0.0.0.0:7681", *shell = "/bin/sh", *runtime = "/bin/sh";
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--listen") == 0 && i + 1 < argc)
            listen_addr = argv[++i];
        else if (strcmp(argv[i], "--shell") == 0 && i + 1 < argc)
            shell = argv[++i];
        else if (strcmp(argv[i], "--runtime") == 0 && i + 1 < argc)
            runtime = argv[++i];
        else if (strcmp(argv[i], "--help") == 0) {
            usage(stdout);
            return 0;
        } else {
            usage(stderr);
            return 2;
        }
    }
    char host[128];
    const char *colon = strrchr(listen_addr, ':');
    if (!colon || (size_t)(colon - listen_addr) >= sizeof(host)) {
        usage(stderr);
        return 2;
    }
    memcpy(host, listen_addr, (size_t)(colon - listen_addr));
    host[colon - listen_addr] = '\0';
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)atoi(colon + 1))};
    if (inet_pton(AF_INET, host[0] ? host : "0.0.0.0", &sa.sin_addr) != 1) {
        fprintf(stderr, "tessera-term: --listen wants an IPv4 address and a port\n");
        return 2;
    }
    int lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    int one = 1;
    setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (bind(lfd, (struct sockaddr *)&sa, sizeof(sa)) != 0 || listen(lfd, 64) != 0) {
        fprintf(stderr, "tessera-term: cannot listen on %s: %s\n", listen_addr, strerror(errno));
        return 1;
    }
    signal(SIGCHLD, SIG_IGN); /* connection children are reaped by the kernel */
    signal(SIGPIPE, SIG_IGN);
    fprintf(stderr, "tessera-term: listening on %s, shell %s, runtime %s\n", listen_addr, shell,
            runtime);
    for (;;) {
        int fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC); /* not the programs' */
        if (fd < 0) {
            if (errno == EINTR) continue;
            sleep(1);
            continue;
        }
        pid_t pid = fork();
        if (pid == 0) {
            close(lfd);
            signal(SIGCHLD, SIG_DFL);
            setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
            serve(fd, shell, runtime);
            close(fd);
            _exit(0);
        }
        close(fd);
    }
}
