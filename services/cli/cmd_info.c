/* cmd_info.c: `tessera version` and `tessera status`: what the client and
 * the platform are, and whether the platform is ready. */
#include "services/cli/commands.h"

#include <stdlib.h>

int cmd_version(cli *c, const cli_command *self, int argc, char **argv)
{
    (void)self, (void)argc, (void)argv;
    printf("client  %s\n", TESSERA_VERSION);
    json_t *v = NULL;
    if (client_call(c, "GET", "/", NULL, false, &v) != CLI_OK) return CLI_FAIL;
    /* "tessera" is the server's own version; "manager" the Backend.AI
     * release whose API it speaks (older gateways sent only "manager") */
    const char *own = json_string_value(json_object_get(v, "tessera"));
    printf("server  %s (API %s, Backend.AI manager %s)\n",
           own ?: json_string_value(json_object_get(v, "manager")) ?: "?",
           json_string_value(json_object_get(v, "version")) ?: "?",
           json_string_value(json_object_get(v, "manager")) ?: "?");
    json_decref(v);
    return CLI_OK;
}

int cmd_status(cli *c, const cli_command *self, int argc, char **argv)
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
