/* cmd_vfolder.c: `tessera vfolder SUBCOMMAND`: virtual folders through the
 * gateway's /folders API (docs/vfolders.md): create, list, info, rename,
 * delete, purge, restore, clone, hosts, volumes, update-options, and
 * sharing (invite, invitations, accept, reject, leave, share, unshare,
 * shares, set-share). The file commands
 * (upload, download, ls, mkdir, mv, rm) live in cmd_vfolder_files.c. */
#include "services/cli/cmd_vfolder_files.h"
#include "services/cli/commands.h"
#include "services/cli/output.h"

#include <ctype.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

typedef struct vsub vsub;
struct vsub {
    const char *name;
    const char *summary;
    const char *usage;   /* after "tessera vfolder " */
    const char *allowed; /* option letters it accepts */
    int min_args, max_args;
    cli_status (*run)(cli *c, const vsub *self, json_t *opts, int argc, char **argv);
};

static const struct option longopts[] = {
    {"host", required_argument, NULL, 'H'},
    {"group", required_argument, NULL, 'g'},
    {"usage-mode", required_argument, NULL, 'u'},
    {"permission", required_argument, NULL, 'p'},
    {"perm", required_argument, NULL, 'p'},
    {"cloneable", no_argument, NULL, 'C'},
    {"no-cloneable", no_argument, NULL, 'N'},
    {"quota", required_argument, NULL, 'q'},
    {"all", no_argument, NULL, 'a'},
    {"json", no_argument, NULL, 'J'},
    {"help", no_argument, NULL, 'h'},
    {NULL, 0, NULL, 0},
};

static const char *const OPTION_HELP =
    "  -H, --host VOLUME            volume (default: the server's default host)\n"
    "  -g, --group PROJECT          a project (name or id): a project folder (admins)\n"
    "  -u, --usage-mode MODE        general | data | model\n"
    "  -p, --permission PERM        ro | rw | wd (also --perm)\n"
    "  -C, --cloneable              others with access may clone it\n"
    "  -N, --no-cloneable           only the owner may clone it\n"
    "  -q, --quota BYTES            the folder's own quota in bytes\n"
    "  -a, --all                    every folder in your scope (admins)\n";

static void _help(const vsub *s, FILE *out)
{
    fprintf(out, "Usage: tessera vfolder %s\n\n%c%s.\n\nOptions:\n", s->usage,
            toupper((unsigned char)s->summary[0]), s->summary + 1);
    char line[128];
    for (const char *l = OPTION_HELP; *l;) {
        const char *nl = strchr(l, '\n');
        size_t n = (size_t)(nl - l);
        snprintf(line, sizeof(line), "%.*s", (int)n, l);
        /* "  -X, ..." : the letter is at index 3 */
        if (strchr(s->allowed, line[3])) fprintf(out, "%s\n", line);
        l = nl + 1;
    }
    fprintf(out, "  %-28s %s\n  %-28s %s\n", "--json", "print the API's JSON", "-h, --help",
            "this help");
}

static char *_path(const char *name, const char *suffix)
{
    char *e = httpc_escape(name);
    char *p = ts_asprintf("/folders/%s%s", e, suffix ? suffix : "");
    free(e);
    return p;
}

/* Print an answer: --json as it came, else a record or a short message. */
static cli_status _done(cli *c, cli_status rc, json_t *out, const char *msg)
{
    if (rc == CLI_OK) {
        if (c->json)
            out_json(out);
        else if (json_is_object(out) && json_object_get(out, "id"))
            out_record(out, NULL);
        else if (msg)
            printf("%s\n", msg);
    }
    json_decref(out);
    return rc;
}

static cli_status _call(cli *c, const char *method, char *path, json_t *body, const char *msg)
{
    json_t *out = NULL;
    cli_status rc = client_call(c, method, path, body, true, &out);
    free(path);
    json_decref(body);
    return _done(c, rc, out, msg);
}

/* ["a", "b"] from argv. */
static json_t *_strings(int argc, char **argv)
{
    json_t *a = json_array();
    for (int i = 0; i < argc; i++)
        json_array_append_new(a, json_string(argv[i]));
    return a;
}

/* ---- subcommands -------------------------------------------------------------------- */

static void _copy_common(json_t *body, json_t *opts)
{
    static const char *const keys[] = {"usage_mode", "permission", "cloneable", "quota"};
    for (size_t i = 0; i < TS_ARRAY_LEN(keys); i++)
        if (json_object_get(opts, keys[i]))
            json_object_set(body, keys[i], json_object_get(opts, keys[i]));
}

static cli_status sub_create(cli *c, const vsub *s, json_t *o, int argc, char **argv)
{
    (void)s, (void)argc;
    json_t *body = json_pack("{s:s}", "name", argv[0]);
    if (json_object_get(o, "host")) json_object_set(body, "host", json_object_get(o, "host"));
    if (json_object_get(o, "group")) json_object_set(body, "group", json_object_get(o, "group"));
    _copy_common(body, o);
    return _call(c, "POST", ts_strdup("/folders"), body, NULL);
}

static const out_column list_cols[] = {
    {"NAME", "name", OUT_TEXT},       {"ID", "id", OUT_TEXT},
    {"HOST", "host", OUT_TEXT},       {"TYPE", "ownership_type", OUT_TEXT},
    {"PERM", "permission", OUT_TEXT}, {"OWNER", "is_owner", OUT_TEXT},
    {"MODE", "usage_mode", OUT_TEXT}, {"CREATED", "created_at", OUT_TIME},
    {NULL, NULL, OUT_TEXT},
};

static cli_status sub_list(cli *c, const vsub *s, json_t *o, int argc, char **argv)
{
    (void)s, (void)argc, (void)argv;
    char *path = ts_strdup("/folders");
    if (json_is_true(json_object_get(o, "all"))) client_query_add(&path, "all", "true");
    if (json_object_get(o, "group"))
        client_query_add(&path, "group_id", json_string_value(json_object_get(o, "group")));
    json_t *out = NULL;
    cli_status rc = client_call(c, "GET", path, NULL, true, &out);
    free(path);
    if (rc == CLI_OK) c->json ? out_json(out) : out_table(list_cols, out);
    json_decref(out);
    return rc;
}

static cli_status sub_info(cli *c, const vsub *s, json_t *o, int argc, char **argv)
{
    (void)s, (void)o, (void)argc;
    return _call(c, "GET", _path(argv[0], NULL), NULL, NULL);
}

static cli_status sub_rename(cli *c, const vsub *s, json_t *o, int argc, char **argv)
{
    (void)s, (void)o, (void)argc;
    return _call(c, "POST", _path(argv[0], "/rename"), json_pack("{s:s}", "new_name", argv[1]),
                 NULL);
}

static cli_status sub_delete(cli *c, const vsub *s, json_t *o, int argc, char **argv)
{
    (void)s, (void)o, (void)argc;
    return _call(c, "DELETE", _path(argv[0], NULL), NULL,
                 "moved to the trash (restore with 'tessera vfolder restore ID')");
}

static cli_status sub_purge(cli *c, const vsub *s, json_t *o, int argc, char **argv)
{
    (void)s, (void)o, (void)argc;
    return _call(c, "POST", ts_strdup("/folders/purge"), json_pack("{s:s}", "vfolder_id", argv[0]),
                 "purged");
}

static cli_status sub_restore(cli *c, const vsub *s, json_t *o, int argc, char **argv)
{
    (void)s, (void)o, (void)argc;
    return _call(c, "POST", ts_strdup("/folders/restore-from-trash"),
                 json_pack("{s:s}", "vfolder_id", argv[0]), "restored");
}

static cli_status sub_clone(cli *c, const vsub *s, json_t *o, int argc, char **argv)
{
    (void)s, (void)argc;
    json_t *body = json_pack("{s:s}", "target_name", argv[1]);
    if (json_object_get(o, "host"))
        json_object_set(body, "target_host", json_object_get(o, "host"));
    _copy_common(body, o);
    return _call(c, "POST", _path(argv[0], "/clone"), body, NULL);
}

static cli_status sub_hosts(cli *c, const vsub *s, json_t *o, int argc, char **argv)
{
    (void)s, (void)o, (void)argc, (void)argv;
    json_t *out = NULL;
    cli_status rc = client_call(c, "GET", "/folders/_/hosts", NULL, true, &out);
    if (rc == CLI_OK) {
        if (c->json) {
            out_json(out);
        } else {
            json_t *rec = json_pack("{s:O, s:O}", "default", json_object_get(out, "default"),
                                    "allowed", json_object_get(out, "allowed"));
            out_record(rec, NULL);
            json_decref(rec);
        }
    }
    json_decref(out);
    return rc;
}

static const out_column volume_cols[] = {
    {"NAME", "name", OUT_TEXT},
    {"FS", "fs_type", OUT_TEXT},
    {"XFS QUOTA", "xfs_quota", OUT_TEXT},
    {"CAPACITY", "capacity_bytes", OUT_TEXT},
    {"AVAILABLE", "available_bytes", OUT_TEXT},
    {"ACCOUNTED", "accounted_bytes", OUT_TEXT},
    {"FOLDERS", "folders", OUT_TEXT},
    {"TRASHED", "trashed_folders", OUT_TEXT},
    {NULL, NULL, OUT_TEXT},
};

static cli_status sub_volumes(cli *c, const vsub *s, json_t *o, int argc, char **argv)
{
    (void)s, (void)o, (void)argc, (void)argv;
    json_t *out = NULL;
    cli_status rc = client_call(c, "GET", "/folders/_/volumes", NULL, true, &out);
    if (rc == CLI_OK)
        c->json ? out_json(out) : out_table(volume_cols, json_object_get(out, "volumes"));
    json_decref(out);
    return rc;
}

static cli_status sub_invite(cli *c, const vsub *s, json_t *o, int argc, char **argv)
{
    (void)s;
    json_t *body = json_pack("{s:o}", "emails", _strings(argc - 1, argv + 1));
    if (json_object_get(o, "permission"))
        json_object_set(body, "perm", json_object_get(o, "permission"));
    json_t *out = NULL;
    char *path = _path(argv[0], "/invite");
    cli_status rc = client_call(c, "POST", path, body, true, &out);
    free(path);
    json_decref(body);
    if (rc == CLI_OK && !c->json) {
        size_t i;
        json_t *id;
        json_array_foreach(json_object_get(out, "invited_ids"), i, id)
            printf("invited: %s\n", json_string_value(id));
        if (!json_array_size(json_object_get(out, "invited_ids")))
            printf("nothing new: already invited or already shared\n");
        json_decref(out);
        return rc;
    }
    return _done(c, rc, out, NULL);
}

static const out_column inv_cols[] = {
    {"ID", "id", OUT_TEXT},           {"VFOLDER", "vfolder_name", OUT_TEXT},
    {"FROM", "inviter", OUT_TEXT},    {"PERM", "perm", OUT_TEXT},
    {"SENT", "created_at", OUT_TIME}, {NULL, NULL, OUT_TEXT},
};

static cli_status sub_invitations(cli *c, const vsub *s, json_t *o, int argc, char **argv)
{
    (void)s, (void)o, (void)argc, (void)argv;
    json_t *out = NULL;
    cli_status rc = client_call(c, "GET", "/folders/invitations/list", NULL, true, &out);
    if (rc == CLI_OK)
        c->json ? out_json(out) : out_table(inv_cols, json_object_get(out, "invitations"));
    json_decref(out);
    return rc;
}

static cli_status sub_accept(cli *c, const vsub *s, json_t *o, int argc, char **argv)
{
    (void)s, (void)o, (void)argc;
    return _call(c, "POST", ts_strdup("/folders/invitations/accept"),
                 json_pack("{s:s}", "inv_id", argv[0]), "accepted");
}

static cli_status sub_reject(cli *c, const vsub *s, json_t *o, int argc, char **argv)
{
    (void)s, (void)o, (void)argc;
    return _call(c, "DELETE", ts_strdup("/folders/invitations/delete"),
                 json_pack("{s:s}", "inv_id", argv[0]), "done (rejected or canceled)");
}

static cli_status sub_leave(cli *c, const vsub *s, json_t *o, int argc, char **argv)
{
    (void)s, (void)o, (void)argc;
    return _call(c, "POST", _path(argv[0], "/leave"), NULL, "left");
}

static cli_status sub_share(cli *c, const vsub *s, json_t *o, int argc, char **argv)
{
    (void)s;
    json_t *body = json_pack("{s:o}", "emails", _strings(argc - 1, argv + 1));
    if (json_object_get(o, "permission"))
        json_object_set(body, "permission", json_object_get(o, "permission"));
    return _call(c, "POST", _path(argv[0], "/share"), body, "shared");
}

static cli_status sub_unshare(cli *c, const vsub *s, json_t *o, int argc, char **argv)
{
    (void)s, (void)o;
    return _call(c, "DELETE", _path(argv[0], "/unshare"),
                 json_pack("{s:o}", "emails", _strings(argc - 1, argv + 1)), "unshared");
}

static cli_status sub_update_options(cli *c, const vsub *s, json_t *o, int argc, char **argv)
{
    (void)s, (void)argc;
    json_t *body = json_object();
    if (json_object_get(o, "permission"))
        json_object_set(body, "permission", json_object_get(o, "permission"));
    if (json_object_get(o, "cloneable"))
        json_object_set(body, "cloneable", json_object_get(o, "cloneable"));
    if (json_object_size(body) == 0) {
        json_decref(body);
        return cli_usage("vfolder", "update-options",
                         "nothing to change: give --permission, --cloneable or --no-cloneable");
    }
    return _call(c, "POST", _path(argv[0], "/update-options"), body, "updated");
}

/* The id of folder name (as GET /folders/{name} answers it), or NULL after
 * the error was printed. Heap. */
static char *_folder_id(cli *c, const char *name, cli_status *rc)
{
    json_t *out = NULL;
    char *path = _path(name, NULL);
    *rc = client_call(c, "GET", path, NULL, true, &out);
    free(path);
    const char *id = json_string_value(json_object_get(out, "id"));
    char *copy = *rc == CLI_OK && id ? ts_strdup(id) : NULL;
    json_decref(out);
    return copy;
}

/* The shares of the caller's folders, or of folder id (NULL: all). */
static cli_status _shares(cli *c, const char *id, json_t **out)
{
    char *path =
        id ? ts_asprintf("/folders/_/shared?vfolder_id=%s", id) : ts_strdup("/folders/_/shared");
    cli_status rc = client_call(c, "GET", path, NULL, true, out);
    free(path);
    return rc;
}

static const out_column share_cols[] = {
    {"VFOLDER", "vfolder_name", OUT_TEXT},
    {"USER ID", "uuid", OUT_TEXT},
    {"EMAIL", "email", OUT_TEXT},
    {"PERM", "perm", OUT_TEXT},
    {NULL, NULL, OUT_TEXT},
};

static cli_status sub_shares(cli *c, const vsub *s, json_t *o, int argc, char **argv)
{
    (void)s, (void)o;
    cli_status rc = CLI_OK;
    char *id = argc ? _folder_id(c, argv[0], &rc) : NULL;
    if (argc && !id) return rc == CLI_OK ? CLI_FAIL : rc;
    json_t *out = NULL;
    rc = _shares(c, id, &out);
    free(id);
    if (rc == CLI_OK && c->json) {
        out_json(out);
    } else if (rc == CLI_OK) {
        json_t *rows = json_array(), *r;
        size_t i;
        json_array_foreach(json_object_get(out, "shared"), i, r)
        {
            json_t *to = json_object_get(r, "shared_to");
            json_array_append_new(rows, json_pack("{s:O?, s:O?, s:O?, s:O?}", "vfolder_name",
                                                  json_object_get(r, "vfolder_name"), "uuid",
                                                  json_object_get(to, "uuid"), "email",
                                                  json_object_get(to, "email"), "perm",
                                                  json_object_get(r, "perm")));
        }
        out_table(share_cols, rows);
        json_decref(rows);
    }
    json_decref(out);
    return rc;
}

/* USER as a user id: itself, or the id of the shared user with that email. */
static char *_shared_user(cli *c, const char *id, const char *user, cli_status *rc)
{
    *rc = CLI_OK;
    if (!strchr(user, '@')) return ts_strdup(user);
    json_t *out = NULL;
    char *found = NULL;
    if ((*rc = _shares(c, id, &out)) == CLI_OK) {
        size_t i;
        json_t *r;
        json_array_foreach(json_object_get(out, "shared"), i, r)
        {
            json_t *to = json_object_get(r, "shared_to");
            const char *e = json_string_value(json_object_get(to, "email"));
            if (!found && e && strcasecmp(e, user) == 0)
                found = ts_strdup(json_string_value(json_object_get(to, "uuid")));
        }
        if (!found) {
            fprintf(stderr, "tessera vfolder set-share: the folder is not shared with %s\n", user);
            *rc = CLI_FAIL;
        }
    }
    json_decref(out);
    return found;
}

static cli_status sub_set_share(cli *c, const vsub *s, json_t *o, int argc, char **argv)
{
    (void)s, (void)o, (void)argc;
    const char *perm = argv[2];
    if (strcmp(perm, "ro") != 0 && strcmp(perm, "rw") != 0 && strcmp(perm, "wd") != 0 &&
        strcmp(perm, "none") != 0)
        return cli_usage("vfolder", "set-share", "PERM is ro, rw, wd or none (remove the share)");
    cli_status rc;
    char *id = _folder_id(c, argv[0], &rc);
    if (!id) return rc == CLI_OK ? CLI_FAIL : rc;
    char *user = _shared_user(c, id, argv[1], &rc);
    if (user) {
        json_t *body = json_pack("{s:s, s:s, s:o}", "vfolder", id, "user", user, "perm",
                                 strcmp(perm, "none") == 0 ? json_null() : json_string(perm));
        rc = _call(c, "POST", ts_strdup("/folders/_/shared"), body,
                   strcmp(perm, "none") == 0 ? "share removed" : "permission changed");
    }
    free(user);
    free(id);
    return rc;
}

static const vsub subs[] = {
    {"create", "create a folder", "create NAME [OPTIONS]", "HguCqp", 1, 1, sub_create},
    {"list", "list your folders, those shared with you and your projects'",
     "list [--all] [--group PROJECT_ID]", "ag", 0, 0, sub_list},
    {"info", "show a folder", "info NAME", "", 1, 1, sub_info},
    {"rename", "rename a folder", "rename NAME NEW_NAME", "", 2, 2, sub_rename},
    {"update-options", "change a folder's permission (what project members get) or cloneable",
     "update-options NAME [--permission ro|rw|wd] [--cloneable|--no-cloneable]", "pCN", 1, 1,
     sub_update_options},
    {"delete", "move a folder to the trash", "delete NAME", "", 1, 1, sub_delete},
    {"purge", "remove a trashed folder for good", "purge ID", "", 1, 1, sub_purge},
    {"restore", "bring a trashed folder back", "restore ID", "", 1, 1, sub_restore},
    {"clone", "copy a cloneable folder into a new folder of yours",
     "clone NAME TARGET_NAME [OPTIONS]", "HuCqp", 2, 2, sub_clone},
    {"hosts", "show the volumes you may use", "hosts", "", 0, 0, sub_hosts},
    {"volumes", "show the capacity and usage of every volume (admins)", "volumes", "", 0, 0,
     sub_volumes},
    {"invite", "invite users (by email) to a folder of yours",
     "invite NAME EMAIL... [--perm ro|rw|wd]", "p", 2, 101, sub_invite},
    {"invitations", "list the invitations you received", "invitations", "", 0, 0, sub_invitations},
    {"accept", "accept an invitation", "accept INVITATION_ID", "", 1, 1, sub_accept},
    {"reject", "reject an invitation (or cancel one you sent)", "reject INVITATION_ID", "", 1, 1,
     sub_reject},
    {"leave", "stop using a folder shared with you", "leave NAME", "", 1, 1, sub_leave},
    {"share", "give project members their own permission on a project folder",
     "share NAME EMAIL... [--permission ro|rw|wd]", "p", 2, 101, sub_share},
    {"unshare", "remove project members' own permission", "unshare NAME EMAIL...", "", 2, 101,
     sub_unshare},
    {"shares", "list who your folders (or folder NAME) are shared with", "shares [NAME]", "", 0, 1,
     sub_shares},
    {"set-share", "change or remove (none) a shared user's permission on a folder of yours",
     "set-share NAME USER_ID|EMAIL ro|rw|wd|none", "", 3, 3, sub_set_share},
};

static void _vfolder_usage(FILE *out)
{
    fprintf(out, "Usage: tessera vfolder SUBCOMMAND [OPTIONS] [ARGS]\n\n"
                 "Virtual folders: create, share and manage them.\n\nSubcommands:\n");
    for (size_t i = 0; i < TS_ARRAY_LEN(subs); i++)
        fprintf(out, "  %-12s %s\n", subs[i].name, subs[i].summary);
    fprintf(out, "  %-12s %s\n", "upload, download, ls, mkdir, mv, rm",
            "file commands (see each one's --help)");
    fprintf(out, "\n'tessera vfolder SUBCOMMAND --help' shows a subcommand's options.\n");
}

static cli_status _run(cli *c, const vsub *s, int argc, char **argv)
{
    json_t *opts = json_object();
    cli_status rc = CLI_OK;
    optind = 0;
    opterr = 0;
    for (;;) {
        int opt = getopt_long(argc, argv, "H:g:u:p:CNq:ah", longopts, NULL);
        if (opt == -1) break;
        if (opt == 'h') {
            _help(s, stdout);
            goto out;
        }
        if (opt == 'J') {
            c->json = true;
            continue;
        }
        if (opt == '?' || opt == ':' || !strchr(s->allowed, opt)) {
            rc = cli_usage("vfolder", s->name,
                           opt == ':' ? "missing value for '%s'" : "unknown option '%s'",
                           argv[optind - 1]);
            goto out;
        }
        switch (opt) {
        case 'H':
            json_object_set_new(opts, "host", json_string(optarg));
            break;
        case 'g':
            json_object_set_new(opts, "group", json_string(optarg));
            break;
        case 'u':
            json_object_set_new(opts, "usage_mode", json_string(optarg));
            break;
        case 'p':
            json_object_set_new(opts, "permission", json_string(optarg));
            break;
        case 'C':
            json_object_set_new(opts, "cloneable", json_true());
            break;
        case 'N':
            json_object_set_new(opts, "cloneable", json_false());
            break;
        case 'a':
            json_object_set_new(opts, "all", json_true());
            break;
        case 'q': {
            char *end = NULL;
            long long q = strtoll(optarg, &end, 10);
            if (!*optarg || *end || q < 0) {
                rc = cli_usage("vfolder", s->name, "--quota takes a number of bytes");
                goto out;
            }
            json_object_set_new(opts, "quota", json_integer(q));
            break;
        }
        }
    }
    int left = argc - optind;
    if (left < s->min_args) {
        rc = cli_usage("vfolder", s->name, "missing arguments (usage: tessera vfolder %s)",
                       s->usage);
        goto out;
    }
    if (left > s->max_args) {
        rc = cli_usage("vfolder", s->name, "unexpected argument '%s'", argv[optind + s->max_args]);
        goto out;
    }
    rc = client_has_keys(c) ? s->run(c, s, opts, left, argv + optind) : CLI_FAIL;
out:
    json_decref(opts);
    return rc;
}

int cmd_vfolder(cli *c, const cli_command *self, int argc, char **argv)
{
    (void)self;
    if (argc < 2) {
        _vfolder_usage(stderr);
        return CLI_USAGE;
    }
    if (cli_is_help(argv[1]) || strcmp(argv[1], "help") == 0) {
        _vfolder_usage(stdout);
        return CLI_OK;
    }
    for (size_t i = 0; i < TS_ARRAY_LEN(subs); i++)
        if (strcmp(subs[i].name, argv[1]) == 0) return _run(c, &subs[i], argc - 1, argv + 1);
    if (cmd_vfolder_files_owns(argv[1])) return cmd_vfolder_files(c, argc - 1, argv + 1);
    fprintf(stderr, "tessera vfolder: unknown subcommand '%s'; try 'tessera vfolder --help'\n",
            argv[1]);
    return CLI_USAGE;
}
