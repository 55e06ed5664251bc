/* oci_client.c: Docker Registry HTTP API v2 over libcurl (see the header).
 *
 * One request = one easy handle; handles share DNS and the connection cache
 * through a CURLSH guarded by mutexes, so concurrent layer downloads from the
 * same registry reuse kept-alive connections. */
#include "services/agent/oci_client.h"
#include "libcommon/log.h"
#include "services/agent/digest.h"

#include <curl/curl.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define MANIFEST_MAX ((size_t)4 * 1024 * 1024)
#define TOKEN_MAX ((size_t)1024 * 1024)
#define BACKOFF_MAX_MS 5000
#define MAX_TOKENS 32

static const char *const ACCEPT_MANIFESTS =
    "Accept: " MT_OCI_MANIFEST ", " MT_OCI_INDEX ", " MT_DOCKER_MANIFEST ", " MT_DOCKER_LIST;

/* References: libcommon/image_ref.c. */

/* ---- WWW-Authenticate ------------------------------------------------------------ */

void oci_challenge_free(oci_challenge *ch)
{
    free(ch->realm);
    free(ch->service);
    free(ch->scope);
    memset(ch, 0, sizeof(*ch));
}

bool oci_challenge_parse(const char *h, oci_challenge *out)
{
    memset(out, 0, sizeof(*out));
    while (*h == ' ' || *h == '\t')
        h++;
    size_t sl = 0;
    while (h[sl] && h[sl] != ' ' && sl < sizeof(out->scheme) - 1) {
        out->scheme[sl] = h[sl];
        sl++;
    }
    out->scheme[sl] = '\0';
    if (sl == 0) return false;
    const char *p = h + sl;
    while (*p) {
        while (*p == ' ' || *p == ',' || *p == '\t')
            p++;
        if (!*p) break;
        const char *k = p;
        while (*p && *p != '=' && *p != ',' && *p != ' ')
            p++;
        size_t kl = (size_t)(p - k);
        if (*p != '=') continue;
        p++;
        char *val;
        if (*p == '"') {
            p++;
            size_t cap = strlen(p) + 1, vl = 0;
            val = ts_malloc(cap);
            while (*p && *p != '"') {
                if (*p == '\\' && p[1]) p++;
                val[vl++] = *p++;
            }
            val[vl] = '\0';
            if (*p == '"') p++;
        } else {
            const char *v = p;
            while (*p && *p != ',' && *p != ' ')
                p++;
            val = ts_strndup(v, (size_t)(p - v));
        }
        char **slot = NULL;
        if (kl == 5 && strncasecmp(k, "realm", 5) == 0) slot = &out->realm;
        if (kl == 7 && strncasecmp(k, "service", 7) == 0) slot = &out->service;
        if (kl == 5 && strncasecmp(k, "scope", 5) == 0) slot = &out->scope;
        if (slot && !*slot)
            *slot = val;
        else
            free(val);
    }
    return true;
}

/* ---- client ------------------------------------------------------------------------ */

typedef struct token {
    char *repo;
    char *value;
    int64_t expires_ms; /* monotonic */
} token;

struct oci_client {
    char *host;
    char *base; /* "http(s)://host" */
    bool insecure_http;
    int timeout_ms;
    int retries;
    int backoff_ms;
    char *username;
    char *password;
    CURLSH *share;
    pthread_mutex_t locks[CURL_LOCK_DATA_LAST];
    pthread_mutex_t mu; /* tokens, basic */
    token tokens[MAX_TOKENS];
    int n_tokens;
    bool use_basic; /* the registry asked for Basic */
};

static pthread_once_t g_curl_once = PTHREAD_ONCE_INIT;
static char *g_ca_file; /* oci_client_set_ca_file */

bool oci_client_set_ca_file(const char *path, ts_err *err)
{
    free(g_ca_file);
    g_ca_file = NULL;
    if (!path || !*path) return true;
    if (access(path, R_OK) != 0) {
        ts_err_set(err, "agent.registry_ca_file %s: %s", path, strerror(errno));
        return false;
    }
    g_ca_file = ts_strdup(path);
    return true;
}
static void _curl_init(void)
{
    CURLcode rc = curl_global_init(CURL_GLOBAL_DEFAULT);
    if (rc != CURLE_OK) ts_panic("curl_global_init: %s", curl_easy_strerror(rc));
}

static void _share_lock(CURL *h, curl_lock_data data, curl_lock_access acc, void *ud)
{
    (void)h;
    (void)acc;
    oci_client *c = ud;
    pthread_mutex_lock(&c->locks[data]);
}

static void _share_unlock(CURL *h, curl_lock_data data, void *ud)
{
    (void)h;
    oci_client *c = ud;
    pthread_mutex_unlock(&c->locks[data]);
}

oci_client *oci_client_new(const oci_client_opts *o)
{
    pthread_once(&g_curl_once, _curl_init);
    oci_client *c = ts_calloc(1, sizeof(*c));
    c->host = ts_strdup(o->host);
    c->insecure_http = o->insecure_http;
    c->base = ts_asprintf("%s://%s", o->insecure_http ? "http" : "https", o->host);
    c->timeout_ms = o->timeout_ms > 0 ? o->timeout_ms : 30000;
    c->retries = o->retries >= 0 ? o->retries : 0;
    c->backoff_ms = o->backoff_ms > 0 ? o->backoff_ms : 250;
    c->username = o->username ? ts_strdup(o->username) : NULL;
    c->password = o->password ? ts_strdup(o->password) : NULL;
    for (int i = 0; i < CURL_LOCK_DATA_LAST; i++)
        pthread_mutex_init(&c->locks[i], NULL);
    pthread_mutex_init(&c->mu, NULL);
    c->share = curl_share_init();
    curl_share_setopt(c->share, CURLSHOPT_LOCKFUNC, _share_lock);
    curl_share_setopt(c->share, CURLSHOPT_UNLOCKFUNC, _share_unlock);
    curl_share_setopt(c->share, CURLSHOPT_USERDATA, c);
    curl_share_setopt(c->share, CURLSHOPT_SHARE, CURL_LOCK_DATA_DNS);
    curl_share_setopt(c->share, CURLSHOPT_SHARE, CURL_LOCK_DATA_CONNECT);
    return c;
}

void oci_client_free(oci_client *c)
{
    if (!c) return;
    curl_share_cleanup(c->share);
    for (int i = 0; i < CURL_LOCK_DATA_LAST; i++)
        pthread_mutex_destroy(&c->locks[i]);
    pthread_mutex_destroy(&c->mu);
    for (int i = 0; i < c->n_tokens; i++) {
        free(c->tokens[i].repo);
        free(c->tokens[i].value);
    }
    free(c->host);
    free(c->base);
    free(c->username);
    free(c->password);
    free(c);
}

static char *_token_get(oci_client *c, const char *repo)
{
    char *v = NULL;
    pthread_mutex_lock(&c->mu);
    int64_t now = ts_now_mono_ms();
    for (int i = 0; i < c->n_tokens; i++)
        if (strcmp(c->tokens[i].repo, repo) == 0 && c->tokens[i].expires_ms > now) {
            v = ts_strdup(c->tokens[i].value);
            break;
        }
    pthread_mutex_unlock(&c->mu);
    return v;
}

static void _token_put(oci_client *c, const char *repo, const char *value, int64_t ttl_s)
{
    pthread_mutex_lock(&c->mu);
    int slot = -1;
    for (int i = 0; i < c->n_tokens; i++)
        if (strcmp(c->tokens[i].repo, repo) == 0) slot = i;
    if (slot < 0) {
        if (c->n_tokens == MAX_TOKENS) {
            free(c->tokens[0].repo);
            free(c->tokens[0].value);
            memmove(&c->tokens[0], &c->tokens[1], (MAX_TOKENS - 1) * sizeof(token));
            c->n_tokens--;
        }
        slot = c->n_tokens++;
        c->tokens[slot].repo = ts_strdup(repo);
        c->tokens[slot].value = NULL;
    }
    free(c->tokens[slot].value);
    c->tokens[slot].value = ts_strdup(value);
    /* renew a little before the registry's deadline */
    int64_t ttl_ms = (ttl_s > 0 ? ttl_s : 60) * 1000;
    c->tokens[slot].expires_ms = ts_now_mono_ms() + (ttl_ms > 20000 ? ttl_ms - 10000 : ttl_ms / 2);
    pthread_mutex_unlock(&c->mu);
}

/* ---- one HTTP exchange ----------------------------------------------------------------- */

typedef struct sink {
    /* memory */
    char *buf;
    size_t len, cap, max;
    /* or file */
    int fd;
    digest_ctx d;
    int64_t limit; /* file: abort past this many bytes (-1: none) */
    bool too_big;
    oci_bytes_fn progress;
    void *ctx;
    int64_t reported; /* bytes reported to progress in this attempt */
    int write_errno;
} sink;

typedef struct resp {
    long status;
    char *www_auth;
    char *content_type;
    char *docker_digest;
} resp;

static void _resp_clear(resp *r)
{
    free(r->www_auth);
    free(r->content_type);
    free(r->docker_digest);
    memset(r, 0, sizeof(*r));
}

static size_t _on_header(char *b, size_t size, size_t n, void *ud)
{
    resp *r = ud;
    size_t len = size * n;
    if (len >= 5 && strncmp(b, "HTTP/", 5) == 0) {
        _resp_clear(r); /* a new response (after a redirect) */
        return len;
    }
    const char *colon = memchr(b, ':', len);
    if (!colon) return len;
    size_t kl = (size_t)(colon - b);
    const char *v = colon + 1;
    const char *end = b + len;
    while (v < end && (*v == ' ' || *v == '\t'))
        v++;
    while (end > v && (end[-1] == '\r' || end[-1] == '\n' || end[-1] == ' '))
        end--;
    char **slot = NULL;
    if (kl == 16 && strncasecmp(b, "WWW-Authenticate", kl) == 0) slot = &r->www_auth;
    if (kl == 12 && strncasecmp(b, "Content-Type", kl) == 0) slot = &r->content_type;
    if (kl == 21 && strncasecmp(b, "Docker-Content-Digest", kl) == 0) slot = &r->docker_digest;
    if (slot) {
        /* the first Bearer/Basic challenge wins; other headers: the last */
        if (slot == &r->www_auth && *slot) return len;
        free(*slot);
        *slot = ts_strndup(v, (size_t)(end - v));
    }
    return len;
}

static size_t _on_body(char *b, size_t size, size_t n, void *ud)
{
    sink *s = ud;
    size_t len = size * n;
    if (s->fd >= 0) {
        if (s->limit >= 0 && s->d.bytes + (int64_t)len > s->limit) {
            s->too_big = true;
            return 0;
        }
        size_t off = 0;
        while (off < len) {
            ssize_t w = write(s->fd, b + off, len - off);
            if (w < 0 && errno == EINTR) continue;
            if (w < 0) {
                s->write_errno = errno;
                return 0;
            }
            off += (size_t)w;
        }
        digest_update(&s->d, b, len);
        if (s->progress) {
            s->progress((int64_t)len, s->ctx);
            s->reported += (int64_t)len;
        }
        return len;
    }
    if (s->len + len > s->max) {
        s->too_big = true;
        return 0;
    }
    if (s->len + len + 1 > s->cap) {
        s->cap = (s->len + len + 1) * 2;
        if (s->cap > s->max + 1) s->cap = s->max + 1;
        s->buf = ts_realloc(s->buf, s->cap);
    }
    memcpy(s->buf + s->len, b, len);
    s->len += len;
    s->buf[s->len] = '\0';
    return len;
}

/* Restart a sink for another attempt. */
static bool _sink_reset(sink *s, ts_err *err)
{
    s->len = 0;
    s->too_big = false;
    if (s->buf) s->buf[0] = '\0';
    if (s->fd >= 0) {
        if (ftruncate(s->fd, 0) != 0 || lseek(s->fd, 0, SEEK_SET) != 0) {
            ts_err_set(err, "cannot rewind a temporary file: %s", strerror(errno));
            return false;
        }
        digest_init(&s->d);
        if (s->progress && s->reported) s->progress(-s->reported, s->ctx);
        s->reported = 0;
        s->write_errno = 0;
    }
    return true;
}

static void _sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
}

typedef struct req {
    const char *url;
    const char *accept; /* full "Accept: ..." line or NULL */
    const char *bearer; /* token or NULL */
    bool basic;         /* send the credentials as HTTP basic */
    const char *user, *pass;
} req;

/* One attempt. False: transport failure (err set, retryable). */
static bool _perform(oci_client *c, const req *q, sink *s, resp *r, ts_err *err)
{
    CURL *h = curl_easy_init();
    if (!h) ts_panic("curl_easy_init failed");
    char errbuf[CURL_ERROR_SIZE] = {0};
    struct curl_slist *hdrs = NULL;
    if (q->accept) hdrs = curl_slist_append(hdrs, q->accept);
    char *auth = NULL;
    if (q->bearer) {
        auth = ts_asprintf("Authorization: Bearer %s", q->bearer);
        hdrs = curl_slist_append(hdrs, auth);
    }
    curl_easy_setopt(h, CURLOPT_URL, q->url);
    curl_easy_setopt(h, CURLOPT_SHARE, c->share);
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, hdrs);
    curl_easy_setopt(h, CURLOPT_USERAGENT, "tessera-agent/" TESSERA_VERSION);
    if (g_ca_file) curl_easy_setopt(h, CURLOPT_CAINFO, g_ca_file);
    curl_easy_setopt(h, CURLOPT_FOLLOWLOCATION, 1L);
    curl_easy_setopt(h, CURLOPT_MAXREDIRS, 5L);
    curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(h, CURLOPT_REDIR_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, (long)c->timeout_ms);
    curl_easy_setopt(h, CURLOPT_LOW_SPEED_LIMIT, 1L);
    curl_easy_setopt(h, CURLOPT_LOW_SPEED_TIME,
                     (long)(c->timeout_ms < 1000 ? 1 : c->timeout_ms / 1000));
    curl_easy_setopt(h, CURLOPT_ERRORBUFFER, errbuf);
    curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, _on_header);
    curl_easy_setopt(h, CURLOPT_HEADERDATA, r);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, _on_body);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, s);
    if (q->basic && q->user) {
        curl_easy_setopt(h, CURLOPT_HTTPAUTH, (long)CURLAUTH_BASIC);
        curl_easy_setopt(h, CURLOPT_USERNAME, q->user);
        curl_easy_setopt(h, CURLOPT_PASSWORD, q->pass ? q->pass : "");
    }
    CURLcode rc = curl_easy_perform(h);
    long status = 0;
    curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
    r->status = status;
    bool ok = true;
    if (rc != CURLE_OK && !(rc == CURLE_WRITE_ERROR && (s->too_big || s->write_errno))) {
        ts_err_set(err, "%s", errbuf[0] ? errbuf : curl_easy_strerror(rc));
        ok = false;
    }
    curl_slist_free_all(hdrs);
    free(auth);
    curl_easy_cleanup(h);
    return ok;
}

static char *_urlencode(const char *s)
{
    CURL *h = curl_easy_init();
    char *e = curl_easy_escape(h, s, 0);
    char *out = ts_strdup(e ? e : "");
    curl_free(e);
    curl_easy_cleanup(h);
    return out;
}

/* Get a token for the challenge; stored for repo. */
static bool _fetch_token(oci_client *c, const char *repo, const oci_challenge *ch, ts_err *err)
{
    if (!ch->realm || strncmp(ch->realm, "http", 4) != 0) {
        ts_err_set(err, "registry %s: bearer challenge without a usable realm", c->host);
        return false;
    }
    char *default_scope = ts_asprintf("repository:%s:pull", repo);
    char *svc = ch->service ? _urlencode(ch->service) : NULL;
    char *scope = _urlencode(ch->scope ? ch->scope : default_scope);
    char *url = ts_asprintf("%s%sscope=%s%s%s", ch->realm, strchr(ch->realm, '?') ? "&" : "?",
                            scope, svc ? "&service=" : "", svc ? svc : "");
    free(default_scope);
    free(svc);
    free(scope);
    bool ok = false;
    sink s = {.fd = -1, .max = TOKEN_MAX};
    resp r = {0};
    req q = {.url = url, .basic = c->username != NULL, .user = c->username, .pass = c->password};
    ts_err terr = {{0}};
    int delay = c->backoff_ms;
    for (int attempt = 0;; attempt++) {
        _resp_clear(&r);
        if (!_sink_reset(&s, err)) goto out;
        bool transport_ok = _perform(c, &q, &s, &r, &terr);
        bool transient = !transport_ok || r.status == 429 || r.status >= 500;
        if (!transient || attempt >= c->retries) break;
        _sleep_ms(delay);
        delay = delay * 2 > BACKOFF_MAX_MS ? BACKOFF_MAX_MS : delay * 2;
    }
    if (terr.msg[0] && r.status == 0) {
        ts_err_set(err, "registry unreachable: token server %s: %s", ch->realm, terr.msg);
        goto out;
    }
    if (r.status != 200) {
        ts_err_set(err, "registry %s: the token server %s answered HTTP %ld%s", c->host, ch->realm,
                   r.status, r.status == 401 || r.status == 403 ? " (credentials refused)" : "");
        goto out;
    }
    json_error_t je;
    json_t *j = json_loadb(s.buf ? s.buf : "", s.len, 0, &je);
    const char *tok = json_string_value(json_object_get(j, "token"));
    if (!tok || !*tok) tok = json_string_value(json_object_get(j, "access_token"));
    if (!tok || !*tok) {
        ts_err_set(err, "registry %s: the token server %s sent no token", c->host, ch->realm);
        json_decref(j);
        goto out;
    }
    _token_put(c, repo, tok, (int64_t)json_integer_value(json_object_get(j, "expires_in")));
    json_decref(j);
    ok = true;
out:
    _resp_clear(&r);
    free(s.buf);
    free(url);
    return ok;
}

/* GET path with retries and authentication. True when a response arrived
 * (any status: *r holds it); false (err set) when none did. */
static bool _get(oci_client *c, const char *repo, const char *path, const char *accept, sink *s,
                 resp *r, ts_err *err)
{
    char *url = ts_asprintf("%s%s", c->base, path);
    int delay = c->backoff_ms;
    bool authed = false, ok = false;
    ts_err terr = {{0}};
    for (int attempt = 0;;) {
        char *bearer = _token_get(c, repo);
        pthread_mutex_lock(&c->mu);
        bool basic = c->use_basic;
        pthread_mutex_unlock(&c->mu);
        req q = {.url = url,
                 .accept = accept,
                 .bearer = bearer,
                 .basic = basic && !bearer,
                 .user = c->username,
                 .pass = c->password};
        _resp_clear(r);
        if (!_sink_reset(s, err)) {
            free(bearer);
            goto out;
        }
        terr.msg[0] = '\0';
        bool transport_ok = _perform(c, &q, s, r, &terr);
        free(bearer);
        if (transport_ok && r->status == 401 && r->www_auth && !authed) {
            authed = true;
            oci_challenge ch;
            if (oci_challenge_parse(r->www_auth, &ch) && strcasecmp(ch.scheme, "Bearer") == 0) {
                bool got = _fetch_token(c, repo, &ch, err);
                oci_challenge_free(&ch);
                if (!got) goto out;
                continue;
            }
            if (strcasecmp(ch.scheme, "Basic") == 0 && c->username) {
                oci_challenge_free(&ch);
                pthread_mutex_lock(&c->mu);
                c->use_basic = true;
                pthread_mutex_unlock(&c->mu);
                continue;
            }
            oci_challenge_free(&ch);
        }
        bool transient = !transport_ok || r->status == 429 || r->status >= 500;
        if (!transient) {
            ok = true;
            break;
        }
        if (attempt >= c->retries) {
            if (!transport_ok)
                ts_err_set(err, "registry unreachable: %s: %s", c->host, terr.msg);
            else
                ts_err_set(err, "registry unreachable: %s: HTTP %ld for GET %s", c->host, r->status,
                           path);
            break;
        }
        TLOG_WARN("registry request failed; retrying",
                  "registry=%s path=%s attempt=%d delay_ms=%d error=\"%s\"", c->host, path,
                  attempt + 1, delay, transport_ok ? "HTTP error" : terr.msg);
        _sleep_ms(delay);
        delay = delay * 2 > BACKOFF_MAX_MS ? BACKOFF_MAX_MS : delay * 2;
        attempt++;
    }
out:
    free(url);
    return ok;
}

static void _http_error(oci_client *c, const char *what, long status, ts_err *err)
{
    if (status == 401 || status == 403)
        ts_err_set(err, "registry %s: access to %s denied (HTTP %ld)", c->host, what, status);
    else
        ts_err_set(err, "registry %s: HTTP %ld for %s", c->host, status, what);
}

/* ---- manifests ---------------------------------------------------------------------- */

void oci_manifest_free(oci_manifest *m)
{
    if (!m) return;
    free(m->body);
    free(m->media_type);
    free(m->digest);
    memset(m, 0, sizeof(*m));
}

bool oci_client_get_manifest(oci_client *c, const char *repo, const char *ref, oci_manifest *out,
                             long *status, ts_err *err)
{
    memset(out, 0, sizeof(*out));
    *status = 0;
    char *path = ts_asprintf("/v2/%s/manifests/%s", repo, ref);
    sink s = {.fd = -1, .max = MANIFEST_MAX};
    resp r = {0};
    bool ok = false;
    if (!_get(c, repo, path, ACCEPT_MANIFESTS, &s, &r, err)) goto out;
    *status = r.status;
    if (s.too_big) {
        ts_err_set(err, "registry %s: manifest %s:%s is larger than %zu bytes", c->host, repo, ref,
                   MANIFEST_MAX);
        goto out;
    }
    if (r.status == 404) {
        ts_err_set(err, "manifest %s:%s not found on %s", repo, ref, c->host);
        goto out;
    }
    if (r.status != 200) {
        char *what = ts_asprintf("manifest %s:%s", repo, ref);
        _http_error(c, what, r.status, err);
        free(what);
        goto out;
    }
    char d[DIGEST_STRLEN];
    digest_buf(s.buf ? s.buf : "", s.len, d);
    if (strncmp(ref, "sha256:", 7) == 0 && strcmp(ref, d) != 0) {
        ts_err_set(err, "digest mismatch for manifest %s (got %s)", ref, d);
        goto out;
    }
    if (r.docker_digest && strncmp(r.docker_digest, "sha256:", 7) == 0 &&
        strcmp(r.docker_digest, d) != 0) {
        ts_err_set(err,
                   "digest mismatch for manifest %s:%s: the registry says %s, the content is %s",
                   repo, ref, r.docker_digest, d);
        goto out;
    }
    out->body = s.buf ? s.buf : ts_strdup("");
    s.buf = NULL;
    out->len = s.len;
    out->digest = ts_strdup(d);
    if (r.content_type) {
        char *semi = strchr(r.content_type, ';');
        if (semi) *semi = '\0';
        out->media_type = ts_strdup(r.content_type);
    }
    ok = true;
out:
    _resp_clear(&r);
    free(s.buf);
    free(path);
    return ok;
}

/* ---- blobs --------------------------------------------------------------------------- */

bool oci_client_fetch_blob(oci_client *c, const char *repo, const char *digest, int64_t size,
                           const char *what, const char *dest_path, const char *tmp_dir,
                           oci_bytes_fn progress, void *ctx, ts_err *err)
{
    char *tmp = ts_asprintf("%s/blob-XXXXXX", tmp_dir);
    int fd = mkostemp(tmp, O_CLOEXEC);
    if (fd < 0) {
        ts_err_set(err, "cannot create a temporary file in %s: %s", tmp_dir, strerror(errno));
        free(tmp);
        return false;
    }
    char *path = ts_asprintf("/v2/%s/blobs/%s", repo, digest);
    sink s = {.fd = fd, .limit = size >= 0 ? size : -1, .progress = progress, .ctx = ctx};
    digest_init(&s.d);
    resp r = {0};
    bool ok = false;
    if (!_get(c, repo, path, NULL, &s, &r, err)) goto out;
    if (r.status == 404) {
        ts_err_set(err, "%s %s not found in %s on %s", what, digest, repo, c->host);
        goto out;
    }
    if (r.status != 200) {
        char *w = ts_asprintf("%s %s", what, digest);
        _http_error(c, w, r.status, err);
        free(w);
        goto out;
    }
    if (s.write_errno) {
        ts_err_set(err, "%s %s: writing %s: %s", what, digest, tmp, strerror(s.write_errno));
        goto out;
    }
    char got[DIGEST_STRLEN];
    int64_t n = s.d.bytes;
    digest_final(&s.d, got);
    if (s.too_big || (size >= 0 && n != size) || strcmp(got, digest) != 0) {
        if (s.too_big)
            ts_err_set(
                err,
                "digest mismatch for %s %s (the registry sent more than the %lld bytes declared)",
                what, digest, (long long)size);
        else
            ts_err_set(err, "digest mismatch for %s %s (got %s, %lld bytes)", what, digest, got,
                       (long long)n);
        goto out;
    }
    if (fsync(fd) != 0 || rename(tmp, dest_path) != 0) {
        ts_err_set(err, "%s %s: cannot store %s: %s", what, digest, dest_path, strerror(errno));
        goto out;
    }
    ok = true;
out:
    close(fd);
    if (!ok) unlink(tmp);
    _resp_clear(&r);
    free(path);
    free(tmp);
    return ok;
}
