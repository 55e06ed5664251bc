/* tessera: the command-line client. Commands are a table: name, summary,
 * usage, handler. Each feature's issue adds its commands here. */
#include "libcommon/httpc.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DEFAULT_ENDPOINT "http://127.0.0.1:8090"
#define CLI_TIMEOUT_MS 10000

typedef struct cli {
    const char *endpoint;
    httpc *http;
} cli;

typedef struct command {
    const char *name;
    const char *summary;
    const char *usage;
    int (*run)(cli *c, int argc, char **argv);
} command;

static const char *endpoint_default(void)
{
    const char *e = getenv("TESSERA_GATEWAY_URL");
    if (e && *e) return e;
    e = getenv("BACKEND_ENDPOINT"); /* what Backend.AI clients read */
    if (e && *e) return e;
    return DEFAULT_ENDPOINT;
}

/* GET endpoint+path as JSON; prints a clear message and returns NULL when the
 * gateway cannot be reached or does not answer JSON. */
static json_t *get_json(cli *c, const char *path, long *status)
{
    char *url = ts_asprintf("%s%s", c->endpoint, path);
    json_t *out = NULL;
    ts_err err = {{0}};
    if (!httpc_json(c->http, "GET", url, NULL, NULL, status, &out, &err)) {
        fprintf(stderr, "tessera: cannot reach the gateway at %s: %s\n", c->endpoint, err.msg);
    } else if (!out) {
        fprintf(stderr, "tessera: %s answered %ld without a JSON body\n", url, *status);
    }
    free(url);
    return out;
}

static int cmd_version(cli *c, int argc, char **argv)
{
    (void)argc;
    (void)argv;
    printf("client  %s\n", TESSERA_VERSION);
    long status = 0;
    json_t *v = get_json(c, "/", &status);
    if (!v) return 1;
    printf("server  %s (API %s)\n", json_string_value(json_object_get(v, "manager")) ?: "?",
           json_string_value(json_object_get(v, "version")) ?: "?");
    json_decref(v);
    return 0;
}

static int cmd_status(cli *c, int argc, char **argv)
{
    (void)argc;
    (void)argv;
    long status = 0;
    json_t *r = get_json(c, "/readyz", &status);
    if (!r) return 1;
    printf("gateway %s: %s\n", c->endpoint, json_string_value(json_object_get(r, "status")) ?: "?");
    const char *name;
    json_t *v;
    json_object_foreach(json_object_get(r, "checks"), name, v)
        printf("  %-12s %s\n", name, json_string_value(v) ?: "?");
    json_decref(r);
    return status == 200 ? 0 : 1;
}

static const command commands[] = {
    {"version", "print the client and server versions", "tessera version", cmd_version},
    {"status", "show whether the platform is ready, check by check", "tessera status", cmd_status},
};

static void usage(FILE *out)
{
    fprintf(out,
            "tessera %s: the Tessera command-line client\n\n"
            "Usage: tessera [--endpoint URL] COMMAND [ARGS]\n\n"
            "Options:\n"
            "  -e, --endpoint URL  gateway URL (default: $TESSERA_GATEWAY_URL, $BACKEND_ENDPOINT,\n"
            "                      or %s)\n"
            "  -V, --version       print the client version\n"
            "  -h, --help          this help; `tessera COMMAND --help` for a command\n\n"
            "Commands:\n",
            TESSERA_VERSION, DEFAULT_ENDPOINT);
    for (size_t i = 0; i < TS_ARRAY_LEN(commands); i++)
        fprintf(out, "  %-10s %s\n", commands[i].name, commands[i].summary);
}

int main(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"endpoint", required_argument, NULL, 'e'},
        {"version", no_argument, NULL, 'V'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    cli c = {.endpoint = endpoint_default()};
    int opt;
    /* "+": stop at the first non-option, the command. */
    while ((opt = getopt_long(argc, argv, "+e:Vh", longopts, NULL)) != -1) {
        switch (opt) {
        case 'e': c.endpoint = optarg; break;
        case 'V': printf("tessera %s\n", TESSERA_VERSION); return 0;
        case 'h': usage(stdout); return 0;
        default: fprintf(stderr, "tessera: try 'tessera --help'\n"); return 2;
        }
    }
    if (optind >= argc) {
        usage(stderr);
        return 2;
    }
    const char *name = argv[optind];
    for (size_t i = 0; i < TS_ARRAY_LEN(commands); i++) {
        if (strcmp(commands[i].name, name) != 0) continue;
        int cargc = argc - optind;
        char **cargv = argv + optind;
        if (cargc > 1 && (strcmp(cargv[1], "--help") == 0 || strcmp(cargv[1], "-h") == 0)) {
            printf("Usage: %s\n\n%s\n", commands[i].usage, commands[i].summary);
            return 0;
        }
        if (cargc > 1) {
            fprintf(stderr, "tessera %s: unexpected argument '%s'; usage: %s\n", name, cargv[1],
                    commands[i].usage);
            return 2;
        }
        c.http = httpc_new(CLI_TIMEOUT_MS);
        int rc = commands[i].run(&c, cargc, cargv);
        httpc_free(c.http);
        return rc;
    }
    fprintf(stderr, "tessera: unknown command '%s'; try 'tessera --help'\n", name);
    return 2;
}
