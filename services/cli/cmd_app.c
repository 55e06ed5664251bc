/* cmd_app.c: `tessera app SESSION APP`: open an app of a running session
 * through tessera-wsproxy (POST /session/{name}/start-service) and print the
 * URL to open (docs/cli.md, docs/wsproxy.md). */
#include "services/cli/commands.h"
#include "services/cli/output.h"

#include <getopt.h>
#include <stdlib.h>
#include <string.h>

int cmd_app(cli *c, const cli_command *self, int argc, char **argv)
{
    static const struct option longopts[] = {
        {"port", required_argument, NULL, 'p'},
        {"json", no_argument, NULL, 'J'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    long port = 0;
    int opt;
    optind = 0;
    opterr = 0;
    while ((opt = getopt_long(argc, argv, "p:h", longopts, NULL)) != -1) {
        if (opt == 'h') {
            cli_command_help(self, stdout);
            return CLI_OK;
        } else if (opt == 'J') {
            c->json = true;
        } else if (opt == 'p') {
            char *end = NULL;
            port = strtol(optarg, &end, 10);
            if (*end || port < 1 || port > 65535)
                return cli_usage_error(self, "--port takes a number from 1 to 65535");
        } else {
            return cli_usage_error(self,
                                   opt == ':' ? "missing value for '%s'" : "unknown option '%s'",
                                   argv[optind - 1]);
        }
    }
    int left = argc - optind;
    if (left < 1) return cli_usage_error(self, "SESSION is missing");
    if (left < 2 && !port) return cli_usage_error(self, "APP is missing");
    if (left > 2) return cli_usage_error(self, "unexpected argument '%s'", argv[optind + 2]);
    int rc = client_need_keys(c);
    if (rc != CLI_OK) return rc;

    json_t *body = json_object();
    if (left == 2) json_object_set_new(body, "app", json_string(argv[optind + 1]));
    if (port) json_object_set_new(body, "port", json_integer(port));
    char *e = client_escape(argv[optind]);
    char *path = ts_asprintf("/session/%s/start-service", e);
    free(e);
    json_t *answer = NULL;
    rc = client_call(c, "POST", path, body, true, &answer);
    free(path);
    json_decref(body);
    if (rc == CLI_OK) {
        const char *url = json_string_value(json_object_get(answer, "url"));
        if (c->json) {
            out_json(answer);
        } else if (url) {
            printf("%s\n", url);
        } else {
            fprintf(stderr, "tessera: the gateway answered without a url\n");
            rc = CLI_FAIL;
        }
    }
    json_decref(answer);
    return rc;
}
