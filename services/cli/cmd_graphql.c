/* cmd_graphql.c: `tessera graphql QUERY`: a GraphQL request to the gateway
 * (POST /admin/gql, docs/api.md "GraphQL"), as Backend.AI's `backend.ai
 * admin query` sends one: the data printed as JSON, each error on stderr
 * with where it was found, exit 1 when there was one. */
#include "services/cli/commands.h"
#include "services/cli/output.h"

#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#define QUERY_MAX (64 * 1024) /* the gateway's own limit */

/* The query from stdin ("-"); NULL with a message when too long. */
static char *_read_stdin(void)
{
    char *buf = ts_malloc(QUERY_MAX + 2);
    size_t n = fread(buf, 1, QUERY_MAX + 1, stdin);
    if (n > QUERY_MAX) {
        fprintf(stderr, "tessera graphql: the query on stdin is over %d bytes\n", QUERY_MAX);
        free(buf);
        return NULL;
    }
    buf[n] = '\0';
    return buf;
}

/* --var NAME=VALUE into vars: VALUE as JSON when it is JSON, else as text.
 * False after a usage message. */
static bool _add_var(json_t *vars, const char *spec, cli_status *rc)
{
    const char *eq = strchr(spec, '=');
    if (!eq || eq == spec) {
        *rc = cli_usage("graphql", NULL, "--var takes NAME=VALUE, not '%s'", spec);
        return false;
    }
    char *name = ts_strndup(spec, (size_t)(eq - spec));
    json_t *v = json_loads(eq + 1, JSON_DECODE_ANY, NULL);
    json_object_set_new(vars, name, v ? v : json_string(eq + 1));
    free(name);
    return true;
}

/* Each error of the answer on stderr: "message (line L, column C; at a.b)". */
static void _print_errors(const json_t *errors)
{
    size_t i;
    json_t *e;
    json_array_foreach(errors, i, e)
    {
        const char *msg = json_string_value(json_object_get(e, "message"));
        json_t *loc = json_array_get(json_object_get(e, "locations"), 0);
        fprintf(stderr, "tessera graphql: %s", msg ? msg : "(an error without a message)");
        if (loc)
            fprintf(stderr, " (line %lld, column %lld)",
                    (long long)json_integer_value(json_object_get(loc, "line")),
                    (long long)json_integer_value(json_object_get(loc, "column")));
        json_t *path = json_object_get(e, "path");
        if (json_array_size(path)) {
            fprintf(stderr, " at ");
            size_t k;
            json_t *p;
            json_array_foreach(path, k, p)
            {
                if (json_is_integer(p))
                    fprintf(stderr, "[%lld]", (long long)json_integer_value(p));
                else
                    fprintf(stderr, "%s%s", k ? "." : "", json_string_value(p));
            }
        }
        fputc('\n', stderr);
    }
}

int cmd_graphql(cli *c, const cli_command *self, int argc, char **argv)
{
    static const struct option longopts[] = {
        {"var", required_argument, NULL, 'v'},
        {"operation", required_argument, NULL, 'o'},
        {"json", no_argument, NULL, 'J'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    json_t *vars = json_object();
    const char *operation = NULL;
    cli_status rc = CLI_OK;
    int opt;
    optind = 0;
    opterr = 0;
    while ((opt = getopt_long(argc, argv, ":v:o:h", longopts, NULL)) != -1) {
        if (opt == 'h') {
            cli_command_help(self, stdout);
            goto out;
        } else if (opt == 'J') {
            c->json = true; /* the output is JSON anyway */
        } else if (opt == 'v') {
            if (!_add_var(vars, optarg, &rc)) goto out;
        } else if (opt == 'o') {
            operation = optarg;
        } else {
            rc = cli_usage(self->name, NULL,
                           opt == ':' ? "missing value for '%s'" : "unknown option '%s'",
                           argv[optind - 1]);
            goto out;
        }
    }
    if (argc - optind != 1) {
        rc = cli_usage(self->name, NULL,
                       argc - optind ? "one QUERY (or -), not %d arguments" : "QUERY is missing",
                       argc - optind);
        goto out;
    }
    if (!client_has_keys(c)) {
        rc = CLI_FAIL;
        goto out;
    }
    char *query = strcmp(argv[optind], "-") == 0 ? _read_stdin() : ts_strdup(argv[optind]);
    if (!query) {
        rc = CLI_FAIL;
        goto out;
    }
    json_t *body = json_pack("{s:s, s:O}", "query", query, "variables", vars);
    if (operation) json_object_set_new(body, "operation_name", json_string(operation));
    free(query);
    json_t *answer = NULL;
    rc = client_call(c, "POST", "/admin/gql", body, true, &answer);
    json_decref(body);
    if (rc == CLI_OK) {
        json_t *data = json_object_get(answer, "data");
        if (data && !json_is_null(data)) out_json(data);
        json_t *errors = json_object_get(answer, "errors");
        if (json_array_size(errors)) {
            _print_errors(errors);
            rc = CLI_FAIL;
        }
    }
    json_decref(answer);
out:
    json_decref(vars);
    return rc;
}
