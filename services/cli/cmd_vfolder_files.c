/* cmd_vfolder_files.c: `tessera vfolder upload|download|ls|mkdir|mv|rm`.
 *
 * ls, mkdir, mv and rm are signed calls through the gateway. upload and
 * download ask the gateway for a transfer token (request-upload,
 * request-download), then move the bytes directly to or from
 * tessera-vfolder with libcurl:
 *   upload: tus 1.0 (HEAD for the offset, PATCH from there). The token and
 *     URL are kept in ~/.cache/tessera/uploads/<hash>.json (the hash of the
 *     endpoint, folder, remote path and the local file's path, size and
 *     mtime), so running the same upload again after a failure resumes it;
 *     within one run, --retries network failures are retried from the
 *     server's offset.
 *   download: into LOCAL.part with Range: bytes=<have>- on each retry (and
 *     on a later run), renamed to LOCAL when complete. A directory comes as
 *     a zip (LOCAL defaults to <name>.zip; a zip restarts from zero).
 * Progress goes to stderr: a bar on a terminal, a line every 5 s otherwise. */
#include "services/cli/cmd_vfolder_files.h"
#include "services/cli/output.h"

#include <curl/curl.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <sodium.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define TUS_VERSION "1.0.0"
#define DEFAULT_RETRIES 5

static curl_off_t g_limit_rate; /* bytes/s, 0: none */

static const char USAGE[] =
    "tessera vfolder upload NAME LOCAL [REMOTE] [--retries N]\n"
    "       tessera vfolder download NAME REMOTE [LOCAL] [--retries N]\n"
    "       tessera vfolder ls NAME [PATH] [--json]\n"
    "       tessera vfolder mkdir NAME PATH [-p]\n"
    "       tessera vfolder mv NAME SRC DST\n"
    "       tessera vfolder rm NAME PATH... [-r]\n\n"
    "  upload    send a local file into folder NAME (at REMOTE, default: its file name);\n"
    "            resumable: run it again after a failure and it continues\n"
    "  download  fetch REMOTE (a file, or a directory as a zip) into LOCAL; resumes a\n"
    "            LOCAL.part left by an earlier run\n"
    "  ls        list a directory of the folder (default: its top)\n"
    "  mkdir     create a directory (-p: with its parents, and no error when it exists)\n"
    "  mv        move or rename SRC to DST (into DST when DST is a directory)\n"
    "  rm        delete files; -r: directories with everything in them\n\n"
    "Options:\n"
    "      --retries N    network failures to retry from where the transfer stopped (5)\n"
    "      --limit-rate R upload/download at most R bytes/s (suffixes k, m, g)\n"
    "  -p, --parents      mkdir: create missing parents, accept an existing directory\n"
    "  -r, --recursive    rm: delete directories recursively";

static const char *const SUBS[] = {"upload", "download", "ls", "mkdir", "mv", "rm", NULL};

static bool _is_ours(const char *sub)
{
    for (const char *const *s = SUBS; sub && *s; s++)
        if (strcmp(*s, sub) == 0) return true;
    return false;
}

/* ---- small helpers ------------------------------------------------------------------ */

static char *_folder_path(const char *name, const char *rest)
{
    char *n = client_escape(name);
    char *p = ts_asprintf("/folders/%s/%s", n, rest);
    free(n);
    return p;
}

static const char *_base(const char *path)
{
    const char *s = strrchr(path, '/');
    return s ? s + 1 : path;
}

static void _human(char *out, size_t size, double v)
{
    static const char *const unit[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    int u = 0;
    while (v >= 1024 && u < 4) {
        v /= 1024;
        u++;
    }
    snprintf(out, size, u ? "%.1f %s" : "%.0f %s", v, unit[u]);
}

/* ---- progress ------------------------------------------------------------------------ */

typedef struct progress {
    const char *label;
    int64_t total; /* -1: unknown */
    int64_t base;  /* bytes done before this request */
    int64_t done;
    int64_t t0_ms, last_ms;
    int64_t start_bytes; /* for the rate */
    bool tty, drawn;
} progress;

static void _progress_init(progress *p, const char *label, int64_t total, int64_t base)
{
    memset(p, 0, sizeof(*p));
    p->label = label;
    p->total = total;
    p->base = p->done = p->start_bytes = base;
    p->t0_ms = ts_now_mono_ms();
    p->tty = isatty(2);
}

static void _progress_draw(progress *p, bool final)
{
    int64_t now = ts_now_mono_ms();
    if (!final && now - p->last_ms < (p->tty ? 200 : 5000)) return;
    if (!final && !p->tty && now - p->t0_ms < 5000) return;
    p->last_ms = now;
    double secs = (double)(now - p->t0_ms) / 1000.0;
    double rate = secs > 0 ? (double)(p->done - p->start_bytes) / secs : 0;
    char done[32], total[32], rs[32];
    _human(done, sizeof(done), (double)p->done);
    _human(total, sizeof(total), (double)(p->total > 0 ? p->total : 0));
    _human(rs, sizeof(rs), rate);
    int pct = p->total > 0 ? (int)(100.0 * (double)p->done / (double)p->total) : -1;
    if (p->tty) {
        char bar[31];
        int fill = pct < 0 ? 0 : pct * 30 / 100;
        for (int i = 0; i < 30; i++)
            bar[i] = i < fill ? '#' : '.';
        bar[30] = '\0';
        long eta = rate > 0 && p->total > 0 ? (long)((double)(p->total - p->done) / rate) : -1;
        if (pct >= 0)
            fprintf(stderr, "\r%s [%s] %3d%% %s / %s  %s/s  ETA %ld:%02ld   ", p->label, bar, pct,
                    done, total, rs, eta < 0 ? 0 : eta / 60, eta < 0 ? 0 : eta % 60);
        else
            fprintf(stderr, "\r%s %s  %s/s   ", p->label, done, rs);
        if (final) fputc('\n', stderr);
        p->drawn = true;
    } else if (pct >= 0) {
        fprintf(stderr, "%s: %d%% (%s of %s), %s/s\n", p->label, pct, done, total, rs);
    } else {
        fprintf(stderr, "%s: %s, %s/s\n", p->label, done, rs);
    }
}

static int _xferinfo(void *cls, curl_off_t dltotal, curl_off_t dlnow, curl_off_t ultotal,
                     curl_off_t ulnow)
{
    (void)dltotal, (void)ultotal;
    progress *p = cls;
    p->done = p->base + (int64_t)(ulnow > dlnow ? ulnow : dlnow);
    _progress_draw(p, false);
    return 0;
}

/* ---- raw transfers with libcurl -------------------------------------------------------- */

typedef struct xfer {
    long status;
    char offset[32]; /* Upload-Offset */
    char length[32]; /* Upload-Length */
    char content_type[64];
    char content_range[96];
    char content_length[32];
    char *err_body; /* first bytes of a non-2xx body */
    size_t err_len;
    int out_fd;         /* download target */
    int64_t range_from; /* the Range asked for (its bytes are in out_fd already) */
    progress *prog;
    int64_t written;
    bool write_failed, started;
} xfer;

static size_t _on_header(char *data, size_t size, size_t n, void *cls)
{
    xfer *x = cls;
    size_t len = size * n;
    struct {
        const char *name;
        char *dst;
        size_t cap;
    } want[] = {{"Upload-Offset:", x->offset, sizeof(x->offset)},
                {"Upload-Length:", x->length, sizeof(x->length)},
                {"Content-Type:", x->content_type, sizeof(x->content_type)},
                {"Content-Range:", x->content_range, sizeof(x->content_range)},
                {"Content-Length:", x->content_length, sizeof(x->content_length)}};
    if (len > 5 && strncmp(data, "HTTP/", 5) == 0) { /* a new response (after 100) */
        x->offset[0] = x->length[0] = x->content_type[0] = x->content_range[0] = '\0';
        x->content_length[0] = '\0';
        return len;
    }
    for (size_t i = 0; i < TS_ARRAY_LEN(want); i++) {
        size_t nl = strlen(want[i].name);
        if (len > nl && strncasecmp(data, want[i].name, nl) == 0) {
            const char *v = data + nl;
            size_t vl = len - nl;
            while (vl && (*v == ' ' || *v == '\t'))
                v++, vl--;
            while (vl && (v[vl - 1] == '\r' || v[vl - 1] == '\n' || v[vl - 1] == ' '))
                vl--;
            snprintf(want[i].dst, want[i].cap, "%.*s", (int)vl, v);
        }
    }
    return len;
}

static size_t _on_body(char *data, size_t size, size_t n, void *cls)
{
    xfer *x = cls;
    size_t len = size * n;
    if (x->out_fd >= 0 && (x->status == 200 || x->status == 206)) {
        if (!x->started) {
            x->started = true;
            if (x->status == 200 && x->range_from > 0) {
                /* All of it after all (a zip, or the file changed): start over. */
                if (ftruncate(x->out_fd, 0) != 0 || lseek(x->out_fd, 0, SEEK_SET) != 0) {
                    x->write_failed = true;
                    return 0;
                }
                if (x->prog) x->prog->base = x->prog->start_bytes = 0;
            }
            const char *slash = strchr(x->content_range, '/');
            if (x->prog && x->status == 206 && slash) x->prog->total = atoll(slash + 1);
            if (x->prog && x->status == 200 && x->content_length[0])
                x->prog->total = atoll(x->content_length);
        }
        for (size_t done = 0; done < len;) {
            ssize_t w = write(x->out_fd, data + done, len - done);
            if (w < 0 && errno == EINTR) continue;
            if (w <= 0) {
                x->write_failed = true;
                return 0;
            }
            done += (size_t)w;
        }
        x->written += (int64_t)len;
        return len;
    }
    if (x->err_len < 4096) {
        size_t take = len < 4096 - x->err_len ? len : 4096 - x->err_len;
        x->err_body = ts_realloc(x->err_body, x->err_len + take + 1);
        memcpy(x->err_body + x->err_len, data, take);
        x->err_len += take;
        x->err_body[x->err_len] = '\0';
    }
    return len;
}

/* The status is known once headers are in: curl tells us before the body. */
static size_t _on_header_status(char *data, size_t size, size_t n, void *cls)
{
    xfer *x = cls;
    size_t len = size * n;
    if (len > 9 && strncmp(data, "HTTP/", 5) == 0) {
        const char *sp = memchr(data, ' ', len);
        x->status = sp ? strtol(sp + 1, NULL, 10) : 0;
    }
    return _on_header(data, size, n, cls);
}

static void _print_failure(const char *what, const xfer *x, CURLcode cc, const char *errbuf)
{
    if (cc != CURLE_OK && x->status == 0) {
        fprintf(stderr, "tessera: %s: %s\n", what, errbuf[0] ? errbuf : curl_easy_strerror(cc));
        return;
    }
    json_t *p = x->err_len ? json_loadb(x->err_body, x->err_len, 0, NULL) : NULL;
    const char *msg = json_string_value(json_object_get(p, "msg"));
    fprintf(stderr, "tessera: %s: %s (HTTP %ld)\n", what, msg ? msg : "failed", x->status);
    json_decref(p);
}

typedef struct pread_src {
    int fd;
    int64_t pos, end;
} pread_src;

static size_t _read_file(char *buf, size_t size, size_t n, void *cls)
{
    pread_src *s = cls;
    size_t want = size * n;
    if ((int64_t)want > s->end - s->pos) want = (size_t)(s->end - s->pos);
    if (want == 0) return 0;
    ssize_t got = pread(s->fd, buf, want, (off_t)s->pos);
    if (got < 0) return CURL_READFUNC_ABORT;
    s->pos += got;
    return (size_t)got;
}

/* One request to a transfer URL (token in the query). method "HEAD",
 * "PATCH" (body: src from its pos to end), "DELETE" or "GET" (into x->out_fd
 * with an optional Range from). */
static CURLcode _request(const char *method, const char *url, const char *token, pread_src *src,
                         int64_t range_from, progress *prog, xfer *x, char *errbuf)
{
    CURL *h = curl_easy_init();
    if (!h) return CURLE_FAILED_INIT;
    char *tok = curl_easy_escape(h, token, 0);
    char *full = ts_asprintf("%s%ctoken=%s", url, strchr(url, '?') ? '&' : '?', tok);
    curl_free(tok);
    struct curl_slist *hd = NULL;
    char line[96];
    hd = curl_slist_append(hd, "Tus-Resumable: " TUS_VERSION);
    hd = curl_slist_append(hd, "Expect:");
    curl_easy_setopt(h, CURLOPT_URL, full);
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(h, CURLOPT_ERRORBUFFER, errbuf);
    curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, 10000L);
    /* No overall limit (files of any size); give up when nothing moves for 60 s. */
    curl_easy_setopt(h, CURLOPT_LOW_SPEED_LIMIT, 1L);
    curl_easy_setopt(h, CURLOPT_LOW_SPEED_TIME, 60L);
    curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, _on_header_status);
    curl_easy_setopt(h, CURLOPT_HEADERDATA, x);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, _on_body);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, x);
    curl_easy_setopt(h, CURLOPT_USERAGENT, "tessera-cli/" TESSERA_VERSION);
    if (g_limit_rate > 0) {
        curl_easy_setopt(h, CURLOPT_MAX_SEND_SPEED_LARGE, g_limit_rate);
        curl_easy_setopt(h, CURLOPT_MAX_RECV_SPEED_LARGE, g_limit_rate);
    }
    if (prog) {
        curl_easy_setopt(h, CURLOPT_NOPROGRESS, 0L);
        curl_easy_setopt(h, CURLOPT_XFERINFOFUNCTION, _xferinfo);
        curl_easy_setopt(h, CURLOPT_XFERINFODATA, prog);
    }
    if (strcmp(method, "HEAD") == 0) {
        curl_easy_setopt(h, CURLOPT_NOBODY, 1L);
    } else if (strcmp(method, "PATCH") == 0) {
        snprintf(line, sizeof(line), "Upload-Offset: %" PRId64, src->pos);
        hd = curl_slist_append(hd, line);
        hd = curl_slist_append(hd, "Content-Type: application/offset+octet-stream");
        curl_easy_setopt(h, CURLOPT_UPLOAD, 1L);
        curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, "PATCH");
        curl_easy_setopt(h, CURLOPT_READFUNCTION, _read_file);
        curl_easy_setopt(h, CURLOPT_READDATA, src);
        curl_easy_setopt(h, CURLOPT_INFILESIZE_LARGE, (curl_off_t)(src->end - src->pos));
        curl_easy_setopt(h, CURLOPT_UPLOAD_BUFFERSIZE, 1024L * 1024L);
    } else if (strcmp(method, "GET") == 0) {
        if (range_from > 0) {
            snprintf(line, sizeof(line), "Range: bytes=%" PRId64 "-", range_from);
            hd = curl_slist_append(hd, line);
        }
        curl_easy_setopt(h, CURLOPT_BUFFERSIZE, 512L * 1024L);
    } else {
        curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, method);
    }
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, hd);
    CURLcode cc = curl_easy_perform(h);
    if (cc == CURLE_OK) curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &x->status);
    curl_slist_free_all(hd);
    curl_easy_cleanup(h);
    free(full);
    return cc;
}

static void _xfer_reset(xfer *x, int out_fd)
{
    free(x->err_body);
    memset(x, 0, sizeof(*x));
    x->out_fd = out_fd;
}

static void _backoff(int attempt)
{
    struct timespec ts = {attempt < 4 ? attempt : 4, 0};
    nanosleep(&ts, NULL);
}

/* ---- upload ----------------------------------------------------------------------------- */

static char *_cache_file(const cli *c, const char *name, const char *remote, const char *local,
                         const struct stat *st)
{
    char real[PATH_MAX];
    if (!realpath(local, real)) ts_strlcpy(real, local, sizeof(real));
    char *key =
        ts_asprintf("%s\n%s\n%s\n%s\n%lld\n%lld.%09ld", c->creds.endpoint, name, remote, real,
                    (long long)st->st_size, (long long)st->st_mtim.tv_sec, st->st_mtim.tv_nsec);
    unsigned char h[crypto_hash_sha256_BYTES];
    crypto_hash_sha256(h, (const unsigned char *)key, strlen(key));
    free(key);
    char hex[crypto_hash_sha256_BYTES * 2 + 1];
    sodium_bin2hex(hex, sizeof(hex), h, 16);
    const char *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
    char *dir = xdg && *xdg ? ts_asprintf("%s/tessera/uploads", xdg)
                            : ts_asprintf("%s/.cache/tessera/uploads", home ? home : "/tmp");
    char *path = ts_asprintf("%s/%s.json", dir, hex);
    /* mkdir -p, quietly: without a cache an upload still works, it just does
     * not resume across runs. */
    for (char *p = dir + 1; *p; p++) {
        if (*p != '/') continue;
        *p = '\0';
        mkdir(dir, 0700);
        *p = '/';
    }
    mkdir(dir, 0700);
    free(dir);
    return path;
}

static int _cmd_upload(cli *c, int argc, char **argv, int retries)
{
    if (argc < 3 || argc > 4) {
        fprintf(stderr, "tessera vfolder upload: NAME LOCAL [REMOTE] expected; try --help\n");
        return CLI_USAGE;
    }
    const char *name = argv[1], *local = argv[2];
    const char *remote = argc == 4 ? argv[3] : _base(local);
    int fd = open(local, O_RDONLY | O_CLOEXEC);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        fprintf(stderr, "tessera: %s: %s\n", local,
                fd < 0 ? strerror(errno) : "not a regular file");
        if (fd >= 0) close(fd);
        return CLI_FAIL;
    }
    int rc = client_need_keys(c);
    if (rc != CLI_OK) {
        close(fd);
        return rc;
    }
    int64_t size = st.st_size;
    char *cache = _cache_file(c, name, remote, local, &st);
    json_t *state = json_load_file(cache, 0, NULL);
    const char *url = json_string_value(json_object_get(state, "url"));
    const char *token = json_string_value(json_object_get(state, "token"));
    char errbuf[CURL_ERROR_SIZE] = "";
    xfer x = {.out_fd = -1};
    int64_t offset = -1;
    if (url && token) { /* an earlier run's upload: where is it? */
        CURLcode cc = _request("HEAD", url, token, NULL, 0, NULL, &x, errbuf);
        if (cc == CURLE_OK && x.status == 200 && atoll(x.length) == size) {
            offset = atoll(x.offset);
            fprintf(stderr, "resuming the upload at %" PRId64 " of %" PRId64 " bytes\n", offset,
                    size);
        }
    }
    if (offset < 0) { /* a new upload */
        json_decref(state);
        char *path = _folder_path(name, "request-upload");
        json_t *body = json_pack("{s:s, s:I}", "path", remote, "size", (json_int_t)size);
        rc = client_call(c, "POST", path, body, true, &state);
        json_decref(body);
        free(path);
        if (rc != CLI_OK) goto out;
        url = json_string_value(json_object_get(state, "url"));
        token = json_string_value(json_object_get(state, "token"));
        if (!url || !token) {
            fprintf(stderr, "tessera: request-upload answered without a token and url\n");
            rc = CLI_FAIL;
            goto out;
        }
        json_object_set_new(state, "size", json_integer(size));
        if (json_dump_file(state, cache, JSON_COMPACT) == 0) chmod(cache, 0600);
        offset = 0;
    }
    char label[300];
    snprintf(label, sizeof(label), "upload %s", _base(local));
    progress prog;
    _progress_init(&prog, label, size, offset);
    rc = CLI_FAIL;
    for (int attempt = 0; attempt <= retries; attempt++) {
        if (attempt > 0) {
            _backoff(attempt);
            _xfer_reset(&x, -1);
            if (_request("HEAD", url, token, NULL, 0, NULL, &x, errbuf) != CURLE_OK ||
                x.status != 200) {
                fprintf(stderr, "tessera: upload: cannot ask where the upload is (attempt %d)\n",
                        attempt);
                continue;
            }
            offset = atoll(x.offset);
            prog.base = prog.done = offset;
        }
        pread_src src = {.fd = fd, .pos = offset, .end = size};
        _xfer_reset(&x, -1);
        errbuf[0] = '\0';
        CURLcode cc = _request("PATCH", url, token, &src, 0, &prog, &x, errbuf);
        if (cc == CURLE_OK && x.status == 204 && atoll(x.offset) == size) {
            rc = CLI_OK;
            break;
        }
        bool retryable = cc != CURLE_OK || x.status >= 500 || x.status == 409;
        if (!retryable || attempt == retries) {
            if (prog.drawn) fputc('\n', stderr);
            _print_failure("upload", &x, cc, errbuf);
            if (x.status == 401 || x.status == 404 || x.status == 410) unlink(cache);
            break;
        }
        if (prog.drawn) fputc('\n', stderr);
        fprintf(stderr, "tessera: upload interrupted (%s); retrying from the server's offset\n",
                cc != CURLE_OK ? (errbuf[0] ? errbuf : curl_easy_strerror(cc)) : "conflict");
    }
    if (rc == CLI_OK) {
        prog.done = size;
        _progress_draw(&prog, true);
        unlink(cache);
        if (c->json)
            out_json(json_pack("{s:s, s:s, s:I}", "vfolder", name, "path", remote, "size",
                               (json_int_t)size));
        else
            printf("uploaded %s to %s:%s (%" PRId64 " bytes)\n", local, name, remote, size);
    }
out:
    free(x.err_body);
    json_decref(state);
    free(cache);
    close(fd);
    return rc;
}

/* ---- download ---------------------------------------------------------------------------- */

static int _request_download(cli *c, const char *name, const char *remote, char **url, char **token)
{
    char *path = _folder_path(name, "request-download");
    json_t *body = json_pack("{s:s, s:b}", "file", remote, "archive", 1), *out = NULL;
    int rc = client_call(c, "POST", path, body, true, &out);
    json_decref(body);
    free(path);
    if (rc != CLI_OK) return rc;
    const char *u = json_string_value(json_object_get(out, "url"));
    const char *t = json_string_value(json_object_get(out, "token"));
    if (!u || !t) {
        fprintf(stderr, "tessera: request-download answered without a token and url\n");
        json_decref(out);
        return CLI_FAIL;
    }
    free(*url);
    free(*token);
    *url = ts_strdup(u);
    *token = ts_strdup(t);
    json_decref(out);
    return CLI_OK;
}

static int _cmd_download(cli *c, int argc, char **argv, int retries)
{
    if (argc < 3 || argc > 4) {
        fprintf(stderr, "tessera vfolder download: NAME REMOTE [LOCAL] expected; try --help\n");
        return CLI_USAGE;
    }
    const char *name = argv[1], *remote = argv[2];
    int rc = client_need_keys(c);
    if (rc != CLI_OK) return rc;
    char *url = NULL, *token = NULL;
    rc = _request_download(c, name, remote, &url, &token);
    if (rc != CLI_OK) return rc;
    const char *b = _base(remote);
    char *local = argc == 4 ? ts_strdup(argv[3]) : ts_strdup(*b ? b : name);
    char *part = ts_asprintf("%s.part", local);
    int fd = open(part, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0) {
        fprintf(stderr, "tessera: %s: %s\n", part, strerror(errno));
        rc = CLI_FAIL;
        goto out;
    }
    char label[300];
    snprintf(label, sizeof(label), "download %s", *b ? b : name);
    xfer x = {.out_fd = -1};
    char errbuf[CURL_ERROR_SIZE] = "";
    bool zip = false;
    progress prog;
    rc = CLI_FAIL;
    for (int attempt = 0; attempt <= retries; attempt++) {
        if (attempt > 0) _backoff(attempt);
        struct stat st;
        int64_t have = fstat(fd, &st) == 0 ? st.st_size : 0;
        if (lseek(fd, have, SEEK_SET) < 0) break;
        _xfer_reset(&x, fd);
        x.range_from = have;
        x.prog = &prog;
        errbuf[0] = '\0';
        _progress_init(&prog, label, -1, have);
        /* The total is learned from the headers; until then the bar shows bytes. */
        CURLcode cc = _request("GET", url, token, NULL, have, &prog, &x, errbuf);
        zip = strncasecmp(x.content_type, "application/zip", 15) == 0;
        if (x.write_failed) {
            fprintf(stderr, "tessera: %s: %s\n", part, strerror(errno));
            break;
        }
        if (cc == CURLE_OK && (x.status == 200 || x.status == 206)) {
            rc = CLI_OK;
            break;
        }
        if (cc == CURLE_OK && x.status == 416 && have > 0) { /* already complete */
            const char *slash = strchr(x.content_range, '/');
            if (slash && atoll(slash + 1) == have) {
                rc = CLI_OK;
                break;
            }
            if (ftruncate(fd, 0) != 0) break; /* the file changed: start over */
            continue;
        }
        if (cc == CURLE_OK && x.status == 401 && attempt < retries) { /* token expired */
            if (_request_download(c, name, remote, &url, &token) != CLI_OK) break;
            continue;
        }
        bool retryable = cc != CURLE_OK || x.status >= 500;
        if (prog.drawn) fputc('\n', stderr);
        if (!retryable || attempt == retries) {
            _print_failure("download", &x, cc, errbuf);
            break;
        }
        fprintf(stderr, "tessera: download interrupted (%s); resuming\n",
                errbuf[0] ? errbuf : curl_easy_strerror(cc));
    }
    free(x.err_body);
    struct stat st;
    if (rc == CLI_OK && fstat(fd, &st) == 0) {
        prog.total = prog.done = st.st_size;
        _progress_draw(&prog, true);
        if (zip && argc != 4) { /* a directory: name.zip */
            char *z = ts_asprintf("%s.zip", local);
            free(local);
            local = z;
        }
        if (fsync(fd) != 0 || rename(part, local) != 0) {
            fprintf(stderr, "tessera: %s: %s\n", local, strerror(errno));
            rc = CLI_FAIL;
        } else if (c->json) {
            out_json(json_pack("{s:s, s:s, s:s, s:I}", "vfolder", name, "path", remote, "local",
                               local, "size", (json_int_t)st.st_size));
        } else {
            printf("downloaded %s:%s to %s (%lld bytes)\n", name, remote, local,
                   (long long)st.st_size);
        }
    }
    close(fd);
    if (rc != CLI_OK && fstat(fd, &st) == 0 && st.st_size == 0) unlink(part);
out:
    free(part);
    free(local);
    free(url);
    free(token);
    return rc;
}

/* ---- ls, mkdir, mv, rm ---------------------------------------------------------------------- */

static int _cmd_ls(cli *c, int argc, char **argv)
{
    if (argc < 2 || argc > 3) {
        fprintf(stderr, "tessera vfolder ls: NAME [PATH] expected; try --help\n");
        return CLI_USAGE;
    }
    int rc = client_need_keys(c);
    if (rc != CLI_OK) return rc;
    char *path = _folder_path(argv[1], "files");
    client_query_add(&path, "path", argc == 3 ? argv[2] : "");
    json_t *out = NULL;
    rc = client_call(c, "GET", path, NULL, true, &out);
    free(path);
    if (rc != CLI_OK) return rc;
    if (c->json) {
        out_json(out);
    } else {
        static const out_column cols[] = {
            {"TYPE", "type", OUT_TEXT}, {"SIZE", "size", OUT_TEXT},
            {"MODE", "mode", OUT_TEXT}, {"MODIFIED", "modified", OUT_TIME},
            {"NAME", "name", OUT_TEXT}, {NULL, NULL, OUT_TEXT}};
        out_table(cols, json_object_get(out, "items"));
    }
    json_decref(out);
    return CLI_OK;
}

static int _simple(cli *c, const char *name, const char *method, const char *what, json_t *body,
                   const char *done_fmt, const char *arg)
{
    int rc = client_need_keys(c);
    if (rc != CLI_OK) {
        json_decref(body);
        return rc;
    }
    char *path = _folder_path(name, what);
    json_t *out = NULL;
    rc = client_call(c, method, path, body, true, &out);
    json_decref(body);
    free(path);
    if (rc == CLI_OK) {
        if (c->json)
            out_json(out);
        else
            printf(done_fmt, arg);
    }
    json_decref(out);
    return rc;
}

/* ---- dispatch ----------------------------------------------------------------------------------
 */

int cmd_vfolder_files(cli *c, int argc, char **argv)
{
    if (argc < 1 || !_is_ours(argv[0])) return -1;
    static const struct option longopts[] = {{"retries", required_argument, NULL, 'R'},
                                             {"limit-rate", required_argument, NULL, 'L'},
                                             {"parents", no_argument, NULL, 'p'},
                                             {"recursive", no_argument, NULL, 'r'},
                                             {"json", no_argument, NULL, 'j'},
                                             {"help", no_argument, NULL, 'h'},
                                             {NULL, 0, NULL, 0}};
    const char *sub = argv[0];
    int retries = DEFAULT_RETRIES;
    bool parents = false, recursive = false;
    optind = 0; /* GNU getopt: start afresh (argv[0], the subcommand, is skipped) */
    opterr = 0;
    int opt;
    while ((opt = getopt_long(argc, argv, "prh", longopts, NULL)) != -1) {
        switch (opt) {
        case 'R':
            retries = atoi(optarg);
            if (retries < 0 || retries > 1000) {
                fprintf(stderr, "tessera vfolder %s: --retries wants 0..1000\n", sub);
                return CLI_USAGE;
            }
            break;
        case 'L': {
            char *end;
            double v = strtod(optarg, &end);
            double mul = *end == 'k' || *end == 'K'   ? 1024.0
                         : *end == 'm' || *end == 'M' ? 1048576.0
                         : *end == 'g' || *end == 'G' ? 1073741824.0
                                                      : 1.0;
            if (end == optarg || v <= 0 || (*end && end[1])) {
                fprintf(stderr, "tessera vfolder %s: --limit-rate wants bytes/s (e.g. 10m)\n", sub);
                return CLI_USAGE;
            }
            g_limit_rate = (curl_off_t)(v * mul);
            break;
        }
        case 'p':
            parents = true;
            break;
        case 'r':
            recursive = true;
            break;
        case 'j':
            c->json = true;
            break;
        case 'h':
            printf("Usage: %s\n", USAGE);
            return CLI_OK;
        default:
            fprintf(stderr, "tessera vfolder %s: unknown option '%s'; try --help\n", sub,
                    argv[optind - 1]);
            return CLI_USAGE;
        }
    }
    /* The words left, with the subcommand in front again. */
    int n = argc - optind + 1;
    char **words = ts_calloc((size_t)n + 1, sizeof(char *));
    words[0] = argv[0];
    for (int i = optind; i < argc; i++)
        words[i - optind + 1] = argv[i];
    int rc;
    if (strcmp(sub, "upload") == 0) {
        rc = _cmd_upload(c, n, words, retries);
    } else if (strcmp(sub, "download") == 0) {
        rc = _cmd_download(c, n, words, retries);
    } else if (strcmp(sub, "ls") == 0) {
        rc = _cmd_ls(c, n, words);
    } else if (strcmp(sub, "mkdir") == 0) {
        if (n != 3) {
            fprintf(stderr, "tessera vfolder mkdir: NAME PATH expected; try --help\n");
            rc = CLI_USAGE;
        } else {
            rc = _simple(c, words[1], "POST", "mkdir",
                         json_pack("{s:s, s:b, s:b}", "path", words[2], "parents", parents,
                                   "exist_ok", parents),
                         "created %s\n", words[2]);
        }
    } else if (strcmp(sub, "mv") == 0) {
        if (n != 4) {
            fprintf(stderr, "tessera vfolder mv: NAME SRC DST expected; try --help\n");
            rc = CLI_USAGE;
        } else {
            rc = _simple(c, words[1], "POST", "move_file",
                         json_pack("{s:s, s:s}", "src", words[2], "dst", words[3]), "moved %s\n",
                         words[2]);
        }
    } else { /* rm */
        if (n < 3) {
            fprintf(stderr, "tessera vfolder rm: NAME PATH... expected; try --help\n");
            rc = CLI_USAGE;
        } else {
            json_t *files = json_array();
            for (int i = 2; i < n; i++)
                json_array_append_new(files, json_string(words[i]));
            rc = _simple(c, words[1], "DELETE", "delete_files",
                         json_pack("{s:o, s:b}", "files", files, "recursive", recursive),
                         "deleted %s\n", n == 3 ? words[2] : "the files");
        }
    }
    free(words);
    return rc;
}
