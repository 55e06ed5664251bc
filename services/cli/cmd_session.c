/* cmd_session.c: `tessera session SUBCOMMAND`: create (with live progress
 * while it waits), list, info, destroy, restart, logs, exec, run, history,
 * against the gateway's /session API (docs/api.md "Sessions"). Tables and
 * records by default, the API's JSON with --json; progress goes to stderr so
 * stdout stays parseable. */
#include "services/cli/commands.h"
#include "services/cli/output.h"

#include <ctype.h>
#include <getopt.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#define POLL_INTERVAL_MS 500
#define DEFAULT_MAX_WAIT_S 60

typedef struct subcommand subcommand;
struct subcommand {
    const char *name;
    const char *summary;
    const char *usage; /* after "tessera session " */
    const char *options;
    int (*run)(cli *c, const subcommand *self, int argc, char **argv);
};

/* ---- helpers ------------------------------------------------------------------------ */

static bool _is_help(const char *a)
{
    return strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0;
}

static void _sub_help(const subcommand *s, FILE *out)
{
    fprintf(out, "Usage: tessera session %s\n\n%c%s.\n\nOptions:\n%s", s->usage,
            toupper((unsigned char)s->summary[0]), s->summary + 1, s->options ? s->options : "");
    fprintf(out, "  %-28s %s\n  %-28s %s\n", "--json", "print the API's JSON", "-h, --help",
            "this help");
}

static int _usage(const subcommand *s, const char *fmt, ...) TS_PRINTF(2, 3);
static int _usage(const subcommand *s, const char *fmt, ...)
{
    fprintf(stderr, "tessera session %s: ", s->name);
    va_list ap;
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, "; try 'tessera session %s --help'\n", s->name);
    return CLI_USAGE;
}

/* getopt_long over a subcommand's words; -h prints its help. Returns the
 * option, -1 at the end, or -2 after a usage error or the help (*rc set). */
static int _next_opt(cli *c, const subcommand *s, int argc, char **argv, const char *shortopts,
                     const struct option *longopts, int *rc)
{
    for (;;) {
        opterr = 0;
        int opt = getopt_long(argc, argv, shortopts, longopts, NULL);
        if (opt == 'h') {
            _sub_help(s, stdout);
            *rc = CLI_OK;
            return -2;
        }
        if (opt == 'J') { /* --json */
            c->json = true;
            continue;
        }
        if (opt == '?' || opt == ':') {
            *rc = _usage(s, opt == ':' ? "missing value for '%s'" : "unknown option '%s'",
                         argv[optind - 1]);
            return -2;
        }
        return opt;
    }
}

/* The positional words left: exactly n (n < 0: at least -n). */
static int _positionals(const subcommand *s, int argc, char **argv, int n, const char *what)
{
    int left = argc - optind;
    if ((n >= 0 && left < n) || (n < 0 && left < -n)) return _usage(s, "%s is missing", what);
    if (n >= 0 && left > n) return _usage(s, "unexpected argument '%s'", argv[optind + n]);
    return CLI_OK;
}

static int64_t _now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void _random_hex(char *out, size_t nbytes)
{
    unsigned char b[16];
    if (nbytes > sizeof(b)) nbytes = sizeof(b);
    if (getrandom(b, nbytes, 0) != (ssize_t)nbytes) {
        srand((unsigned)time(NULL) ^ (unsigned)getpid());
        for (size_t i = 0; i < nbytes; i++)
            b[i] = (unsigned char)rand();
    }
    for (size_t i = 0; i < nbytes; i++)
        sprintf(out + 2 * i, "%02x", b[i]);
}

/* "/session/<escaped name>" + suffix (heap). */
static char *_session_path(const char *name, const char *suffix)
{
    char *e = client_escape(name);
    char *p = ts_asprintf("/session/%s%s", e, suffix ? suffix : "");
    free(e);
    return p;
}

static json_t *_items(json_t *answer)
{
    return json_is_array(answer) ? answer : json_object_get(answer, "items");
}

static const char *_str(const json_t *o, const char *key)
{
    return json_string_value(json_object_get(o, key));
}

/* ---- create ----------------------------------------------------------------------------- */

/* "cpu=1,mem=1g,cuda.shares=0.5" merged into obj as strings; false when malformed. */
static bool _parse_slots(const char *s, json_t *obj)
{
    if (!*s) return false;
    char *copy = ts_strdup(s), *save = NULL;
    bool ok = true;
    for (char *item = strtok_r(copy, ",", &save); ok && item; item = strtok_r(NULL, ",", &save)) {
        char *eq = strchr(item, '=');
        if (!eq || eq == item || !eq[1]) {
            ok = false;
            break;
        }
        *eq = '\0';
        json_object_set_new(obj, item, json_string(eq + 1));
    }
    free(copy);
    return ok;
}

static bool _final(const char *status)
{
    return status && (!strcmp(status, "TERMINATED") || !strcmp(status, "CANCELLED") ||
                      !strcmp(status, "ERROR"));
}

/* Whether a final session ended well (a batch session that succeeded). */
static bool _ended_well(const json_t *info)
{
    const char *st = _str(info, "status");
    if (!st || strcmp(st, "TERMINATED") != 0) return false;
    const char *result = _str(info, "result");
    const json_t *code = json_object_get(info, "exitCode");
    return (result && !strcasecmp(result, "SUCCESS")) ||
           (json_is_integer(code) && json_integer_value(code) == 0);
}

/* Poll GET /session/NAME every POLL_INTERVAL_MS until RUNNING, a final status
 * or max_wait_s, showing the status as it changes on stderr (one updating line
 * on a terminal, a line per change otherwise). *last: the last info (owned). */
static int _wait_running(cli *c, const char *name, double max_wait_s, json_t **last)
{
    bool tty = isatty(STDERR_FILENO);
    char *path = _session_path(name, NULL);
    char *shown = NULL;
    int64_t t0 = _now_ms(), deadline = t0 + (int64_t)(max_wait_s * 1000);
    int rc = CLI_OK;
    *last = NULL;
    for (;;) {
        json_t *info = NULL;
        rc = client_call(c, "GET", path, NULL, true, &info);
        if (rc != CLI_OK) break;
        json_decref(*last);
        *last = info;
        const char *st = _str(info, "status"), *why = _str(info, "statusInfo");
        char *line = ts_asprintf("%s%s%s%s", st ? st : "?", why && *why ? " (" : "",
                                 why && *why ? why : "", why && *why ? ")" : "");
        double secs = (double)(_now_ms() - t0) / 1000.0;
        if (tty) {
            fprintf(stderr, "\r\033[K[%5.1fs] %s %s", secs, name, line);
        } else if (!shown || strcmp(shown, line) != 0) {
            fprintf(stderr, "[%5.1fs] %s %s\n", secs, name, line);
        }
        fflush(stderr);
        free(shown);
        shown = line;
        if ((st && !strcmp(st, "RUNNING")) || _final(st)) break;
        if (_now_ms() >= deadline) break;
        usleep(POLL_INTERVAL_MS * 1000);
    }
    if (tty && shown) fputc('\n', stderr);
    free(shown);
    free(path);
    return rc;
}

/* --mount NAME[:PATH]: NAME into mounts, PATH (when given) into mount_map.
 * The first ':' separates them (folder names with ':' need a PATH). */
static int _parse_mount(const subcommand *self, const char *arg, json_t *mounts, json_t *mount_map)
{
    const char *colon = strchr(arg, ':');
    size_t n = colon ? (size_t)(colon - arg) : strlen(arg);
    if (n == 0 || (colon && !colon[1]))
        return _usage(self, "bad --mount '%s': expected NAME or NAME:PATH, e.g. data:/home/work/in",
                      arg);
    char *name = ts_strndup(arg, n);
    int rc = CLI_OK;
    size_t i;
    json_t *v;
    json_array_foreach(mounts, i, v)
    {
        if (strcmp(json_string_value(v), name) == 0) {
            rc = _usage(self, "--mount: vfolder '%s' is named twice", name);
            break;
        }
    }
    if (rc == CLI_OK) {
        json_array_append_new(mounts, json_string(name));
        if (colon) json_object_set_new(mount_map, name, json_string(colon + 1));
    }
    free(name);
    return rc;
}

static int sub_create(cli *c, const subcommand *self, int argc, char **argv)
{
    static const struct option longopts[] = {
        {"name", required_argument, NULL, 'n'},
        {"type", required_argument, NULL, 't'},
        {"group", required_argument, NULL, 'g'},
        {"resource-group", required_argument, NULL, 'R'},
        {"resources", required_argument, NULL, 'r'},
        {"env", required_argument, NULL, 'e'},
        {"startup-command", required_argument, NULL, 'S'},
        {"mount", required_argument, NULL, 'm'},
        {"port", required_argument, NULL, 'P'},
        {"enqueue-only", no_argument, NULL, 'E'},
        {"max-wait", required_argument, NULL, 'w'},
        {"reuse", no_argument, NULL, 'u'},
        {"json", no_argument, NULL, 'J'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    const char *name = NULL, *type = NULL, *group = NULL, *rgroup = NULL, *startup = NULL;
    bool enqueue_only = false, reuse = false;
    double max_wait = DEFAULT_MAX_WAIT_S;
    json_t *slots = json_object(), *env = json_object();
    json_t *mounts = json_array(), *mount_map = json_object(), *pports = json_array();
    int opt, rc = CLI_OK;
    optind = 0;
    while ((opt = _next_opt(c, self, argc, argv, "n:t:g:r:e:m:h", longopts, &rc)) >= 0) {
        char *end = NULL;
        switch (opt) {
        case 'n':
            name = optarg;
            break;
        case 't':
            if (strcmp(optarg, "interactive") && strcmp(optarg, "batch") &&
                strcmp(optarg, "inference"))
                rc = _usage(self, "--type must be interactive, batch or inference, not '%s'",
                            optarg);
            type = optarg;
            break;
        case 'g':
            group = optarg;
            break;
        case 'R':
            rgroup = optarg;
            break;
        case 'r':
            if (!_parse_slots(optarg, slots))
                rc = _usage(self, "bad -r '%s': expected SLOT=AMOUNT[,...], e.g. cpu=1,mem=1g",
                            optarg);
            break;
        case 'e': {
            const char *eq = strchr(optarg, '=');
            if (!eq || eq == optarg) {
                rc = _usage(self, "bad --env '%s': expected NAME=VALUE", optarg);
                break;
            }
            char *k = ts_strndup(optarg, (size_t)(eq - optarg));
            json_object_set_new(env, k, json_string(eq + 1));
            free(k);
            break;
        }
        case 'S':
            startup = optarg;
            break;
        case 'm':
            rc = _parse_mount(self, optarg, mounts, mount_map);
            break;
        case 'P': {
            long port = strtol(optarg, &end, 10);
            if (end == optarg || *end || port < 1024 || port > 65535)
                rc =
                    _usage(self, "--port needs a port number from 1024 to 65535, not '%s'", optarg);
            else
                json_array_append_new(pports, json_integer(port));
            break;
        }
        case 'E':
            enqueue_only = true;
            break;
        case 'w':
            max_wait = strtod(optarg, &end);
            if (end == optarg || *end || !isfinite(max_wait) || max_wait < 0)
                rc = _usage(self, "--max-wait needs seconds (a number >= 0), not '%s'", optarg);
            break;
        case 'u':
            reuse = true;
            break;
        }
        if (rc != CLI_OK) break;
    }
    if (opt != -2 && rc == CLI_OK) rc = _positionals(self, argc, argv, 1, "IMAGE");
    if (opt == -2 || rc != CLI_OK || (rc = client_need_keys(c)) != CLI_OK) {
        json_decref(slots);
        json_decref(env);
        json_decref(mounts);
        json_decref(mount_map);
        json_decref(pports);
        return rc;
    }

    char gen[32] = "";
    if (!name) { /* as Backend.AI's clients do: a random name */
        char hex[11];
        _random_hex(hex, 5);
        snprintf(gen, sizeof(gen), "tessera-%s", hex);
        name = gen;
    }
    json_t *config = json_object();
    if (json_object_size(slots)) json_object_set(config, "resources", slots);
    if (json_object_size(env)) json_object_set(config, "environ", env);
    if (rgroup) json_object_set_new(config, "scaling_group", json_string(rgroup));
    if (json_array_size(mounts)) json_object_set(config, "mounts", mounts);
    if (json_object_size(mount_map)) json_object_set(config, "mount_map", mount_map);
    if (json_array_size(pports)) json_object_set(config, "preopen_ports", pports);
    json_t *body =
        json_pack("{s:s, s:s, s:o}", "image", argv[optind], "name", name, "config", config);
    if (type) json_object_set_new(body, "type", json_string(type));
    if (group) json_object_set_new(body, "group_name", json_string(group));
    if (startup) json_object_set_new(body, "startupCommand", json_string(startup));
    /* The CLI always enqueues and then polls, to show the progress itself. */
    json_object_set_new(body, "enqueueOnly", json_true());
    if (reuse) json_object_set_new(body, "reuseIfExists", json_true());
    json_decref(slots);
    json_decref(env);
    json_decref(pports);
    json_decref(mounts);
    json_decref(mount_map);

    json_t *answer = NULL;
    rc = client_call(c, "POST", "/session", body, true, &answer);
    json_decref(body);
    if (rc != CLI_OK) return rc;
    const char *sname = _str(answer, "sessionId") ?: name;
    bool created = !json_is_false(json_object_get(answer, "created"));
    if (!created && !c->json) fprintf(stderr, "tessera: reusing the existing session %s\n", sname);
    if (enqueue_only) {
        if (c->json) {
            out_json(answer);
        } else {
            printf("session %s %s: %s\n", sname, created ? "created" : "exists",
                   _str(answer, "status") ?: "?");
            printf("id      %s\n", _str(answer, "sessionUuid") ?: "?");
        }
        json_decref(answer);
        return CLI_OK;
    }
    char *sname_copy = ts_strdup(sname);
    json_decref(answer);
    json_t *info = NULL;
    rc = _wait_running(c, sname_copy, max_wait, &info);
    if (rc == CLI_OK) {
        const char *st = _str(info, "status") ?: "?";
        if (c->json) {
            out_json(info);
        } else {
            printf("session %s %s\n", sname_copy, st);
            printf("id      %s\n", _str(info, "sessionUuid") ?: "?");
            json_t *ports = json_object_get(info, "servicePorts");
            if (json_array_size(ports)) {
                char *t = out_text(ports, OUT_TEXT);
                printf("ports   %s\n", t);
                free(t);
            }
        }
        if (_final(st) && !_ended_well(info)) {
            const char *why = _str(info, "statusInfo");
            fprintf(stderr, "tessera: session %s ended %s%s%s\n", sname_copy, st,
                    why && *why ? ": " : "", why && *why ? why : "");
            rc = CLI_FAIL;
        } else if (strcmp(st, "RUNNING") != 0 && !_final(st)) {
            fprintf(stderr,
                    "tessera: session %s is still %s after %g s; it stays queued "
                    "(`tessera session info %s`)\n",
                    sname_copy, st, max_wait, sname_copy);
        }
    }
    json_decref(info);
    free(sname_copy);
    return rc;
}

/* ---- list, info, history ------------------------------------------------------------------ */

static const out_column list_cols[] = {
    {"NAME", "sessionName", OUT_TEXT},
    {"ID", "sessionUuid", OUT_TEXT},
    {"STATUS", "status", OUT_TEXT},
    {"TYPE", "type", OUT_TEXT},
    {"RESOURCE GROUP", "scalingGroup", OUT_TEXT},
    {"CREATED", "creationTime", OUT_TIME},
    {"IMAGE", "image", OUT_TEXT},
    {"STATUS INFO", "statusInfo", OUT_TEXT},
    {NULL, NULL, OUT_TEXT},
};

static const out_column list_all_cols[] = {
    {"NAME", "sessionName", OUT_TEXT},
    {"ID", "sessionUuid", OUT_TEXT},
    {"OWNER", "accessKey", OUT_TEXT},
    {"STATUS", "status", OUT_TEXT},
    {"TYPE", "type", OUT_TEXT},
    {"RESOURCE GROUP", "scalingGroup", OUT_TEXT},
    {"CREATED", "creationTime", OUT_TIME},
    {"IMAGE", "image", OUT_TEXT},
    {"STATUS INFO", "statusInfo", OUT_TEXT},
    {NULL, NULL, OUT_TEXT},
};

static int sub_list(cli *c, const subcommand *self, int argc, char **argv)
{
    static const struct option longopts[] = {
        {"all", no_argument, NULL, 'a'},          {"status", required_argument, NULL, 's'},
        {"type", required_argument, NULL, 't'},   {"limit", required_argument, NULL, 'l'},
        {"offset", required_argument, NULL, 'o'}, {"json", no_argument, NULL, 'J'},
        {"help", no_argument, NULL, 'h'},         {NULL, 0, NULL, 0},
    };
    bool all = false;
    const char *status = NULL, *type = NULL, *limit = NULL, *offset = NULL;
    int opt, rc = CLI_OK;
    optind = 0;
    while ((opt = _next_opt(c, self, argc, argv, "as:h", longopts, &rc)) >= 0) {
        char *end = NULL;
        switch (opt) {
        case 'a':
            all = true;
            break;
        case 's':
            status = optarg;
            break;
        case 't':
            type = optarg;
            break;
        case 'l':
        case 'o':
            if (strtol(optarg, &end, 10) < 0 || end == optarg || *end)
                return _usage(self, "--limit and --offset need a whole number >= 0, not '%s'",
                              optarg);
            *(opt == 'l' ? &limit : &offset) = optarg;
            break;
        }
    }
    if (opt == -2) return rc;
    if ((rc = _positionals(self, argc, argv, 0, "")) != CLI_OK) return rc;
    if ((rc = client_need_keys(c)) != CLI_OK) return rc;
    char *path = ts_strdup("/session");
    if (all) client_query_add(&path, "all", "true");
    if (status) client_query_add(&path, "status", status);
    if (type) client_query_add(&path, "type", type);
    if (limit) client_query_add(&path, "limit", limit);
    if (offset) client_query_add(&path, "offset", offset);
    json_t *answer = NULL;
    rc = client_call(c, "GET", path, NULL, true, &answer);
    free(path);
    if (rc == CLI_OK) {
        if (c->json) {
            out_json(answer);
        } else {
            json_t *items = _items(answer);
            out_table(all ? list_all_cols : list_cols, items);
            json_t *total = json_object_get(answer, "total");
            long long off = offset ? atoll(offset) : 0, n = (long long)json_array_size(items);
            if (json_is_integer(total) && off + n < json_integer_value(total))
                fprintf(stderr,
                        "(%lld of %" JSON_INTEGER_FORMAT " shown; next page: --offset %lld)\n", n,
                        json_integer_value(total), off + n);
        }
    }
    json_decref(answer);
    return rc;
}

/* The words after the options: NAME (and for some, more). */
static int _name_only(cli *c, const subcommand *self, int argc, char **argv)
{
    static const struct option longopts[] = {
        {"json", no_argument, NULL, 'J'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    int opt, rc = CLI_OK;
    optind = 0;
    while ((opt = _next_opt(c, self, argc, argv, "h", longopts, &rc)) >= 0) {
    }
    if (opt == -2) return rc == CLI_OK ? -1 : rc; /* -1: help shown */
    if ((rc = _positionals(self, argc, argv, 1, "NAME")) != CLI_OK) return rc;
    return client_need_keys(c);
}

static const out_column kernel_cols[] = {
    {"KERNEL", "id", OUT_TEXT},     {"ROLE", "role", OUT_TEXT},
    {"AGENT", "agent", OUT_TEXT},   {"STATUS", "status", OUT_TEXT},
    {"EXIT", "exitCode", OUT_TEXT}, {"STATUS INFO", "statusInfo", OUT_TEXT},
    {NULL, NULL, OUT_TEXT},
};

static int sub_info(cli *c, const subcommand *self, int argc, char **argv)
{
    int rc = _name_only(c, self, argc, argv);
    if (rc != CLI_OK) return rc < 0 ? CLI_OK : rc;
    char *path = _session_path(argv[optind], NULL);
    json_t *info = NULL;
    rc = client_call(c, "GET", path, NULL, true, &info);
    free(path);
    if (rc == CLI_OK) {
        if (c->json) {
            out_json(info);
        } else {
            static const char *const hide[] = {"kernels", NULL};
            out_record(info, hide);
            json_t *kernels = json_object_get(info, "kernels");
            if (json_array_size(kernels)) {
                printf("\n");
                out_table(kernel_cols, kernels);
            }
        }
    }
    json_decref(info);
    return rc;
}

static const out_column history_cols[] = {
    {"TIME", "at", OUT_TIME},
    {"STATUS", "status", OUT_TEXT},
    {"REASON", "reason", OUT_TEXT},
    {NULL, NULL, OUT_TEXT},
};

static int sub_history(cli *c, const subcommand *self, int argc, char **argv)
{
    int rc = _name_only(c, self, argc, argv);
    if (rc != CLI_OK) return rc < 0 ? CLI_OK : rc;
    char *path = _session_path(argv[optind], "/history");
    json_t *answer = NULL;
    rc = client_call(c, "GET", path, NULL, true, &answer);
    free(path);
    if (rc == CLI_OK) {
        if (c->json)
            out_json(answer);
        else
            out_table(history_cols, _items(answer));
    }
    json_decref(answer);
    return rc;
}

/* ---- destroy, restart, logs ------------------------------------------------------------------ */

/* method path (freed here) for session name; prints "session NAME VERB (STATUS)"
 * or the JSON answer. */
static int _act(cli *c, const char *method, char *path, const char *name, const char *verb)
{
    json_t *answer = NULL;
    int rc = client_call(c, method, path, NULL, true, &answer);
    free(path);
    if (rc == CLI_OK) {
        if (c->json) {
            out_json(answer);
        } else {
            const char *st = _str(answer, "status");
            printf("session %s %s%s%s%s\n", name, verb, st ? " (" : "", st ? st : "",
                   st ? ")" : "");
        }
    }
    json_decref(answer);
    return rc;
}

static int sub_destroy(cli *c, const subcommand *self, int argc, char **argv)
{
    static const struct option longopts[] = {
        {"forced", no_argument, NULL, 'f'},
        {"owner", required_argument, NULL, 'o'},
        {"json", no_argument, NULL, 'J'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    bool forced = false;
    const char *owner = NULL;
    int opt, rc = CLI_OK;
    optind = 0;
    while ((opt = _next_opt(c, self, argc, argv, "fh", longopts, &rc)) >= 0) {
        if (opt == 'f') forced = true;
        if (opt == 'o') owner = optarg;
    }
    if (opt == -2) return rc;
    if ((rc = _positionals(self, argc, argv, 1, "NAME")) != CLI_OK) return rc;
    if ((rc = client_need_keys(c)) != CLI_OK) return rc;
    const char *name = argv[optind];
    char *path = _session_path(name, NULL);
    if (forced) client_query_add(&path, "forced", "true");
    if (owner) client_query_add(&path, "owner_access_key", owner);
    return _act(c, "DELETE", path, name, "destroyed");
}

static int sub_restart(cli *c, const subcommand *self, int argc, char **argv)
{
    int rc = _name_only(c, self, argc, argv);
    if (rc != CLI_OK) return rc < 0 ? CLI_OK : rc;
    const char *name = argv[optind];
    return _act(c, "PATCH", _session_path(name, NULL), name, "restarting");
}

static int sub_logs(cli *c, const subcommand *self, int argc, char **argv)
{
    int rc = _name_only(c, self, argc, argv);
    if (rc != CLI_OK) return rc < 0 ? CLI_OK : rc;
    char *path = _session_path(argv[optind], "/logs");
    json_t *answer = NULL;
    rc = client_call(c, "GET", path, NULL, true, &answer);
    free(path);
    if (rc == CLI_OK) {
        if (c->json) {
            out_json(answer);
        } else {
            const json_t *logs = json_object_get(json_object_get(answer, "result"), "logs");
            if (json_is_string(logs))
                fwrite(json_string_value(logs), 1, json_string_length(logs), stdout);
        }
    }
    json_decref(answer);
    return rc;
}

/* ---- exec, run ------------------------------------------------------------------------------ */

/* A word for /bin/sh: as it is when plain, else in single quotes. */
static char *_sh_quote(const char *w)
{
    bool plain = *w != '\0';
    for (const char *p = w; *p && plain; p++)
        plain = strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./=:,+@%",
                       *p) != NULL;
    if (plain) return ts_strdup(w);
    char *out = ts_malloc(strlen(w) * 4 + 3), *o = out;
    *o++ = '\'';
    for (const char *p = w; *p; p++) {
        if (*p == '\'') {
            memcpy(o, "'\\''", 4);
            o += 4;
        } else {
            *o++ = *p;
        }
    }
    *o++ = '\'';
    *o = '\0';
    return out;
}

/* POST /session/NAME {mode, runId, code, options}; prints the console (stdout
 * items to stdout, stderr items to stderr) and returns the command's exit code. */
static int _execute(cli *c, const char *name, json_t *body)
{
    char rid[24];
    _random_hex(rid, 8);
    json_object_set_new(body, "runId", json_string(rid));
    char *path = _session_path(name, NULL);
    json_t *answer = NULL;
    int rc = client_call(c, "POST", path, body, true, &answer);
    free(path);
    if (rc != CLI_OK) return rc;
    json_t *result = json_object_get(answer, "result");
    if (c->json) {
        out_json(answer);
    } else {
        size_t i;
        json_t *item;
        json_array_foreach(json_object_get(result, "console"), i, item)
        {
            const char *kind = json_string_value(json_array_get(item, 0));
            json_t *data = json_array_get(item, 1);
            FILE *out = kind && !strcmp(kind, "stderr") ? stderr : stdout;
            if (kind && strcmp(kind, "stdout") && strcmp(kind, "stderr"))
                fprintf(stdout, "[%s] ", kind);
            if (json_is_string(data))
                fwrite(json_string_value(data), 1, json_string_length(data), out);
            else {
                char *t = out_text(data, OUT_TEXT);
                fprintf(out, "%s\n", t);
                free(t);
            }
        }
        fflush(stdout);
    }
    const char *st = _str(result, "status");
    json_t *code = json_object_get(result, "exitCode");
    if (st && strcmp(st, "finished") != 0) fprintf(stderr, "tessera: the run ended %s\n", st);
    rc = json_is_integer(code)                 ? (int)(json_integer_value(code) & 0xff)
         : (st && strcmp(st, "finished") != 0) ? CLI_FAIL
                                               : CLI_OK;
    json_decref(answer);
    return rc;
}

static int sub_exec(cli *c, const subcommand *self, int argc, char **argv)
{
    static const struct option longopts[] = {
        {"json", no_argument, NULL, 'J'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    int opt, rc = CLI_OK;
    optind = 0;
    while ((opt = _next_opt(c, self, argc, argv, "+h", longopts, &rc)) >= 0) {
    }
    if (opt == -2) return rc;
    if ((rc = _positionals(self, argc, argv, -2, "NAME -- COMMAND")) != CLI_OK) return rc;
    const char *name = argv[optind];
    int first = optind + 1;
    if (first < argc && strcmp(argv[first], "--") == 0) first++;
    if (first >= argc) return _usage(self, "%s is missing", "COMMAND");
    if ((rc = client_need_keys(c)) != CLI_OK) return rc;
    char *cmd = NULL;
    if (first + 1 == argc) {
        cmd = ts_strdup(argv[first]); /* one word: a shell command line as it is */
    } else {
        cmd = ts_strdup("");
        for (int i = first; i < argc; i++) {
            char *q = _sh_quote(argv[i]);
            char *next = ts_asprintf("%s%s%s", cmd, *cmd ? " " : "", q);
            free(q);
            free(cmd);
            cmd = next;
        }
    }
    json_t *body =
        json_pack("{s:s, s:s, s:{s:s}}", "mode", "batch", "code", "", "options", "exec", cmd);
    free(cmd);
    rc = _execute(c, name, body);
    json_decref(body);
    return rc;
}

static int sub_run(cli *c, const subcommand *self, int argc, char **argv)
{
    static const struct option longopts[] = {
        {"json", no_argument, NULL, 'J'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    int opt, rc = CLI_OK;
    optind = 0;
    while ((opt = _next_opt(c, self, argc, argv, "h", longopts, &rc)) >= 0) {
    }
    if (opt == -2) return rc;
    if ((rc = _positionals(self, argc, argv, 2, "NAME CODE")) != CLI_OK) return rc;
    if ((rc = client_need_keys(c)) != CLI_OK) return rc;
    json_t *body = json_pack("{s:s, s:s}", "mode", "query", "code", argv[optind + 1]);
    rc = _execute(c, argv[optind], body);
    json_decref(body);
    return rc;
}

/* ---- the table ----------------------------------------------------------------------------- */

static const subcommand subcommands[] = {
    {"create", "create a session and wait until it runs, showing its progress",
     "create IMAGE [OPTIONS]",
     "  -n, --name NAME              session name (default: tessera-<random>)\n"
     "  -t, --type TYPE              interactive (default), batch or inference\n"
     "  -g, --group PROJECT          project (group) name (default: default)\n"
     "      --resource-group GROUP   resource group (scaling group)\n"
     "  -r, --resources SLOTS        e.g. cpu=1,mem=1g,cuda.shares=0.5 (repeatable)\n"
     "  -e, --env NAME=VALUE         an environment variable (repeatable)\n"
     "      --startup-command CMD    the command a batch session runs\n"
     "  -m, --mount NAME[:PATH]      mount vfolder NAME at /home/work/NAME, or at PATH\n"
     "                               (under /home/work; relative to it) (repeatable)\n"
     "      --port PORT              publish container port PORT (1024..65535) too: an app\n"
     "                               named PORT (repeatable; config.preopen_ports)\n"
     "      --enqueue-only           return once queued, without waiting\n"
     "      --max-wait SECONDS       how long to wait for RUNNING (default 60)\n"
     "      --reuse                  a live session of that name is reused, not an error\n",
     sub_create},
    {"list", "list your sessions (--all: every session you may see)", "list [OPTIONS]",
     "  -a, --all                    all sessions you may see (admins: of others too)\n"
     "  -s, --status LIST            only these statuses, e.g. PENDING,RUNNING\n"
     "      --type TYPE              only interactive, batch or inference sessions\n"
     "      --limit N                at most N rows (server default 50)\n"
     "      --offset N               skip the first N rows\n",
     sub_list},
    {"info", "show a session: status and why, slots, ports, kernels", "info NAME", "", sub_info},
    {"destroy", "destroy a session (cancel it while pending)", "destroy NAME [OPTIONS]",
     "  -f, --forced                 terminate at once without waiting for the agent (admins)\n"
     "      --owner ACCESS_KEY       a session of another keypair (admins)\n",
     sub_destroy},
    {"restart", "restart a running session's kernels (mounts and work dir kept)", "restart NAME",
     "", sub_restart},
    {"logs", "print a session's container logs (stdout and stderr)", "logs NAME", "", sub_logs},
    {"exec", "run a command in a session (batch mode); exits with its exit code",
     "exec NAME -- COMMAND [ARGS...]",
     "  (one COMMAND word is a shell command line as it is; several are quoted each)\n", sub_exec},
    {"run", "run code with the image's runtime (query mode); exits with its exit code",
     "run NAME CODE", "", sub_run},
    {"history", "show a session's status history with times and reasons", "history NAME", "",
     sub_history},
};

static void _session_usage(FILE *out)
{
    fprintf(out, "Usage: tessera session SUBCOMMAND [ARGS] [--json]\n\n"
                 "Create and manage compute sessions. Tables by default, the API's JSON with "
                 "--json.\n\nSubcommands:\n");
    for (size_t i = 0; i < TS_ARRAY_LEN(subcommands); i++)
        fprintf(out, "  %-10s %s\n", subcommands[i].name, subcommands[i].summary);
    fprintf(out, "\n`tessera session SUBCOMMAND --help` for its options.\n");
}

int cmd_session(cli *c, const cli_command *self, int argc, char **argv)
{
    (void)self;
    if (argc < 2) {
        _session_usage(stderr);
        return CLI_USAGE;
    }
    if (_is_help(argv[1]) || strcmp(argv[1], "help") == 0) {
        _session_usage(stdout);
        return CLI_OK;
    }
    for (size_t i = 0; i < TS_ARRAY_LEN(subcommands); i++)
        if (strcmp(subcommands[i].name, argv[1]) == 0)
            return subcommands[i].run(c, &subcommands[i], argc - 1, argv + 1);
    fprintf(stderr, "tessera session: unknown subcommand '%s'; try 'tessera session --help'\n",
            argv[1]);
    return CLI_USAGE;
}
