/* cmd_session.c: `tessera session SUBCOMMAND`: the table of subcommands
 * and their dispatch, and list, info, history, destroy, restart, logs
 * against the gateway's /session API (docs/api.md "Sessions"); create is
 * session_create.c, exec and run session_exec.c. Tables and records by
 * default, the API's JSON with --json; progress goes to stderr so stdout
 * stays parseable. */
#include "services/cli/commands.h"
#include "services/cli/output.h"
#include "services/cli/session_args.h"
#include "services/cli/session_create.h"
#include "services/cli/session_exec.h"
#include "services/cli/session_files.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- list, info, history ------------------------------------------------------------------ */

/* The list's columns; OWNER only with --all. */
static const out_column list_cols[] = {
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

/* The rows of a list answer, and (on stderr) how to see the next page. */
static void _print_page(cli *c, json_t *answer, const out_column *cols, const char *offset)
{
    if (c->json) {
        out_json(answer);
        return;
    }
    json_t *items = json_is_array(answer) ? answer : json_object_get(answer, "items");
    out_table(cols, items);
    json_t *total = json_object_get(answer, "total");
    long long off = offset ? atoll(offset) : 0, n = (long long)json_array_size(items);
    if (json_is_integer(total) && off + n < json_integer_value(total))
        fprintf(stderr, "(%lld of %" JSON_INTEGER_FORMAT " shown; next page: --offset %lld)\n", n,
                json_integer_value(total), off + n);
}

static int sub_list(cli *c, const session_sub *self, int argc, char **argv)
{
    static const struct option longopts[] = {
        {"all", no_argument, NULL, 'a'},          {"status", required_argument, NULL, 's'},
        {"type", required_argument, NULL, 't'},   {"limit", required_argument, NULL, 'l'},
        {"offset", required_argument, NULL, 'o'}, {"json", no_argument, NULL, 'J'},
        {"help", no_argument, NULL, 'h'},         {NULL, 0, NULL, 0},
    };
    bool all = false;
    const char *status = NULL, *type = NULL, *limit = NULL, *offset = NULL;
    session_opts o;
    int opt;
    session_opts_init(&o, c, self, argc, argv, "as:h", longopts);
    while (session_next_opt(&o, &opt)) {
        char *end = NULL;
        if (opt == 'a') all = true;
        if (opt == 's') status = optarg;
        if (opt == 't') type = optarg;
        if ((opt == 'l' || opt == 'o') && (strtol(optarg, &end, 10) < 0 || end == optarg || *end))
            o.status = cli_usage("session", self->name,
                                 "--limit and --offset need a whole number >= 0, not '%s'", optarg);
        else if (opt == 'l' || opt == 'o')
            *(opt == 'l' ? &limit : &offset) = optarg;
    }
    if (session_opts_stop(&o)) return o.status;
    cli_status rc = session_positionals(&o, 0, "");
    if (rc != CLI_OK) return rc;
    if (!client_has_keys(c)) return CLI_FAIL;
    char *path = ts_strdup("/session");
    if (all) client_query_add(&path, "all", "true");
    if (status) client_query_add(&path, "status", status);
    if (type) client_query_add(&path, "type", type);
    if (limit) client_query_add(&path, "limit", limit);
    if (offset) client_query_add(&path, "offset", offset);
    json_t *answer = NULL;
    rc = client_call(c, "GET", path, NULL, true, &answer);
    free(path);
    out_column cols[TS_ARRAY_LEN(list_cols)];
    size_t n = 0;
    for (size_t i = 0; i < TS_ARRAY_LEN(list_cols); i++)
        if (all || !list_cols[i].key || strcmp(list_cols[i].key, "accessKey") != 0)
            cols[n++] = list_cols[i];
    if (rc == CLI_OK) _print_page(c, answer, cols, offset);
    json_decref(answer);
    return rc;
}

/* GET /session/NAME + suffix for a subcommand that takes only NAME; the
 * answer in *answer (the caller prints it). False with the status to end
 * with. */
static bool _get_named(cli *c, const session_sub *self, int argc, char **argv, const char *suffix,
                       json_t **answer, cli_status *rc)
{
    *answer = NULL;
    if (!session_words(c, self, argc, argv, "k:h", 1, "NAME", rc)) return false;
    if (!client_has_keys(c)) {
        *rc = CLI_FAIL;
        return false;
    }
    char *path = session_path(argv[optind], suffix);
    session_kernel_query(c, &path);
    *rc = client_call(c, "GET", path, NULL, true, answer);
    free(path);
    return *rc == CLI_OK;
}

static const out_column kernel_cols[] = {
    {"NAME", "name", OUT_TEXT},
    {"KERNEL", "id", OUT_TEXT},
    {"ROLE", "role", OUT_TEXT},
    {"AGENT", "agent", OUT_TEXT},
    {"STATUS", "status", OUT_TEXT},
    {"EXIT", "exitCode", OUT_TEXT},
    {"STATUS INFO", "statusInfo", OUT_TEXT},
    {NULL, NULL, OUT_TEXT},
};

/* "12 min": seconds as the idle lines show them. */
static void _duration(double secs, char *buf, size_t size)
{
    long long s = (long long)secs;
    if (s < 120)
        snprintf(buf, size, "%lld s", s);
    else if (s < 7200)
        snprintf(buf, size, "%lld min", s / 60);
    else
        snprintf(buf, size, "%lld h %lld min", s / 3600, s % 3600 / 60);
}

/* The idle checkers' state (idleChecks) as the record's lines: idle
 * "reclaimed in 12 min unless used (idle timeout 600 s, project's)" (the
 * setting that gave it) or "not checked"
 * (not RUNNING, not interactive, timeout 0); lifetime "ends in 2 h 5 min
 * (max lifetime 7200 s)" or "none". */
static void _idle_lines(json_t *info)
{
    const json_t *checks = json_object_get(info, "idleChecks");
    const json_t *net = json_object_get(checks, "network_timeout");
    const json_t *life = json_object_get(checks, "session_lifetime");
    char when[48], line[160];
    const json_t *left = json_object_get(net, "remaining");
    if (json_is_number(left)) {
        _duration(json_number_value(left), when, sizeof(when));
        const json_t *extra = json_object_get(net, "extra");
        const char *level = json_string_value(json_object_get(extra, "level"));
        char by[48] = "";
        if (level) { /* keypair_policy -> ", keypair policy's" */
            snprintf(by, sizeof(by), ", %s's", level);
            for (char *p = by; *p; p++)
                if (*p == '_') *p = ' ';
        }
        snprintf(line, sizeof(line), "reclaimed in %s unless used (idle timeout %lld s%s)", when,
                 (long long)json_integer_value(json_object_get(extra, "timeout")), by);
    } else {
        snprintf(line, sizeof(line), "not checked");
    }
    json_object_set_new(info, "idle", json_string(line));
    left = json_object_get(life, "remaining");
    if (json_is_number(left)) {
        _duration(json_number_value(left), when, sizeof(when));
        snprintf(line, sizeof(line), "ends in %s (max lifetime %lld s)", when,
                 (long long)json_integer_value(
                     json_object_get(json_object_get(life, "extra"), "max_lifetime")));
    } else {
        snprintf(line, sizeof(line), "none");
    }
    json_object_set_new(info, "lifetime", json_string(line));
}

static int sub_info(cli *c, const session_sub *self, int argc, char **argv)
{
    json_t *info;
    cli_status rc;
    if (_get_named(c, self, argc, argv, NULL, &info, &rc) && c->json) {
        out_json(info);
    } else if (info) {
        static const char *const hide[] = {"kernels", "idleChecks", NULL};
        _idle_lines(info);
        out_record(info, hide);
        json_t *kernels = json_object_get(info, "kernels");
        if (json_array_size(kernels)) {
            printf("\n");
            out_table(kernel_cols, kernels);
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

static int sub_history(cli *c, const session_sub *self, int argc, char **argv)
{
    json_t *answer;
    cli_status rc;
    if (_get_named(c, self, argc, argv, "/history", &answer, &rc) && c->json)
        out_json(answer);
    else if (answer)
        out_table(history_cols, json_is_array(answer) ? answer : json_object_get(answer, "items"));
    json_decref(answer);
    return rc;
}

static int sub_logs(cli *c, const session_sub *self, int argc, char **argv)
{
    json_t *answer;
    cli_status rc;
    if (_get_named(c, self, argc, argv, "/logs", &answer, &rc) && c->json) {
        out_json(answer);
    } else if (answer) {
        const json_t *logs = json_object_get(json_object_get(answer, "result"), "logs");
        if (json_is_string(logs))
            fwrite(json_string_value(logs), 1, json_string_length(logs), stdout);
    }
    json_decref(answer);
    return rc;
}

/* ---- destroy, restart ------------------------------------------------------------------------ */

/* method path (freed here) for session name; prints "session NAME VERB (STATUS)"
 * or the JSON answer. */
static cli_status _act(cli *c, const char *method, char *path, const char *name, const char *verb)
{
    json_t *answer = NULL;
    cli_status rc = client_call(c, method, path, NULL, true, &answer);
    free(path);
    if (rc == CLI_OK) {
        if (c->json) {
            out_json(answer);
        } else {
            const char *st = session_str(answer, "status");
            printf("session %s %s%s%s%s\n", name, verb, st ? " (" : "", st ? st : "",
                   st ? ")" : "");
        }
    }
    json_decref(answer);
    return rc;
}

static int sub_destroy(cli *c, const session_sub *self, int argc, char **argv)
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
    session_opts o;
    int opt;
    session_opts_init(&o, c, self, argc, argv, "fh", longopts);
    while (session_next_opt(&o, &opt)) {
        if (opt == 'f') forced = true;
        if (opt == 'o') owner = optarg;
    }
    if (session_opts_stop(&o)) return o.status;
    cli_status rc = session_positionals(&o, 1, "NAME");
    if (rc != CLI_OK) return rc;
    if (!client_has_keys(c)) return CLI_FAIL;
    const char *name = argv[optind];
    char *path = session_path(name, NULL);
    if (forced) client_query_add(&path, "forced", "true");
    if (owner) client_query_add(&path, "owner_access_key", owner);
    return _act(c, "DELETE", path, name, "destroyed");
}

static int sub_restart(cli *c, const session_sub *self, int argc, char **argv)
{
    cli_status rc;
    if (!session_words(c, self, argc, argv, "h", 1, "NAME", &rc)) return rc;
    if (!client_has_keys(c)) return CLI_FAIL;
    const char *name = argv[optind];
    return _act(c, "PATCH", session_path(name, NULL), name, "restarting");
}

static int sub_rename(cli *c, const session_sub *self, int argc, char **argv)
{
    cli_status rc;
    if (!session_words(c, self, argc, argv, "h", 2, "NAME NEW_NAME", &rc)) return rc;
    if (!client_has_keys(c)) return CLI_FAIL;
    const char *name = argv[optind], *new_name = argv[optind + 1];
    char *path = session_path(name, "/rename");
    json_t *body = json_pack("{s:s}", "session_name", new_name);
    json_t *answer = NULL;
    rc = client_call(c, "POST", path, body, true, &answer);
    free(path);
    json_decref(body);
    json_decref(answer);
    if (rc == CLI_OK) printf("session %s renamed to %s\n", name, new_name);
    return rc;
}

static int sub_interrupt(cli *c, const session_sub *self, int argc, char **argv)
{
    cli_status rc;
    if (!session_words(c, self, argc, argv, "h", 1, "NAME", &rc)) return rc;
    if (!client_has_keys(c)) return CLI_FAIL;
    const char *name = argv[optind];
    char *path = session_path(name, "/interrupt");
    json_t *answer = NULL;
    rc = client_call(c, "POST", path, NULL, true, &answer);
    free(path);
    json_decref(answer);
    if (rc == CLI_OK) printf("session %s interrupted\n", name);
    return rc;
}

/* ---- the table ----------------------------------------------------------------------------- */

#define KERNEL_OPT                                                                                 \
    "  -k, --kernel KERNEL          the kernel of a cluster session: main1 (the default),\n"       \
    "                               sub1, sub2, ... or a kernel id\n"

static const session_sub subcommands[] = {
    {"create", "create a session and wait until it runs, showing its progress",
     "tessera session create IMAGE [OPTIONS]\n       tessera session create --template ID "
     "[IMAGE] [OPTIONS]",
     session_create, false,
     "      --template ID            start from session template ID (`tessera session-template`);\n"
     "                               IMAGE and the other options override the template's\n"
     "  -n, --name NAME              session name (default: tessera-<random>)\n"
     "  -t, --type TYPE              interactive (default), batch or inference\n"
     "  -g, --group PROJECT          project (group) name (default: default)\n"
     "      --resource-group GROUP   resource group (scaling group)\n"
     "      --agent ID               put every kernel on agent ID (superadmins; agentList);\n"
     "                               once per kernel: kernel i on the i-th (multi-node)\n"
     "      --cluster-size N         N kernels (main1, sub1, ...; default 1)\n"
     "      --cluster-mode MODE      single-node (default: every kernel on one agent) or\n"
     "                               multi-node (kernels on several agents)\n"
     "  -r, --resources SLOTS        e.g. cpu=1,mem=1g,cuda.shares=0.5 (repeatable)\n"
     "  -e, --env NAME=VALUE         an environment variable (repeatable)\n"
     "      --startup-command CMD    the command a batch session runs\n"
     "  -m, --mount NAME[:PATH]      mount vfolder NAME at /home/work/NAME, or at PATH\n"
     "                               (under /home/work; relative to it) (repeatable)\n"
     "      --port PORT              publish container port PORT (1024..65535) too: an app\n"
     "                               named PORT (repeatable; config.preopen_ports)\n"
     "      --enqueue-only           return once queued, without waiting\n"
     "      --max-wait SECONDS       how long to wait for RUNNING (default 60)\n"
     "      --reuse                  a live session of that name is reused, not an error\n"},
    {"list", "list your sessions (--all: every session you may see)",
     "tessera session list [OPTIONS]", sub_list, false,
     "  -a, --all                    all sessions you may see (admins: of others too)\n"
     "  -s, --status LIST            only these statuses, e.g. PENDING,RUNNING\n"
     "      --type TYPE              only interactive, batch or inference sessions\n"
     "      --limit N                at most N rows (server default 50)\n"
     "      --offset N               skip the first N rows\n"},
    {"info", "show a session: status and why, slots, ports, kernels", "tessera session info NAME",
     sub_info, false, ""},
    {"destroy", "destroy a session (cancel it while pending)",
     "tessera session destroy NAME [OPTIONS]", sub_destroy, false,
     "  -f, --forced                 terminate at once without waiting for the agent (admins)\n"
     "      --owner ACCESS_KEY       a session of another keypair (admins)\n"},
    {"restart", "restart a running session's kernels (mounts and work dir kept)",
     "tessera session restart NAME", sub_restart, false, ""},
    {"logs", "print a session's container logs (stdout and stderr)",
     "tessera session logs NAME [--kernel KERNEL]", sub_logs, false, KERNEL_OPT},
    {"exec", "run a command in a session (batch mode); exits with its exit code",
     "tessera session exec NAME [--kernel KERNEL] -- COMMAND [ARGS...]", session_exec, false,
     KERNEL_OPT "  (one COMMAND word is a shell command line as it is; several are quoted each)\n"},
    {"run", "run code with the image's runtime (query mode); exits with its exit code",
     "tessera session run NAME CODE [--kernel KERNEL]", session_run, false, KERNEL_OPT},
    {"history", "show a session's status history with times and reasons",
     "tessera session history NAME", sub_history, false, ""},
    {"upload", "copy local files into a running session's /home/work",
     "tessera session upload NAME FILE... [--kernel KERNEL]", session_upload, false,
     KERNEL_OPT
     "  (each FILE lands at /home/work/<its base name>; at most 1 MiB in all by default,\n"
     "   the gateway's http.max_body)\n"},
    {"download", "copy files or directories out of a running session's /home/work",
     "tessera session download NAME PATH... [-o DIR] [--kernel KERNEL]", session_download, false,
     KERNEL_OPT "  -o, --output DIR             unpack into DIR (default: the current directory)\n"
                "  (PATH is relative to /home/work; directories come with everything in them)\n"},
    {"files", "list a directory of a running session's /home/work",
     "tessera session files NAME [PATH] [--kernel KERNEL]", session_files, false, KERNEL_OPT},
    {"rename", "give a live session a new name (unique among your live sessions)",
     "tessera session rename NAME NEW_NAME", sub_rename, false, ""},
    {"interrupt", "interrupt the code a session runs through execute streams (SIGINT)",
     "tessera session interrupt NAME", sub_interrupt, false,
     "  (reaches the streams held by the gateway instance that answers)\n"},
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
    if (cli_is_help(argv[1]) || strcmp(argv[1], "help") == 0) {
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
