/* config.c: the option table: defaults, file, environment, reload, and the
 * help, example and effective listings generated from it (see config.h). */
#include "libcommon/config.h"

#include "libcommon/config_file.h"
#include "libcommon/log.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* ---- value parsers ------------------------------------------------------------ */

typedef struct unit {
    const char *suffix;
    int64_t mult;
} unit;

#define KIB 1024LL
static const unit byte_units[] = {
    {"", 1},
    {"b", 1},
    {"k", KIB},
    {"kb", KIB},
    {"kib", KIB},
    {"m", KIB *KIB},
    {"mb", KIB *KIB},
    {"mib", KIB *KIB},
    {"g", KIB *KIB *KIB},
    {"gb", KIB *KIB *KIB},
    {"gib", KIB *KIB *KIB},
    {"t", KIB *KIB *KIB *KIB},
    {"tb", KIB *KIB *KIB *KIB},
    {"tib", KIB *KIB *KIB *KIB},
    {NULL, 0},
};
static const unit duration_units[] = {
    {"", 1000}, {"ms", 1}, {"s", 1000}, {"m", 60000}, {"h", 3600000}, {"d", 86400000}, {NULL, 0},
};

/* "<digits>[.<digits>]<suffix>": a non-negative number times the suffix's
 * multiplier; the result must be a whole number and fit in int64_t. */
static bool parse_scaled(const char *s, const unit *units, int64_t *out)
{
    if (!s || !isdigit((unsigned char)*s)) return false;
    const char *p = s;
    unsigned __int128 ip = 0, frac = 0, den = 1;
    for (; isdigit((unsigned char)*p); p++) {
        ip = ip * 10 + (unsigned)(*p - '0');
        if (ip > INT64_MAX) return false;
    }
    if (*p == '.') {
        p++;
        if (!isdigit((unsigned char)*p)) return false;
        for (int nd = 0; isdigit((unsigned char)*p); p++, nd++) {
            if (nd < 18) {
                frac = frac * 10 + (unsigned)(*p - '0');
                den *= 10;
            } else if (*p != '0') {
                return false; /* more precision than we can represent */
            }
        }
    }
    for (const unit *u = units; u->suffix; u++) {
        if (strcasecmp(p, u->suffix) != 0) continue;
        unsigned __int128 m = (unsigned __int128)u->mult;
        if ((frac * m) % den != 0) return false; /* not a whole number of units */
        unsigned __int128 total = ip * m + frac * m / den;
        if (total > INT64_MAX) return false;
        *out = (int64_t)total;
        return true;
    }
    return false;
}

bool cfg_parse_bytes(const char *s, int64_t *out)
{
    return parse_scaled(s, byte_units, out);
}

bool cfg_parse_duration_ms(const char *s, int64_t *out)
{
    return parse_scaled(s, duration_units, out);
}

bool cfg_parse_bool(const char *s, bool *out)
{
    static const char *const yes[] = {"true", "yes", "on", "1"};
    static const char *const no[] = {"false", "no", "off", "0"};
    if (!s) return false;
    for (size_t i = 0; i < TS_ARRAY_LEN(yes); i++) {
        if (strcasecmp(s, yes[i]) == 0) return *out = true, true;
        if (strcasecmp(s, no[i]) == 0) return *out = false, true;
    }
    return false;
}

static bool parse_int(const char *s, int64_t *out)
{
    if (!s || !(isdigit((unsigned char)*s) || *s == '-' || *s == '+')) return false;
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (errno || end == s || *end) return false;
    *out = v;
    return true;
}

static bool parse_double(const char *s, double *out)
{
    if (!s || !*s || isspace((unsigned char)*s)) return false;
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || end == s || *end || !isfinite(v)) return false;
    *out = v;
    return true;
}

/* ---- formatting ------------------------------------------------------------------ */

static const char *type_name(cfg_type t)
{
    switch (t) {
    case CFG_STRING:
        return "string";
    case CFG_ENUM:
        return "enum";
    case CFG_INT:
        return "int";
    case CFG_BOOL:
        return "bool";
    case CFG_DOUBLE:
        return "double";
    case CFG_BYTES:
        return "bytes";
    case CFG_DURATION:
        return "duration";
    }
    return "?";
}

static void fmt_scaled(char *buf, size_t size, int64_t v, const unit *units, const char *bare)
{
    const unit *best = NULL;
    for (const unit *u = units; u->suffix; u++) {
        if (!u->suffix[0] || strcmp(u->suffix, "b") == 0 || strlen(u->suffix) > 2 ||
            (u->suffix[1] && u->suffix[1] != 's'))
            continue; /* the short spellings: k m g t, ms s m h d */
        if (v != 0 && v % u->mult == 0 && (!best || u->mult > best->mult)) best = u;
    }
    if (!best || v == 0)
        snprintf(buf, size, "%lld%s", (long long)v, bare);
    else
        snprintf(buf, size, "%lld%s", (long long)(v / best->mult), best->suffix);
}

static void fmt_bytes(char *buf, size_t size, int64_t v)
{
    fmt_scaled(buf, size, v, byte_units, "");
}

static void fmt_duration(char *buf, size_t size, int64_t v)
{
    fmt_scaled(buf, size, v, duration_units, "ms");
}

static void fmt_number(char *buf, size_t size, cfg_type t, double v)
{
    bool whole = v == floor(v) && fabs(v) < 9.2e18;
    if (t == CFG_BYTES && whole)
        fmt_bytes(buf, size, (int64_t)v);
    else if (t == CFG_DURATION && whole)
        fmt_duration(buf, size, (int64_t)v);
    else if (whole && fabs(v) < 1e15)
        snprintf(buf, size, "%lld", (long long)v);
    else
        snprintf(buf, size, "%g", v);
}

static bool has_bounds(const cfg_option *o)
{
    return o->min < o->max && (o->type == CFG_INT || o->type == CFG_DOUBLE ||
                               o->type == CFG_BYTES || o->type == CFG_DURATION);
}

/* ---- setting one value -------------------------------------------------------------- */

static bool enum_has(const char *choices, const char *v)
{
    size_t n = strlen(v);
    for (const char *p = choices; p && *p;) {
        const char *bar = strchr(p, '|');
        size_t len = bar ? (size_t)(bar - p) : strlen(p);
        if (len == n && strncmp(p, v, n) == 0) return true;
        if (!bar) break;
        p = bar + 1;
    }
    return false;
}

static bool check_bounds(const cfg_option *o, double v, const char *value, ts_err *err)
{
    if (!has_bounds(o) || (v >= o->min && v <= o->max)) return true;
    char lo[64], hi[64];
    fmt_number(lo, sizeof(lo), o->type, o->min);
    fmt_number(hi, sizeof(hi), o->type, o->max);
    ts_err_set(err, "%s: must be between %s and %s (got %s)", o->name, lo, hi, value);
    return false;
}

static void set_string(char **dst, const char *value)
{
    char *old = *dst;
    *dst = value ? ts_strdup(value) : NULL;
    free(old);
}

bool cfg_set(const cfg_option *o, const char *value, ts_err *err)
{
    if (!o || !o->name || !o->dst) {
        ts_err_set(err, "invalid option");
        return false;
    }
    if (!value && o->type != CFG_STRING) {
        ts_err_set(err, "%s: missing value", o->name);
        return false;
    }
    int64_t i;
    double d;
    bool b;
    switch (o->type) {
    case CFG_STRING:
        set_string(o->dst, value);
        return true;
    case CFG_ENUM:
        if (!enum_has(o->choices, value)) {
            ts_err_set(err, "%s: must be one of %s (got '%s')", o->name,
                       o->choices ? o->choices : "", value);
            return false;
        }
        set_string(o->dst, value);
        return true;
    case CFG_INT:
        if (!parse_int(value, &i)) {
            ts_err_set(err, "%s: not an integer: '%s'", o->name, value);
            return false;
        }
        if (!check_bounds(o, (double)i, value, err)) return false;
        *(int64_t *)o->dst = i;
        return true;
    case CFG_BOOL:
        if (!cfg_parse_bool(value, &b)) {
            ts_err_set(err, "%s: not a boolean: '%s' (true|false|yes|no|on|off|1|0)", o->name,
                       value);
            return false;
        }
        *(bool *)o->dst = b;
        return true;
    case CFG_DOUBLE:
        if (!parse_double(value, &d)) {
            ts_err_set(err, "%s: not a number: '%s'", o->name, value);
            return false;
        }
        if (!check_bounds(o, d, value, err)) return false;
        *(double *)o->dst = d;
        return true;
    case CFG_BYTES:
        if (!cfg_parse_bytes(value, &i)) {
            ts_err_set(err,
                       "%s: not a byte size: '%s' (a non-negative whole number of bytes with an "
                       "optional k, m, g or t suffix, powers of 1024)",
                       o->name, value);
            return false;
        }
        if (!check_bounds(o, (double)i, value, err)) return false;
        *(int64_t *)o->dst = i;
        return true;
    case CFG_DURATION:
        if (!cfg_parse_duration_ms(value, &i)) {
            ts_err_set(err,
                       "%s: not a duration: '%s' (a non-negative number with ms, s, m, h or d; "
                       "a bare number is seconds)",
                       o->name, value);
            return false;
        }
        if (!check_bounds(o, (double)i, value, err)) return false;
        *(int64_t *)o->dst = i;
        return true;
    }
    ts_err_set(err, "%s: unknown option type %d", o->name, (int)o->type);
    return false;
}

/* ---- the schema as one flat array ------------------------------------------------- */

static cfg_option *flatten(const cfg_schema *schema, size_t *count)
{
    size_t n = 0;
    for (const cfg_option *const *t = schema->tables; t && *t; t++)
        for (const cfg_option *o = *t; o->name; o++)
            n++;
    cfg_option *all = ts_calloc(n ? n : 1, sizeof(*all));
    size_t k = 0;
    for (const cfg_option *const *t = schema->tables; t && *t; t++) {
        for (const cfg_option *o = *t; o->name; o++) {
            if (!o->dst) ts_panic("config option %s has no destination", o->name);
            if (o->type == CFG_ENUM && !o->choices)
                ts_panic("config option %s is an enum without choices", o->name);
            for (size_t j = 0; j < k; j++)
                if (strcmp(all[j].name, o->name) == 0)
                    ts_panic("config option %s is defined twice", o->name);
            all[k++] = *o;
        }
    }
    *count = n;
    return all;
}

static void set_default(const cfg_option *o)
{
    ts_err err = {{0}};
    if (o->def) {
        if (!cfg_set(o, o->def, &err)) ts_panic("bad default in config table: %s", err.msg);
        return;
    }
    /* No default: the type's zero value. */
    switch (o->type) {
    case CFG_STRING:
    case CFG_ENUM:
        set_string(o->dst, NULL);
        break;
    case CFG_INT:
    case CFG_BYTES:
    case CFG_DURATION:
        *(int64_t *)o->dst = 0;
        break;
    case CFG_BOOL:
        *(bool *)o->dst = false;
        break;
    case CFG_DOUBLE:
        *(double *)o->dst = 0;
        break;
    }
}

typedef struct load_ctx {
    const cfg_option *opts;
    size_t n;
    int *line; /* where each option was set in the file; 0: not there */
} load_ctx;

static bool on_file_entry(void *vctx, const char *key, const char *value, int line, ts_err *err)
{
    load_ctx *ctx = vctx;
    for (size_t i = 0; i < ctx->n; i++) {
        if (strcmp(ctx->opts[i].name, key) != 0) continue;
        if (ctx->line[i]) {
            ts_err_set(err, "%s: set twice (first on line %d)", key, ctx->line[i]);
            return false;
        }
        ctx->line[i] = line;
        return cfg_set(&ctx->opts[i], value, err);
    }
    ts_err_set(err, "%s: unknown key", key);
    return false;
}

/* The generic name wins over the alias; only the one that counts is parsed. */
static bool apply_env(const cfg_option *o, ts_err *err)
{
    char generic[256];
    cfg_env_name(o->name, generic, sizeof(generic));
    const char *name = generic, *v = getenv(generic);
    if (!v && o->env) v = getenv(name = o->env);
    if (!v) return true;
    if (!cfg_set(o, v, err)) {
        ts_err_prefix(err, "environment %s", name);
        return false;
    }
    return true;
}

static bool load_all(const cfg_option *opts, size_t n, const char *path, ts_err *err)
{
    for (size_t i = 0; i < n; i++)
        set_default(&opts[i]);
    if (path) {
        load_ctx ctx = {opts, n, ts_calloc(n ? n : 1, sizeof(int))};
        bool ok = cfg_file_parse(path, on_file_entry, &ctx, err);
        free(ctx.line);
        if (!ok) return false;
    }
    for (size_t i = 0; i < n; i++)
        if (!apply_env(&opts[i], err)) return false;
    return true;
}

bool cfg_load(const cfg_schema *schema, const char *path, ts_err *err)
{
    size_t n;
    cfg_option *opts = flatten(schema, &n);
    bool ok = load_all(opts, n, path, err);
    free(opts);
    return ok;
}

/* ---- reload --------------------------------------------------------------------------- */

typedef union cfg_value {
    char *s;
    int64_t i;
    bool b;
    double d;
} cfg_value;

static void *value_ptr(cfg_value *v, cfg_type t)
{
    switch (t) {
    case CFG_STRING:
    case CFG_ENUM:
        return &v->s;
    case CFG_BOOL:
        return &v->b;
    case CFG_DOUBLE:
        return &v->d;
    default:
        return &v->i;
    }
}

static bool value_equal(const cfg_option *a, const cfg_option *b)
{
    switch (a->type) {
    case CFG_STRING:
    case CFG_ENUM: {
        const char *x = *(char **)a->dst, *y = *(char **)b->dst;
        return (!x && !y) || (x && y && strcmp(x, y) == 0);
    }
    case CFG_BOOL:
        return *(bool *)a->dst == *(bool *)b->dst;
    case CFG_DOUBLE:
        return *(double *)a->dst == *(double *)b->dst;
    default:
        return *(int64_t *)a->dst == *(int64_t *)b->dst;
    }
}

/* Move the scratch value into the live destination. */
static void value_move(const cfg_option *live, cfg_option *scratch)
{
    switch (live->type) {
    case CFG_STRING:
    case CFG_ENUM:
        free(*(char **)live->dst);
        *(char **)live->dst = *(char **)scratch->dst;
        *(char **)scratch->dst = NULL;
        break;
    case CFG_BOOL:
        *(bool *)live->dst = *(bool *)scratch->dst;
        break;
    case CFG_DOUBLE:
        *(double *)live->dst = *(double *)scratch->dst;
        break;
    default:
        *(int64_t *)live->dst = *(int64_t *)scratch->dst;
        break;
    }
}

bool cfg_reload(const cfg_schema *schema, const char *path, char **restart_needed, ts_err *err)
{
    if (restart_needed) *restart_needed = NULL;
    size_t n;
    cfg_option *live = flatten(schema, &n);
    cfg_option *scratch = ts_calloc(n ? n : 1, sizeof(*scratch));
    cfg_value *vals = ts_calloc(n ? n : 1, sizeof(*vals));
    for (size_t i = 0; i < n; i++) {
        scratch[i] = live[i];
        scratch[i].dst = value_ptr(&vals[i], live[i].type);
    }
    bool ok = load_all(scratch, n, path, err);
    char *changed = NULL;
    for (size_t i = 0; ok && i < n; i++) {
        if (value_equal(&live[i], &scratch[i])) continue;
        if (live[i].reloadable) {
            value_move(&live[i], &scratch[i]);
            TLOG_INFO("config option reloaded", "key=%s", live[i].name);
            continue;
        }
        char *next =
            changed ? ts_asprintf("%s,%s", changed, live[i].name) : ts_strdup(live[i].name);
        free(changed);
        changed = next;
    }
    if (changed) {
        TLOG_WARN("config changes need a restart", "keys=%s", changed);
        if (restart_needed)
            *restart_needed = changed;
        else
            free(changed);
    }
    for (size_t i = 0; i < n; i++)
        if (live[i].type == CFG_STRING || live[i].type == CFG_ENUM) free(vals[i].s);
    free(vals);
    free(scratch);
    free(live);
    return ok;
}

void cfg_free(const cfg_schema *schema)
{
    for (const cfg_option *const *t = schema->tables; t && *t; t++)
        for (const cfg_option *o = *t; o->name; o++)
            if ((o->type == CFG_STRING || o->type == CFG_ENUM) && o->dst) set_string(o->dst, NULL);
}

void cfg_env_name(const char *name, char *out, size_t size)
{
    if (!size) return;
    size_t o = ts_strlcpy(out, "TESSERA_", size);
    for (const char *p = name; *p && o + 1 < size; p++, o++)
        out[o] = (*p == '.' || *p == '-') ? '_' : (char)toupper((unsigned char)*p);
    if (o < size) out[o] = '\0';
}

/* ---- listings -------------------------------------------------------------------------- */

static void fmt_env(const cfg_option *o, char *buf, size_t size)
{
    char generic[256];
    cfg_env_name(o->name, generic, sizeof(generic));
    if (o->env)
        snprintf(buf, size, "%s, %s", generic, o->env);
    else
        snprintf(buf, size, "%s", generic);
}

static void fmt_range(const cfg_option *o, char *buf, size_t size)
{
    buf[0] = '\0';
    if (o->type == CFG_ENUM) {
        snprintf(buf, size, "%s", o->choices);
    } else if (has_bounds(o)) {
        char lo[64], hi[64];
        fmt_number(lo, sizeof(lo), o->type, o->min);
        fmt_number(hi, sizeof(hi), o->type, o->max);
        snprintf(buf, size, "%s..%s", lo, hi);
    }
}

static void fmt_default(const cfg_option *o, char *buf, size_t size)
{
    if (!o->def)
        snprintf(buf, size, "-");
    else if (o->type == CFG_STRING)
        snprintf(buf, size, "\"%s\"", o->def);
    else
        snprintf(buf, size, "%s", o->def);
}

static int max_int(int a, int b)
{
    return a > b ? a : b;
}

void cfg_print_help(const cfg_schema *schema, FILE *out)
{
    size_t n;
    cfg_option *opts = flatten(schema, &n);
    int wn = 6, wt = 4, wd = 7, wr = 5, we = 3;
    char buf[512];
    for (size_t i = 0; i < n; i++) {
        wn = max_int(wn, (int)strlen(opts[i].name));
        wt = max_int(wt, (int)strlen(type_name(opts[i].type)));
        fmt_default(&opts[i], buf, sizeof(buf));
        wd = max_int(wd, (int)strlen(buf));
        fmt_range(&opts[i], buf, sizeof(buf));
        wr = max_int(wr, (int)strlen(buf));
        fmt_env(&opts[i], buf, sizeof(buf));
        we = max_int(we, (int)strlen(buf));
    }
    fprintf(out,
            "Configuration options of %s (file, then environment; R: reloadable on SIGHUP)\n\n",
            schema->service ? schema->service : "tessera");
    fprintf(out, "%-*s  %-*s  %-*s  %-*s  %-*s  R  %s\n", wn, "OPTION", wt, "TYPE", wd, "DEFAULT",
            wr, "RANGE", we, "ENV", "HELP");
    for (size_t i = 0; i < n; i++) {
        const cfg_option *o = &opts[i];
        char def[512], range[512], env[512];
        fmt_default(o, def, sizeof(def));
        fmt_range(o, range, sizeof(range));
        fmt_env(o, env, sizeof(env));
        fprintf(out, "%-*s  %-*s  %-*s  %-*s  %-*s  %s  %s\n", wn, o->name, wt, type_name(o->type),
                wd, def, wr, range, we, env, o->reloadable ? "*" : " ", o->help ? o->help : "");
    }
    free(opts);
}

static void print_example_option(const cfg_option *o, const char *key, FILE *out)
{
    char range[512], env[512];
    if (o->help) fprintf(out, "# %s\n", o->help);
    fmt_range(o, range, sizeof(range));
    fmt_env(o, env, sizeof(env));
    fprintf(out, "# (%s%s%s%s; env %s)\n", type_name(o->type), range[0] ? ", " : "", range,
            o->reloadable ? ", reloadable" : "", env);
    fprintf(out, "# %s =", key);
    if (o->def && (o->type == CFG_STRING || o->type == CFG_ENUM)) {
        fputc(' ', out);
        cfg_file_write_quoted(out, o->def);
    } else if (o->def) {
        fprintf(out, " %s", o->def);
    }
    fputs("\n\n", out);
}

/* Options grouped by the part of the name before the first dot; names without
 * a dot come first, outside any section. */
static size_t section_len(const char *name)
{
    const char *dot = strchr(name, '.');
    return dot ? (size_t)(dot - name) : 0;
}

void cfg_print_example(const cfg_schema *schema, FILE *out)
{
    size_t n;
    cfg_option *opts = flatten(schema, &n);
    bool *done = ts_calloc(n ? n : 1, sizeof(bool));
    fprintf(out,
            "# %s configuration.\n# Every option is shown commented out at its default; "
            "environment variables override this file.\n\n",
            schema->service ? schema->service : "tessera");
    for (size_t i = 0; i < n; i++) {
        if (section_len(opts[i].name) == 0) {
            print_example_option(&opts[i], opts[i].name, out);
            done[i] = true;
        }
    }
    for (size_t i = 0; i < n; i++) {
        if (done[i]) continue;
        size_t sl = section_len(opts[i].name);
        fprintf(out, "[%.*s]\n\n", (int)sl, opts[i].name);
        for (size_t j = i; j < n; j++) {
            if (done[j] || section_len(opts[j].name) != sl ||
                strncmp(opts[j].name, opts[i].name, sl) != 0)
                continue;
            print_example_option(&opts[j], opts[j].name + sl + 1, out);
            done[j] = true;
        }
    }
    free(done);
    free(opts);
}

static bool is_secret(const char *name)
{
    size_t n = strlen(name);
    return (n >= 8 && strcmp(name + n - 8, "password") == 0) ||
           (n >= 6 && strcmp(name + n - 6, "secret") == 0) || strstr(name, "dsn") != NULL;
}

void cfg_print_effective(const cfg_schema *schema, FILE *out)
{
    size_t n;
    cfg_option *opts = flatten(schema, &n);
    for (size_t i = 0; i < n; i++) {
        const cfg_option *o = &opts[i];
        char buf[64];
        switch (o->type) {
        case CFG_STRING:
        case CFG_ENUM: {
            const char *s = *(char **)o->dst;
            if (!s) {
                fprintf(out, "# %s is not set\n", o->name);
                break;
            }
            fprintf(out, "%s = ", o->name);
            cfg_file_write_quoted(out, is_secret(o->name) ? "***" : s);
            fputc('\n', out);
            break;
        }
        case CFG_BOOL:
            fprintf(out, "%s = %s\n", o->name, *(bool *)o->dst ? "true" : "false");
            break;
        case CFG_DOUBLE: {
            double v = *(double *)o->dst;
            snprintf(buf, sizeof(buf), "%.15g", v);
            if (strtod(buf, NULL) != v) snprintf(buf, sizeof(buf), "%.17g", v);
            fprintf(out, "%s = %s\n", o->name, buf);
            break;
        }
        case CFG_INT:
            fprintf(out, "%s = %lld\n", o->name, (long long)*(int64_t *)o->dst);
            break;
        case CFG_BYTES:
            fmt_bytes(buf, sizeof(buf), *(int64_t *)o->dst);
            fprintf(out, "%s = %s\n", o->name, buf);
            break;
        case CFG_DURATION:
            fmt_duration(buf, sizeof(buf), *(int64_t *)o->dst);
            fprintf(out, "%s = %s\n", o->name, buf);
            break;
        }
    }
    free(opts);
}
