/* config_file.h: the config file syntax (a TOML subset), apart from what the
 * keys mean; config.c gives them meaning.
 *
 *   # comment             blank lines and comments are skipped
 *   [section]             prefixes the keys below it with "section."
 *   key = bare word       trailing "# comment" allowed
 *   key = "quoted"        \" \\ \n \t escapes; trailing "# comment" allowed
 *
 * Keys may be dotted (pg.pool.size); CRLF line endings are accepted. */
#ifndef TESSERA_CONFIG_FILE_H
#define TESSERA_CONFIG_FILE_H

#include "libcommon/common.h"

#include <stdio.h>

/* Called for each `key = value` with the full (section-prefixed) key. On
 * failure it sets err to "<key>: <why>"; the parser puts "<path>:<line>" first. */
typedef bool (*cfg_file_entry_fn)(void *ctx, const char *key, const char *value, int line,
                                  ts_err *err);

/* Parse the file at path. Errors: "cannot read <path>: <strerror>",
 * "<path>:<line>: syntax error: <why>" or the entry function's, prefixed. */
bool cfg_file_parse(const char *path, cfg_file_entry_fn fn, void *ctx, ts_err *err) TS_MUST_CHECK;

/* Write s as a double-quoted string in the file syntax. */
void cfg_file_write_quoted(FILE *out, const char *s);

#endif
