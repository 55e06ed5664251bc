/* session_create.c: `tessera session create` (see session_create.h). */
#include "services/cli/session_create.h"

#include "services/cli/output.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#define POLL_INTERVAL_MS 500
#define DEFAULT_MAX_WAIT_S 60

/* The options, as the request's parts. */
typedef struct create_args {
    const char *name, *type, *group, *rgroup, *startup, *template_id, *cluster_mode;
    long cluster_size; /* 0: not given */
    bool enqueue_only, reuse;
    json_t *agents; /* --agent, in order */
    double max_wait;
    json_t *slots, *env, *mounts, *mount_map, *pports;
} create_args;

static void _args_free(create_args *a)
{
    json_decref(a->agents);
    json_decref(a->slots);
    json_decref(a->env);
    json_decref(a->mounts);
    json_decref(a->mount_map);
    json_decref(a->pports);
}

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

/* --mount NAME[:PATH]: NAME into mounts, PATH (when given) into mount_map.
 * The first ':' separates them (folder names with ':' need a PATH). */
static cli_status _parse_mount(const session_sub *self, const char *arg, create_args *a)
{
    const char *colon = strchr(arg, ':');
    size_t n = colon ? (size_t)(colon - arg) : strlen(arg);
    if (n == 0 || (colon && !colon[1]))
        return cli_usage("session", self->name,
                         "bad --mount '%s': expected NAME or NAME:PATH, e.g. data:/home/work/in",
                         arg);
    char *name = ts_strndup(arg, n);
    cli_status rc = CLI_OK;
    size_t i;
    json_t *v;
    json_array_foreach(a->mounts, i, v)
    {
        if (strcmp(json_string_value(v), name) == 0) {
            rc = cli_usage("session", self->name, "--mount: vfolder '%s' is named twice", name);
            break;
        }
    }
    if (rc == CLI_OK) {
        json_array_append_new(a->mounts, json_string(name));
        if (colon) json_object_set_new(a->mount_map, name, json_string(colon + 1));
    }
    free(name);
    return rc;
}

/* One option into a: CLI_OK, or CLI_USAGE (printed). */
static cli_status _option(const session_sub *self, int opt, const char *arg, create_args *a)
{
    char *end = NULL;
    switch (opt) {
    case 'n':
        a->name = arg;
        break;
    case 't':
        a->type = arg;
        if (strcmp(arg, "interactive") && strcmp(arg, "batch") && strcmp(arg, "inference"))
            return cli_usage("session", self->name,
                             "--type must be interactive, batch or inference, not '%s'", arg);
        break;
    case 'g':
        a->group = arg;
        break;
    case 'R':
        a->rgroup = arg;
        break;
    case 'r':
        if (!_parse_slots(arg, a->slots))
            return cli_usage("session", self->name,
                             "bad -r '%s': expected SLOT=AMOUNT[,...], e.g. cpu=1,mem=1g", arg);
        break;
    case 'e': {
        const char *eq = strchr(arg, '=');
        if (!eq || eq == arg)
            return cli_usage("session", self->name, "bad --env '%s': expected NAME=VALUE", arg);
        char *k = ts_strndup(arg, (size_t)(eq - arg));
        json_object_set_new(a->env, k, json_string(eq + 1));
        free(k);
        break;
    }
    case 'S':
        a->startup = arg;
        break;
    case 'm':
        return _parse_mount(self, arg, a);
    case 'P': {
        long port = strtol(arg, &end, 10);
        if (end == arg || *end || port < 1024 || port > 65535)
            return cli_usage("session", self->name,
                             "--port needs a port number from 1024 to 65535, not '%s'", arg);
        json_array_append_new(a->pports, json_integer(port));
        break;
    }
    case 'E':
        a->enqueue_only = true;
        break;
    case 'w':
        a->max_wait = strtod(arg, &end);
        if (end == arg || *end || !isfinite(a->max_wait) || a->max_wait < 0)
            return cli_usage("session", self->name,
                             "--max-wait needs seconds (a number >= 0), not '%s'", arg);
        break;
    case 'u':
        a->reuse = true;
        break;
    case 'T':
        a->template_id = arg;
        break;
    case 'A':
        json_array_append_new(a->agents, json_string(arg));
        break;
    case 'C': {
        long n = strtol(arg, &end, 10);
        if (end == arg || *end || n < 1 || n > 64)
            return cli_usage("session", self->name,
                             "--cluster-size needs a number of kernels from 1 to 64, not '%s'",
                             arg);
        a->cluster_size = n;
        break;
    }
    case 'M':
        if (strcmp(arg, "single-node") != 0 && strcmp(arg, "multi-node") != 0)
            return cli_usage("session", self->name,
                             "--cluster-mode is single-node or multi-node, not '%s'", arg);
        a->cluster_mode = arg;
        break;
    }
    return CLI_OK;
}

/* The POST /session body (the CLI always enqueues and then polls, to show
 * the progress itself). */
static json_t *_body(const create_args *a, const char *image, const char *name)
{
    json_t *config = json_object();
    if (json_object_size(a->slots)) json_object_set(config, "resources", a->slots);
    if (json_object_size(a->env)) json_object_set(config, "environ", a->env);
    if (a->rgroup) json_object_set_new(config, "scaling_group", json_string(a->rgroup));
    if (json_array_size(a->mounts)) json_object_set(config, "mounts", a->mounts);
    if (json_object_size(a->mount_map)) json_object_set(config, "mount_map", a->mount_map);
    if (json_array_size(a->pports)) json_object_set(config, "preopen_ports", a->pports);
    json_t *body = json_pack("{s:s, s:o}", "name", name, "config", config);
    if (image) json_object_set_new(body, "image", json_string(image));
    if (a->template_id) json_object_set_new(body, "template_id", json_string(a->template_id));
    if (a->type) json_object_set_new(body, "type", json_string(a->type));
    if (a->group) json_object_set_new(body, "group_name", json_string(a->group));
    if (a->startup) json_object_set_new(body, "startupCommand", json_string(a->startup));
    if (json_array_size(a->agents)) json_object_set(body, "agentList", a->agents);
    if (a->cluster_size) json_object_set_new(body, "cluster_size", json_integer(a->cluster_size));
    if (a->cluster_mode) json_object_set_new(body, "cluster_mode", json_string(a->cluster_mode));
    json_object_set_new(body, "enqueueOnly", json_true());
    if (a->reuse) json_object_set_new(body, "reuseIfExists", json_true());
    return body;
}

static int64_t _now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static bool _final(const char *status)
{
    return status && (!strcmp(status, "TERMINATED") || !strcmp(status, "CANCELLED") ||
                      !strcmp(status, "ERROR"));
}

/* Whether a final session ended well (a batch session that succeeded). */
static bool _ended_well(const json_t *info)
{
    const char *st = session_str(info, "status");
    if (!st || strcmp(st, "TERMINATED") != 0) return false;
    const char *result = session_str(info, "result");
    const json_t *code = json_object_get(info, "exitCode");
    return (result && !strcasecmp(result, "SUCCESS")) ||
           (json_is_integer(code) && json_integer_value(code) == 0);
}

/* Poll GET /session/NAME every POLL_INTERVAL_MS until RUNNING, a final status
 * or max_wait_s, showing the status as it changes on stderr (one updating line
 * on a terminal, a line per change otherwise). *last: the last info (owned). */
static cli_status _wait_running(cli *c, const char *name, double max_wait_s, json_t **last)
{
    bool tty = isatty(STDERR_FILENO);
    char *path = session_path(name, NULL);
    char *shown = NULL;
    int64_t t0 = _now_ms(), deadline = t0 + (int64_t)(max_wait_s * 1000);
    cli_status rc = CLI_OK;
    *last = NULL;
    for (;;) {
        json_t *info = NULL;
        rc = client_call(c, "GET", path, NULL, true, &info);
        if (rc != CLI_OK) break;
        json_decref(*last);
        *last = info;
        const char *st = session_str(info, "status"), *why = session_str(info, "statusInfo");
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

/* The session as it was when the wait ended: printed, and whether it ended
 * badly (CLI_FAIL) or is still queued (said). */
static cli_status _report(cli *c, const char *name, const json_t *info, double max_wait)
{
    const char *st = session_str(info, "status") ?: "?";
    if (c->json) {
        out_json(info);
    } else {
        printf("session %s %s\n", name, st);
        printf("id      %s\n", session_str(info, "sessionUuid") ?: "?");
        json_t *ports = json_object_get(info, "servicePorts");
        if (json_array_size(ports)) {
            char *t = out_text(ports, OUT_TEXT);
            printf("ports   %s\n", t);
            free(t);
        }
    }
    if (_final(st) && !_ended_well(info)) {
        const char *why = session_str(info, "statusInfo");
        fprintf(stderr, "tessera: session %s ended %s%s%s\n", name, st, why && *why ? ": " : "",
                why && *why ? why : "");
        return CLI_FAIL;
    }
    if (strcmp(st, "RUNNING") != 0 && !_final(st))
        fprintf(stderr,
                "tessera: session %s is still %s after %g s; it stays queued "
                "(`tessera session info %s`)\n",
                name, st, max_wait, name);
    return CLI_OK;
}

int session_create(cli *c, const session_sub *self, int argc, char **argv)
{
    static const struct option longopts[] = {
        {"name", required_argument, NULL, 'n'},
        {"type", required_argument, NULL, 't'},
        {"group", required_argument, NULL, 'g'},
        {"resource-group", required_argument, NULL, 'R'},
        {"agent", required_argument, NULL, 'A'},
        {"cluster-size", required_argument, NULL, 'C'},
        {"cluster-mode", required_argument, NULL, 'M'},
        {"resources", required_argument, NULL, 'r'},
        {"env", required_argument, NULL, 'e'},
        {"startup-command", required_argument, NULL, 'S'},
        {"mount", required_argument, NULL, 'm'},
        {"port", required_argument, NULL, 'P'},
        {"enqueue-only", no_argument, NULL, 'E'},
        {"max-wait", required_argument, NULL, 'w'},
        {"reuse", no_argument, NULL, 'u'},
        {"template", required_argument, NULL, 'T'},
        {"json", no_argument, NULL, 'J'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    create_args a = {.max_wait = DEFAULT_MAX_WAIT_S,
                     .agents = json_array(),
                     .slots = json_object(),
                     .env = json_object(),
                     .mounts = json_array(),
                     .mount_map = json_object(),
                     .pports = json_array()};
    session_opts o;
    int opt;
    session_opts_init(&o, c, self, argc, argv, "n:t:g:r:e:m:h", longopts);
    while (session_next_opt(&o, &opt))
        o.status = _option(self, opt, optarg, &a);
    cli_status rc = o.status;
    if (session_opts_stop(&o))
        ; /* the help, or a usage error */
    else if (!a.template_id)
        rc = session_positionals(&o, 1, "IMAGE");
    else if (argc - optind > 1) /* IMAGE is optional with a template */
        rc = cli_usage("session", self->name, "unexpected argument '%s'", argv[optind + 1]);
    if (rc != CLI_OK || o.help || !client_has_keys(c)) {
        _args_free(&a);
        return rc != CLI_OK || o.help ? rc : CLI_FAIL;
    }
    char gen[32] = "";
    const char *name = a.name;
    if (!name) { /* as Backend.AI's clients do: a random name */
        char hex[11];
        session_random_hex(hex, 5);
        snprintf(gen, sizeof(gen), "tessera-%s", hex);
        name = gen;
    }
    json_t *body = _body(&a, optind < argc ? argv[optind] : NULL, name), *answer = NULL;
    rc = client_call(c, "POST", a.template_id ? "/session/_/create-from-template" : "/session",
                     body, true, &answer);
    json_decref(body);
    if (rc != CLI_OK) {
        _args_free(&a);
        return rc;
    }
    const char *sname = session_str(answer, "sessionName") ?: name;
    bool created = !json_is_false(json_object_get(answer, "created"));
    if (!created && !c->json) fprintf(stderr, "tessera: reusing the existing session %s\n", sname);
    if (a.enqueue_only && c->json) {
        out_json(answer);
    } else if (a.enqueue_only) {
        printf("session %s %s: %s\n", sname, created ? "created" : "exists",
               session_str(answer, "status") ?: "?");
        printf("id      %s\n", session_str(answer, "sessionUuid") ?: "?");
    } else {
        char *sname_copy = ts_strdup(sname);
        json_t *info = NULL;
        rc = _wait_running(c, sname_copy, a.max_wait, &info);
        if (rc == CLI_OK) rc = _report(c, sname_copy, info, a.max_wait);
        json_decref(info);
        free(sname_copy);
    }
    json_decref(answer);
    _args_free(&a);
    return rc;
}
