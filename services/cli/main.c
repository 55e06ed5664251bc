/* tessera: the command-line client. main.c holds the global options and the
 * command table (name, summary, usage, handler); the commands live in
 * cmd_*.c, signed requests in client.c, credentials in config.c, printing in
 * output.c. Exit status: 0 done, 1 the API or the system refused (a message
 * says why), 2 a usage error (cli_status, client.h). */
#include "services/cli/commands.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CLI_TIMEOUT_MS 15000

static const cli_command commands[] = {
    {"version", "print the client and server versions", "tessera version", cmd_version, true},
    {"status", "show whether the platform is ready, check by check",
     "tessera status [--all [--timeout SECONDS] [--no-agents]] [--json]\n\n"
     "Options:\n"
     "  -a, --all                every service's health and version and the dependencies'\n"
     "                           (GET /admin/status: superadmins), not only the gateway's\n"
     "                           /readyz (anyone)\n"
     "      --timeout SECONDS    with --all: how long each service may take (default: the\n"
     "                           gateway's gateway.status_timeout, 2 s)\n"
     "      --no-agents          with --all: leave the agents out\n"
     "      --json               print the API's JSON\n\n"
     "Exit status 0 when everything is ready, 1 otherwise.",
     cmd_status},
    {"login", "log in with a user name and password; saves the keypair for later commands",
     "tessera login [--domain DOMAIN] [--username USER] [--password-stdin] [--json]\n\n"
     "Options:\n"
     "  -d, --domain DOMAIN      the user's domain (prompted; default \"default\")\n"
     "  -u, --username USER      e-mail or user name (prompted when not given)\n"
     "      --password-stdin     read the password from stdin (needs --username)\n"
     "      --json               print the API's answer (it holds the secret key)\n\n"
     "The password is read without echo from a terminal, else as a line of stdin.\n"
     "The keypair goes to $XDG_CONFIG_HOME/tessera/credentials (~/.config/...), mode 0600;\n"
     "TESSERA_ACCESS_KEY/SECRET_KEY or BACKEND_ACCESS_KEY/SECRET_KEY win over it.",
     cmd_login},
    {"logout", "forget the saved keypair (delete the credentials file)", "tessera logout",
     cmd_logout},
    {"whoami", "show the keypair in use, its user and roles",
     "tessera whoami [--project PROJECT_ID] [--json]\n\n"
     "Options:\n"
     "      --project ID         also show the role in that project (group)\n"
     "      --json               print {endpoint, credentials, access_key, role, user}",
     cmd_whoami},
    {"password", "change your password (prompts for the current one, the new one twice)",
     "tessera password [--password-stdin]\n\n"
     "Options:\n"
     "      --password-stdin     read the three lines (current, new, new again) from stdin",
     cmd_password},
    {"user-config", "your bootstrap script (run in new sessions) and dotfiles",
     NULL /* its own --help */, cmd_user_config},
    {"ssh-keypair", "show or refresh your SSH keypair (ed25519)", NULL /* its own --help */,
     cmd_ssh_keypair},
    {"session", "create, list, inspect, use and destroy compute sessions",
     NULL /* its own --help at every level */, cmd_session},
    {"session-template", "keep session templates and list, show, change or delete them",
     NULL /* its own --help at every level */, cmd_session_template},
    {"app", "open an app of a running session (Jupyter, a terminal, ...): prints its URL",
     "tessera app SESSION APP [--port PORT] [--kernel KERNEL] [--json]\n"
     "       tessera app SESSION APP --bind [HOST:]PORT\n"
     "       tessera app SESSION APP --stop\n\n"
     "Options:\n"
     "  -p, --port PORT          the app by its container port instead of its name (APP\n"
     "                           may then be left out)\n"
     "  -b, --bind [HOST:]PORT   for a tcp app: listen on HOST:PORT (HOST defaults to\n"
     "                           127.0.0.1; PORT 0 picks a free one) and tunnel each\n"
     "                           connection to the app through tessera-wsproxy, until\n"
     "                           Ctrl-C\n"
     "  -k, --kernel KERNEL      the app of that kernel of a cluster session: main1 (the\n"
     "                           default), sub1, sub2, ... or a kernel id\n"
     "      --stop               stop the app instead: its processes end (SIGTERM, then\n"
     "                           SIGKILL after 5 s) and open connections close; it can\n"
     "                           be opened again later\n"
     "      --json               print the API's answer ({token, wsproxy_addr, url, ...})\n\n"
     "The URL holds a token that opens the app for about 10 minutes; the browser then\n"
     "keeps a cookie. Apps are the session's service ports (`tessera session info`);\n"
     "one that is not running is started first when it can be (ttyd, the terminal).",
     cmd_app},
    {"admin", "manage identity, policies, access, agents, resource groups, images (admins)",
     NULL /* its own --help at every level */, cmd_admin},
    {"vfolder", "create, share and manage virtual folders and their files",
     NULL /* its own --help at every level */, cmd_vfolder},
    {"resource", "resource presets, and what you may still launch (limits, usage, remaining)",
     NULL /* its own --help at every level */, cmd_resource},
    {"scaling-groups", "list the resource groups you may use",
     "tessera scaling-groups [--group PROJECT] [--json]\n\n"
     "Options:\n"
     "  -g, --group PROJECT      also the groups allowed to that project (name or id)",
     cmd_scaling_groups},
    {"events", "print session events (or a background task's progress) as they come, until Ctrl-C",
     "tessera events [OPTIONS]\n\n"
     "Options:\n"
     "  -s, --session NAME       only the session of that name\n"
     "  -S, --scope SCOPE        session, kernel or session,kernel (default: both)\n"
     "  -g, --group PROJECT      only sessions of that project (name or id)\n"
     "  -t, --task ID            follow a background task (e.g. an image scan) until it ends\n\n"
     "One line per event (time, event, session name, session id, reason); --json prints each\n"
     "event's data as a JSON object with its \"event\". Users see their own sessions, domain\n"
     "admins their domain's, superadmins all.",
     cmd_events},
    {"usage", "what your sessions used (CPU, memory, GPU hours) over a period, grouped",
     "tessera usage [--from DATE] [--to DATE] [--group-by KEY] [--by day|hour] [--csv] [--json]\n\n"
     "Options:\n"
     "  -f, --from DATE          first day, YYYY-MM-DD or YYYYMMDD (UTC; default: the first\n"
     "                           of the --to day's month)\n"
     "  -t, --to DATE            last day, included (default: today)\n"
     "  -g, --group-by KEY       user (default), project, domain, resource_group or image\n"
     "  -b, --by day|hour        one row per UTC day (or hour: periods of up to 31 days) and\n"
     "                           group, with what was used in it\n"
     "      --csv                print CSV (every figure) instead of a table\n\n"
     "Users see their own sessions, domain admins their domain's (not its superadmins'),\n"
     "superadmins all. Usage is kept per hour in which it was measured: a session across\n"
     "the period's edge counts what it used inside it (docs/usage.md).",
     cmd_usage},
    {"graphql", "send a GraphQL query or mutation (Backend.AI's schema) and print its data",
     "tessera graphql [OPTIONS] QUERY|-\n\n"
     "QUERY is a GraphQL document (- reads it from stdin), e.g.\n"
     "  tessera graphql '{ compute_session_list(limit: 10, offset: 0) { items { name status } } "
     "}'\n\n"
     "Options:\n"
     "  -v, --var NAME=VALUE     a variable: VALUE as JSON when it is, else as text (repeatable)\n"
     "  -o, --operation NAME     the operation to run, when QUERY has several\n\n"
     "The data is printed as JSON; errors go to stderr (exit status 1).",
     cmd_graphql},
};

static void usage(FILE *out)
{
    fprintf(out,
            "tessera %s: the Tessera command-line client\n\n"
            "Usage: tessera [--endpoint URL] [--json] COMMAND [ARGS]\n\n"
            "Options:\n"
            "  -e, --endpoint URL  gateway URL (default: $TESSERA_GATEWAY_URL, $BACKEND_ENDPOINT,\n"
            "                      the saved login's, or %s)\n"
            "      --json          print the API's JSON instead of tables\n"
            "  -V, --version       print the client version\n"
            "  -h, --help          this help; `tessera COMMAND --help` for a command\n\n"
            "Credentials: $TESSERA_ACCESS_KEY and $TESSERA_SECRET_KEY, else $BACKEND_ACCESS_KEY\n"
            "and $BACKEND_SECRET_KEY, else the keypair `tessera login` saved.\n\n"
            "Commands:\n",
            TESSERA_VERSION, CONFIG_DEFAULT_ENDPOINT);
    for (size_t i = 0; i < TS_ARRAY_LEN(commands); i++)
        fprintf(out, "  %-10s %s\n", commands[i].name, commands[i].summary);
}

static int run_command(const cli_command *cmd, const char *endpoint, bool json, int argc,
                       char **argv)
{
    if (cmd->usage && argc > 1 && cli_is_help(argv[1])) {
        cli_command_help(cmd, stdout);
        return CLI_OK;
    }
    if (cmd->no_args && argc > 1)
        return cli_usage(cmd->name, NULL, "unexpected argument '%s'", argv[1]);
    cli c = {.json = json};
    ts_err err = {{0}};
    if (!config_load(&c.creds, endpoint, &err)) {
        fprintf(stderr, "tessera: %s\n", err.msg);
        return CLI_USAGE;
    }
    char host[256];
    if (!client_host_of(c.creds.endpoint, host, sizeof(host), NULL)) {
        fprintf(stderr, "tessera: bad endpoint '%s': expected http[s]://host[:port]\n",
                c.creds.endpoint);
        config_creds_free(&c.creds);
        return CLI_USAGE;
    }
    c.http = httpc_new(CLI_TIMEOUT_MS);
    int rc = cmd->run(&c, cmd, argc, argv);
    httpc_free(c.http);
    config_creds_free(&c.creds);
    return rc;
}

int main(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"endpoint", required_argument, NULL, 'e'},
        {"json", no_argument, NULL, 'j'},
        {"version", no_argument, NULL, 'V'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    const char *endpoint = NULL;
    bool json = false;
    int opt;
    /* "+": stop at the first non-option, the command. */
    while ((opt = getopt_long(argc, argv, "+e:Vh", longopts, NULL)) != -1) {
        switch (opt) {
        case 'e':
            endpoint = optarg;
            break;
        case 'j':
            json = true;
            break;
        case 'V':
            printf("tessera %s\n", TESSERA_VERSION);
            return CLI_OK;
        case 'h':
            usage(stdout);
            return CLI_OK;
        default:
            fprintf(stderr, "tessera: try 'tessera --help'\n");
            return CLI_USAGE;
        }
    }
    if (optind >= argc) {
        usage(stderr);
        return CLI_USAGE;
    }
    const char *name = argv[optind];
    if (!strcmp(name, "help")) {
        usage(stdout);
        return CLI_OK;
    }
    for (size_t i = 0; i < TS_ARRAY_LEN(commands); i++)
        if (strcmp(commands[i].name, name) == 0)
            return run_command(&commands[i], endpoint, json, argc - optind, argv + optind);
    fprintf(stderr, "tessera: unknown command '%s'; try 'tessera --help'\n", name);
    return CLI_USAGE;
}
