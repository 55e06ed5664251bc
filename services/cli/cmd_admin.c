/* cmd_admin.c: the one engine behind every `tessera admin RESOURCE VERB`:
 * find the row of admin_table.c, parse its flags, build the JSON body or the
 * query, send it signed, print a table, a record or the JSON. */
#include "services/cli/admin.h"
#include "services/cli/admin_args.h"
#include "services/cli/admin_lookup.h"
#include "services/cli/commands.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* ---- finding rows --------------------------------------------------------------- */

/* "policy" is a group when some resource is named "policy <x>". */
static bool is_group(const char *name)
{
    size_t n = strlen(name);
    for (size_t i = 0; i < admin_resource_count; i++)
        if (strncmp(admin_resources[i].name, name, n) == 0 && admin_resources[i].name[n] == ' ')
            return true;
    return false;
}

static const admin_verb *find_verb(const admin_resource *r, const char *name)
{
    for (const admin_verb *v = r->verbs; v->name; v++)
        if (strcmp(v->name, name) == 0) return v;
    return NULL;
}

static bool is_help(const char *a)
{
    return strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0 || strcmp(a, "help") == 0;
}

/* ---- help ------------------------------------------------------------------------ */

static void list_resources(FILE *out, const char *group)
{
    size_t glen = group ? strlen(group) : 0;
    for (size_t i = 0; i < admin_resource_count; i++) {
        const admin_resource *r = &admin_resources[i];
        if (group && (strncmp(r->name, group, glen) != 0 || r->name[glen] != ' ')) continue;
        char verbs[160] = "";
        for (const admin_verb *v = r->verbs; v->name; v++) {
            if (v != r->verbs) strncat(verbs, "|", sizeof(verbs) - strlen(verbs) - 1);
            strncat(verbs, v->name, sizeof(verbs) - strlen(verbs) - 1);
        }
        fprintf(out, "  %-16s %s\n  %-16s   %s\n", r->name, r->summary, "", verbs);
    }
}

static void admin_usage(FILE *out)
{
    fprintf(out, "Usage: tessera admin RESOURCE VERB [ARGS] [--json]\n\n"
                 "Manage identity and the cluster (agents, resource groups, images) through\n"
                 "the gateway's admin REST API (superadmins; domain admins within their\n"
                 "domain). Tables by default, the API's JSON with --json.\n\n"
                 "Resources:\n");
    list_resources(out, NULL);
    fprintf(out, "  %-16s %s\n", "announcement", "the console's banner: get, set MESSAGE, disable");
    fprintf(out, "  %-16s %s\n", "config",
            "Backend.AI's configuration store: get KEY, set KEY VALUE, delete KEY");
    fprintf(out, "  %-16s %s\n", "registry",
            "container registries: list, add HOST URL, delete HOST, scan [HOST]");
    fprintf(out, "  %-16s %s\n", "usage",
            "Backend.AI's usage reports: month YYYYMM, period --from --to");
    fprintf(out, "\n`tessera admin RESOURCE --help` lists its verbs, "
                 "`tessera admin RESOURCE VERB --help` its flags.\n");
}

static void resource_usage(FILE *out, const admin_resource *r)
{
    fprintf(out, "Usage: tessera admin %s VERB [ARGS] [--json]\n\n%c%s (%s).\n\nVerbs:\n", r->name,
            toupper((unsigned char)r->summary[0]), r->summary + 1, r->path);
    for (const admin_verb *v = r->verbs; v->name; v++) {
        char *syn = admin_args_synopsis(r, v);
        fprintf(out, "  %-14s %s\n  %-14s   tessera admin %s %s\n", v->name, v->summary, "",
                r->name, syn);
        free(syn);
    }
}

/* ---- printing --------------------------------------------------------------------- */

/* The record of a single-object answer, unwrapped from {"data"|"item"|...: {...}}. */
static json_t *record_of(json_t *answer)
{
    if (json_is_object(answer) && json_object_size(answer) == 1) {
        json_t *only = json_object_iter_value(json_object_iter(answer));
        if (json_is_object(only)) return only;
    }
    return answer;
}

/* ---- running a verb --------------------------------------------------------------- */

static void print_list(cli *c, json_t *answer, const out_column *cols, const admin_args *a)
{
    if (c->json) {
        out_json(answer);
        return;
    }
    json_t *items = admin_items(answer);
    out_table(cols, items);
    json_t *total = json_object_get(answer, "total");
    long long off = a->offset ? atoll(a->offset) : 0, n = (long long)json_array_size(items);
    if (json_is_integer(total) && off + n < json_integer_value(total))
        fprintf(stderr, "(%lld of %" JSON_INTEGER_FORMAT " shown; next page: --offset %lld)\n", n,
                json_integer_value(total), off + n);
}

static void print_done(cli *c, json_t *answer, const admin_resource *r, const admin_verb *v,
                       const admin_args *a)
{
    if (c->json) {
        out_json(answer);
        return;
    }
    if (a->npos >= 2) {
        for (size_t i = 1; i < a->npos; i++)
            printf("%s %s %s %s\n", a->pos[i], v->done, r->name, a->pos[0]);
    } else if (a->npos == 1) {
        printf("%s %s %s\n", r->name, a->pos[0], v->done);
    } else { /* a body verb: name what it was about */
        printf("%s", r->name);
        for (const admin_field *f = r->fields; f->flag; f++) {
            json_t *val = a->value[f - r->fields];
            if (!val) continue;
            char *t = out_text(val, OUT_TEXT);
            printf(" %s=%s", f->key, t);
            free(t);
        }
        printf(" %s\n", v->done);
    }
}

static cli_status run_verb(cli *c, const admin_resource *r, const admin_verb *v, admin_args *a)
{
    if (!client_has_keys(c)) return CLI_FAIL;
    cli_status rc = CLI_OK;
    char *id = NULL, *path = NULL;
    json_t *body = NULL, *answer = NULL;
    bool has_id = v->kind == AV_GET || v->kind == AV_UPDATE || v->kind == AV_DELETE ||
                  v->kind == AV_MEMBERS || v->kind == AV_ADD_MEMBERS || v->kind == AV_DEL_MEMBERS ||
                  v->kind == AV_ID_POST;
    if (has_id) rc = admin_resolve_id(c, r, a->pos[0], &id);
    if (rc == CLI_OK) rc = admin_args_build(c, r, v, a, &body, &path);
    if (rc == CLI_OK && v->suffix && !has_id) { /* "/admin/images?q" -> "/admin/images/scan?q" */
        size_t n = strcspn(path, "?");
        char *p = ts_asprintf("%.*s%s%s", (int)n, path, v->suffix, path + n);
        free(path);
        path = p;
    }
    if (rc == CLI_OK && has_id) {
        char *eid = httpc_escape(id);
        bool members = v->kind >= AV_MEMBERS && v->kind <= AV_DEL_MEMBERS;
        char *q = strchr(path, '?');
        const char *tail = members ? "/members" : v->suffix ? v->suffix : "";
        char *p = ts_asprintf("%s/%s%s%s", r->path, eid, tail, q ? q : "");
        free(eid);
        free(path);
        path = p;
    }
    static const char *const methods[] = {[AV_LIST] = "GET",         [AV_GET] = "GET",
                                          [AV_CREATE] = "POST",      [AV_UPDATE] = "PATCH",
                                          [AV_DELETE] = "DELETE",    [AV_MEMBERS] = "GET",
                                          [AV_ADD_MEMBERS] = "POST", [AV_DEL_MEMBERS] = "DELETE",
                                          [AV_BODY_POST] = "POST",   [AV_BODY_DELETE] = "DELETE",
                                          [AV_ID_POST] = "POST"};
    if (rc == CLI_OK) rc = client_call(c, methods[v->kind], path, body, true, &answer);
    if (rc == CLI_OK) {
        static const char *const secret[] = {"secret_key", "password", NULL};
        switch (v->kind) {
        case AV_LIST:
            print_list(c, answer, r->columns, a);
            break;
        case AV_MEMBERS:
            print_list(c, answer, r->member_columns, a);
            break;
        case AV_GET:
        case AV_CREATE:
        case AV_UPDATE:
        case AV_ID_POST:
            if (c->json)
                out_json(answer);
            else if (answer)
                /* the secret key is shown once: in the answer to issue */
                out_record(record_of(answer), v->kind == AV_CREATE ? secret + 1 : secret);
            else if (v->done)
                print_done(c, answer, r, v, a);
            break;
        default:
            print_done(c, answer, r, v, a);
            break;
        }
    }
    json_decref(answer);
    json_decref(body);
    free(path);
    free(id);
    return rc;
}

/* ---- dispatch ---------------------------------------------------------------------- */

int cmd_admin(cli *c, const cli_command *self, int argc, char **argv)
{
    (void)self;
    if (argc < 2) {
        admin_usage(stderr);
        return CLI_USAGE;
    }
    if (is_help(argv[1])) {
        admin_usage(stdout);
        return CLI_OK;
    }
    if (strcmp(argv[1], "announcement") == 0) return cli_admin_announcement(c, argc - 1, argv + 1);
    if (strcmp(argv[1], "config") == 0) return cli_admin_config(c, argc - 1, argv + 1);
    if (strcmp(argv[1], "registry") == 0) return cli_admin_registry(c, argc - 1, argv + 1);
    if (strcmp(argv[1], "usage") == 0) return cli_admin_usage(c, argc - 1, argv + 1);
    int i = 1;
    const admin_resource *r = admin_find_resource(argv[i]);
    if (!r && is_group(argv[1])) {
        if (argc < 3 || is_help(argv[2])) {
            FILE *out = argc < 3 ? stderr : stdout;
            fprintf(out, "Usage: tessera admin %s KIND VERB [ARGS]\n\nKinds:\n", argv[1]);
            list_resources(out, argv[1]);
            return argc < 3 ? CLI_USAGE : CLI_OK;
        }
        char *two = ts_asprintf("%s %s", argv[1], argv[2]);
        r = admin_find_resource(two);
        free(two);
        i = 2;
        if (!r) return cli_usage("admin", argv[1], "unknown kind '%s'", argv[2]);
    }
    if (!r) return cli_usage("admin", NULL, "unknown resource '%s'", argv[1]);
    i++;
    const admin_verb *v = NULL;
    if (i < argc && argv[i][0] != '-') {
        v = find_verb(r, argv[i]);
        if (!v && !is_help(argv[i]))
            return cli_usage("admin", r->name, "unknown verb '%s'", argv[i]);
        if (v) i++;
    } else if (r->default_verb) {
        v = find_verb(r, r->default_verb);
    }
    if (!v) {
        bool help = i < argc && is_help(argv[i]);
        resource_usage(help ? stdout : stderr, r);
        return help ? CLI_OK : CLI_USAGE;
    }
    admin_args a;
    if (!admin_args_parse(c, r, v, argc - i, argv + i, &a)) return CLI_USAGE;
    cli_status rc = CLI_OK;
    if (a.help)
        admin_args_usage(stdout, r, v);
    else
        rc = run_verb(c, r, v, &a);
    admin_args_free(&a);
    return rc;
}
