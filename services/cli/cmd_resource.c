/* cmd_resource.c: `tessera resource presets`, `tessera resource check` and
 * `tessera scaling-groups`: what the caller may launch, against the
 * gateway's GET /resource/presets, POST /resource/check-presets and GET
 * /scaling-groups (docs/api.md "Resources"). Tables by default, the API's
 * JSON with --json. The presets' administration is `tessera admin
 * resource-preset` (admin_table.c). */
#include "services/cli/commands.h"
#include "services/cli/output.h"

#include <getopt.h>
#include <stdlib.h>
#include <string.h>

static const cli_command resource_subs[] = {
    {"presets", "list the resource presets", "tessera resource presets [--json]", NULL, true, NULL},
    {"check", "show limits, usage and what remains, and which presets fit now",
     "tessera resource check [--group PROJECT] [--resource-group NAME] [--json]", NULL, false,
     "  -g, --group PROJECT        count the project's limits too (name or id)\n"
     "  -r, --resource-group NAME  only this resource group (default: every allowed one)\n"},
};

/* Options of check and scaling-groups: --group, --resource-group, --json, --help.
 * false when the command is over (help shown, or a usage error in *rc). */
static bool _opts(cli *c, const cli_command *self, const char *cmd, const char *sub, int argc,
                  char **argv, const char **group, const char **rgroup, int *rc)
{
    static const struct option longopts[] = {
        {"group", required_argument, NULL, 'g'},
        {"resource-group", required_argument, NULL, 'r'},
        {"json", no_argument, NULL, 'J'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    int opt;
    optind = 0;
    opterr = 0;
    *rc = CLI_OK;
    while ((opt = getopt_long(argc, argv, rgroup ? "g:r:h" : "g:h", longopts, NULL)) != -1) {
        if (opt == 'g') {
            *group = optarg;
        } else if (opt == 'r' && rgroup) {
            *rgroup = optarg;
        } else if (opt == 'J') {
            c->json = true;
        } else if (opt == 'h') {
            cli_command_help(self, stdout);
            return false;
        } else {
            *rc = cli_usage(cmd, sub, "unknown or incomplete option '%s'", argv[optind - 1]);
            return false;
        }
    }
    if (optind < argc) {
        *rc = cli_usage(cmd, sub, "unexpected argument '%s'", argv[optind]);
        return false;
    }
    return true;
}

static const out_column preset_cols[] = {
    {"NAME", "name", OUT_TEXT},
    {"SLOTS", "resource_slots", OUT_TEXT},
    {"SHARED MEMORY", "shared_memory", OUT_TEXT},
    {"ALLOCATABLE", "allocatable", OUT_TEXT},
    {NULL, NULL, OUT_TEXT},
};

static int _presets(cli *c)
{
    json_t *v = NULL;
    if (client_call(c, "GET", "/resource/presets", NULL, true, &v) != CLI_OK) return CLI_FAIL;
    if (c->json) {
        out_json(v);
    } else {
        static const out_column cols[] = {
            {"NAME", "name", OUT_TEXT},
            {"SLOTS", "resource_slots", OUT_TEXT},
            {"SHARED MEMORY", "shared_memory", OUT_TEXT},
            {NULL, NULL, OUT_TEXT},
        };
        out_table(cols, json_object_get(v, "presets"));
    }
    json_decref(v);
    return CLI_OK;
}

/* One table row per scope: limits, using, remaining. */
static void _print_check(json_t *v)
{
    static const out_column scope_cols[] = {
        {"SCOPE", "scope", OUT_TEXT}, {"LIMITS", "limits", OUT_TEXT},
        {"USING", "using", OUT_TEXT}, {"REMAINING", "remaining", OUT_TEXT},
        {NULL, NULL, OUT_TEXT},
    };
    static const out_column group_cols[] = {
        {"RESOURCE GROUP", "name", OUT_TEXT},
        {"USING", "using", OUT_TEXT},
        {"REMAINING", "remaining", OUT_TEXT},
        {NULL, NULL, OUT_TEXT},
    };
    json_t *rows = json_array();
    const char *name;
    json_t *s;
    json_object_foreach(json_object_get(v, "tessera_scopes"), name, s) if (json_is_object(s))
    {
        json_t *row = json_deep_copy(s);
        json_object_set_new(row, "scope", json_string(name));
        json_array_append_new(rows, row);
    }
    json_t *all = json_pack("{s:s, s:n, s:n, s:O?}", "scope", "(what remains for you)", "limits",
                            "using", "remaining", json_object_get(v, "keypair_remaining"));
    json_array_append_new(rows, all);
    out_table(scope_cols, rows);
    json_decref(rows);
    printf("\n");
    rows = json_array();
    json_object_foreach(json_object_get(v, "scaling_groups"), name, s)
    {
        json_t *row = json_deep_copy(s);
        json_object_set_new(row, "name", json_string(name));
        json_array_append_new(rows, row);
    }
    out_table(group_cols, rows);
    json_decref(rows);
    printf("\n");
    out_table(preset_cols, json_object_get(v, "presets"));
}

static int _check(cli *c, int argc, char **argv)
{
    const char *group = NULL, *rgroup = NULL;
    int rc;
    if (!_opts(c, &resource_subs[1], "resource", "check", argc, argv, &group, &rgroup, &rc))
        return rc;
    if (!client_has_keys(c)) return CLI_FAIL;
    json_t *body = json_object();
    if (group) json_object_set_new(body, "group", json_string(group));
    if (rgroup) json_object_set_new(body, "scaling_group", json_string(rgroup));
    json_t *v = NULL;
    rc = client_call(c, "POST", "/resource/check-presets", body, true, &v);
    json_decref(body);
    if (rc != CLI_OK) return CLI_FAIL;
    if (c->json)
        out_json(v);
    else
        _print_check(v);
    json_decref(v);
    return CLI_OK;
}

static void _resource_help(FILE *out)
{
    fprintf(out, "Usage: tessera resource SUBCOMMAND [OPTIONS]\n\n"
                 "What you may launch: resource presets and the resources that remain.\n\n"
                 "Subcommands:\n");
    for (size_t i = 0; i < TS_ARRAY_LEN(resource_subs); i++)
        fprintf(out, "  %-10s %s\n", resource_subs[i].name, resource_subs[i].summary);
    fprintf(out, "\n`tessera resource SUBCOMMAND --help` for one; presets are administered with\n"
                 "`tessera admin resource-preset`.\n");
}

int cmd_resource(cli *c, const cli_command *self, int argc, char **argv)
{
    (void)self;
    if (argc < 2 || cli_is_help(argv[1])) {
        _resource_help(argc < 2 ? stderr : stdout);
        return argc < 2 ? CLI_USAGE : CLI_OK;
    }
    const char *sub = argv[1];
    if (strcmp(sub, "presets") == 0) {
        if (argc > 2 && cli_is_help(argv[2])) {
            cli_command_help(&resource_subs[0], stdout);
            return CLI_OK;
        }
        for (int i = 2; i < argc; i++) {
            if (strcmp(argv[i], "--json") != 0)
                return cli_usage("resource", sub, "unexpected argument '%s'", argv[i]);
            c->json = true;
        }
        if (!client_has_keys(c)) return CLI_FAIL;
        return _presets(c);
    }
    if (strcmp(sub, "check") == 0) {
        if (argc > 2 && cli_is_help(argv[2])) {
            cli_command_help(&resource_subs[1], stdout);
            return CLI_OK;
        }
        return _check(c, argc - 1, argv + 1);
    }
    return cli_usage("resource", NULL, "unknown subcommand '%s'", sub);
}

int cmd_scaling_groups(cli *c, const cli_command *self, int argc, char **argv)
{
    const char *group = NULL;
    int rc;
    if (!_opts(c, self, "scaling-groups", NULL, argc, argv, &group, NULL, &rc)) return rc;
    if (!client_has_keys(c)) return CLI_FAIL;
    char *path = ts_strdup("/scaling-groups");
    if (group) client_query_add(&path, "group", group);
    json_t *v = NULL;
    rc = client_call(c, "GET", path, NULL, true, &v);
    free(path);
    if (rc != CLI_OK) return CLI_FAIL;
    if (c->json) {
        out_json(v);
    } else {
        static const out_column cols[] = {{"NAME", "name", OUT_TEXT}, {NULL, NULL, OUT_TEXT}};
        out_table(cols, json_object_get(v, "scaling_groups"));
    }
    json_decref(v);
    return CLI_OK;
}
