/* tessera: the command-line client. main.c holds the global options and the
 * command table (name, summary, usage, handler); the commands live in
 * cmd_*.c, signed requests in client.c, credentials in config.c, printing in
 * output.c. Exit status: 0 done, 1 the API or the system refused (a message
 * says why), 2 a usage error. */
#include "services/cli/admin.h"
#include "services/cli/commands.h"

#include <ctype.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CLI_TIMEOUT_MS 15000

static int cmd_version(cli *c, const cli_command *self, int argc, char **argv)
{
    (void)self, (void)argc, (void)argv;
    printf("client  %s\n", TESSERA_VERSION);
    json_t *v = NULL;
    if (client_call(c, "GET", "/", NULL, false, &v) != CLI_OK) return CLI_FAIL;
    printf("server  %s (API %s)\n", json_string_value(json_object_get(v, "manager")) ?: "?",
           json_string_value(json_object_get(v, "version")) ?: "?");
    json_decref(v);
    return CLI_OK;
}

static int cmd_status(cli *c, const cli_command *self, int argc, char **argv)
{
    (void)self, (void)argc, (void)argv;
    /* /readyz answers 503 with the same JSON when a check fails: read it raw. */
    char *url = ts_asprintf("%s/readyz", c->creds.endpoint);
    json_t *r = NULL;
    long status = 0;
    ts_err err = {{0}};
    if (!httpc_json(c->http, "GET", url, NULL, NULL, &status, &r, &err)) {
        fprintf(stderr, "tessera: cannot reach the gateway at %s: %s\n", c->creds.endpoint,
                err.msg);
    } else if (!r) {
        fprintf(stderr, "tessera: %s answered %ld without a JSON body\n", url, status);
    }
    free(url);
    if (!r) return CLI_FAIL;
    printf("gateway %s: %s\n", c->creds.endpoint,
           json_string_value(json_object_get(r, "status")) ?: "?");
    const char *name;
    json_t *v;
    json_object_foreach(json_object_get(r, "checks"), name, v)
        printf("  %-12s %s\n", name, json_string_value(v) ?: "?");
    json_decref(r);
    return status == 200 ? CLI_OK : CLI_FAIL;
}

/* cmd_vfolder.c */
int cmd_vfolder(cli *c, const cli_command *self, int argc, char **argv);

static int run_admin(cli *c, const cli_command *self, int argc, char **argv)
{
    (void)self;
    return cmd_admin(c, argc, argv);
}

static const cli_command commands[] = {
    {"version", "print the client and server versions", "tessera version", cmd_version},
    {"status", "show whether the platform is ready, check by check", "tessera status", cmd_status},
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
    {"session", "create, list, inspect, use and destroy compute sessions",
     NULL /* its own --help at every level */, cmd_session},
    {"app", "open an app of a running session (Jupyter, a terminal, ...): prints its URL",
     "tessera app SESSION APP [--port PORT] [--json]\n"
     "       tessera app SESSION APP --bind [HOST:]PORT\n\n"
     "Options:\n"
     "  -p, --port PORT          the app by its container port instead of its name (APP\n"
     "                           may then be left out)\n"
     "  -b, --bind [HOST:]PORT   for a tcp app: listen on HOST:PORT (HOST defaults to\n"
     "                           127.0.0.1; PORT 0 picks a free one) and tunnel each\n"
     "                           connection to the app through tessera-wsproxy, until\n"
     "                           Ctrl-C\n"
     "      --json               print the API's answer ({token, wsproxy_addr, url, ...})\n\n"
     "The URL holds a token that opens the app for about 10 minutes; the browser then\n"
     "keeps a cookie. Apps are the session's service ports (`tessera session info`);\n"
     "one that is not running is started first when it can be (ttyd, the terminal).",
     cmd_app},
    {"admin", "manage identity, policies, access, agents, resource groups, images (admins)",
     NULL /* its own --help at every level */, run_admin},
    {"vfolder", "create, share and manage virtual folders and their files",
     NULL /* its own --help at every level */, cmd_vfolder},
};

void cli_command_help(const cli_command *cmd, FILE *out)
{
    fprintf(out, "Usage: %s\n\n%c%s.\n", cmd->usage, toupper((unsigned char)cmd->summary[0]),
            cmd->summary + 1);
}

int cli_usage_error(const cli_command *cmd, const char *fmt, ...)
{
    fprintf(stderr, "tessera %s: ", cmd->name);
    va_list ap;
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, "; try 'tessera %s --help'\n", cmd->name);
    return CLI_USAGE;
}

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
    bool takes_args = cmd->run != cmd_version && cmd->run != cmd_status;
    if (cmd->usage && argc > 1 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
        cli_command_help(cmd, stdout);
        return CLI_OK;
    }
    if (!takes_args && argc > 1) return cli_usage_error(cmd, "unexpected argument '%s'", argv[1]);
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
