/* svcauth.c: service credentials (see svcauth.h for the format). */
#include "libcommon/svcauth.h"

#include "libcommon/log.h"
#include "libcommon/metrics.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sodium.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define SVCAUTH_SIG_B64_LEN 88   /* 64 bytes, base64 with padding */
#define SVCAUTH_NONCE_BYTES 12   /* random per request: equal requests sign differently */
#define SVCAUTH_NONCE_B64_LEN 16 /* 12 bytes, base64 */
#define SVCAUTH_KEY_B64_MAX 64
#define SVCAUTH_CONTEXT "tessera-service-auth-v1"
#define SVCAUTH_KEY_MAGIC "tessera-service-key"

static const struct {
    const char *name;
    unsigned bit;
} SERVICES[] = {
    {"gateway", SVCAUTH_GATEWAY},     {"auth", SVCAUTH_AUTH},   {"registry", SVCAUTH_REGISTRY},
    {"scheduler", SVCAUTH_SCHEDULER}, {"agent", SVCAUTH_AGENT}, {"vfolder", SVCAUTH_VFOLDER},
    {"wsproxy", SVCAUTH_WSPROXY},
};

unsigned svcauth_service_bit(const char *name)
{
    for (size_t i = 0; i < TS_ARRAY_LEN(SERVICES); i++)
        if (strcmp(SERVICES[i].name, name) == 0) return SERVICES[i].bit;
    return 0;
}

static const char *_service_name(unsigned bit)
{
    for (size_t i = 0; i < TS_ARRAY_LEN(SERVICES); i++)
        if (SERVICES[i].bit == bit) return SERVICES[i].name;
    return NULL;
}

/* ---- the loaded keys --------------------------------------------------------- */

typedef struct trusted {
    unsigned service; /* bit */
    unsigned char pk[crypto_sign_PUBLICKEYBYTES];
} trusted;

typedef struct keyring {
    char name[SVCAUTH_NAME_MAX + 1];
    bool has_key;
    unsigned char sk[crypto_sign_SECRETKEYBYTES];
    trusted *trust;
    size_t n_trust;
    int64_t max_skew_ms;
} keyring;

static pthread_rwlock_t g_lock = PTHREAD_RWLOCK_INITIALIZER;
static keyring g_ring = {.max_skew_ms = 30000};

static struct {
    _Atomic uint64_t accepted, missing, malformed, unknown_service, expired, bad_signature,
        replayed, forbidden;
} g_stats;

static pthread_once_t g_sodium_once = PTHREAD_ONCE_INIT;
static void _sodium_init(void)
{
    if (sodium_init() < 0) ts_panic("libsodium failed to initialize");
}

static bool _name_ok(const char *s, size_t n)
{
    if (n == 0 || n > SVCAUTH_NAME_MAX) return false;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '_'))
            return false;
    }
    return true;
}

static bool _b64_decode(const char *s, size_t n, unsigned char *out, size_t want)
{
    size_t got = 0;
    if (sodium_base642bin(out, want, s, n, NULL, &got, NULL, sodium_base64_VARIANT_ORIGINAL) != 0)
        return false;
    return got == want;
}

/* Split a line into at most max words at blanks; returns how many. */
static int _words(char *line, char **w, int max)
{
    int n = 0;
    char *save = NULL;
    for (char *t = strtok_r(line, " \t\r\n", &save); t; t = strtok_r(NULL, " \t\r\n", &save)) {
        if (n == max) return max + 1;
        w[n++] = t;
    }
    return n;
}

static char *_read_small_file(const char *path, size_t max, ts_err *err)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        ts_err_set(err, "%s: %s", path, strerror(errno));
        return NULL;
    }
    char *buf = ts_malloc(max + 1);
    size_t len = 0;
    for (;;) {
        ssize_t r = read(fd, buf + len, max - len);
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) {
            ts_err_set(err, "%s: %s", path, strerror(errno));
            free(buf);
            close(fd);
            return NULL;
        }
        if (r == 0) break;
        len += (size_t)r;
        if (len == max) {
            ts_err_set(err, "%s: larger than %zu bytes", path, max);
            free(buf);
            close(fd);
            return NULL;
        }
    }
    close(fd);
    buf[len] = '\0';
    return buf;
}

/* Parse a key file into name and secret key. */
static bool _load_key(const char *path, char name[SVCAUTH_NAME_MAX + 1],
                      unsigned char sk[crypto_sign_SECRETKEYBYTES], ts_err *err)
{
    struct stat st;
    if (stat(path, &st) == 0 && (st.st_mode & 077))
        TLOG_WARN("service key file is readable by others; chmod 600 it", "path=%s", path);
    char *text = _read_small_file(path, 1024, err);
    if (!text) return false;
    char *w[5];
    int n = _words(text, w, 4);
    unsigned char seed[crypto_sign_SEEDBYTES];
    bool ok = n == 4 && strcmp(w[0], SVCAUTH_KEY_MAGIC) == 0 && strcmp(w[1], "v1") == 0 &&
              _name_ok(w[2], strlen(w[2])) && _b64_decode(w[3], strlen(w[3]), seed, sizeof(seed));
    if (!ok) {
        ts_err_set(err,
                   "%s: not a service key file (want one line \"%s v1 <service> <base64 "
                   "seed>\")",
                   path, SVCAUTH_KEY_MAGIC);
    } else {
        ts_strlcpy(name, w[2], SVCAUTH_NAME_MAX + 1);
        unsigned char pk[crypto_sign_PUBLICKEYBYTES];
        crypto_sign_seed_keypair(pk, sk, seed);
    }
    sodium_memzero(seed, sizeof(seed));
    sodium_memzero(text, strlen(text));
    free(text);
    return ok;
}

static bool _load_trust(const char *path, trusted **out, size_t *n_out, ts_err *err)
{
    char *text = _read_small_file(path, 1 << 20, err);
    if (!text) return false;
    trusted *list = NULL;
    size_t n = 0, cap = 0;
    int lineno = 0;
    bool ok = true;
    /* line by line (not strtok: line numbers for messages count empty lines) */
    for (char *line = text; ok && line && *line;) {
        char *next = strchr(line, '\n');
        if (next) *next++ = '\0';
        lineno++;
        char *hash = strchr(line, '#');
        if (hash) *hash = '\0';
        char *w[3];
        int nw = _words(line, w, 2);
        if (nw == 0) {
            line = next;
            continue;
        }
        trusted t = {0};
        if (nw != 2 || !_name_ok(w[0], strlen(w[0])) ||
            !_b64_decode(w[1], strlen(w[1]), t.pk, sizeof(t.pk))) {
            ts_err_set(err, "%s line %d: want \"<service> <base64 Ed25519 public key>\"", path,
                       lineno);
            ok = false;
            break;
        }
        t.service = svcauth_service_bit(w[0]);
        if (!t.service) {
            TLOG_WARN("trust file names a service no rule can name; ignored",
                      "path=%s line=%d service=%s", path, lineno, w[0]);
        } else {
            if (n == cap) {
                cap = cap ? cap * 2 : 16;
                list = ts_realloc(list, cap * sizeof(*list));
            }
            list[n++] = t;
        }
        line = next;
    }
    free(text);
    if (!ok) {
        free(list);
        return false;
    }
    *out = list;
    *n_out = n;
    return true;
}

bool svcauth_load(const char *name, const char *key_file, const char *trust_file,
                  int64_t max_skew_ms, ts_err *err)
{
    pthread_once(&g_sodium_once, _sodium_init);
    keyring r = {.max_skew_ms = max_skew_ms > 0 ? max_skew_ms : 30000};
    ts_strlcpy(r.name, name, sizeof(r.name));
    if (key_file && *key_file) {
        char kname[SVCAUTH_NAME_MAX + 1];
        if (!_load_key(key_file, kname, r.sk, err)) return false;
        if (strcmp(kname, name) != 0) {
            ts_err_set(err, "%s is a key of service '%s', not of '%s'", key_file, kname, name);
            sodium_memzero(r.sk, sizeof(r.sk));
            return false;
        }
        r.has_key = true;
    }
    if (trust_file && *trust_file && !_load_trust(trust_file, &r.trust, &r.n_trust, err)) {
        sodium_memzero(r.sk, sizeof(r.sk));
        return false;
    }
    pthread_rwlock_wrlock(&g_lock);
    trusted *old = g_ring.trust;
    g_ring = r;
    pthread_rwlock_unlock(&g_lock);
    free(old);
    sodium_memzero(r.sk, sizeof(r.sk));
    return true;
}

void svcauth_reset(void)
{
    pthread_rwlock_wrlock(&g_lock);
    free(g_ring.trust);
    sodium_memzero(&g_ring, sizeof(g_ring));
    g_ring.max_skew_ms = 30000;
    pthread_rwlock_unlock(&g_lock);
}

bool svcauth_can_sign(void)
{
    pthread_rwlock_rdlock(&g_lock);
    bool k = g_ring.has_key;
    pthread_rwlock_unlock(&g_lock);
    return k;
}

size_t svcauth_trusted_keys(void)
{
    pthread_rwlock_rdlock(&g_lock);
    size_t n = g_ring.n_trust;
    pthread_rwlock_unlock(&g_lock);
    return n;
}

static void _public_line(const char *name, const unsigned char *pk, FILE *out)
{
    char b64[SVCAUTH_KEY_B64_MAX];
    sodium_bin2base64(b64, sizeof(b64), pk, crypto_sign_PUBLICKEYBYTES,
                      sodium_base64_VARIANT_ORIGINAL);
    fprintf(out, "%s %s\n", name, b64);
}

bool svcauth_new_key(const char *name, const char *path, FILE *out, ts_err *err)
{
    pthread_once(&g_sodium_once, _sodium_init);
    if (!_name_ok(name, strlen(name))) {
        ts_err_set(err, "'%s' is not a service name (a-z, 0-9, '-', '_', up to %d)", name,
                   SVCAUTH_NAME_MAX);
        return false;
    }
    unsigned char seed[crypto_sign_SEEDBYTES], pk[crypto_sign_PUBLICKEYBYTES],
        sk[crypto_sign_SECRETKEYBYTES];
    randombytes_buf(seed, sizeof(seed));
    crypto_sign_seed_keypair(pk, sk, seed);
    char b64[SVCAUTH_KEY_B64_MAX];
    sodium_bin2base64(b64, sizeof(b64), seed, sizeof(seed), sodium_base64_VARIANT_ORIGINAL);
    sodium_memzero(seed, sizeof(seed));
    sodium_memzero(sk, sizeof(sk));
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd < 0) {
        ts_err_set(err, "%s: %s%s", path, strerror(errno),
                   errno == EEXIST ? " (an existing key is never overwritten)" : "");
        sodium_memzero(b64, sizeof(b64));
        return false;
    }
    char *line = ts_asprintf("%s v1 %s %s\n", SVCAUTH_KEY_MAGIC, name, b64);
    sodium_memzero(b64, sizeof(b64));
    size_t len = strlen(line), off = 0;
    bool ok = true;
    while (off < len) {
        ssize_t w = write(fd, line + off, len - off);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) {
            ok = false;
            break;
        }
        off += (size_t)w;
    }
    if (ok && fsync(fd) != 0) ok = false;
    if (!ok) ts_err_set(err, "%s: %s", path, strerror(errno));
    close(fd);
    sodium_memzero(line, len);
    free(line);
    if (!ok) {
        unlink(path);
        return false;
    }
    _public_line(name, pk, out);
    return true;
}

bool svcauth_public_line(const char *path, FILE *out, ts_err *err)
{
    pthread_once(&g_sodium_once, _sodium_init);
    char name[SVCAUTH_NAME_MAX + 1];
    unsigned char sk[crypto_sign_SECRETKEYBYTES], pk[crypto_sign_PUBLICKEYBYTES];
    if (!_load_key(path, name, sk, err)) return false;
    crypto_sign_ed25519_sk_to_pk(pk, sk);
    sodium_memzero(sk, sizeof(sk));
    _public_line(name, pk, out);
    return true;
}

/* ---- the signed message ------------------------------------------------------- */

/* The bytes signed (heap, *len its length). */
static char *_message(const char *service, int64_t unix_ms, const char *nonce, const char *method,
                      const char *target, size_t target_len, const char *caller,
                      const char *access_key, const void *body, size_t body_len, size_t *len)
{
    unsigned char h[crypto_hash_sha256_BYTES];
    crypto_hash_sha256(h, body ? body : (const void *)"", body ? body_len : 0);
    char hex[crypto_hash_sha256_BYTES * 2 + 1];
    sodium_bin2hex(hex, sizeof(hex), h, sizeof(h));
    char *m = ts_asprintf("%s\n%s\n%lld\n%s\n%s\n%.*s\n%s\n%s\n%s", SVCAUTH_CONTEXT, service,
                          (long long)unix_ms, nonce, method, (int)target_len, target,
                          caller ? caller : "", access_key ? access_key : "", hex);
    *len = strlen(m);
    return m;
}

const char *svcauth_url_target(const char *url, size_t *len)
{
    const char *p = strstr(url, "://");
    p = p ? p + 3 : url;
    p += strcspn(p, "/?#"); /* past the authority */
    if (*p != '/') {        /* "http://host": curl asks for "/" */
        *len = 1;
        return "/";
    }
    *len = strcspn(p, "#");
    return p;
}

bool svcauth_sign_with(int64_t unix_ms, const char *nonce, const char *method, const char *target,
                       size_t target_len, const char *caller, const char *access_key,
                       const void *body, size_t body_len, char line[SVCAUTH_HEADER_LINE_MAX])
{
    pthread_rwlock_rdlock(&g_lock);
    if (!g_ring.has_key) {
        pthread_rwlock_unlock(&g_lock);
        return false;
    }
    size_t mlen;
    char *m = _message(g_ring.name, unix_ms, nonce, method, target, target_len, caller, access_key,
                       body, body_len, &mlen);
    unsigned char sig[crypto_sign_BYTES];
    crypto_sign_detached(sig, NULL, (const unsigned char *)m, mlen, g_ring.sk);
    char b64[SVCAUTH_SIG_B64_LEN + 1];
    sodium_bin2base64(b64, sizeof(b64), sig, sizeof(sig), sodium_base64_VARIANT_ORIGINAL);
    snprintf(line, SVCAUTH_HEADER_LINE_MAX, "%s: v1 %s %lld %s %s", SVCAUTH_HEADER, g_ring.name,
             (long long)unix_ms, nonce, b64);
    pthread_rwlock_unlock(&g_lock);
    free(m);
    return true;
}

bool svcauth_sign_at(int64_t unix_ms, const char *method, const char *target, size_t target_len,
                     const char *caller, const char *access_key, const void *body, size_t body_len,
                     char line[SVCAUTH_HEADER_LINE_MAX])
{
    pthread_once(&g_sodium_once, _sodium_init);
    unsigned char raw[SVCAUTH_NONCE_BYTES];
    randombytes_buf(raw, sizeof(raw));
    char nonce[SVCAUTH_NONCE_B64_LEN + 1];
    sodium_bin2base64(nonce, sizeof(nonce), raw, sizeof(raw), sodium_base64_VARIANT_URLSAFE);
    return svcauth_sign_with(unix_ms, nonce, method, target, target_len, caller, access_key, body,
                             body_len, line);
}

bool svcauth_sign(const char *method, const char *target, size_t target_len, const char *caller,
                  const char *access_key, const void *body, size_t body_len,
                  char line[SVCAUTH_HEADER_LINE_MAX])
{
    return svcauth_sign_at(ts_now_wall_ms(), method, target, target_len, caller, access_key, body,
                           body_len, line);
}

/* ---- replays ------------------------------------------------------------------- */

/* Signatures seen, until their time is outside the window: an open-addressing
 * set keyed by the signature's first 16 bytes, grown when half full after the
 * expired ones are dropped. */
typedef struct seen_entry {
    uint64_t k0, k1;  /* 0, 0: empty */
    int64_t until_ms; /* wall clock */
} seen_entry;

static pthread_mutex_t g_seen_lock = PTHREAD_MUTEX_INITIALIZER;
static seen_entry *g_seen;
static size_t g_seen_cap, g_seen_n;

static void _seen_put(seen_entry *tab, size_t cap, const seen_entry *e)
{
    size_t i = (size_t)(e->k0 ^ (e->k1 >> 7)) & (cap - 1);
    while (tab[i].k0 || tab[i].k1)
        i = (i + 1) & (cap - 1);
    tab[i] = *e;
}

/* Rebuild with only the live entries, in a table at least twice their count. */
static void _seen_rebuild(int64_t now_ms)
{
    size_t live = 0;
    for (size_t i = 0; i < g_seen_cap; i++)
        if ((g_seen[i].k0 || g_seen[i].k1) && g_seen[i].until_ms >= now_ms) live++;
    size_t cap = 1024;
    while (cap < (live + 1) * 4)
        cap *= 2;
    seen_entry *tab = ts_calloc(cap, sizeof(*tab));
    for (size_t i = 0; i < g_seen_cap; i++)
        if ((g_seen[i].k0 || g_seen[i].k1) && g_seen[i].until_ms >= now_ms)
            _seen_put(tab, cap, &g_seen[i]);
    free(g_seen);
    g_seen = tab;
    g_seen_cap = cap;
    g_seen_n = live;
}

/* True when the signature is new (and remembers it until until_ms). */
static bool _seen_first(const unsigned char *sig, int64_t until_ms, int64_t now_ms)
{
    seen_entry e = {.until_ms = until_ms};
    memcpy(&e.k0, sig, 8);
    memcpy(&e.k1, sig + 8, 8);
    if (!e.k0 && !e.k1) e.k1 = 1;
    pthread_mutex_lock(&g_seen_lock);
    if (g_seen_cap == 0 || (g_seen_n + 1) * 2 > g_seen_cap) _seen_rebuild(now_ms);
    size_t i = (size_t)(e.k0 ^ (e.k1 >> 7)) & (g_seen_cap - 1);
    bool fresh = true;
    while (g_seen[i].k0 || g_seen[i].k1) {
        if (g_seen[i].k0 == e.k0 && g_seen[i].k1 == e.k1) {
            fresh = g_seen[i].until_ms < now_ms; /* an expired entry no longer counts */
            if (fresh) g_seen[i].until_ms = until_ms;
            break;
        }
        i = (i + 1) & (g_seen_cap - 1);
    }
    if (!(g_seen[i].k0 || g_seen[i].k1)) {
        g_seen[i] = e;
        g_seen_n++;
    }
    pthread_mutex_unlock(&g_seen_lock);
    return fresh;
}

/* ---- the guard ------------------------------------------------------------------ */

static bool _always_public(const char *path)
{
    return strcmp(path, "/healthz") == 0 || strcmp(path, "/readyz") == 0 ||
           strcmp(path, "/metrics") == 0;
}

static bool _prefix_matches(const char *prefix, const char *path)
{
    size_t n = strlen(prefix);
    if (strncmp(prefix, path, n) != 0) return false;
    return path[n] == '\0' || path[n] == '/' || path[n] == '?' || (n && prefix[n - 1] == '/');
}

static const svcauth_rule *_rule_for(const svcauth_table *t, const char *method, const char *path)
{
    for (size_t i = 0; t && i < t->n_rules; i++) {
        const svcauth_rule *r = &t->rules[i];
        if ((strcmp(r->method, "*") == 0 || strcmp(r->method, method) == 0) &&
            _prefix_matches(r->prefix, path))
            return r;
    }
    return NULL;
}

static void _refuse(http_resp *resp, _Atomic uint64_t *counter, int status, const http_req *req,
                    const char *why, const char *service)
{
    atomic_fetch_add(counter, 1);
    char q[200];
    TLOG_WARN("internal call refused", "status=%d method=%s path=%s service=%s reason=%s", status,
              req->method, req->path, service ? service : "-", tlog_quote(q, sizeof(q), why));
    if (status == 403)
        http_problem(resp, 403, "forbidden", "Forbidden", "%s", why);
    else
        http_problem(resp, 401, "auth-failed", "Service Authentication Failed", "%s", why);
}

static bool _nonce_ok(const char *s, size_t n)
{
    if (n < 8 || n > 64) return false;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '-' || c == '_'))
            return false;
    }
    return true;
}

/* Parse "v1 <service> <ms> <nonce> <b64>" into its parts. */
static bool _parse(const char *v, char name[SVCAUTH_NAME_MAX + 1], int64_t *ms, char nonce[65],
                   unsigned char sig[crypto_sign_BYTES])
{
    if (strncmp(v, "v1 ", 3) != 0) return false;
    const char *p = v + 3;
    size_t n = strcspn(p, " ");
    if (!_name_ok(p, n) || p[n] != ' ') return false;
    memcpy(name, p, n);
    name[n] = '\0';
    p += n + 1;
    n = strcspn(p, " ");
    if (n == 0 || n > 15 || p[n] != ' ') return false;
    int64_t t = 0;
    for (size_t i = 0; i < n; i++) {
        if (p[i] < '0' || p[i] > '9') return false;
        t = t * 10 + (p[i] - '0');
    }
    *ms = t;
    p += n + 1;
    n = strcspn(p, " ");
    if (!_nonce_ok(p, n) || p[n] != ' ') return false;
    memcpy(nonce, p, n);
    nonce[n] = '\0';
    p += n + 1;
    n = strlen(p);
    return n == SVCAUTH_SIG_B64_LEN && _b64_decode(p, n, sig, crypto_sign_BYTES);
}

bool svcauth_guard(http_req *req, http_resp *resp, void *ctx)
{
    const svcauth_table *t = ctx;
    req->service = NULL;
    if (_always_public(req->path)) return true;
    const svcauth_rule *rule = _rule_for(t, req->method, req->path);
    if (rule && rule->callers == SVCAUTH_PUBLIC) return true;

    const char *v = http_header(req, SVCAUTH_HEADER);
    if (!v || !*v) {
        _refuse(resp, &g_stats.missing, 401, req,
                "this internal API needs a service credential (" SVCAUTH_HEADER ")", NULL);
        return false;
    }
    char name[SVCAUTH_NAME_MAX + 1], nonce[65];
    int64_t ms;
    unsigned char sig[crypto_sign_BYTES];
    if (!_parse(v, name, &ms, nonce, sig)) {
        _refuse(resp, &g_stats.malformed, 401, req,
                SVCAUTH_HEADER
                " is malformed (want \"v1 <service> <unix-ms> <nonce> <signature>\")",
                NULL);
        return false;
    }
    unsigned bit = svcauth_service_bit(name);
    int64_t now = ts_now_wall_ms();

    pthread_rwlock_rdlock(&g_lock);
    int64_t skew = g_ring.max_skew_ms;
    bool known = false, valid = false;
    for (size_t i = 0; bit && i < g_ring.n_trust && !known; i++)
        known = g_ring.trust[i].service == bit;
    /* the cheap checks before the signature's 45 us */
    bool in_time = ms >= now - skew && ms <= now + skew;
    if (known && in_time) {
        size_t mlen;
        char *m = _message(name, ms, nonce, req->method, req->target, strlen(req->target),
                           http_header(req, "X-Tessera-Caller"),
                           http_header(req, "X-Tessera-Caller-Access-Key"), req->body,
                           req->body_len, &mlen);
        for (size_t i = 0; i < g_ring.n_trust && !valid; i++)
            valid = g_ring.trust[i].service == bit &&
                    crypto_sign_verify_detached(sig, (const unsigned char *)m, mlen,
                                                g_ring.trust[i].pk) == 0;
        free(m);
    }
    pthread_rwlock_unlock(&g_lock);

    if (!known) {
        _refuse(resp, &g_stats.unknown_service, 401, req,
                "the calling service has no trusted key here", name);
        return false;
    }
    if (!in_time) {
        _refuse(resp, &g_stats.expired, 401, req,
                "the service signature's time is outside the allowed clock skew", name);
        return false;
    }
    if (!valid) {
        _refuse(resp, &g_stats.bad_signature, 401, req,
                "the service signature does not match this request", name);
        return false;
    }
    if (!_seen_first(sig, ms + skew, now)) {
        _refuse(resp, &g_stats.replayed, 401, req, "this service signature was already used", name);
        return false;
    }
    if (!rule || !(rule->callers & bit)) {
        char why[160];
        snprintf(why, sizeof(why), "service '%s' may not call %s %s", name, req->method,
                 rule ? rule->prefix : req->path);
        _refuse(resp, &g_stats.forbidden, 403, req, why, name);
        return false;
    }
    atomic_fetch_add(&g_stats.accepted, 1);
    req->service = _service_name(bit);
    return true;
}

void svcauth_get_stats(svcauth_stats *out)
{
    out->accepted = atomic_load(&g_stats.accepted);
    out->missing = atomic_load(&g_stats.missing);
    out->malformed = atomic_load(&g_stats.malformed);
    out->unknown_service = atomic_load(&g_stats.unknown_service);
    out->expired = atomic_load(&g_stats.expired);
    out->bad_signature = atomic_load(&g_stats.bad_signature);
    out->replayed = atomic_load(&g_stats.replayed);
    out->forbidden = atomic_load(&g_stats.forbidden);
}

void svcauth_collect(FILE *out, void *ctx)
{
    (void)ctx;
    svcauth_stats st;
    svcauth_get_stats(&st);
    metrics_counter(out, "tessera_service_auth_accepted_total",
                    "Internal calls whose service credential was accepted.", st.accepted);
    metrics_family(out, "tessera_service_auth_refused_total", "counter",
                   "Internal calls refused for their service credential, by reason.");
    const struct {
        const char *reason;
        uint64_t n;
    } rows[] = {
        {"missing", st.missing},
        {"malformed", st.malformed},
        {"unknown_service", st.unknown_service},
        {"expired", st.expired},
        {"bad_signature", st.bad_signature},
        {"replayed", st.replayed},
        {"forbidden", st.forbidden},
    };
    for (size_t i = 0; i < TS_ARRAY_LEN(rows); i++) {
        char label[64];
        snprintf(label, sizeof(label), "reason=\"%s\"", rows[i].reason);
        metrics_sample_u64(out, "tessera_service_auth_refused_total", label, rows[i].n);
    }
}
