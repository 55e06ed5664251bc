/* http1.c: strict HTTP/1.1 head parsing and chunked decoding (http1.h). */
#include "libcommon/http1.h"

#include <stdlib.h>
#include <string.h>

/* RFC 9110 tchar. */
static const unsigned char k_tchar[256] = {
    ['!'] = 1, ['#'] = 1, ['$'] = 1, ['%'] = 1, ['&'] = 1, ['\''] = 1, ['*'] = 1, ['+'] = 1,
    ['-'] = 1, ['.'] = 1, ['^'] = 1, ['_'] = 1, ['`'] = 1, ['|'] = 1,  ['~'] = 1, ['0'] = 1,
    ['1'] = 1, ['2'] = 1, ['3'] = 1, ['4'] = 1, ['5'] = 1, ['6'] = 1,  ['7'] = 1, ['8'] = 1,
    ['9'] = 1, ['A'] = 1, ['B'] = 1, ['C'] = 1, ['D'] = 1, ['E'] = 1,  ['F'] = 1, ['G'] = 1,
    ['H'] = 1, ['I'] = 1, ['J'] = 1, ['K'] = 1, ['L'] = 1, ['M'] = 1,  ['N'] = 1, ['O'] = 1,
    ['P'] = 1, ['Q'] = 1, ['R'] = 1, ['S'] = 1, ['T'] = 1, ['U'] = 1,  ['V'] = 1, ['W'] = 1,
    ['X'] = 1, ['Y'] = 1, ['Z'] = 1, ['a'] = 1, ['b'] = 1, ['c'] = 1,  ['d'] = 1, ['e'] = 1,
    ['f'] = 1, ['g'] = 1, ['h'] = 1, ['i'] = 1, ['j'] = 1, ['k'] = 1,  ['l'] = 1, ['m'] = 1,
    ['n'] = 1, ['o'] = 1, ['p'] = 1, ['q'] = 1, ['r'] = 1, ['s'] = 1,  ['t'] = 1, ['u'] = 1,
    ['v'] = 1, ['w'] = 1, ['x'] = 1, ['y'] = 1, ['z'] = 1,
};

static int lower(int c)
{
    return (c >= 'A' && c <= 'Z') ? c + 32 : c;
}

bool h1_span_eq(const char *s, size_t n, const char *lit)
{
    size_t i = 0;
    for (; i < n && lit[i]; i++)
        if (lower((unsigned char)s[i]) != lower((unsigned char)lit[i])) return false;
    return i == n && lit[i] == '\0';
}

bool h1_list_has(const char *s, size_t n, const char *token)
{
    size_t i = 0;
    while (i < n) {
        while (i < n && (s[i] == ' ' || s[i] == '\t' || s[i] == ','))
            i++;
        size_t start = i;
        while (i < n && s[i] != ',')
            i++;
        size_t end = i;
        while (end > start && (s[end - 1] == ' ' || s[end - 1] == '\t'))
            end--;
        if (end > start && h1_span_eq(s + start, end - start, token)) return true;
    }
    return false;
}

size_t h1_head_end(const char *buf, size_t len, size_t from)
{
    size_t i = from > 3 ? from - 3 : 0;
    while (i + 4 <= len) {
        const char *p = memchr(buf + i, '\r', len - i);
        if (!p) return 0;
        i = (size_t)(p - buf);
        if (i + 4 > len) return 0;
        if (p[1] == '\n' && p[2] == '\r' && p[3] == '\n') return i + 4;
        i++;
    }
    return 0;
}

size_t h1_response_head_end(const char *buf, size_t len, bool *bare_lf)
{
    *bare_lf = false;
    size_t i = 0;
    for (;;) {
        const char *p = memchr(buf + i, '\n', len - i);
        if (!p) return 0;
        size_t lf = (size_t)(p - buf);
        if (lf == 0 || buf[lf - 1] != '\r') *bare_lf = true;
        /* the line after this LF is empty: "\n" or "\r\n" */
        if (lf + 1 < len && buf[lf + 1] == '\n') {
            *bare_lf = true;
            return lf + 2;
        }
        if (lf + 2 < len && buf[lf + 1] == '\r' && buf[lf + 2] == '\n') return lf + 3;
        if (lf + 2 >= len) return 0;
        i = lf + 1;
    }
}

char *h1_head_crlf(const char *buf, size_t len, size_t *out_len)
{
    size_t extra = 0;
    for (size_t i = 0; i < len; i++)
        extra += buf[i] == '\n' && (i == 0 || buf[i - 1] != '\r');
    char *out = malloc(len + extra + 1); /* no libcommon here: tessera-term links this file */
    if (!out) return NULL;
    size_t o = 0;
    for (size_t i = 0; i < len; i++) {
        if (buf[i] == '\n' && (i == 0 || buf[i - 1] != '\r')) out[o++] = '\r';
        out[o++] = buf[i];
    }
    out[o] = '\0';
    *out_len = o;
    return out;
}

const h1_header *h1_find(const h1_msg *m, const char *name)
{
    for (int i = 0; i < m->n_headers; i++)
        if (h1_span_eq(m->headers[i].name, m->headers[i].name_len, name)) return &m->headers[i];
    return NULL;
}

static bool fail(h1_msg *m, int status, const char *reason)
{
    m->err_status = status;
    m->err_reason = reason;
    return false;
}

/* Byte classes for a line: 0 fine, 1 CR, 2 refused (NUL, bare LF, other
 * controls but HT, DEL). */
static const unsigned char k_lineclass[256] = {
    2, 2, 2, 2, 2, 2, 2, 2, 2, 0, 2, 2, 2, 1, 2, 2,          2,
    2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, [0x7f] = 2,
};

/* One CRLF-terminated line starting at *pos; its length without CRLF in *n.
 * One pass: bare CR or LF, NUL and other control characters are refused. */
static bool next_line(const char *buf, size_t end, size_t *pos, const char **line, size_t *n)
{
    size_t i = *pos;
    *line = buf + i;
    const unsigned char *b = (const unsigned char *)buf;
    while (i < end) {
        unsigned char k = k_lineclass[b[i]];
        if (k == 0) {
            i++;
            continue;
        }
        if (k == 2 || i + 1 >= end || buf[i + 1] != '\n') return false;
        *n = i - *pos;
        *pos = i + 2;
        return true;
    }
    return false;
}

static bool parse_version(const char *p, size_t n, int *minor)
{
    if (n != 8 || memcmp(p, "HTTP/1.", 7) != 0) return false;
    if (p[7] != '0' && p[7] != '1') return false;
    *minor = p[7] - '0';
    return true;
}

static bool parse_length(const char *v, size_t n, uint64_t *out)
{
    if (n == 0 || n > 18) return false;
    uint64_t x = 0;
    for (size_t i = 0; i < n; i++) {
        if (v[i] < '0' || v[i] > '9') return false;
        x = x * 10 + (uint64_t)(v[i] - '0');
    }
    *out = x;
    return true;
}

/* Fields after the start line; framing facts collected.
 * Long: one pass over the header fields; the framing facts it collects are the loop's state. */
static bool parse_fields(const char *buf, size_t head_len, size_t pos, h1_msg *m, bool request)
{
    int n_cl = 0, n_te = 0, n_host = 0;
    const char *te = NULL;
    size_t te_len = 0;
    const char *conn = NULL;
    size_t conn_len = 0;
    const char *upg = NULL;
    size_t upg_len = 0;
    for (;;) {
        const char *line;
        size_t n;
        if (!next_line(buf, head_len, &pos, &line, &n))
            return fail(m, 400, "bad line ending or control character");
        if (n == 0) break;
        if (line[0] == ' ' || line[0] == '\t') return fail(m, 400, "obsolete line folding");
        size_t c = 0;
        while (c < n && k_tchar[(unsigned char)line[c]])
            c++;
        if (c == 0 || c >= n || line[c] != ':') return fail(m, 400, "bad header field name");
        size_t vs = c + 1, ve = n;
        while (vs < ve && (line[vs] == ' ' || line[vs] == '\t'))
            vs++;
        while (ve > vs && (line[ve - 1] == ' ' || line[ve - 1] == '\t'))
            ve--;
        if (m->n_headers >= H1_MAX_HEADERS) return fail(m, 431, "too many header fields");
        h1_header *h = &m->headers[m->n_headers++];
        h->name = line;
        h->name_len = c;
        h->value = line + vs;
        h->value_len = ve - vs;
        /* Only a few names matter here: dispatch on length, then compare. */
        switch (c) {
        case 4:
            if (h1_span_eq(h->name, c, "host")) {
                if (++n_host > 1) return fail(m, 400, "Host repeated");
                m->host = h->value;
                m->host_len = h->value_len;
            }
            break;
        case 6:
            if (request && h1_span_eq(h->name, c, "expect") &&
                h1_span_eq(h->value, h->value_len, "100-continue"))
                m->expect_continue = true;
            break;
        case 7:
            if (h1_span_eq(h->name, c, "upgrade")) {
                upg = h->value;
                upg_len = h->value_len;
            }
            break;
        case 10:
            if (h1_span_eq(h->name, c, "connection")) {
                if (conn) return fail(m, 400, "Connection repeated");
                conn = h->value;
                conn_len = h->value_len;
            }
            break;
        case 14:
            if (h1_span_eq(h->name, c, "content-length")) {
                if (++n_cl > 1) return fail(m, 400, "Content-Length repeated");
                if (!parse_length(h->value, h->value_len, &m->content_length))
                    return fail(m, 400, "bad Content-Length");
            }
            break;
        case 17:
            if (h1_span_eq(h->name, c, "transfer-encoding")) {
                if (++n_te > 1) return fail(m, 400, "Transfer-Encoding repeated");
                te = h->value;
                te_len = h->value_len;
            }
            break;
        default:
            break;
        }
    }
    if (n_cl && n_te) return fail(m, 400, "both Content-Length and Transfer-Encoding");
    m->keep_alive = m->minor == 1;
    if (conn) {
        if (h1_list_has(conn, conn_len, "close"))
            m->keep_alive = false;
        else if (h1_list_has(conn, conn_len, "keep-alive"))
            m->keep_alive = true;
        m->conn_upgrade = h1_list_has(conn, conn_len, "upgrade");
    }
    if (m->conn_upgrade && upg && upg_len) {
        m->upgrade = upg;
        m->upgrade_len = upg_len;
    }
    if (request) {
        if (m->minor == 1 && n_host == 0) return fail(m, 400, "Host missing");
        if (n_te) {
            if (m->minor == 0) return fail(m, 400, "Transfer-Encoding in an HTTP/1.0 request");
            if (!h1_span_eq(te, te_len, "chunked"))
                return fail(m, 501, "unsupported Transfer-Encoding");
            m->body = H1_BODY_CHUNKED;
        } else if (n_cl && m->content_length > 0) {
            m->body = H1_BODY_LENGTH;
        } else {
            m->body = H1_BODY_NONE;
        }
        return true;
    }
    /* Responses. */
    if (n_te) {
        /* The final coding decides: chunked -> chunked framing; else until close. */
        size_t e = te_len;
        size_t s = e;
        while (s > 0 && te[s - 1] != ',')
            s--;
        while (s < e && (te[s] == ' ' || te[s] == '\t'))
            s++;
        if (h1_span_eq(te + s, e - s, "chunked")) {
            m->body = H1_BODY_CHUNKED;
        } else {
            m->body = H1_BODY_UNTIL_CLOSE;
            m->keep_alive = false;
        }
    } else if (n_cl) {
        m->body = m->content_length ? H1_BODY_LENGTH : H1_BODY_NONE;
    } else {
        m->body = H1_BODY_UNTIL_CLOSE;
        m->keep_alive = false;
    }
    return true;
}

static void reset(h1_msg *m)
{
    memset(m, 0, offsetof(h1_msg, headers));
    m->n_headers = 0;
    m->body = H1_BODY_NONE;
    m->content_length = 0;
    m->keep_alive = false;
    m->conn_upgrade = false;
    m->upgrade = NULL;
    m->upgrade_len = 0;
    m->expect_continue = false;
    m->host = NULL;
    m->host_len = 0;
    m->err_status = 0;
    m->err_reason = NULL;
}

bool h1_request_start_bad(const char *buf, size_t len)
{
    size_t i = 0, start = 0;
    while (i < len && k_tchar[(unsigned char)buf[i]])
        i++;
    if (i > H1_MAX_METHOD) return true; /* a method is short */
    if (i == len) return false;
    if (i == 0 || buf[i] != ' ') return true;
    start = ++i;
    while (i < len && (unsigned char)buf[i] > 0x20 && (unsigned char)buf[i] < 0x7f)
        i++;
    if (i == len) return false;
    if (i == start || buf[i] != ' ') return true;
    static const char v[] = "HTTP/d.d\r\n";
    for (size_t k = 0; ++i < len && k < sizeof(v) - 1; k++) {
        char ch = buf[i];
        if (v[k] == 'd' ? (ch < '0' || ch > '9') : ch != v[k]) return true;
    }
    return false;
}

bool h1_parse_request(const char *buf, size_t head_len, h1_msg *m)
{
    reset(m);
    m->head_len = head_len;
    size_t pos = 0;
    const char *line;
    size_t n;
    if (!next_line(buf, head_len, &pos, &line, &n)) return fail(m, 400, "bad request line");
    size_t i = 0;
    while (i < n && k_tchar[(unsigned char)line[i]])
        i++;
    if (i == 0 || i >= n || line[i] != ' ' || i > H1_MAX_METHOD) return fail(m, 400, "bad method");
    m->method = line;
    m->method_len = i;
    size_t ts = ++i;
    while (i < n && (unsigned char)line[i] > 0x20 && (unsigned char)line[i] < 0x7f)
        i++;
    if (i == ts || i >= n || line[i] != ' ') return fail(m, 400, "bad request target");
    m->target = line + ts;
    m->target_len = i - ts;
    i++;
    if (n - i == 8 && memcmp(line + i, "HTTP/", 5) == 0 && !parse_version(line + i, 8, &m->minor))
        return fail(m, 505, "HTTP version not supported");
    if (!parse_version(line + i, n - i, &m->minor)) return fail(m, 400, "bad HTTP version");
    if (m->target[0] != '/' && !(m->target_len == 1 && m->target[0] == '*'))
        return fail(m, 400, "absolute-form and authority-form targets are not served");
    return parse_fields(buf, head_len, pos, m, true);
}

bool h1_parse_response(const char *buf, size_t head_len, bool request_was_head, h1_msg *m)
{
    reset(m);
    m->head_len = head_len;
    size_t pos = 0;
    const char *line;
    size_t n;
    if (!next_line(buf, head_len, &pos, &line, &n) || n < 12)
        return fail(m, 502, "bad status line");
    if (!parse_version(line, 8, &m->minor) || line[8] != ' ')
        return fail(m, 502, "bad status line");
    for (int k = 9; k < 12; k++)
        if (line[k] < '0' || line[k] > '9') return fail(m, 502, "bad status code");
    m->status = (line[9] - '0') * 100 + (line[10] - '0') * 10 + (line[11] - '0');
    if (m->status < 100 || (n > 12 && line[12] != ' ')) return fail(m, 502, "bad status line");
    if (!parse_fields(buf, head_len, pos, m, false)) {
        if (m->err_status != 431) m->err_status = 502;
        return false;
    }
    if (m->status < 200 || m->status == 204 || m->status == 304 || request_was_head) {
        /* No body whatever the framing fields say; keep-alive as announced. */
        m->body = H1_BODY_NONE;
        const h1_header *c = h1_find(m, "connection");
        m->keep_alive = m->minor == 1;
        if (c && h1_list_has(c->value, c->value_len, "close"))
            m->keep_alive = false;
        else if (c && h1_list_has(c->value, c->value_len, "keep-alive"))
            m->keep_alive = true;
    }
    return true;
}

/* ---- chunked ------------------------------------------------------------- */

enum {
    C_SIZE = 0, /* hex digits */
    C_SIZE_WS,  /* spaces after the digits (before ';' or CR) */
    C_EXT,      /* chunk extension up to CR */
    C_SIZE_LF,  /* LF after the size line's CR */
    C_DATA,
    C_DATA_CR,
    C_DATA_LF,
    C_TRAILER_START, /* start of a trailer line or the final CRLF */
    C_TRAILER,       /* inside a trailer line */
    C_TRAILER_LF,
    C_FINAL_LF,
    C_DONE,
};

#define H1C_MAX_DIGITS 15
#define H1C_MAX_EXT 1024
#define H1C_MAX_TRAILERS 8192

void h1_chunked_init(h1_chunked *c)
{
    memset(c, 0, sizeof(*c));
}

static int hexval(int ch)
{
    if (ch >= '0' && ch <= '9') return ch - '0';
    ch = lower(ch);
    if (ch >= 'a' && ch <= 'f') return ch - 'a' + 10;
    return -1;
}

/* Long: one state machine over the bytes of a chunked body (size, extensions, data, CRLF,
 * trailers). */
h1c_result h1_chunked_feed(h1_chunked *c, const char *p, size_t len, size_t *consumed,
                           void (*on_data)(void *ctx, const char *p, size_t n), void *ctx)
{
    size_t i = 0;
    while (i < len) {
        unsigned char ch = (unsigned char)p[i];
        switch (c->state) {
        case C_SIZE: {
            int v = hexval(ch);
            if (v >= 0) {
                if (++c->digits > H1C_MAX_DIGITS) goto bad;
                c->remaining = (c->remaining << 4) | (uint64_t)v;
                i++;
                break;
            }
            if (c->digits == 0) goto bad;
            if (ch == ' ' || ch == '\t')
                c->state = C_SIZE_WS;
            else if (ch == ';')
                c->state = C_EXT, c->line = 0;
            else if (ch == '\r')
                c->state = C_SIZE_LF;
            else
                goto bad;
            i++;
            break;
        }
        case C_SIZE_WS:
            if (ch == ' ' || ch == '\t') {
                if (++c->line > 16) goto bad;
            } else if (ch == ';') {
                c->state = C_EXT, c->line = 0;
            } else if (ch == '\r') {
                c->state = C_SIZE_LF;
            } else {
                goto bad;
            }
            i++;
            break;
        case C_EXT:
            if (ch == '\r')
                c->state = C_SIZE_LF;
            else if (ch == '\n' || ch == 0 || ++c->line > H1C_MAX_EXT)
                goto bad;
            i++;
            break;
        case C_SIZE_LF:
            if (ch != '\n') goto bad;
            i++;
            c->digits = 0;
            c->line = 0;
            c->state = c->remaining ? C_DATA : C_TRAILER_START;
            break;
        case C_DATA: {
            size_t n = len - i;
            if ((uint64_t)n > c->remaining) n = (size_t)c->remaining;
            if (on_data) on_data(ctx, p + i, n);
            i += n;
            c->remaining -= n;
            if (c->remaining == 0) c->state = C_DATA_CR;
            break;
        }
        case C_DATA_CR:
            if (ch != '\r') goto bad;
            c->state = C_DATA_LF;
            i++;
            break;
        case C_DATA_LF:
            if (ch != '\n') goto bad;
            c->state = C_SIZE;
            i++;
            break;
        case C_TRAILER_START:
            if (ch == '\r') {
                c->state = C_FINAL_LF;
            } else if (ch == '\n' || ch == ' ' || ch == '\t' || !k_tchar[ch]) {
                goto bad;
            } else {
                c->state = C_TRAILER;
                if (++c->trailers > H1C_MAX_TRAILERS) goto bad;
            }
            i++;
            break;
        case C_TRAILER:
            if (ch == '\r')
                c->state = C_TRAILER_LF;
            else if (ch == '\n' || ch == 0 || ++c->trailers > H1C_MAX_TRAILERS)
                goto bad;
            i++;
            break;
        case C_TRAILER_LF:
            if (ch != '\n') goto bad;
            c->state = C_TRAILER_START;
            i++;
            break;
        case C_FINAL_LF:
            if (ch != '\n') goto bad;
            i++;
            c->state = C_DONE;
            *consumed = i;
            return H1C_DONE;
        default:
            goto bad;
        }
    }
    *consumed = i;
    return H1C_MORE;
bad:
    *consumed = i;
    return H1C_ERROR;
}
