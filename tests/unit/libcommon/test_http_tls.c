/* test_http_tls.c: the HTTP server with http.tls_cert/http.tls_key
 * (libcommon/http_tls.c, http_server.c, http_front.c): a real server on a
 * loopback port serving TLS with a certificate made here (openssl), reached
 * with libcurl: https answers with the CA and not without it, a plain-text
 * client gets a clear 400 and the server goes on, a chunked body over the
 * limit gets its 413 through TLS, an upgraded connection carries bytes both
 * ways through TLS, and bad certificate or key files are refused at start
 * with messages that name the option and the file. */
#include "libcommon/http.h"
#include "libcommon/http_tls.h"
#include "libcommon/log.h"
#include "libcommon/plaintext.h"

#include <curl/curl.h>
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <unistd.h>

#include <cmocka.h>

static char g_dir[64];
static char g_cert[128], g_key[128], g_other_key[128], g_junk[128];

static void path_in(char *out, size_t size, const char *name)
{
    snprintf(out, size, "%s/%s", g_dir, name);
}

static void write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

/* A self-signed certificate for 127.0.0.1 (its own CA), its key, and a key
 * that is not its. */
static int setup(void **state)
{
    (void)state;
    snprintf(g_dir, sizeof(g_dir), "/tmp/tessera-test-tls-XXXXXX");
    if (!mkdtemp(g_dir)) return -1;
    path_in(g_cert, sizeof(g_cert), "server.crt");
    path_in(g_key, sizeof(g_key), "server.key");
    path_in(g_other_key, sizeof(g_other_key), "other.key");
    path_in(g_junk, sizeof(g_junk), "junk.pem");
    char cmd[1024];
    snprintf(cmd, sizeof(cmd),
             "openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 "
             "-subj /CN=127.0.0.1 -addext subjectAltName=IP:127.0.0.1 -keyout %s -out %s "
             ">/dev/null 2>&1 && openssl genpkey -algorithm EC -pkeyopt "
             "ec_paramgen_curve:P-256 -out %s >/dev/null 2>&1",
             g_key, g_cert, g_other_key);
    if (system(cmd) != 0) {
        fprintf(stderr, "test_http_tls: openssl could not make a certificate (tools/deps.sh)\n");
        return -1;
    }
    write_file(g_junk, "not a certificate\n");
    curl_global_init(CURL_GLOBAL_DEFAULT);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    char cmd[256];
    snprintf(cmd, sizeof(cmd), "rm -rf %s", g_dir);
    if (system(cmd) != 0) return -1;
    curl_global_cleanup();
    return 0;
}

/* ---- the server ------------------------------------------------------------------ */

static void h_hello(http_req *req, http_resp *resp, void *ctx)
{
    (void)ctx;
    http_reply(resp, 200, "text/plain", req->body_len ? "got body" : "hello over tls",
               req->body_len ? 8 : 14);
}

/* An upgraded connection: echo what comes until the client closes (the
 * sends are small: a non-blocking socket takes them whole). */
static atomic_int g_echoed, g_echo_done;

typedef struct echo_job {
    int fd;
    http_upgraded *handle;
} echo_job;

static void *echo_thread(void *arg)
{
    echo_job *j = arg;
    char buf[4096];
    for (;;) {
        ssize_t n = recv(j->fd, buf, sizeof(buf), 0);
        if (n < 0 && (errno == EAGAIN || errno == EINTR)) { /* the socket is non-blocking */
            struct pollfd p = {.fd = j->fd, .events = POLLIN};
            poll(&p, 1, 1000);
            continue;
        }
        if (n <= 0) break;
        if (send(j->fd, buf, (size_t)n, MSG_NOSIGNAL) != n) break;
        atomic_fetch_add(&g_echoed, (int)n);
    }
    http_upgraded_close(j->handle);
    atomic_fetch_add(&g_echo_done, 1);
    free(j);
    return NULL;
}

static void on_up(int fd, const char *extra, size_t extra_len, void *cls, http_upgraded *handle)
{
    (void)cls;
    (void)extra;
    assert_int_equal(extra_len, 0);
    echo_job *j = malloc(sizeof(*j));
    j->fd = fd;
    j->handle = handle;
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, echo_thread, j), 0);
    pthread_detach(t);
}

static void h_up(http_req *req, http_resp *resp, void *ctx)
{
    (void)ctx;
    http_set_header(resp, "Upgrade", "echo");
    http_set_header(resp, "Connection", "Upgrade");
    http_reply_upgrade(req, resp, on_up, NULL, NULL);
}

static http_router *g_router;

static http_server *start_tls(const char *cert, const char *key, ts_err *err)
{
    if (!g_router) {
        g_router = http_router_new();
        http_route(g_router, "GET", "/hello", h_hello, NULL);
        http_route(g_router, "POST", "/hello", h_hello, NULL);
        http_route(g_router, "GET", "/up", h_up, NULL);
    }
    http_server_opts o = {.listen = "127.0.0.1:0",
                          .max_body = 4096,
                          .threads = 2,
                          .conn_timeout_s = 5,
                          .service = "test",
                          .tls_cert_file = cert,
                          .tls_key_file = key};
    return http_server_start(&o, g_router, err);
}

/* ---- a client ---------------------------------------------------------------------- */

typedef struct got {
    char body[8192];
    size_t len;
} got;

static size_t on_data(char *p, size_t size, size_t n, void *ud)
{
    got *g = ud;
    size_t k = size * n;
    if (k > sizeof(g->body) - 1 - g->len) k = sizeof(g->body) - 1 - g->len;
    memcpy(g->body + g->len, p, k);
    g->len += k;
    g->body[g->len] = '\0';
    return size * n;
}

/* A GET (or a chunked POST of post_len bytes) to https://127.0.0.1:port/path;
 * ca NULL: the system's CAs. The curl result; *status the HTTP status. */
typedef struct chunked_src {
    size_t left;
} chunked_src;

static size_t on_read(char *p, size_t size, size_t n, void *ud)
{
    chunked_src *s = ud;
    size_t k = size * n < s->left ? size * n : s->left;
    memset(p, 'x', k);
    s->left -= k;
    return k;
}

static CURLcode https_call(int port, const char *path, const char *ca, size_t post_len,
                           long *status, got *g)
{
    char url[128];
    snprintf(url, sizeof(url), "https://127.0.0.1:%d%s", port, path);
    CURL *c = curl_easy_init();
    curl_easy_setopt(c, CURLOPT_URL, url);
    if (ca) curl_easy_setopt(c, CURLOPT_CAINFO, ca);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_data);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, g);
    curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, 10000L);
    struct curl_slist *h = NULL;
    chunked_src src = {.left = post_len};
    if (post_len) {
        h = curl_slist_append(h, "Transfer-Encoding: chunked");
        curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
        curl_easy_setopt(c, CURLOPT_POST, 1L);
        curl_easy_setopt(c, CURLOPT_READFUNCTION, on_read);
        curl_easy_setopt(c, CURLOPT_READDATA, &src);
    }
    memset(g, 0, sizeof(*g));
    CURLcode rc = curl_easy_perform(c);
    *status = 0;
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, status);
    curl_slist_free_all(h);
    curl_easy_cleanup(c);
    return rc;
}

/* ---- tests ------------------------------------------------------------------------- */

static void test_https_answers(void **state)
{
    (void)state;
    ts_err err = {{0}};
    http_server *s = start_tls(g_cert, g_key, &err);
    assert_non_null(s);
    assert_true(http_server_tls(s));
    int port = http_server_port(s);
    long status;
    got g;
    assert_int_equal(https_call(port, "/hello", g_cert, 0, &status, &g), CURLE_OK);
    assert_int_equal(status, 200);
    assert_string_equal(g.body, "hello over tls");
    /* the certificate is really checked: without the CA, curl refuses it */
    assert_int_equal(https_call(port, "/hello", NULL, 0, &status, &g),
                     CURLE_PEER_FAILED_VERIFICATION);
    /* a body within the limit, and a chunked one over it: 413 through TLS */
    assert_int_equal(https_call(port, "/hello", g_cert, 100, &status, &g), CURLE_OK);
    assert_int_equal(status, 200);
    assert_string_equal(g.body, "got body");
    assert_int_equal(https_call(port, "/hello", g_cert, 20000, &status, &g), CURLE_OK);
    assert_int_equal(status, 413);
    assert_non_null(strstr(g.body, "larger than the limit of 4096 bytes"));
    http_server_stop(s);
}

/* A plain-text client on the TLS port: a readable 400, and the server goes on. */
static void test_plain_client_refused(void **state)
{
    (void)state;
    ts_err err = {{0}};
    http_server *s = start_tls(g_cert, g_key, &err);
    assert_non_null(s);
    int port = http_server_port(s);
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    inet_pton(AF_INET, "127.0.0.1", &a.sin_addr);
    assert_int_equal(connect(fd, (struct sockaddr *)&a, sizeof(a)), 0);
    const char *req = "GET /hello HTTP/1.1\r\nHost: x\r\n\r\n";
    assert_int_equal(send(fd, req, strlen(req), 0), (ssize_t)strlen(req));
    char buf[2048];
    size_t have = 0;
    for (;;) {
        struct pollfd p = {.fd = fd, .events = POLLIN};
        assert_int_equal(poll(&p, 1, 5000), 1);
        ssize_t n = recv(fd, buf + have, sizeof(buf) - 1 - have, 0);
        if (n <= 0) break;
        have += (size_t)n;
    }
    buf[have] = '\0';
    close(fd);
    assert_true(strncmp(buf, "HTTP/1.1 400 ", 13) == 0);
    assert_non_null(strstr(buf, "application/problem+json"));
    assert_non_null(strstr(buf, "use https://"));
    long status;
    got g;
    assert_int_equal(https_call(port, "/hello", g_cert, 0, &status, &g), CURLE_OK);
    assert_int_equal(status, 200);
    http_server_stop(s);
}

/* recv on a CONNECT_ONLY handle until want is in buf (or 5 s). */
static bool curl_recv_until(CURL *c, char *buf, size_t size, size_t *have, const char *want)
{
    curl_socket_t sock;
    curl_easy_getinfo(c, CURLINFO_ACTIVESOCKET, &sock);
    for (int i = 0; i < 500 && !strstr(buf, want); i++) {
        size_t n = 0;
        CURLcode rc = curl_easy_recv(c, buf + *have, size - 1 - *have, &n);
        if (rc == CURLE_AGAIN) {
            struct pollfd p = {.fd = sock, .events = POLLIN};
            poll(&p, 1, 10);
            continue;
        }
        if (rc != CURLE_OK || n == 0) {
            fprintf(stderr, "curl_easy_recv: %s (n=%zu) after \"%s\"\n", curl_easy_strerror(rc), n,
                    buf);
            return false;
        }
        *have += n;
        buf[*have] = '\0';
    }
    return strstr(buf, want) != NULL;
}

static void curl_send_all(CURL *c, const char *data)
{
    size_t off = 0, len = strlen(data);
    for (int i = 0; off < len && i < 500; i++) {
        size_t n = 0;
        CURLcode rc = curl_easy_send(c, data + off, len - off, &n);
        if (rc == CURLE_AGAIN) {
            usleep(1000);
            continue;
        }
        assert_int_equal(rc, CURLE_OK);
        off += n;
    }
    assert_int_equal(off, len);
}

/* An upgraded connection (a stream, as the gateway's WebSocket routes) over TLS. */
static void test_upgrade_over_tls(void **state)
{
    (void)state;
    ts_err err = {{0}};
    http_server *s = start_tls(g_cert, g_key, &err);
    assert_non_null(s);
    char url[128];
    snprintf(url, sizeof(url), "https://127.0.0.1:%d/", http_server_port(s));
    CURL *c = curl_easy_init();
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_CAINFO, g_cert);
    curl_easy_setopt(c, CURLOPT_CONNECT_ONLY, 1L);
    assert_int_equal(curl_easy_perform(c), CURLE_OK); /* TCP and the TLS handshake */
    curl_send_all(c, "GET /up HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: Upgrade\r\n"
                     "Upgrade: echo\r\n\r\n");
    char buf[4096] = "";
    size_t have = 0;
    assert_true(curl_recv_until(c, buf, sizeof(buf), &have, "\r\n\r\n"));
    assert_true(strncmp(buf, "HTTP/1.1 101 ", 13) == 0);
    char *rest = strstr(buf, "\r\n\r\n") + 4;
    have -= (size_t)(rest - buf);
    memmove(buf, rest, have + 1);
    for (int round = 0; round < 3; round++) {
        char msg[64];
        snprintf(msg, sizeof(msg), "ping %d through tls|", round);
        curl_send_all(c, msg);
        assert_true(curl_recv_until(c, buf, sizeof(buf), &have, msg));
    }
    assert_true(atomic_load(&g_echoed) > 0);
    /* the client goes: the stream's side reads the end (http_upgrade.c
     * watches the TCP socket; libmicrohttpd does not pass it on) */
    curl_easy_cleanup(c);
    for (int i = 0; i < 500 && atomic_load(&g_echo_done) == 0; i++)
        usleep(10000);
    assert_int_equal(atomic_load(&g_echo_done), 1);
    http_server_stop(s);
}

static void expect_refused(const char *cert, const char *key, const char *want1, const char *want2)
{
    ts_err err = {{0}};
    http_server *s = start_tls(cert, key, &err);
    if (s) http_server_stop(s);
    assert_null(s);
    if (!strstr(err.msg, want1) || (want2 && !strstr(err.msg, want2)))
        fail_msg("message \"%s\" lacks \"%s\" / \"%s\"", err.msg, want1, want2 ? want2 : "");
}

static void test_bad_files_refused(void **state)
{
    (void)state;
    char missing[160];
    path_in(missing, sizeof(missing), "missing.pem");
    expect_refused(g_cert, NULL, "http.tls_cert is set but http.tls_key is not", NULL);
    expect_refused("", g_key, "http.tls_key is set but http.tls_cert is not", NULL);
    expect_refused(missing, g_key, "http.tls_cert", "cannot be read");
    expect_refused(g_cert, missing, "http.tls_key", "cannot be read");
    expect_refused(g_junk, g_key, "no PEM certificate", g_junk);
    expect_refused(g_cert, g_junk, "no PEM private key", g_junk);
    expect_refused(g_cert, g_cert, "no PEM private key", NULL); /* a certificate as the key */
    expect_refused(g_key, g_key, "no PEM certificate", NULL);
    expect_refused(g_cert, g_other_key, "does not match the certificate", g_other_key);
    char enc[160], cmd[512];
    path_in(enc, sizeof(enc), "enc.key");
    snprintf(cmd, sizeof(cmd), "openssl pkey -in %s -aes256 -passout pass:x -out %s 2>/dev/null",
             g_key, enc);
    assert_int_equal(system(cmd), 0);
    expect_refused(g_cert, enc, "the key is encrypted", enc);
    /* neither: plain HTTP */
    ts_err err = {{0}};
    http_server *s = start_tls("", NULL, &err);
    assert_non_null(s);
    assert_false(http_server_tls(s));
    http_server_stop(s);
}

static void test_plaintext_rule(void **state)
{
    (void)state;
    ts_err err = {{0}};
    assert_true(plaintext_check_http("http.listen", "127.0.0.1:8094", false, false, &err));
    assert_true(plaintext_check_http("http.listen", "localhost:8094", false, false, &err));
    assert_true(plaintext_check_http("http.listen", "[::1]:8094", false, false, &err));
    assert_true(plaintext_check_http("http.shared_listen", "", false, false, &err));
    assert_true(plaintext_check_http("http.listen", "10.0.0.21:8094", true, false, &err));
    assert_true(plaintext_check_http("http.listen", "10.0.0.21:8094", false, true, &err));
    const char *refused[] = {"10.0.0.21:8094", "0.0.0.0:8094", ":8094", "[::]:8094",
                             "gpu1.example:8094"};
    for (size_t i = 0; i < TS_ARRAY_LEN(refused); i++) {
        memset(&err, 0, sizeof(err));
        assert_false(plaintext_check_http("http.listen", refused[i], false, false, &err));
        assert_non_null(strstr(err.msg, "http.allow_plaintext"));
        assert_non_null(strstr(err.msg, "http.tls_cert"));
        assert_non_null(strstr(err.msg, refused[i]));
    }
}

static void test_hello_byte(void **state)
{
    (void)state;
    assert_true(http_tls_hello_byte(0x16));
    assert_false(http_tls_hello_byte('G'));
    assert_false(http_tls_hello_byte('P'));
    assert_false(http_tls_hello_byte(0x80)); /* SSLv2's hello: not spoken */
}

int main(void)
{
    tlog_init("test", NULL);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_https_answers),    cmocka_unit_test(test_plain_client_refused),
        cmocka_unit_test(test_upgrade_over_tls), cmocka_unit_test(test_bad_files_refused),
        cmocka_unit_test(test_plaintext_rule),   cmocka_unit_test(test_hello_byte),
    };
    int rc = cmocka_run_group_tests(tests, setup, teardown);
    if (g_router) http_router_free(g_router);
    return rc;
}
