/* cmd_info.c: `tessera version` and `tessera status`: what the client and
 * the platform are, and whether the platform is ready. */
#include "services/cli/commands.h"

#include "services/cli/output.h"

#include <getopt.h>
#include <stdlib.h>
#include <string.h>

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

/* tessera status: the gateway's own /readyz (anyone may ask). */
static int gateway_ready(cli *c)
{
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
    if (c->json) {
        out_json(r);
    } else {
        printf("gateway %s: %s\n", c->creds.endpoint,
               json_string_value(json_object_get(r, "status")) ?: "?");
        const char *name;
        json_t *v;
        json_object_foreach(json_object_get(r, "checks"), name, v)
            printf("  %-12s %s\n", name, json_string_value(v) ?: "?");
    }
    json_decref(r);
    return status == 200 ? CLI_OK : CLI_FAIL;
}

/* tessera status --all: GET /admin/status (superadmins) as two tables. */
static int platform_status(cli *c, const char *timeout, bool agents)
{
    if (!client_has_keys(c)) return CLI_FAIL;
    char *path = ts_strdup("/admin/status");
    if (timeout) client_query_add(&path, "timeout", timeout);
    if (!agents) client_query_add(&path, "agents", "false");
    json_t *r = NULL;
    cli_status rc = client_call(c, "GET", path, NULL, true, &r);
    free(path);
    if (rc != CLI_OK) return rc;
    const char *overall = json_string_value(json_object_get(r, "status")) ?: "?";
    if (c->json) {
        out_json(r);
    } else {
        size_t i;
        json_t *row;
        json_array_foreach(json_object_get(r, "services"), i, row)
        {
            json_t *err = json_object_get(row, "error");
            json_t *failed = json_object_get(row, "failed_checks");
            json_object_set(row, "problem",
                            err                        ? err
                            : json_object_size(failed) ? failed
                                                       : json_null());
        }
        static const out_column svc_cols[] = {
            {"SERVICE", "service", OUT_TEXT}, {"KIND", "kind", OUT_TEXT},
            {"ADDRESS", "address", OUT_TEXT}, {"VERSION", "version", OUT_TEXT},
            {"STATE", "state", OUT_TEXT},     {"MS", "latency_ms", OUT_TEXT},
            {"PROBLEM", "problem", OUT_TEXT}, {NULL, NULL, OUT_TEXT}};
        printf("platform: %s (each service given %lld ms, %lld ms in all)\n\n", overall,
               (long long)json_integer_value(json_object_get(r, "timeout_ms")),
               (long long)json_integer_value(json_object_get(r, "elapsed_ms")));
        out_table(svc_cols, json_object_get(r, "services"));
        const char *agents_error = json_string_value(json_object_get(r, "agents_error"));
        if (agents_error) printf("agents not listed: %s\n", agents_error);
        json_t *deps = json_array();
        const char *name;
        json_t *d;
        json_object_foreach(json_object_get(r, "dependencies"), name, d)
        {
            json_t *item = json_deep_copy(d);
            json_object_set_new(item, "name", json_string(name));
            json_array_append_new(deps, item);
        }
        static const out_column dep_cols[] = {{"DEPENDENCY", "name", OUT_TEXT},
                                              {"STATUS", "status", OUT_TEXT},
                                              {"VERSION", "version", OUT_TEXT},
                                              {"REPORTED BY", "reported_by", OUT_TEXT},
                                              {NULL, NULL, OUT_TEXT}};
        printf("\n");
        out_table(dep_cols, deps);
        json_decref(deps);
    }
    rc = strcmp(overall, "ok") == 0 ? CLI_OK : CLI_FAIL;
    json_decref(r);
    return rc;
}

int cmd_status(cli *c, const cli_command *self, int argc, char **argv)
{
    static const struct option longopts[] = {{"all", no_argument, NULL, 'a'},
                                             {"timeout", required_argument, NULL, 't'},
                                             {"no-agents", no_argument, NULL, 'n'},
                                             {"json", no_argument, NULL, 'j'},
                                             {NULL, 0, NULL, 0}};
    bool all = false, agents = true;
    const char *timeout = NULL;
    int opt;
    optind = 0;
    opterr = 0;
    while ((opt = getopt_long(argc, argv, "+a", longopts, NULL)) >= 0) {
        if (opt == '?' || opt == ':')
            return cli_usage(self->name, NULL, "%s '%s'",
                             opt == ':' ? "missing value for" : "unknown option", argv[optind - 1]);
        if (opt == 'a') all = true;
        if (opt == 't') timeout = optarg;
        if (opt == 'n') agents = false;
        if (opt == 'j') c->json = true;
    }
    if (optind < argc) return cli_usage(self->name, NULL, "unexpected argument '%s'", argv[optind]);
    if ((timeout || !agents) && !all)
        return cli_usage(self->name, NULL, "--timeout and --no-agents go with --all");
    return all ? platform_status(c, timeout, agents) : gateway_ready(c);
}
