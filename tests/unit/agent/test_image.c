/* test_image.c: services/agent's image store and pulls (image*.c) and
 * oci_client.c against a
 * real registry (Debian's docker-registry, started here on a free port) with
 * images built here from Debian's busybox-static by tools/oci-image.py:
 *
 *   - a pull caches manifest, config and layers; a second pull (also from a
 *     new store on the same cache, as after an agent restart) fetches no blob
 *     (counted in the registry's access log), and image_lookup works offline;
 *   - an index with two architectures gives each node its own;
 *   - a missing image, a tampered blob in the registry's storage, a wrong
 *     diff_id and a registry that is down each fail with a clear message;
 *   - bearer-token auth: a small Python proxy in front of the registry answers
 *     401 with "WWW-Authenticate: Bearer realm=...", serves tokens (anonymous
 *     for one repository, with basic credentials for another) and forwards
 *     requests that carry a token;
 *   - two pulls of one image at once both succeed;
 *   - a store whose layers are shifted for a user namespace keeps them apart
 *     (layers-<base>-<count>/), does not take the unshifted ones for its own,
 *     and unpacks them again from the cached blobs without a download.
 *
 * References and registry challenges alone: test_image_ref.c.
 *
 * Skips (exit 0, saying why) without docker-registry, python3 or
 * /bin/busybox (tools/deps.sh installs them), or when not root. */
#include "services/agent/digest.h"
#include "services/agent/image.h"
#include "services/agent/image_pull.h"
#include "services/agent/oci_client.h"
#include "services/agent/unpack.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <curl/curl.h>
#include <jansson.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static char g_dir[256];
static char g_tool[512];
static int g_reg_port, g_proxy_port;
static pid_t g_reg_pid, g_proxy_pid;
static char g_ref_busybox[128];
static char g_busybox_digest[DIGEST_STRLEN];
static char g_multi_amd64[DIGEST_STRLEN], g_multi_arm64[DIGEST_STRLEN];

static const char *AUTH_PROXY_PY =
    "import base64, http.client, http.server, json, sys, urllib.parse\n"
    "port, upstream = int(sys.argv[1]), sys.argv[2]\n"
    "SECRET = 'Basic ' + base64.b64encode(b'tess:secret').decode()\n"
    "class H(http.server.BaseHTTPRequestHandler):\n"
    "    protocol_version = 'HTTP/1.1'\n"
    "    def log_message(self, fmt, *a):\n"
    "        sys.stderr.write('%s %s\\n' % (self.command, self.path)); sys.stderr.flush()\n"
    "    def send(self, code, body=b'', headers=()):\n"
    "        self.send_response(code)\n"
    "        for k, v in headers: self.send_header(k, v)\n"
    "        self.send_header('Content-Length', str(len(body)))\n"
    "        self.end_headers()\n"
    "        if self.command != 'HEAD': self.wfile.write(body)\n"
    "    def do_GET(self):\n"
    "        u = urllib.parse.urlsplit(self.path)\n"
    "        if u.path == '/token':\n"
    "            q = urllib.parse.parse_qs(u.query)\n"
    "            scope = q.get('scope', [''])[0]\n"
    "            if q.get('service') != ['tessera-test'] or not scope.startswith('repository:'):\n"
    "                return self.send(400, b'bad token request')\n"
    "            repo = scope.split(':')[1]\n"
    "            auth = self.headers.get('Authorization')\n"
    "            if auth is not None and auth != SECRET: return self.send(401, b'bad "
    "credentials')\n"
    "            if auth is None and repo != 'tessera/busybox': return self.send(401, "
    "b'credentials needed')\n"
    "            body = json.dumps({'token': 'tok:' + repo, 'expires_in': 300}).encode()\n"
    "            return self.send(200, body, [('Content-Type', 'application/json')])\n"
    "        parts = u.path.split('/')\n"
    "        repo = '/'.join(parts[2:-2]) if len(parts) > 4 else ''\n"
    "        if self.headers.get('Authorization') != 'Bearer tok:' + repo:\n"
    "            ch = 'Bearer "
    "realm=\"http://127.0.0.1:%d/token\",service=\"tessera-test\",scope=\"repository:%s:pull\"' % "
    "(port, repo)\n"
    "            return self.send(401, b'{\"errors\":[{\"code\":\"UNAUTHORIZED\"}]}', "
    "[('WWW-Authenticate', ch), ('Content-Type', 'application/json')])\n"
    "        c = http.client.HTTPConnection(upstream, timeout=30)\n"
    "        h = {k: v for k, v in self.headers.items() if k.lower() in ('accept',)}\n"
    "        c.request('GET', self.path, headers=h)\n"
    "        r = c.getresponse(); body = r.read(); c.close()\n"
    "        hs = [(k, v) for k, v in r.getheaders() if k.lower() in ('content-type', "
    "'docker-content-digest')]\n"
    "        self.send(r.status, body, hs)\n"
    "http.server.ThreadingHTTPServer(('127.0.0.1', port), H).serve_forever()\n";

/* ---- helpers --------------------------------------------------------------------- */

static int free_port(void)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t l = sizeof(a);
    if (bind(fd, (struct sockaddr *)&a, sizeof(a)) != 0 ||
        getsockname(fd, (struct sockaddr *)&a, &l) != 0) {
        close(fd);
        return -1;
    }
    close(fd);
    return ntohs(a.sin_port);
}

static pid_t spawn(const char *log, char *const argv[])
{
    pid_t pid = fork();
    if (pid == 0) {
        setsid();
        int fd = open(log, O_WRONLY | O_CREAT | O_APPEND, 0644);
        int nul = open("/dev/null", O_RDONLY);
        dup2(nul, 0);
        dup2(fd, 1);
        dup2(fd, 2);
        execvp(argv[0], argv);
        _exit(127);
    }
    return pid;
}

static void stop(pid_t *pid)
{
    if (*pid <= 0) return;
    kill(*pid, SIGTERM);
    waitpid(*pid, NULL, 0);
    *pid = 0;
}

static size_t _discard(char *b, size_t s, size_t n, void *u)
{
    (void)b;
    (void)u;
    return s * n;
}

static long http_status(const char *url)
{
    CURL *h = curl_easy_init();
    curl_easy_setopt(h, CURLOPT_URL, url);
    curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, 1000L);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, _discard);
    long st = 0;
    if (curl_easy_perform(h) == CURLE_OK) curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &st);
    curl_easy_cleanup(h);
    return st;
}

static bool wait_http(const char *url, long want_status)
{
    for (int i = 0; i < 200; i++) {
        if (http_status(url) == want_status) return true;
        usleep(50000);
    }
    return false;
}

static char *path_in(const char *rel)
{
    static char buf[8][600];
    static int k;
    k = (k + 1) % 8;
    snprintf(buf[k], sizeof(buf[k]), "%s/%s", g_dir, rel);
    return buf[k];
}

static bool sh(const char *fmt, ...) TS_PRINTF(1, 2);
static bool sh(const char *fmt, ...)
{
    char cmd[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(cmd, sizeof(cmd), fmt, ap);
    va_end(ap);
    int rc = system(cmd);
    if (rc != 0) fprintf(stderr, "command failed (%d): %s\n", rc, cmd);
    return rc == 0;
}

static void sh_out(char *out, size_t size, const char *cmd)
{
    FILE *p = popen(cmd, "r");
    char line[1024] = "";
    out[0] = '\0';
    if (!p) return;
    if (!fgets(line, (int)sizeof(line), p)) line[0] = '\0';
    while (fgetc(p) != EOF) {
    }
    pclose(p);
    line[strcspn(line, "\n")] = '\0';
    snprintf(out, size, "%s", line);
}

/* GET requests for blobs in the registry's access log so far. */
static int blob_gets(void)
{
    usleep(150000); /* the access line is written after the response */
    FILE *f = fopen(path_in("registry.log"), "r");
    if (!f) return -1;
    char line[4096];
    int n = 0;
    while (fgets(line, sizeof(line), f))
        if (strstr(line, "\"GET /v2/") && strstr(line, "/blobs/sha256:")) n++;
    fclose(f);
    return n;
}

static bool file_contains(const char *path, const char *what)
{
    FILE *f = fopen(path, "r");
    if (!f) return false;
    char buf[8192];
    size_t n = fread(buf, 1, sizeof(buf) - 1, f);
    fclose(f);
    buf[n] = '\0';
    return strstr(buf, what) != NULL;
}

static image_store *store_shifted(const char *cache, const char *arch, int retries,
                                  const char *auth_file, uint32_t id_base)
{
    image_store_opts o = {.cache_dir = path_in(cache),
                          .layer_id_base = id_base,
                          .layer_id_count = id_base ? 65536 : 0,
                          .architecture = arch,
                          .max_parallel_layers = 3,
                          .timeout_ms = 5000,
                          .retries = retries,
                          .insecure_http = true,
                          .retry_backoff_ms = 100,
                          .auth_file = auth_file};
    ts_err err = {{0}};
    image_store *s = image_store_new(&o, &err);
    if (!s) fail_msg("image_store_new: %s", err.msg);
    return s;
}

static image_store *store(const char *cache, const char *arch, int retries, const char *auth_file)
{
    return store_shifted(cache, arch, retries, auth_file, 0);
}

static char *ref(int port, const char *repo)
{
    static char buf[4][256];
    static int k;
    k = (k + 1) % 4;
    snprintf(buf[k], sizeof(buf[k]), "127.0.0.1:%d/%s", port, repo);
    return buf[k];
}

/* ---- fixture ---------------------------------------------------------------------- */

static int setup(void **state)
{
    (void)state;
    snprintf(g_dir, sizeof(g_dir), "/tmp/tessera-image-XXXXXX");
    if (!mkdtemp(g_dir)) return -1;
    g_reg_port = free_port();
    g_proxy_port = free_port();
    FILE *f = fopen(path_in("registry.yml"), "w");
    fprintf(f,
            "version: 0.1\nlog:\n  level: warn\nstorage:\n  filesystem:\n    rootdirectory: %s\n"
            "  delete:\n    enabled: true\nhttp:\n  addr: 127.0.0.1:%d\n",
            path_in("registry"), g_reg_port);
    fclose(f);
    char *rargv[] = {"docker-registry", "serve", path_in("registry.yml"), NULL};
    g_reg_pid = spawn(path_in("registry.log"), rargv);
    char url[128];
    snprintf(url, sizeof(url), "http://127.0.0.1:%d/v2/", g_reg_port);
    if (!wait_http(url, 200)) {
        fprintf(stderr, "docker-registry did not start (see %s)\n", path_in("registry.log"));
        return -1;
    }
    f = fopen(path_in("authproxy.py"), "w");
    fputs(AUTH_PROXY_PY, f);
    fclose(f);
    char pport[16], upstream[64];
    snprintf(pport, sizeof(pport), "%d", g_proxy_port);
    snprintf(upstream, sizeof(upstream), "127.0.0.1:%d", g_reg_port);
    char *pargv[] = {"python3", path_in("authproxy.py"), pport, upstream, NULL};
    g_proxy_pid = spawn(path_in("authproxy.log"), pargv);
    snprintf(url, sizeof(url), "http://127.0.0.1:%d/v2/", g_proxy_port);
    if (!wait_http(url, 401)) return -1;

    /* images: busybox (one architecture), multi (index: amd64 + arm64),
     * tamper (its own blobs, to corrupt), baddiff (a wrong diff_id) */
    const char *T = g_tool, *D = g_dir;
    if (!sh("python3 %s busybox %s/img-busybox >/dev/null", T, D) ||
        !sh("python3 %s busybox %s/img-multi --arch amd64 --arch arm64 >/dev/null", T, D) ||
        !sh("python3 %s busybox %s/img-tamper --marker tamper-%d >/dev/null", T, D,
            (int)getpid()) ||
        !sh("python3 %s busybox %s/img-baddiff --marker baddiff --bad-diffid >/dev/null", T, D))
        return -1;
    const char *pushes[][2] = {{"busybox", "tessera/busybox:latest"},
                               {"multi", "tessera/multi:latest"},
                               {"tamper", "tessera/tamper:latest"},
                               {"baddiff", "tessera/baddiff:latest"}};
    for (size_t i = 0; i < TS_ARRAY_LEN(pushes); i++)
        if (!sh("python3 %s push %s/img-%s %s --insecure >/dev/null", T, D, pushes[i][0],
                ref(g_reg_port, pushes[i][1])))
            return -1;
    snprintf(g_ref_busybox, sizeof(g_ref_busybox), "%s", ref(g_reg_port, "tessera/busybox:latest"));
    char cmd[1024];
    snprintf(cmd, sizeof(cmd), "python3 %s digest %s/img-busybox", T, D);
    sh_out(g_busybox_digest, sizeof(g_busybox_digest), cmd);
    snprintf(cmd, sizeof(cmd),
             "python3 -c \"import json,sys; "
             "i=json.load(open('%s/img-multi/blobs/sha256/'+json.load(open('%s/img-multi/"
             "index.json'))['manifests'][0]['digest'][7:])); print(*(m['digest'] for m in "
             "i['manifests'] if m['platform']['architecture']=='%%s'))\"",
             D, D);
    char c2[1100];
    snprintf(c2, sizeof(c2), cmd, "amd64");
    sh_out(g_multi_amd64, sizeof(g_multi_amd64), c2);
    snprintf(c2, sizeof(c2), cmd, "arm64");
    sh_out(g_multi_arm64, sizeof(g_multi_arm64), c2);
    if (!digest_valid(g_busybox_digest, NULL) || !digest_valid(g_multi_arm64, NULL)) return -1;
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    stop(&g_proxy_pid);
    stop(&g_reg_pid);
    if (getenv("TESSERA_KEEP_STATE")) {
        fprintf(stderr, "kept %s\n", g_dir);
        return 0;
    }
    return unpack_remove_tree(g_dir) ? 0 : -1;
}

/* ---- tests -------------------------------------------------------------------------- */

typedef struct prog {
    int calls;
    int64_t done, total;
    int layers_done, layers_total;
    bool went_backwards;
} prog;

static void on_progress(const image_progress *pr, void *ctx)
{
    prog *p = ctx;
    if (pr->bytes_done < p->done || pr->layers_done < p->layers_done) p->went_backwards = true;
    p->calls++;
    p->done = pr->bytes_done;
    p->total = pr->bytes_total;
    p->layers_done = pr->layers_done;
    p->layers_total = pr->layers_total;
}

static bool strv_has(char **v, const char *want)
{
    for (; v && *v; v++)
        if (strcmp(*v, want) == 0) return true;
    return false;
}

static void test_pull_busybox(void **state)
{
    (void)state;
    image_store *s = store("cache-a", NULL, 2, NULL);
    int before = blob_gets();
    prog p = {0};
    ts_err err = {{0}};
    image_info *info = image_pull(s, g_ref_busybox, on_progress, &p, &err);
    if (!info) fail_msg("pull: %s", err.msg);
    assert_int_equal(blob_gets() - before, 3); /* config + 2 layers */
    assert_string_equal(info->reference, g_ref_busybox);
    assert_string_equal(info->digest, g_busybox_digest);
    assert_int_equal(info->n_layers, 2);
    char path[700];
    snprintf(path, sizeof(path), "%s/bin/busybox", info->layer_dirs[0]);
    struct stat st;
    assert_int_equal(stat(path, &st), 0);
    assert_true(st.st_mode & S_IXUSR);
    snprintf(path, sizeof(path), "%s/bin/sh", info->layer_dirs[0]);
    char target[64] = {0};
    assert_true(readlink(path, target, sizeof(target) - 1) > 0);
    assert_string_equal(target, "/bin/busybox");
    snprintf(path, sizeof(path), "%s/home/work", info->layer_dirs[0]);
    assert_int_equal(lstat(path, &st), 0);
    assert_int_equal(st.st_uid, 1000);
    snprintf(path, sizeof(path), "%s/tmp", info->layer_dirs[0]);
    assert_int_equal(lstat(path, &st), 0);
    assert_int_equal(st.st_mode & 07777, 01777);
    snprintf(path, sizeof(path), "%s/etc/tessera-image", info->layer_dirs[1]);
    assert_true(file_contains(path, "arch=amd64"));
    assert_non_null(strstr(info->layer_dirs[0], "/cache-a/layers/sha256/"));
    assert_true(
        strv_has(info->env, "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"));
    assert_non_null(info->cmd);
    assert_string_equal(info->cmd[0], "/bin/sh");
    assert_null(info->cmd[1]);
    assert_null(info->entrypoint);
    assert_string_equal(info->workdir, "/home/work");
    assert_null(info->user);
    assert_non_null(strstr(info->labels_json,
                           "\"ai.backend.service-ports\":\"echo:http:8080,tcpecho:tcp:9000\""));
    assert_non_null(strstr(info->labels_json, "\"ai.backend.runtime-path\":\"/bin/sh\""));
    assert_true(p.calls >= 4); /* the start, each of the 2 layers ready, the end */
    assert_true(p.total > 100000);
    assert_int_equal(p.done, p.total);
    assert_int_equal(p.layers_total, 2);
    assert_int_equal(p.layers_done, 2);
    assert_false(p.went_backwards);
    /* the cache layout of image.h */
    snprintf(path, sizeof(path), "%s/cache-a/blobs/sha256/%s", g_dir, digest_hex(g_busybox_digest));
    assert_int_equal(stat(path, &st), 0);
    snprintf(path, sizeof(path), "test -z \"$(ls -A %s/cache-a/tmp)\"", g_dir);
    assert_int_equal(system(path), 0);
    image_info_free(info);
    image_store_free(s);
}

static void test_second_pull_uses_cache(void **state)
{
    (void)state;
    image_store *s = store("cache-a", NULL, 2, NULL);
    int before = blob_gets();
    ts_err err = {{0}};
    prog p = {0};
    image_info *info = image_pull(s, g_ref_busybox, on_progress, &p, &err);
    if (!info) fail_msg("pull: %s", err.msg);
    assert_int_equal(blob_gets(), before);
    assert_string_equal(info->digest, g_busybox_digest);
    assert_int_equal(p.done, p.total);
    assert_int_equal(p.layers_done, 2);
    assert_int_equal(p.layers_total, 2);
    image_info_free(info);

    /* the same image by digest: no request at all is needed */
    char bydigest[300];
    snprintf(bydigest, sizeof(bydigest), "%s@%s", ref(g_reg_port, "tessera/busybox"),
             g_busybox_digest);
    info = image_pull(s, bydigest, NULL, NULL, &err);
    if (!info) fail_msg("pull by digest: %s", err.msg);
    image_info_free(info);
    assert_int_equal(blob_gets(), before);

    /* offline */
    info = image_lookup(s, g_ref_busybox, &err);
    if (!info) fail_msg("lookup: %s", err.msg);
    assert_string_equal(info->digest, g_busybox_digest);
    assert_int_equal(info->n_layers, 2);
    image_info_free(info);
    assert_null(image_lookup(s, ref(g_reg_port, "tessera/never-pulled:latest"), &err));
    assert_non_null(strstr(err.msg, "not in the cache"));
    image_store_free(s);
}

static void assert_owned(const char *dir, const char *rel, uid_t uid)
{
    char path[700];
    struct stat st;
    snprintf(path, sizeof(path), "%s/%s", dir, rel);
    if (lstat(path, &st) != 0) fail_msg("%s: %s", path, strerror(errno));
    if (st.st_uid != uid || st.st_gid != uid)
        fail_msg("%s is owned by %u:%u, want %u", path, (unsigned)st.st_uid, (unsigned)st.st_gid,
                 (unsigned)uid);
}

static void test_shifted_layers_are_a_cache_of_their_own(void **state)
{
    (void)state;
    /* cache-a holds busybox unpacked without a shift (test_pull_busybox) */
    image_store *s = store_shifted("cache-a", NULL, 2, NULL, 300000);
    ts_err err = {{0}};
    assert_null(image_lookup(s, g_ref_busybox, &err));
    assert_non_null(strstr(err.msg, "is not unpacked in the cache"));
    int before = blob_gets();
    char bydigest[300];
    snprintf(bydigest, sizeof(bydigest), "%s@%s", ref(g_reg_port, "tessera/busybox"),
             g_busybox_digest);
    image_info *info = image_pull(s, bydigest, NULL, NULL, &err);
    if (!info) fail_msg("shifted pull: %s", err.msg);
    assert_int_equal(blob_gets(), before); /* from the cached blobs */
    assert_int_equal(info->n_layers, 2);
    assert_non_null(strstr(info->layer_dirs[0], "/cache-a/layers-300000-65536/sha256/"));
    assert_owned(info->layer_dirs[0], "", 300000);
    assert_owned(info->layer_dirs[0], "bin/busybox", 300000);
    assert_owned(info->layer_dirs[0], "home/work", 301000);
    image_info_free(info);
    info = image_lookup(s, g_ref_busybox, &err);
    if (!info) fail_msg("shifted lookup: %s", err.msg);
    image_info_free(info);
    image_store_free(s);
    /* the unshifted layers are as they were */
    s = store("cache-a", NULL, 2, NULL);
    info = image_lookup(s, g_ref_busybox, &err);
    if (!info) fail_msg("lookup: %s", err.msg);
    assert_non_null(strstr(info->layer_dirs[0], "/cache-a/layers/sha256/"));
    assert_owned(info->layer_dirs[0], "home/work", 1000);
    assert_owned(info->layer_dirs[0], "bin/busybox", 0);
    image_info_free(info);
    image_store_free(s);
}

static void test_index_picks_architecture(void **state)
{
    (void)state;
    ts_err err = {{0}};
    /* amd64 from the index on cache-a: all blobs shared with busybox:latest */
    image_store *s = store("cache-a", "amd64", 2, NULL);
    int before = blob_gets();
    image_info *info = image_pull(s, ref(g_reg_port, "tessera/multi:latest"), NULL, NULL, &err);
    if (!info) fail_msg("pull amd64: %s", err.msg);
    assert_string_equal(info->digest, g_multi_amd64);
    assert_string_equal(info->architecture, "amd64");
    assert_int_equal(blob_gets(), before);
    image_info_free(info);
    image_store_free(s);

    s = store("cache-arm", "arm64", 2, NULL);
    info = image_pull(s, ref(g_reg_port, "tessera/multi:latest"), NULL, NULL, &err);
    if (!info) fail_msg("pull arm64: %s", err.msg);
    assert_string_equal(info->digest, g_multi_arm64);
    assert_string_equal(info->architecture, "arm64");
    char path[700];
    snprintf(path, sizeof(path), "%s/etc/tessera-image", info->layer_dirs[1]);
    assert_true(file_contains(path, "arch=arm64"));
    image_info_free(info);
    info = image_lookup(s, ref(g_reg_port, "tessera/multi:latest"), &err);
    if (!info) fail_msg("lookup arm64: %s", err.msg);
    assert_string_equal(info->digest, g_multi_arm64);
    image_info_free(info);
    /* a single-architecture amd64 image on an arm64 node */
    assert_null(image_pull(s, g_ref_busybox, NULL, NULL, &err));
    assert_non_null(strstr(err.msg, "this node runs linux/arm64"));
    image_store_free(s);

    s = store("cache-riscv", "riscv64", 2, NULL);
    assert_null(image_pull(s, ref(g_reg_port, "tessera/multi:latest"), NULL, NULL, &err));
    assert_non_null(
        strstr(err.msg, "no manifest for linux/riscv64 (available: linux/amd64, linux/arm64)"));
    image_store_free(s);
}

static void test_missing_image(void **state)
{
    (void)state;
    ts_err err = {{0}};
    image_store *s = store("cache-b", NULL, 1, NULL);
    const char *r = ref(g_reg_port, "tessera/nope:latest");
    assert_null(image_pull(s, r, NULL, NULL, &err));
    char want[300];
    snprintf(want, sizeof(want), "image not found: %s", r);
    assert_string_equal(err.msg, want);
    r = ref(g_reg_port, "tessera/busybox:no-such-tag");
    assert_null(image_pull(s, r, NULL, NULL, &err));
    assert_non_null(strstr(err.msg, "image not found: "));
    assert_null(image_pull(s, "tessera/busybox:latest", NULL, NULL, &err));
    assert_non_null(strstr(err.msg, "names no registry"));
    image_store_free(s);
}

static void test_digest_mismatch(void **state)
{
    (void)state;
    ts_err err = {{0}};
    /* corrupt the small layer of tessera/tamper in the registry's storage */
    char cmd[1024], layer[DIGEST_STRLEN];
    snprintf(cmd, sizeof(cmd),
             "python3 -c \"import json; d='%s/img-tamper'; i=json.load(open(d+'/index.json')); "
             "m=json.load(open(d+'/blobs/sha256/'+i['manifests'][0]['digest'][7:])); "
             "print(m['layers'][1]['digest'])\"",
             g_dir);
    sh_out(layer, sizeof(layer), cmd);
    assert_true(digest_valid(layer, NULL));
    const char *hex = digest_hex(layer);
    assert_true(sh("f=%s/registry/docker/registry/v2/blobs/sha256/%.2s/%s/data && test -f $f && "
                   "python3 -c \"import gzip,sys; "
                   "open(sys.argv[1],'wb').write(gzip.compress(b'tampered'))\" $f",
                   g_dir, hex, hex));
    image_store *s = store("cache-c", NULL, 1, NULL);
    assert_null(image_pull(s, ref(g_reg_port, "tessera/tamper:latest"), NULL, NULL, &err));
    char want[200];
    snprintf(want, sizeof(want), "digest mismatch for layer %s", layer);
    if (!strstr(err.msg, want)) fail_msg("got '%s', want '%s'", err.msg, want);
    char path[700];
    snprintf(path, sizeof(path), "%s/cache-c/blobs/sha256/%s", g_dir, hex);
    struct stat st;
    assert_int_equal(stat(path, &st), -1); /* nothing unverified kept */
    snprintf(path, sizeof(path), "test -z \"$(ls -A %s/cache-c/tmp)\"", g_dir);
    assert_int_equal(system(path), 0);

    /* a config whose diff_id does not match the layer */
    assert_null(image_pull(s, ref(g_reg_port, "tessera/baddiff:latest"), NULL, NULL, &err));
    assert_non_null(strstr(err.msg, "does not match the image config's diff_id"));
    assert_non_null(strstr(err.msg, "layer sha256:"));
    image_store_free(s);
}

static void test_registry_down(void **state)
{
    (void)state;
    ts_err err = {{0}};
    int port = free_port();
    image_store *s = store("cache-d", NULL, 2, NULL);
    int64_t t0 = ts_now_mono_ms();
    assert_null(image_pull(s, ref(port, "tessera/busybox:latest"), NULL, NULL, &err));
    int64_t ms = ts_now_mono_ms() - t0;
    char want[100];
    snprintf(want, sizeof(want), "registry unreachable: 127.0.0.1:%d: ", port);
    if (strncmp(err.msg, want, strlen(want)) != 0)
        fail_msg("got '%s', want '%s...'", err.msg, want);
    assert_true(ms >= 300); /* two retries: 100 ms + 200 ms of backoff */
    image_store_free(s);
}

static void test_bearer_auth(void **state)
{
    (void)state;
    ts_err err = {{0}};
    image_store *s = store("cache-e", NULL, 1, NULL);
    image_info *info = image_pull(s, ref(g_proxy_port, "tessera/busybox:latest"), NULL, NULL, &err);
    if (!info) fail_msg("anonymous token pull: %s", err.msg);
    assert_string_equal(info->digest, g_busybox_digest);
    image_info_free(info);
    assert_true(file_contains(
        path_in("authproxy.log"),
        "GET /token?scope=repository%3Atessera%2Fbusybox%3Apull&service=tessera-test"));

    /* another repository needs credentials */
    assert_null(image_pull(s, ref(g_proxy_port, "tessera/multi:latest"), NULL, NULL, &err));
    assert_non_null(strstr(err.msg, "credentials refused"));
    image_store_free(s);

    FILE *f = fopen(path_in("auth.json"), "w");
    fprintf(f, "{\"auths\": {\"127.0.0.1:%d\": {\"auth\": \"dGVzczpzZWNyZXQ=\"}}}\n", g_proxy_port);
    fclose(f);
    s = store("cache-e", NULL, 1, path_in("auth.json"));
    info = image_pull(s, ref(g_proxy_port, "tessera/multi:latest"), NULL, NULL, &err);
    if (!info) fail_msg("pull with credentials: %s", err.msg);
    assert_string_equal(info->digest, g_multi_amd64);
    image_info_free(info);
    image_store_free(s);

    f = fopen(path_in("auth-bad.json"), "w");
    fprintf(f,
            "{\"auths\": {\"127.0.0.1:%d\": {\"username\": \"tess\", \"password\": \"wrong\"}}}\n",
            g_proxy_port);
    fclose(f);
    s = store("cache-f", NULL, 1, path_in("auth-bad.json"));
    assert_null(image_pull(s, ref(g_proxy_port, "tessera/multi:latest"), NULL, NULL, &err));
    assert_non_null(strstr(err.msg, "credentials refused"));
    image_store_free(s);
}

typedef struct racer {
    image_store *s;
    image_info *info;
    ts_err err;
} racer;

static void *_race(void *arg)
{
    racer *r = arg;
    r->info = image_pull(r->s, ref(g_reg_port, "tessera/multi:latest"), NULL, NULL, &r->err);
    return NULL;
}

static void test_concurrent_pulls(void **state)
{
    (void)state;
    image_store *s = store("cache-g", NULL, 2, NULL);
    racer r[3] = {{.s = s}, {.s = s}, {.s = s}};
    pthread_t th[3];
    for (int i = 0; i < 3; i++)
        assert_int_equal(pthread_create(&th[i], NULL, _race, &r[i]), 0);
    for (int i = 0; i < 3; i++)
        pthread_join(th[i], NULL);
    for (int i = 0; i < 3; i++) {
        if (!r[i].info) fail_msg("racer %d: %s", i, r[i].err.msg);
        assert_string_equal(r[i].info->digest, g_multi_amd64);
        image_info_free(r[i].info);
    }
    char cmd[700];
    snprintf(
        cmd, sizeof(cmd),
        "test $(ls %s/cache-g/layers/sha256 | wc -l) -eq 2 && test -z \"$(ls -A %s/cache-g/tmp)\"",
        g_dir, g_dir);
    assert_int_equal(system(cmd), 0);
    image_store_free(s);
}

/* `test_image pull REF CACHE_DIR [ARCH]`: pull with the agent's code and
 * print the image as JSON (tests/integration/test_images.py uses it). */
static void _print_progress(const image_progress *pr, void *ctx)
{
    (void)ctx;
    fprintf(stderr, "progress %lld/%lld layers %d/%d\n", (long long)pr->bytes_done,
            (long long)pr->bytes_total, pr->layers_done, pr->layers_total);
}

static void _put_strv(const char *name, char **v, bool comma)
{
    printf("\"%s\":[", name);
    for (int i = 0; v && v[i]; i++) {
        json_t *j = json_string(v[i]);
        char *t = json_dumps(j, JSON_ENCODE_ANY);
        printf("%s%s", i ? "," : "", t);
        free(t);
        json_decref(j);
    }
    printf("]%s", comma ? "," : "");
}

static int pull_main(int argc, char **argv)
{
    if (argc < 4) {
        fprintf(stderr, "usage: %s pull REF CACHE_DIR [ARCH]\n", argv[0]);
        return 2;
    }
    image_store_opts o = {.cache_dir = argv[3],
                          .architecture = argc > 4 ? argv[4] : NULL,
                          .max_parallel_layers = 3,
                          .timeout_ms = 10000,
                          .retries = 2,
                          .insecure_http = true};
    ts_err err = {{0}};
    image_store *s = image_store_new(&o, &err);
    image_info *info = s ? image_pull(s, argv[2], _print_progress, NULL, &err) : NULL;
    if (!info) {
        fprintf(stderr, "error: %s\n", err.msg);
        image_store_free(s);
        return 1;
    }
    printf("{\"digest\":\"%s\",\"architecture\":\"%s\",", info->digest, info->architecture);
    _put_strv("layers", info->layer_dirs, true);
    _put_strv("env", info->env, true);
    _put_strv("cmd", info->cmd, true);
    printf("\"labels\":%s}\n", info->labels_json);
    image_info_free(info);
    image_store_free(s);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], "pull") == 0) return pull_main(argc, argv);
    const char *why = NULL;
    if (geteuid() != 0)
        why = "needs root (layers keep owners, whiteouts are device nodes)";
    else if (system("command -v docker-registry >/dev/null 2>&1") != 0)
        why = "no docker-registry";
    else if (system("command -v python3 >/dev/null 2>&1") != 0)
        why = "no python3";
    else if (access("/bin/busybox", X_OK) != 0)
        why = "no /bin/busybox (busybox-static)";
    const char *repo = getenv("TESSERA_REPO_DIR");
    snprintf(g_tool, sizeof(g_tool), "%s/tools/oci-image.py", repo ? repo : ".");
    if (!why && access(g_tool, R_OK) != 0)
        why = "tools/oci-image.py not found (run from the repository root)";
    if (why) {
        fprintf(stderr, "test_image: skipped: %s\n", why);
        return 0;
    }
    curl_global_init(CURL_GLOBAL_DEFAULT);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pull_busybox),
        cmocka_unit_test(test_second_pull_uses_cache),
        cmocka_unit_test(test_shifted_layers_are_a_cache_of_their_own),
        cmocka_unit_test(test_index_picks_architecture),
        cmocka_unit_test(test_missing_image),
        cmocka_unit_test(test_digest_mismatch),
        cmocka_unit_test(test_registry_down),
        cmocka_unit_test(test_bearer_auth),
        cmocka_unit_test(test_concurrent_pulls),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
