/* cmd_admin.c: the one engine behind every `tessera admin RESOURCE VERB`:
 * find the row of admin_table.c, parse its flags, build the JSON body or the
 * query, send it signed, print a table, a record or the JSON. */
#include "services/cli/admin.h"
#include "services/cli/admin_args.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define LOOKUP_LIMIT "1000"

/* ---- finding rows --------------------------------------------------------------- */

const admin_resource *admin_find_resource(const char *name)
{
    for (size_t i = 0; i < admin_resource_count; i++)
        if (strcmp(admin_resources[i].name, name) == 0) return &admin_resources[i];
    return NULL;
}

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

/* ---- lookups: a name where the API wants an id ------------------------------------ */

static json_t *items_of(json_t *answer)
{
    return json_is_array(answer) ? answer : json_object_get(answer, "items");
}

/* The record of a single-object answer, unwrapped from {"data"|"item"|...: {...}}. */
static json_t *record_of(json_t *answer)
{
    if (json_is_object(answer) && json_object_size(answer) == 1) {
        json_t *only = json_object_iter_value(json_object_iter(answer));
        if (json_is_object(only)) return only;
    }
    return answer;
}

int admin_resolve_id(cli *c, const admin_resource *r, const char *arg, char **id)
{
    *id = NULL;
    if (!r->lookup || ts_uuid_valid(arg)) {
        *id = ts_strdup(arg);
        return CLI_OK;
    }
    char *path = ts_asprintf("%s?limit=" LOOKUP_LIMIT, r->path);
    if (r->lookup_query) client_query_add(&path, r->lookup_query, arg);
    json_t *answer = NULL;
    int rc = client_call(c, "GET", path, NULL, true, &answer);
    free(path);
    if (rc != CLI_OK) return rc;
    size_t i, matches = 0;
    json_t *item;
    json_array_foreach(items_of(answer), i, item)
    {
        for (size_t k = 0; r->lookup[k]; k++) {
            const char *v = json_string_value(json_object_get(item, r->lookup[k]));
            if (!v || strcasecmp(v, arg) != 0) continue;
            if (!matches++) *id = ts_strdup(json_string_value(json_object_get(item, r->id_key)));
            break;
        }
    }
    json_decref(answer);
    if (matches == 1 && *id) return CLI_OK;
    free(*id);
    *id = NULL;
    if (matches == 0)
        fprintf(stderr, "tessera: not found: no %s '%s' (by %s)\n", r->name, arg, r->lookup[0]);
    else
        fprintf(stderr, "tessera: ambiguous: %zu %ss are named '%s'; give the id\n", matches,
                r->name, arg);
    return CLI_FAIL;
}

/* ---- running a verb --------------------------------------------------------------- */

static int print_list(cli *c, json_t *answer, const out_column *cols, const admin_args *a)
{
    if (c->json) {
        out_json(answer);
        return CLI_OK;
    }
    json_t *items = items_of(answer);
    out_table(cols, items);
    json_t *total = json_object_get(answer, "total");
    long long off = a->offset ? atoll(a->offset) : 0, n = (long long)json_array_size(items);
    if (json_is_integer(total) && off + n < json_integer_value(total))
        fprintf(stderr, "(%lld of %" JSON_INTEGER_FORMAT " shown; next page: --offset %lld)\n", n,
                json_integer_value(total), off + n);
    return CLI_OK;
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

static int run_verb(cli *c, const admin_resource *r, const admin_verb *v, admin_args *a)
{
    int rc = client_need_keys(c);
    if (rc != CLI_OK) return rc;
    char *id = NULL, *path = NULL;
    json_t *body = NULL, *answer = NULL;
    bool has_id = v->kind == AV_GET || v->kind == AV_UPDATE || v->kind == AV_DELETE ||
                  v->kind == AV_MEMBERS || v->kind == AV_ADD_MEMBERS || v->kind == AV_DEL_MEMBERS;
    if (has_id) rc = admin_resolve_id(c, r, a->pos[0], &id);
    if (rc == CLI_OK) rc = admin_args_build(c, r, v, a, &body, &path);
    if (rc == CLI_OK && v->suffix) { /* "/admin/images?q" -> "/admin/images/scan?q" */
        size_t n = strcspn(path, "?");
        char *p = ts_asprintf("%.*s%s%s", (int)n, path, v->suffix, path + n);
        free(path);
        path = p;
    }
    if (rc == CLI_OK && has_id) {
        char *eid = client_escape(id);
        bool members = v->kind >= AV_MEMBERS && v->kind <= AV_DEL_MEMBERS;
        char *q = strchr(path, '?');
        char *p = ts_asprintf("%s/%s%s%s", r->path, eid, members ? "/members" : "", q ? q : "");
        free(eid);
        free(path);
        path = p;
    }
    static const char *const methods[] = {[AV_LIST] = "GET",         [AV_GET] = "GET",
                                          [AV_CREATE] = "POST",      [AV_UPDATE] = "PATCH",
                                          [AV_DELETE] = "DELETE",    [AV_MEMBERS] = "GET",
                                          [AV_ADD_MEMBERS] = "POST", [AV_DEL_MEMBERS] = "DELETE",
                                          [AV_BODY_POST] = "POST",   [AV_BODY_DELETE] = "DELETE"};
    if (rc == CLI_OK) rc = client_call(c, methods[v->kind], path, body, true, &answer);
    if (rc == CLI_OK) {
        static const char *const secret[] = {"secret_key", "password", NULL};
        switch (v->kind) {
        case AV_LIST:
            rc = print_list(c, answer, r->columns, a);
            break;
        case AV_MEMBERS:
            rc = print_list(c, answer, r->member_columns, a);
            break;
        case AV_GET:
        case AV_CREATE:
        case AV_UPDATE:
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

int cmd_admin(cli *c, int argc, char **argv)
{
    if (argc < 2) {
        admin_usage(stderr);
        return CLI_USAGE;
    }
    if (is_help(argv[1])) {
        admin_usage(stdout);
        return CLI_OK;
    }
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
        if (!r) {
            fprintf(stderr, "tessera admin %s: unknown kind '%s'; try 'tessera admin %s --help'\n",
                    argv[1], argv[2], argv[1]);
            return CLI_USAGE;
        }
    }
    if (!r) {
        fprintf(stderr, "tessera admin: unknown resource '%s'; try 'tessera admin --help'\n",
                argv[1]);
        return CLI_USAGE;
    }
    i++;
    const admin_verb *v = NULL;
    if (i < argc && argv[i][0] != '-') {
        v = find_verb(r, argv[i]);
        if (!v && !is_help(argv[i])) {
            fprintf(stderr, "tessera admin %s: unknown verb '%s'; try 'tessera admin %s --help'\n",
                    r->name, argv[i], r->name);
            return CLI_USAGE;
        }
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
    int rc = admin_args_parse(c, r, v, argc - i, argv + i, &a);
    if (rc == CLI_OK && a.help) {
        admin_args_usage(stdout, r, v);
    } else if (rc == CLI_OK) {
        rc = run_verb(c, r, v, &a);
    }
    admin_args_free(&a);
    return rc;
}
