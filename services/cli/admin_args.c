/* admin_args.c: flags -> JSON, driven by the field tables of admin_table.c. */
#include "services/cli/admin_args.h"

#include "services/cli/admin_lookup.h"
#include "services/cli/commands.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Which fields a verb takes as flags. */
static unsigned flags_of(const admin_verb *v)
{
    switch (v->kind) {
    case AV_LIST:
        return AF_FILTER;
    case AV_CREATE:
    case AV_BODY_POST:
    case AV_BODY_DELETE:
        return AF_CREATE;
    case AV_UPDATE:
        return AF_UPDATE;
    default:
        return 0;
    }
}

static bool takes_flag(const admin_field *f, const admin_verb *v)
{
    return (f->where & flags_of(v)) && !(f->where & AF_POSITIONAL);
}

/* Required applies where a field is a body field of create (add, remove). */
static bool required(const admin_field *f, const admin_verb *v)
{
    return takes_flag(f, v) && (f->where & AF_REQUIRED) && flags_of(v) == AF_CREATE;
}

static bool paged(const admin_verb *v)
{
    return v->kind == AV_LIST || v->kind == AV_MEMBERS;
}

static const admin_field *positional_field(const admin_resource *r, const admin_verb *v)
{
    if (v->kind != AV_CREATE) return NULL;
    for (const admin_field *f = r->fields; f->flag; f++)
        if (f->where & AF_POSITIONAL) return f;
    return NULL;
}

/* What the positional arguments are called: "ID", "PROJECT USER...". */
static const char *positional_meta(const admin_resource *r, const admin_verb *v, size_t *min,
                                   size_t *max, char *buf, size_t size)
{
    const admin_field *pf = positional_field(r, v);
    *min = *max = 0;
    switch (v->kind) {
    case AV_GET:
    case AV_UPDATE:
    case AV_DELETE:
    case AV_MEMBERS:
    case AV_ID_POST:
        *min = *max = 1;
        return r->id_meta;
    case AV_ADD_MEMBERS:
    case AV_DEL_MEMBERS:
        *min = 2;
        *max = ADMIN_MAX_POS;
        snprintf(buf, size, "%s USER...", r->id_meta);
        return buf;
    default:
        if (pf) *min = *max = 1;
        return pf ? pf->metavar : NULL;
    }
}

/* ---- values ----------------------------------------------------------------------- */

static bool parse_int(const char *s, long long *out)
{
    char *end;
    errno = 0;
    long long n = strtoll(s, &end, 10);
    if (errno || end == s || *end) return false;
    *out = n;
    return true;
}

static bool parse_size(const char *s, long long *out)
{
    char *end;
    errno = 0;
    double n = strtod(s, &end);
    if (errno || end == s || n < 0) return false;
    static const char units[] = "bkmgtp";
    const char *u = *end ? strchr(units, tolower((unsigned char)*end)) : units;
    if (!u || (*end && end[1] && !(tolower((unsigned char)end[1]) == 'b' && !end[2]))) return false;
    for (const char *p = units; p < u; p++)
        n *= 1024;
    if (n > 9.2e18) return false;
    *out = (long long)n;
    return true;
}

static json_t *parse_bool(const char *s)
{
    if (!strcmp(s, "true") || !strcmp(s, "yes") || !strcmp(s, "1")) return json_true();
    if (!strcmp(s, "false") || !strcmp(s, "no") || !strcmp(s, "0")) return json_false();
    return NULL;
}

/* "a=1,b=2" (sep '=') or "h=p+q,g" (hosts): an object; a JSON object as it is. */
static json_t *parse_pairs(const char *s, bool hosts)
{
    if (*s == '{') {
        json_t *j = json_loads(s, 0, NULL);
        if (json_is_object(j)) return j;
        json_decref(j);
        return NULL;
    }
    json_t *obj = json_object();
    char *copy = ts_strdup(s), *save = NULL;
    bool ok = *s != '\0';
    for (char *item = strtok_r(copy, ",", &save); ok && item; item = strtok_r(NULL, ",", &save)) {
        char *eq = strchr(item, '=');
        if (eq) *eq = '\0';
        const char *value = eq ? eq + 1 : NULL;
        if (!*item || (!hosts && (!value || !*value))) {
            ok = false;
        } else if (!hosts) {
            json_object_set_new(obj, item, json_string(value));
        } else {
            json_t *perms = json_array();
            char *save2 = NULL, *vcopy = ts_strdup(value ? value : "");
            for (char *p = strtok_r(vcopy, "+", &save2); p; p = strtok_r(NULL, "+", &save2))
                json_array_append_new(perms, json_string(p));
            free(vcopy);
            json_object_set_new(obj, item, perms);
        }
    }
    free(copy);
    if (!ok) {
        json_decref(obj);
        return NULL;
    }
    return obj;
}

static json_t *parse_value(const admin_field *f, const char *s, const char **want)
{
    long long n;
    switch (f->type) {
    case AT_STR:
        return json_string(s);
    case AT_INT:
        *want = "a whole number";
        return parse_int(s, &n) ? json_integer(n) : NULL;
    case AT_SIZE:
        *want = "a size such as 1073741824, 512m or 10g";
        return parse_size(s, &n) ? json_integer(n) : NULL;
    case AT_BOOL:
        *want = "true or false";
        return parse_bool(s);
    case AT_SLOTS:
        *want = "NAME=AMOUNT[,NAME=AMOUNT...], e.g. cpu=8,mem=32g";
        break;
    case AT_HOSTS:
        *want = "HOST[=PERM+PERM...][,HOST...]";
        break;
    case AT_LIST: {
        json_t *arr = json_array();
        char *copy = ts_strdup(s), *save = NULL;
        for (char *p = strtok_r(copy, ",", &save); p; p = strtok_r(NULL, ",", &save))
            json_array_append_new(arr, json_string(p));
        free(copy);
        return arr;
    }
    }
    return parse_pairs(s, f->type == AT_HOSTS);
}

/* ---- parsing ------------------------------------------------------------------------ */

/* A usage error (fmt takes x and y) of `tessera admin RESOURCE VERB`:
 * false, a released. */
static bool usage_error(const admin_resource *r, const admin_verb *v, admin_args *a,
                        const char *fmt, const char *x, const char *y)
{
    char words[128];
    snprintf(words, sizeof(words), "%s %s", r->name, v->name);
    cli_usage("admin", words, fmt, x, y);
    admin_args_free(a);
    return false;
}

static const admin_field *flag_field(const admin_resource *r, const admin_verb *v, const char *name,
                                     size_t len)
{
    for (const admin_field *f = r->fields; f->flag; f++)
        if (takes_flag(f, v) && strlen(f->flag) == len && strncmp(f->flag, name, len) == 0)
            return f;
    return NULL;
}

static bool check_count(const admin_resource *r, const admin_verb *v, admin_args *a)
{
    size_t min, max;
    char buf[64];
    const char *meta = positional_meta(r, v, &min, &max, buf, sizeof(buf));
    if (a->npos > max) return usage_error(r, v, a, "unexpected argument '%s'%s", a->pos[max], "");
    if (a->npos < min) return usage_error(r, v, a, "missing %s%s", meta, "");
    bool any = false;
    for (const admin_field *f = r->fields; f->flag; f++) {
        size_t i = (size_t)(f - r->fields);
        any = any || a->value[i];
        if (required(f, v) && !a->value[i])
            return usage_error(r, v, a, "--%s %s is required", f->flag, f->metavar);
    }
    if (v->kind == AV_UPDATE && !any)
        return usage_error(r, v, a, "nothing to change: give at least one flag%s%s", "", "");
    return true;
}

bool admin_args_parse(cli *c, const admin_resource *r, const admin_verb *v, int argc, char **argv,
                      admin_args *a)
{
    memset(a, 0, sizeof(*a));
    bool only_pos = false;
    for (int i = 0; i < argc; i++) {
        const char *w = argv[i];
        if (only_pos || w[0] != '-' || !w[1]) {
            if (a->npos == ADMIN_MAX_POS)
                return usage_error(r, v, a, "too many arguments%s%s", "", "");
            a->pos[a->npos++] = w;
            continue;
        }
        if (!strcmp(w, "--")) {
            only_pos = true;
        } else if (!strcmp(w, "--help") || !strcmp(w, "-h")) {
            a->help = true;
        } else if (!strcmp(w, "--json")) {
            c->json = true;
        } else if (strncmp(w, "--", 2) != 0) {
            return usage_error(r, v, a, "unknown option '%s'%s", w, "");
        } else {
            const char *name = w + 2, *eq = strchr(name, '=');
            size_t len = eq ? (size_t)(eq - name) : strlen(name);
            bool neg = strncmp(name, "no-", 3) == 0;
            const admin_field *f = flag_field(r, v, name, len);
            if (!f && neg) f = flag_field(r, v, name + 3, len - 3);
            if (!f) neg = false;
            bool page = paged(v) && ((len == 5 && !strncmp(name, "limit", 5)) ||
                                     (len == 6 && !strncmp(name, "offset", 6)));
            if (!f && !page) return usage_error(r, v, a, "unknown option '%s'%s", w, "");
            if (neg && (f->type != AT_BOOL || eq))
                return usage_error(r, v, a, "unknown option '%s'%s", w, "");
            const char *val = eq ? eq + 1 : NULL;
            if (!val && !neg && !(f && f->type == AT_BOOL)) {
                if (i + 1 >= argc) return usage_error(r, v, a, "%s needs a value%s", w, "");
                val = argv[++i];
            }
            if (page) {
                long long n;
                if (!parse_int(val, &n) || n < 0)
                    return usage_error(r, v, a, "%s: '%s' is not a count", w, val);
                *(len == 5 ? &a->limit : &a->offset) = val;
                continue;
            }
            const char *want = "a value";
            json_t *j = neg ? json_false() : val ? parse_value(f, val, &want) : json_true();
            if (!j) {
                char what[200];
                snprintf(what, sizeof(what), "'%s' is not %s", val, want);
                return usage_error(r, v, a, "--%s: %s", f->flag, what);
            }
            size_t k = (size_t)(f - r->fields);
            json_decref(a->value[k]);
            a->value[k] = j;
        }
    }
    if (a->help) return true;
    const admin_field *pf = positional_field(r, v);
    if (pf && a->npos == 1) a->value[pf - r->fields] = json_string(a->pos[0]);
    return check_count(r, v, a);
}

void admin_args_free(admin_args *a)
{
    for (size_t i = 0; i < ADMIN_MAX_FIELDS; i++)
        json_decref(a->value[i]);
    memset(a, 0, sizeof(*a));
}

/* ---- help ----------------------------------------------------------------------------- */

char *admin_args_synopsis(const admin_resource *r, const admin_verb *v)
{
    size_t min, max;
    char buf[64];
    const char *meta = positional_meta(r, v, &min, &max, buf, sizeof(buf));
    char *s = ts_asprintf("%s%s%s", v->name, meta ? " " : "", meta ? meta : "");
    for (const admin_field *f = r->fields; f->flag; f++) {
        if (!required(f, v)) continue;
        char *n = ts_asprintf("%s --%s %s", s, f->flag, f->metavar);
        free(s);
        s = n;
    }
    char *n = ts_asprintf("%s [OPTIONS]", s);
    free(s);
    return n;
}

void admin_args_usage(FILE *out, const admin_resource *r, const admin_verb *v)
{
    char *syn = admin_args_synopsis(r, v);
    fprintf(out, "Usage: tessera admin %s %s\n\n%c%s.\n\nOptions:\n", r->name, syn,
            toupper((unsigned char)v->summary[0]), v->summary + 1);
    free(syn);
    for (const admin_field *f = r->fields; f->flag; f++) {
        if (!takes_flag(f, v)) continue;
        char left[64];
        if (f->type == AT_BOOL)
            snprintf(left, sizeof(left), "--[no-]%s", f->flag);
        else
            snprintf(left, sizeof(left), "--%s %s", f->flag, f->metavar);
        fprintf(out, "  %-32s %s%s\n", left, f->help, required(f, v) ? " (required)" : "");
    }
    if (paged(v)) {
        fprintf(out, "  %-32s %s\n", "--limit N", "at most N rows (server default 50, max 1000)");
        fprintf(out, "  %-32s %s\n", "--offset N", "skip the first N rows");
    }
    fprintf(out, "  %-32s %s\n  %-32s %s\n", "--json", "print the API's JSON", "-h, --help",
            "this help");
}

/* ---- the request ---------------------------------------------------------------------- */

static cli_status resolve_ref(cli *c, const admin_field *f, json_t *value, json_t **out)
{
    const admin_resource *ref = f->ref ? admin_find_resource(f->ref) : NULL;
    if (!ref || !json_is_string(value)) {
        *out = json_incref(value);
        return CLI_OK;
    }
    char *id = NULL;
    cli_status rc = admin_resolve_id(c, ref, json_string_value(value), &id);
    *out = rc == CLI_OK ? json_string(id) : NULL;
    free(id);
    return rc;
}

static char *query_text(const json_t *v)
{
    if (json_is_string(v)) return ts_strdup(json_string_value(v));
    return json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT);
}

/* {"emails": [...]} when every user is an e-mail, else {"user_ids": [...]} with
 * names looked up. */
static cli_status member_body(cli *c, const admin_args *a, json_t **body)
{
    bool all_emails = true;
    for (size_t i = 1; i < a->npos; i++)
        all_emails = all_emails && strchr(a->pos[i], '@');
    json_t *list = json_array();
    const admin_resource *users = admin_find_resource("user");
    for (size_t i = 1; i < a->npos; i++) {
        char *id = NULL;
        cli_status rc = all_emails ? CLI_OK : admin_resolve_id(c, users, a->pos[i], &id);
        if (rc != CLI_OK) {
            json_decref(list);
            return rc;
        }
        json_array_append_new(list, json_string(all_emails ? a->pos[i] : id));
        free(id);
    }
    *body = json_object();
    json_object_set_new(*body, all_emails ? "emails" : "user_ids", list);
    return CLI_OK;
}

cli_status admin_args_build(cli *c, const admin_resource *r, const admin_verb *v,
                            const admin_args *a, json_t **body, char **path)
{
    *body = NULL;
    *path = ts_strdup(r->path);
    if (v->kind == AV_ADD_MEMBERS || v->kind == AV_DEL_MEMBERS) return member_body(c, a, body);
    bool is_body = v->kind == AV_CREATE || v->kind == AV_UPDATE || v->kind == AV_BODY_POST ||
                   v->kind == AV_BODY_DELETE;
    if (is_body) *body = json_object();
    for (const admin_field *f = r->fields; f->flag; f++) {
        json_t *given = a->value[f - r->fields], *value = NULL;
        if (!given) continue;
        cli_status rc = resolve_ref(c, f, given, &value);
        if (rc != CLI_OK) return rc;
        if (is_body) {
            json_object_set_new(*body, f->key, value);
        } else {
            char *t = query_text(value);
            client_query_add(path, f->key, t);
            free(t);
            json_decref(value);
        }
    }
    if (a->limit) client_query_add(path, "limit", a->limit);
    if (a->offset) client_query_add(path, "offset", a->offset);
    return CLI_OK;
}
