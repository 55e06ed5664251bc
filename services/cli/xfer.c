/* xfer.c: libcurl requests to tessera-vfolder's transfer URLs, and their
 * progress (see xfer.h). */
#include "services/cli/xfer.h"

#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

static curl_off_t g_limit_rate; /* bytes/s, 0: none */

void xfer_limit_rate(int64_t bytes_per_s)
{
    g_limit_rate = (curl_off_t)bytes_per_s;
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

void xfer_progress_init(xfer_progress *p, const char *label, int64_t total, int64_t base)
{
    memset(p, 0, sizeof(*p));
    p->label = label;
    p->total = total;
    p->base = p->done = p->start_bytes = base;
    p->t0_ms = ts_now_mono_ms();
    p->tty = isatty(2);
}

void xfer_progress_draw(xfer_progress *p, bool final)
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
    xfer_progress *p = cls;
    p->done = p->base + (int64_t)(ulnow > dlnow ? ulnow : dlnow);
    xfer_progress_draw(p, false);
    return 0;
}

/* ---- raw transfers with libcurl -------------------------------------------------------- */

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

void xfer_print_failure(const char *what, const xfer *x, CURLcode cc, const char *errbuf)
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

static size_t _read_file(char *buf, size_t size, size_t n, void *cls)
{
    xfer_src *s = cls;
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
CURLcode xfer_request(const char *method, const char *url, const char *token, xfer_src *src,
                      int64_t range_from, xfer_progress *prog, xfer *x, char *errbuf)
{
    CURL *h = curl_easy_init();
    if (!h) return CURLE_FAILED_INIT;
    char *tok = curl_easy_escape(h, token, 0);
    char *full = ts_asprintf("%s%ctoken=%s", url, strchr(url, '?') ? '&' : '?', tok);
    curl_free(tok);
    struct curl_slist *hd = NULL;
    char line[96];
    hd = curl_slist_append(hd, "Tus-Resumable: " XFER_TUS_VERSION);
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

void xfer_reset(xfer *x, int out_fd)
{
    free(x->err_body);
    memset(x, 0, sizeof(*x));
    x->out_fd = out_fd;
}

void xfer_backoff(int attempt)
{
    struct timespec ts = {attempt < 4 ? attempt : 4, 0};
    nanosleep(&ts, NULL);
}
