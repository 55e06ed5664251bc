/* cmd_events.c: `tessera events`: the gateway's event streams (GET
 * /events/session, /events/background-task; server-sent events) printed as
 * they come, one line each, until interrupted (Ctrl-C ends cleanly, exit 0)
 * or, for a background task, until it ended. Read with libcurl as the
 * bytes arrive. */
#include "services/cli/commands.h"

#include <curl/curl.h>
#include <getopt.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static volatile sig_atomic_t g_stop;

static void _on_sigint(int sig)
{
    (void)sig;
    g_stop = 1;
}

typedef struct sse {
    bool json;
    char event[64];
    char *line; /* the line being read */
    size_t len, cap;
    char *data; /* the event's data lines */
    int events; /* printed */
    char *err;  /* a non-200 answer's body */
    long status;
    CURL *h;
} sse;

static void _print(sse *s)
{
    json_t *d = s->data ? json_loads(s->data, 0, NULL) : NULL;
    const char *ev = s->event[0] ? s->event : "message";
    if (s->json) {
        json_t *o = json_is_object(d) ? json_copy(d) : json_object();
        json_object_set_new(o, "event", json_string(ev));
        char *text = json_dumps(o, JSON_COMPACT);
        printf("%s\n", text);
        free(text);
        json_decref(o);
    } else {
        char ts[16];
        time_t now = time(NULL);
        struct tm tm;
        localtime_r(&now, &tm);
        strftime(ts, sizeof(ts), "%H:%M:%S", &tm);
        const char *tid = json_string_value(json_object_get(d, "task_id"));
        if (tid) {
            printf("%s  %-20s %lld/%lld  %s\n", ts, ev,
                   (long long)json_integer_value(json_object_get(d, "current_progress")),
                   (long long)json_integer_value(json_object_get(d, "total_progress")),
                   json_string_value(json_object_get(d, "message")) ?: "");
        } else {
            const char *reason = json_string_value(json_object_get(d, "reason"));
            const json_t *code = json_object_get(d, "exitCode");
            printf("%s  %-20s %s  %s", ts, ev,
                   json_string_value(json_object_get(d, "sessionName")) ?: "-",
                   json_string_value(json_object_get(d, "sessionId")) ?: "-");
            if (reason && *reason) printf("  reason=%s", reason);
            if (json_is_integer(code)) printf("  exit=%lld", (long long)json_integer_value(code));
            const char *kid = json_string_value(json_object_get(d, "kernelId"));
            if (kid) printf("  kernel=%s", kid);
            printf("\n");
        }
    }
    fflush(stdout);
    json_decref(d);
    s->events++;
}

static void _line(sse *s, const char *l)
{
    if (!*l) {
        if (s->data) _print(s);
        free(s->data);
        s->data = NULL;
        s->event[0] = '\0';
    } else if (strncmp(l, "event:", 6) == 0) {
        snprintf(s->event, sizeof(s->event), "%s", l + 6 + strspn(l + 6, " "));
    } else if (strncmp(l, "data:", 5) == 0) {
        const char *v = l + 5 + strspn(l + 5, " ");
        char *next = s->data ? ts_asprintf("%s\n%s", s->data, v) : ts_strdup(v);
        free(s->data);
        s->data = next;
    } /* ": comment" (keep-alive) and others: nothing */
}

static size_t _write(char *p, size_t size, size_t n, void *cls)
{
    sse *s = cls;
    size_t len = size * n;
    if (!s->status) curl_easy_getinfo(s->h, CURLINFO_RESPONSE_CODE, &s->status);
    if (s->status != 200) { /* a problem answer: kept for the message */
        char *next = ts_asprintf("%s%.*s", s->err ? s->err : "", (int)len, p);
        free(s->err);
        s->err = next;
        return len;
    }
    for (size_t i = 0; i < len; i++) {
        if (p[i] == '\r') continue;
        if (p[i] == '\n') {
            if (s->line) s->line[s->len] = '\0';
            _line(s, s->line ? s->line : "");
            s->len = 0;
            continue;
        }
        if (s->len + 2 > s->cap) s->line = ts_realloc(s->line, s->cap = s->cap ? s->cap * 2 : 256);
        s->line[s->len++] = p[i];
    }
    return len;
}

static int _progress(void *cls, curl_off_t a, curl_off_t b, curl_off_t c, curl_off_t d)
{
    (void)cls, (void)a, (void)b, (void)c, (void)d;
    return g_stop ? 1 : 0;
}

int cmd_events(cli *c, const cli_command *self, int argc, char **argv)
{
    static const struct option longopts[] = {
        {"session", required_argument, NULL, 's'},
        {"scope", required_argument, NULL, 'S'},
        {"group", required_argument, NULL, 'g'},
        {"task", required_argument, NULL, 't'},
        {"json", no_argument, NULL, 'J'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    const char *session = NULL, *scope = NULL, *group = NULL, *task = NULL;
    sse s = {.json = c->json};
    int opt;
    optind = 0;
    opterr = 0;
    while ((opt = getopt_long(argc, argv, ":s:S:g:t:h", longopts, NULL)) != -1) {
        switch (opt) {
        case 'h':
            cli_command_help(self, stdout);
            return CLI_OK;
        case 's':
            session = optarg;
            break;
        case 'S':
            scope = optarg;
            break;
        case 'g':
            group = optarg;
            break;
        case 't':
            task = optarg;
            break;
        case 'J':
            s.json = true;
            break;
        case ':':
            return cli_usage("events", NULL, "%s needs a value", argv[optind - 1]);
        default:
            return cli_usage("events", NULL, "unknown option '%s'", argv[optind - 1]);
        }
    }
    if (optind < argc) return cli_usage("events", NULL, "unexpected argument '%s'", argv[optind]);
    if (!client_has_keys(c)) return CLI_FAIL;
    char *path = ts_strdup(task ? "/events/background-task" : "/events/session");
    if (task) client_query_add(&path, "taskId", task);
    if (session) client_query_add(&path, "sessionName", session);
    if (scope) client_query_add(&path, "scope", scope);
    if (group) client_query_add(&path, "group", group);
    char *lines[CLIENT_MAX_HEADERS + 1], *url;
    cli_status rc = client_headers(c, "GET", path, "application/json", "text/event-stream", NULL, 0,
                                   true, lines, &url);
    free(path);
    if (rc != CLI_OK) return rc;
    struct curl_slist *hd = NULL;
    for (size_t i = 0; lines[i]; i++)
        hd = curl_slist_append(hd, lines[i]);
    client_headers_free(lines);
    struct sigaction sa = {.sa_handler = _on_sigint};
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    char errbuf[CURL_ERROR_SIZE] = "";
    s.h = curl_easy_init();
    curl_easy_setopt(s.h, CURLOPT_URL, url);
    curl_easy_setopt(s.h, CURLOPT_HTTPHEADER, hd);
    curl_easy_setopt(s.h, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(s.h, CURLOPT_ERRORBUFFER, errbuf);
    curl_easy_setopt(s.h, CURLOPT_CONNECTTIMEOUT_MS, 10000L);
    curl_easy_setopt(s.h, CURLOPT_WRITEFUNCTION, _write);
    curl_easy_setopt(s.h, CURLOPT_WRITEDATA, &s);
    curl_easy_setopt(s.h, CURLOPT_NOPROGRESS, 0L);
    curl_easy_setopt(s.h, CURLOPT_XFERINFOFUNCTION, _progress);
    CURLcode cc = curl_easy_perform(s.h);
    if (!s.status) curl_easy_getinfo(s.h, CURLINFO_RESPONSE_CODE, &s.status);
    rc = CLI_OK;
    if (g_stop) {
        /* interrupted: the normal way to stop following */
    } else if (s.status && s.status != 200) {
        json_t *p = s.err ? json_loads(s.err, 0, NULL) : NULL;
        const char *msg = json_string_value(json_object_get(p, "msg"));
        fprintf(stderr, "tessera: %s: %s (HTTP %ld)\n",
                json_string_value(json_object_get(p, "title")) ?: "refused", msg ? msg : "",
                s.status);
        json_decref(p);
        rc = CLI_FAIL;
    } else if (cc != CURLE_OK) {
        fprintf(stderr, "tessera: the event stream broke: %s\n",
                errbuf[0] ? errbuf : curl_easy_strerror(cc));
        rc = CLI_FAIL;
    }
    curl_easy_cleanup(s.h);
    curl_slist_free_all(hd);
    free(url);
    free(s.line);
    free(s.data);
    free(s.err);
    return rc;
}
