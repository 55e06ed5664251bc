/* streams_exec.c: the execute stream (streams_exec.h). */
#include "streams_exec.h"

#include "libcommon/log.h"
#include "libcommon/utf8.h"

#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define EXEC_MAX_MESSAGE (1 << 20) /* from the client and from the term */
#define EXEC_FIRST_TIMEOUT_MS 60000
#define EXEC_CONNECT_TIMEOUT_MS 10000

/* ---- the first message ---------------------------------------------------------------- */

bool exec_plan_parse(const char *text, size_t len, exec_plan *p, char *why, size_t why_len)
{
    memset(p, 0, sizeof(*p));
    json_error_t jerr;
    json_t *o = json_loadb(text, len, 0, &jerr);
    const char *msg = NULL;
    const json_t *opts = json_object_get(o, "options");
    const char *mode = json_string_value(json_object_get(o, "mode"));
    const char *code = json_string_value(json_object_get(o, "code"));
    const char *exec = json_string_value(json_object_get(opts, "exec"));
    const char *build = json_string_value(json_object_get(opts, "build"));
    if (!json_is_object(o)) {
        msg = "the first message must be a JSON object {\"mode\", \"code\", \"options\"}";
    } else if (json_object_get(o, "code") && !json_is_null(json_object_get(o, "code")) && !code) {
        msg = "code must be a string";
    } else if (opts && !json_is_null(opts) && !json_is_object(opts)) {
        msg = "options must be an object";
    } else if (!mode) {
        msg = "mode is required: \"query\" or \"batch\"";
    } else if (strcmp(mode, "query") == 0) {
        if (!code || !*code) {
            msg = "query mode needs code";
        } else {
            p->kind[0] = 'q';
            p->code[0] = ts_strdup(code);
            p->n = 1;
        }
    } else if (strcmp(mode, "batch") == 0) {
        const char *run = exec && *exec ? exec : code;
        if (!run || !*run) {
            msg = "batch mode needs options.exec (the command to run)";
        } else {
            if (build && *build) {
                p->kind[p->n] = 'b';
                p->code[p->n++] = ts_strdup(build);
                p->build = true;
            }
            p->kind[p->n] = 'b';
            p->code[p->n++] = ts_strdup(run);
        }
    } else {
        msg = "unknown mode: \"query\" or \"batch\" are served";
    }
    if (msg) snprintf(why, why_len, "Invalid API parameters: %s", msg);
    json_decref(o);
    return msg == NULL;
}

void exec_plan_free(exec_plan *p)
{
    for (int i = 0; i < p->n; i++)
        free(p->code[i]);
    memset(p, 0, sizeof(*p));
}

/* ---- console ------------------------------------------------------------------------ */

/* Valid UTF-8 of p into out, U+FFFD for each byte that is not; returns how
 * many bytes were taken (a character cut short at the end stays unless
 * final). */
static size_t _utf8(const uint8_t *p, size_t n, ts_buf *out, bool final)
{
    size_t i = 0;
    while (i < n) {
        const char *c = (const char *)p + i;
        uint32_t cp;
        size_t k = utf8_decode(c, n - i, &cp);
        if (!k && !final && utf8_partial(c, n - i)) break;
        if (!k) {
            ts_buf_append(out, "\xEF\xBF\xBD", 3);
            i++;
            continue;
        }
        ts_buf_append(out, c, k);
        i += k;
    }
    return i;
}

static ts_buf *_entry(exec_console *c, bool is_err)
{
    if (c->n > 0 && (c->err[c->n - 1] == is_err || c->n == EXEC_CONSOLE_MAX))
        return &c->text[c->n - 1];
    c->err[c->n] = is_err;
    memset(&c->text[c->n], 0, sizeof(ts_buf));
    return &c->text[c->n++];
}

void exec_console_add(exec_console *c, bool is_err, const uint8_t *p, size_t n)
{
    ts_buf *carry = &c->carry[is_err ? 1 : 0];
    ts_buf_append(carry, p, n);
    ts_buf tmp = {0};
    size_t used = _utf8((const uint8_t *)carry->data, carry->len, &tmp, false);
    if (tmp.len) ts_buf_append(_entry(c, is_err), tmp.data, tmp.len);
    ts_buf_free(&tmp);
    memmove(carry->data, carry->data + used, carry->len - used);
    carry->len -= used;
}

bool exec_console_empty(const exec_console *c)
{
    return c->n == 0;
}

json_t *exec_console_take(exec_console *c, bool final)
{
    if (final) {
        for (int k = 0; k < 2; k++) {
            if (!c->carry[k].len) continue;
            ts_buf tmp = {0};
            (void)_utf8((const uint8_t *)c->carry[k].data, c->carry[k].len, &tmp, true);
            ts_buf_append(_entry(c, k == 1), tmp.data, tmp.len);
            ts_buf_free(&tmp);
            c->carry[k].len = 0;
        }
    }
    json_t *list = json_array();
    for (int i = 0; i < c->n; i++) {
        json_t *s = json_stringn(c->text[i].data ? c->text[i].data : "", c->text[i].len);
        json_array_append_new(
            list, json_pack("[s, o]", c->err[i] ? "stderr" : "stdout", s ? s : json_string("")));
        ts_buf_free(&c->text[i]);
    }
    c->n = 0;
    return list;
}

void exec_console_free(exec_console *c)
{
    json_decref(exec_console_take(c, false));
    ts_buf_free(&c->carry[0]);
    ts_buf_free(&c->carry[1]);
}

/* ---- control ------------------------------------------------------------------------- */

void exec_ctl_init(exec_ctl *c)
{
    memset(c, 0, sizeof(*c));
    pthread_mutex_init(&c->lock, NULL);
}

void exec_ctl_destroy(exec_ctl *c)
{
    pthread_mutex_destroy(&c->lock);
}

void exec_ctl_interrupt(exec_ctl *c)
{
    pthread_mutex_lock(&c->lock);
    c->interrupted = true;
    if (c->term && !ws_conn_send(c->term, WSF_BINARY, "x", 1))
        TLOG_INFO("execute stream: interrupt not delivered (the term is gone)", "");
    pthread_mutex_unlock(&c->lock);
}

static bool _take_interrupted(exec_ctl *c)
{
    pthread_mutex_lock(&c->lock);
    bool i = c->interrupted;
    c->interrupted = false;
    pthread_mutex_unlock(&c->lock);
    return i;
}

static void _set_term(exec_ctl *c, ws_conn *term)
{
    pthread_mutex_lock(&c->lock);
    c->term = term;
    pthread_mutex_unlock(&c->lock);
}

/* ---- serving ------------------------------------------------------------------------- */

static bool _send_json(ws_conn *client, json_t *o)
{
    char *s = json_dumps(o, JSON_COMPACT);
    json_decref(o);
    bool ok = s && ws_conn_send(client, WSF_TEXT, s, strlen(s));
    free(s);
    return ok;
}

static bool _send_result(ws_conn *client, const char *status, exec_console *con, bool final,
                         int exit_code)
{
    json_t *o = json_pack(
        "{s:s, s:o, s:o, s:n, s:[]}", "status", status, "console", exec_console_take(con, final),
        "exitCode", exit_code >= 0 ? json_integer(exit_code) : json_null(), "options", "files");
    return _send_json(client, o);
}

static void _send_error(ws_conn *client, int close_code, const char *msg)
{
    if (!_send_json(client, json_pack("{s:s, s:s}", "status", "error", "msg", msg)))
        TLOG_DEBUG("execute stream: the client is gone", "");
    ws_conn_close(client, close_code, NULL);
}

/* The client's first text message within EXEC_FIRST_TIMEOUT_MS: true with
 * a heap copy; false when it closed, broke the protocol or said nothing. */
static bool _first_message(ws_conn *client, char **text, size_t *len)
{
    int64_t deadline = ts_now_mono_ms() + EXEC_FIRST_TIMEOUT_MS;
    for (;;) {
        int op = 0, code = 0;
        const uint8_t *d;
        size_t n;
        ws_next r = ws_conn_next(client, &op, &d, &n, &code);
        if (r == WS_NEXT_MESSAGE && op == WSF_TEXT) {
            *text = ts_malloc(n + 1);
            memcpy(*text, d, n + 1);
            *len = n;
            return true;
        }
        if (r == WS_NEXT_MESSAGE) continue; /* binary: not the first message */
        if (r == WS_NEXT_CLOSE || r == WS_NEXT_ERROR) {
            ws_conn_close(client, r == WS_NEXT_CLOSE ? WSF_CLOSE_NORMAL : code, NULL);
            return false;
        }
        int64_t left = deadline - ts_now_mono_ms();
        struct pollfd pf = {.fd = ws_conn_fd(client), .events = POLLIN};
        if (left <= 0) {
            _send_error(client, WSF_CLOSE_POLICY, "no execute request within 60 s");
            return false;
        }
        if (poll(&pf, 1, (int)left) < 0 || ((pf.revents & POLLIN) && !ws_conn_fill(client)))
            return false;
    }
}

typedef enum run_end { RUN_EXITED, RUN_CLIENT_GONE, RUN_TERM_LOST } run_end;

typedef struct run_state {
    ws_conn *client, *term;
    exec_console *con;
    int64_t last_sent_ms;
    int status;
    bool exited;
} run_state;

/* The client's messages: each text one is a line of input. */
static bool _from_client(run_state *rs)
{
    for (;;) {
        int op = 0, code = 0;
        const uint8_t *d;
        size_t n;
        ws_next r = ws_conn_next(rs->client, &op, &d, &n, &code);
        if (r == WS_NEXT_NONE) return true;
        if (r != WS_NEXT_MESSAGE) {
            ws_conn_close(rs->client, r == WS_NEXT_CLOSE ? WSF_CLOSE_NORMAL : code, NULL);
            return false;
        }
        if (op != WSF_TEXT) continue;
        uint8_t *line = ts_malloc(n + 2);
        line[0] = 'i';
        memcpy(line + 1, d, n);
        line[n + 1] = '\n';
        bool ok = ws_conn_send(rs->term, WSF_BINARY, line, n + 2);
        free(line);
        if (!ok) return true; /* the term's side says why */
    }
}

/* The term's frames: output, waits, the exit. */
static bool _from_term(run_state *rs)
{
    for (;;) {
        int op = 0, code = 0;
        const uint8_t *d;
        size_t n;
        ws_next r = ws_conn_next(rs->term, &op, &d, &n, &code);
        if (r == WS_NEXT_NONE) return true;
        if (r != WS_NEXT_MESSAGE) return false;
        if (n == 0) continue;
        if (d[0] == 'o' || d[0] == 'e') {
            exec_console_add(rs->con, d[0] == 'e', d + 1, n - 1);
        } else if (d[0] == 'w') {
            if (!_send_result(rs->client, "waiting-input", rs->con, false, -1)) return false;
            rs->last_sent_ms = ts_now_mono_ms();
        } else if (d[0] == 'x') {
            char num[16];
            size_t k = n - 1 < sizeof(num) - 1 ? n - 1 : sizeof(num) - 1;
            memcpy(num, d + 1, k);
            num[k] = '\0';
            rs->status = atoi(num);
            rs->exited = true;
            return false;
        }
    }
}

static run_end _run(run_state *rs)
{
    for (;;) {
        if (!_from_client(rs)) return RUN_CLIENT_GONE;
        if (!_from_term(rs)) return rs->exited ? RUN_EXITED : RUN_TERM_LOST;
        int64_t now = ts_now_mono_ms();
        if (!exec_console_empty(rs->con) && now - rs->last_sent_ms >= EXEC_FLUSH_MS) {
            if (!_send_result(rs->client, "continued", rs->con, false, -1)) return RUN_CLIENT_GONE;
            rs->last_sent_ms = now;
        }
        int timeout =
            exec_console_empty(rs->con) ? 1000 : (int)(EXEC_FLUSH_MS - (now - rs->last_sent_ms));
        struct pollfd pf[2] = {{.fd = ws_conn_fd(rs->client), .events = POLLIN},
                               {.fd = ws_conn_fd(rs->term), .events = POLLIN}};
        if (poll(pf, 2, timeout < 1 ? 1 : timeout) < 0) continue;
        /* A side that is gone: what it sent before still counts (an exit status). */
        if ((pf[0].revents & (POLLIN | POLLHUP | POLLERR)) && !ws_conn_fill(rs->client)) {
            (void)_from_client(rs);
            return RUN_CLIENT_GONE;
        }
        if ((pf[1].revents & (POLLIN | POLLHUP | POLLERR)) && !ws_conn_fill(rs->term)) {
            (void)_from_term(rs);
            return rs->exited ? RUN_EXITED : RUN_TERM_LOST;
        }
    }
}

void streams_exec_serve(ws_conn *client, const char *host, int port, exec_ctl *ctl)
{
    char *text = NULL;
    size_t len = 0;
    if (!_first_message(client, &text, &len)) return;
    exec_plan plan;
    char why[256];
    bool ok = exec_plan_parse(text, len, &plan, why, sizeof(why));
    free(text);
    if (!ok) {
        _send_error(client, WSF_CLOSE_POLICY, why);
        return;
    }
    exec_console con = {0};
    run_state rs = {.client = client, .con = &con, .status = -1};
    for (int step = 0; step < plan.n; step++) {
        if (_take_interrupted(ctl)) {
            rs.status = 130;
            break;
        }
        ts_err err = {{0}};
        ws_conn *term =
            ws_client_open(host, port, "/exec", EXEC_CONNECT_TIMEOUT_MS, EXEC_MAX_MESSAGE, &err);
        if (!term) {
            TLOG_WARN("execute stream: the kernel's terminal app cannot be reached", "error=\"%s\"",
                      err.msg);
            _send_error(client, WSF_CLOSE_INTERNAL,
                        "BackendError: the kernel's terminal app cannot be reached");
            goto out;
        }
        size_t clen = strlen(plan.code[step]);
        char *first = ts_malloc(clen + 1);
        first[0] = plan.kind[step];
        memcpy(first + 1, plan.code[step], clen);
        bool sent = ws_conn_send(term, WSF_TEXT, first, clen + 1);
        free(first);
        rs.term = term;
        rs.exited = false;
        _set_term(ctl, term);
        run_end end = sent ? _run(&rs) : RUN_TERM_LOST;
        _set_term(ctl, NULL);
        ws_conn_free(term);
        rs.term = NULL;
        if (end == RUN_CLIENT_GONE) goto out; /* the term interrupts the program */
        if (end == RUN_TERM_LOST) {
            _send_error(client, WSF_CLOSE_INTERNAL,
                        "BackendError: the program's stream ended without an exit status");
            goto out;
        }
        if (plan.build && step == 0) {
            if (rs.status != 0) break; /* the build failed: its status is the answer */
            if (!_send_result(client, "build-finished", &con, true, -1)) goto out;
            rs.last_sent_ms = ts_now_mono_ms();
        }
    }
    if (_send_result(client, "finished", &con, true, rs.status))
        ws_conn_close(client, WSF_CLOSE_NORMAL, NULL);
out:
    exec_console_free(&con);
    exec_plan_free(&plan);
}
