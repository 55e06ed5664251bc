/* config.h: one declarative table per service (as Redis config.c, PgBouncer's
 * CF_ABS): name, type, bounds, default, reloadable, help. Loading, validation,
 * `--help` and the example config file all come from the same table.
 *
 * Precedence, lowest first: the default, the file, the option's env alias
 * (e.g. KAFKA_BOOTSTRAP), the generic env name (TESSERA_ + upper-cased name with
 * '.' and '-' as '_': pg.dsn -> TESSERA_PG_DSN).
 *
 * File format (a TOML subset): `# comment`, `[section]` headers that prefix the
 * keys below them with "section.", and `key = value` where value is a bare word
 * or a "double-quoted string" (\" and \\ escapes). Unknown keys are errors. */
#ifndef TESSERA_CONFIG_H
#define TESSERA_CONFIG_H

#include "libcommon/common.h"

#include <stdio.h>

typedef enum cfg_type {
    CFG_STRING,   /* char **dst, heap-owned; a NULL default leaves NULL */
    CFG_ENUM,     /* char **dst; value must be one of .choices ("a|b|c") */
    CFG_INT,      /* int64_t *dst */
    CFG_BOOL,     /* bool *dst; true/false/yes/no/on/off/1/0 */
    CFG_DOUBLE,   /* double *dst */
    CFG_BYTES,    /* int64_t *dst; "512", "64k", "16m", "2g" (powers of 1024) */
    CFG_DURATION, /* int64_t *dst in milliseconds; "250ms", "5s", "2m", "1h"; bare = seconds */
} cfg_type;

typedef struct cfg_option {
    const char *name; /* dotted key, e.g. "http.listen" */
    cfg_type type;
    void *dst;           /* where the value lives (see cfg_type) */
    const char *def;     /* default as it would be written in the file; NULL: none */
    double min, max;     /* inclusive numeric bounds, checked when min < max */
    const char *choices; /* CFG_ENUM only */
    bool reloadable;     /* applied on SIGHUP; the others need a restart */
    const char *env;     /* extra environment name (alias), or NULL */
    const char *help;    /* one line */
} cfg_option;

/* A service's options: several tables (the common one, the service's own),
 * each terminated by an entry with name == NULL. */
typedef struct cfg_schema {
    const char *service;             /* "gateway": used in messages and examples */
    const cfg_option *const *tables; /* NULL-terminated array of tables */
} cfg_schema;

/* Apply defaults, then the file (path may be NULL: no file), then environment.
 * On error, err names the key and where it came from: "<file>:<line>: <key>: ..."
 * or "environment TESSERA_X: <key>: ...". */
bool cfg_load(const cfg_schema *schema, const char *path, ts_err *err) TS_MUST_CHECK;

/* Re-read the file and environment; apply only reloadable options. Values of
 * non-reloadable options that changed are reported in *restart_needed (a
 * comma-separated list, heap-owned, NULL when none). */
bool cfg_reload(const cfg_schema *schema, const char *path, char **restart_needed,
                ts_err *err) TS_MUST_CHECK;

/* Parse one value for one option into its dst (used by load; tests call it). */
bool cfg_set(const cfg_option *opt, const char *value, ts_err *err) TS_MUST_CHECK;

/* The generic environment name of an option: TESSERA_HTTP_LISTEN. */
void cfg_env_name(const char *name, char *out, size_t size);

/* `--help`: every option with type, default, bounds, env names and help. */
void cfg_print_help(const cfg_schema *schema, FILE *out);
/* An example file: every option commented with its help, at its default. */
void cfg_print_example(const cfg_schema *schema, FILE *out);
/* The effective values (secrets: options whose name ends in "password" or
 * "secret" or contains "dsn" are printed as "***"). */
void cfg_print_effective(const cfg_schema *schema, FILE *out);

/* Free heap-owned strings set by the schema's options. */
void cfg_free(const cfg_schema *schema);

/* Value parsers, exposed for reuse and tests. */
bool cfg_parse_bytes(const char *s, int64_t *out) TS_MUST_CHECK;
bool cfg_parse_duration_ms(const char *s, int64_t *out) TS_MUST_CHECK;
bool cfg_parse_bool(const char *s, bool *out) TS_MUST_CHECK;

#endif
