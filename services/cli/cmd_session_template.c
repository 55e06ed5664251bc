/* cmd_session_template.c: `tessera session-template list|get|create|update|
 * delete`, against the gateway's /template/session (docs/sessions.md
 * "Templates"). A template is a JSON file (Backend.AI's task template; "-"
 * reads stdin); `tessera session create --template ID` launches one. */
#include "services/cli/commands.h"
#include "services/cli/output.h"

#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#define CMD "session-template"
#define MAX_FILE (1024 * 1024)

typedef struct tpl_opts {
    bool all;
    const char *group, *owner;
} tpl_opts;

static const cli_command subs[] = {
    {"list", "list your session templates (--all: every one you may see)",
     "tessera session-template list [--all] [--group-id PROJECT_ID] [--json]", NULL, false,
     "  -a, --all                    every template you may see (admins: of others too)\n"
     "      --group-id PROJECT_ID    only those of this project\n"},
    {"get", "show a session template", "tessera session-template get ID [--json]", NULL, false, ""},
    {"create", "store the templates of a JSON file (a template, or a list of {template, name})",
     "tessera session-template create FILE [--group PROJECT] [--owner ACCESS_KEY] [--json]", NULL,
     false,
     "  -g, --group PROJECT          the templates' project, a name or an id (default: default)\n"
     "      --owner ACCESS_KEY       keep them for another keypair (admins)\n"},
    {"update", "replace a session template with the one in a JSON file",
     "tessera session-template update ID FILE [--group PROJECT] [--json]", NULL, false,
     "  -g, --group PROJECT          move it to this project (name or id)\n"},
    {"delete", "delete a session template", "tessera session-template delete ID [--json]", NULL,
     false, ""},
};

static void _help(FILE *out)
{
    fprintf(out, "Usage: tessera session-template SUBCOMMAND [ARGS] [--json]\n\n"
                 "Keep session templates (image, type, resources, environment, mounts,\n"
                 "commands) and launch them with `tessera session create --template ID`.\n\n"
                 "Subcommands:\n");
    for (size_t i = 0; i < TS_ARRAY_LEN(subs); i++)
        fprintf(out, "  %-8s %s\n", subs[i].name, subs[i].summary);
    fprintf(out, "\n`tessera session-template SUBCOMMAND --help` for its options.\n");
}

/* Options, then exactly n words (from argv[optind]). false: the command ends
 * with *rc (the help shown, or a usage error). */
static bool _args(cli *c, const cli_command *sub, int argc, char **argv, int n, const char *what,
                  tpl_opts *o, int *rc)
{
    static const struct option longopts[] = {
        {"all", no_argument, NULL, 'a'},
        {"group-id", required_argument, NULL, 'G'},
        {"group", required_argument, NULL, 'g'},
        {"owner", required_argument, NULL, 'o'},
        {"json", no_argument, NULL, 'J'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    int opt;
    optind = 0;
    opterr = 0;
    *rc = CLI_OK;
    while ((opt = getopt_long(argc, argv, "+ag:h", longopts, NULL)) != -1) {
        bool list = strcmp(sub->name, "list") == 0, create = strcmp(sub->name, "create") == 0;
        bool group = create || strcmp(sub->name, "update") == 0;
        if (opt == 'J') {
            c->json = true;
        } else if (opt == 'h') {
            cli_command_help(sub, stdout);
            return false;
        } else if (opt == 'a' && list) {
            o->all = true;
        } else if (opt == 'G' && list) {
            o->group = optarg;
        } else if (opt == 'g' && group) {
            o->group = optarg;
        } else if (opt == 'o' && create) {
            o->owner = optarg;
        } else {
            *rc = cli_usage(CMD, sub->name, "unknown or incomplete option '%s'", argv[optind - 1]);
            return false;
        }
    }
    if (argc - optind != n) {
        *rc = argc - optind < n
                  ? cli_usage(CMD, sub->name, "%s is missing", what)
                  : cli_usage(CMD, sub->name, "unexpected argument '%s'", argv[optind + n]);
        return false;
    }
    return client_has_keys(c) || ((*rc = CLI_FAIL), false);
}

/* The file's text (heap; "-": stdin), or NULL after a message. */
static char *_read(const char *path)
{
    FILE *f = strcmp(path, "-") == 0 ? stdin : fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "tessera: cannot open %s\n", path);
        return NULL;
    }
    char *buf = malloc(MAX_FILE + 1);
    size_t n = buf ? fread(buf, 1, MAX_FILE + 1, f) : 0;
    bool err = ferror(f);
    if (f != stdin) fclose(f);
    if (!buf || err || n > MAX_FILE) {
        fprintf(stderr, "tessera: %s: %s\n", path,
                n > MAX_FILE ? "larger than 1 MiB" : "cannot read it");
        free(buf);
        return NULL;
    }
    buf[n] = '\0';
    return buf;
}

static char *_item_path(const char *id)
{
    char *e = httpc_escape(id);
    char *p = ts_asprintf("/template/session/%s", e);
    free(e);
    return p;
}

static int _list(cli *c, const tpl_opts *o)
{
    char *path = ts_strdup("/template/session");
    if (o->all) client_query_add(&path, "all", "true");
    if (o->group) client_query_add(&path, "group_id", o->group);
    json_t *v = NULL;
    int rc = client_call(c, "GET", path, NULL, true, &v);
    free(path);
    if (rc != CLI_OK) return rc;
    if (c->json) {
        out_json(v);
    } else {
        static const out_column cols[] = {
            {"ID", "id", OUT_TEXT},
            {"NAME", "name", OUT_TEXT},
            {"OWNER", "user_email", OUT_TEXT},
            {"PROJECT", "group_name", OUT_TEXT},
            {"CREATED", "created_at", OUT_TIME},
            {NULL, NULL, OUT_TEXT},
        };
        out_table(cols, v);
    }
    json_decref(v);
    return CLI_OK;
}

/* create (id NULL) or update: the file as the payload. */
static int _write(cli *c, const char *id, const char *file, const tpl_opts *o)
{
    char *text = _read(file);
    if (!text) return CLI_FAIL;
    json_t *body = json_pack("{s:s}", "payload", text), *v = NULL;
    free(text);
    if (o->group)
        json_object_set_new(body, ts_uuid_valid(o->group) ? "group_id" : "group",
                            json_string(o->group));
    if (o->owner) json_object_set_new(body, "owner_access_key", json_string(o->owner));
    char *path = id ? _item_path(id) : ts_strdup("/template/session");
    int rc = client_call(c, id ? "PUT" : "POST", path, body, true, &v);
    free(path);
    json_decref(body);
    if (rc == CLI_OK && c->json) {
        out_json(v);
    } else if (rc == CLI_OK && id) {
        printf("session template %s updated\n", id);
    } else if (rc == CLI_OK) {
        size_t i;
        json_t *it;
        json_array_foreach(v, i, it) printf("session template %s created\n",
                                            json_string_value(json_object_get(it, "id")) ?: "?");
    }
    json_decref(v);
    return rc;
}

int cmd_session_template(cli *c, const cli_command *self, int argc, char **argv)
{
    (void)self;
    if (argc < 2 || cli_is_help(argv[1]) || strcmp(argv[1], "help") == 0) {
        _help(argc < 2 ? stderr : stdout);
        return argc < 2 ? CLI_USAGE : CLI_OK;
    }
    const cli_command *sub = NULL;
    for (size_t i = 0; i < TS_ARRAY_LEN(subs); i++)
        if (strcmp(subs[i].name, argv[1]) == 0) sub = &subs[i];
    if (!sub) return cli_usage(CMD, NULL, "unknown subcommand '%s'", argv[1]);
    argc--;
    argv++;
    tpl_opts o = {0};
    int rc;
    const char *name = sub->name;
    if (strcmp(name, "list") == 0)
        return _args(c, sub, argc, argv, 0, "", &o, &rc) ? _list(c, &o) : rc;
    if (strcmp(name, "create") == 0)
        return _args(c, sub, argc, argv, 1, "FILE", &o, &rc) ? _write(c, NULL, argv[optind], &o)
                                                             : rc;
    if (strcmp(name, "update") == 0)
        return _args(c, sub, argc, argv, 2, "ID and FILE", &o, &rc)
                   ? _write(c, argv[optind], argv[optind + 1], &o)
                   : rc;
    if (!_args(c, sub, argc, argv, 1, "ID", &o, &rc)) return rc;
    char *path = _item_path(argv[optind]);
    json_t *v = NULL;
    bool get = strcmp(name, "get") == 0;
    rc = client_call(c, get ? "GET" : "DELETE", path, NULL, true, &v);
    free(path);
    if (rc == CLI_OK && (c->json || get))
        out_json(v); /* a template reads best as the JSON it is */
    else if (rc == CLI_OK)
        printf("session template %s deleted\n", argv[optind]);
    json_decref(v);
    return rc;
}
