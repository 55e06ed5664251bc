/* session_exec.c: `tessera session exec` and `run` (see session_exec.h). */
#include "services/cli/session_exec.h"

#include "services/cli/output.h"

#include <stdlib.h>
#include <string.h>

/* A word for /bin/sh: as it is when plain, else in single quotes. */
static char *_sh_quote(const char *w)
{
    bool plain = *w != '\0';
    for (const char *p = w; *p && plain; p++)
        plain = strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./=:,+@%",
                       *p) != NULL;
    if (plain) return ts_strdup(w);
    char *out = ts_malloc(strlen(w) * 4 + 3), *o = out;
    *o++ = '\'';
    for (const char *p = w; *p; p++) {
        if (*p == '\'') {
            memcpy(o, "'\\''", 4);
            o += 4;
        } else {
            *o++ = *p;
        }
    }
    *o++ = '\'';
    *o = '\0';
    return out;
}

/* The console items of a run: stdout ones to stdout, stderr ones to stderr,
 * others tagged "[kind] " on stdout. */
static void _print_console(const json_t *console)
{
    size_t i;
    json_t *item;
    json_array_foreach(console, i, item)
    {
        const char *kind = json_string_value(json_array_get(item, 0));
        json_t *data = json_array_get(item, 1);
        FILE *out = kind && !strcmp(kind, "stderr") ? stderr : stdout;
        if (kind && strcmp(kind, "stdout") && strcmp(kind, "stderr"))
            fprintf(stdout, "[%s] ", kind);
        if (json_is_string(data)) {
            fwrite(json_string_value(data), 1, json_string_length(data), out);
        } else {
            char *t = out_text(data, OUT_TEXT);
            fprintf(out, "%s\n", t);
            free(t);
        }
    }
    fflush(stdout);
}

/* POST /session/NAME {mode, runId, code, options}; prints the console and
 * returns the command's exit code (or a cli_status). */
static int _execute(cli *c, const char *name, json_t *body)
{
    char rid[24];
    session_random_hex(rid, 8);
    json_object_set_new(body, "runId", json_string(rid));
    char *path = session_path(name, NULL);
    session_kernel_query(c, &path);
    json_t *answer = NULL;
    cli_status rc = client_call(c, "POST", path, body, true, &answer);
    free(path);
    if (rc != CLI_OK) return rc;
    json_t *result = json_object_get(answer, "result");
    if (c->json)
        out_json(answer);
    else
        _print_console(json_object_get(result, "console"));
    const char *st = session_str(result, "status");
    json_t *code = json_object_get(result, "exitCode");
    bool finished = !st || strcmp(st, "finished") == 0;
    if (!finished) fprintf(stderr, "tessera: the run ended %s\n", st);
    int status = json_is_integer(code) ? (int)(json_integer_value(code) & 0xff)
                 : finished            ? CLI_OK
                                       : CLI_FAIL;
    json_decref(answer);
    return status;
}

int session_exec(cli *c, const session_sub *self, int argc, char **argv)
{
    cli_status rc;
    if (!session_words(c, self, argc, argv, "+k:h", -2, "NAME -- COMMAND", &rc)) return rc;
    const char *name = argv[optind];
    int first = optind + 1;
    /* --kernel may follow NAME too (`exec NAME --kernel sub1 -- CMD`) */
    while (first < argc && strcmp(argv[first], "--") != 0) {
        const char *a = argv[first];
        if ((strcmp(a, "--kernel") == 0 || strcmp(a, "-k") == 0) && first + 1 < argc) {
            c->kernel = argv[first + 1];
            first += 2;
        } else if (strncmp(a, "--kernel=", 9) == 0) {
            c->kernel = a + 9;
            first++;
        } else {
            break;
        }
    }
    if (first < argc && strcmp(argv[first], "--") == 0) first++;
    if (first >= argc) return cli_usage("session", self->name, "%s is missing", "COMMAND");
    if (!client_has_keys(c)) return CLI_FAIL;
    char *cmd = NULL;
    if (first + 1 == argc) {
        cmd = ts_strdup(argv[first]); /* one word: a shell command line as it is */
    } else {
        cmd = ts_strdup("");
        for (int i = first; i < argc; i++) {
            char *q = _sh_quote(argv[i]);
            char *next = ts_asprintf("%s%s%s", cmd, *cmd ? " " : "", q);
            free(q);
            free(cmd);
            cmd = next;
        }
    }
    json_t *body =
        json_pack("{s:s, s:s, s:{s:s}}", "mode", "batch", "code", "", "options", "exec", cmd);
    free(cmd);
    int status = _execute(c, name, body);
    json_decref(body);
    return status;
}

int session_run(cli *c, const session_sub *self, int argc, char **argv)
{
    cli_status rc;
    if (!session_words(c, self, argc, argv, "k:h", 2, "NAME CODE", &rc)) return rc;
    if (!client_has_keys(c)) return CLI_FAIL;
    json_t *body = json_pack("{s:s, s:s}", "mode", "query", "code", argv[optind + 1]);
    int status = _execute(c, argv[optind], body);
    json_decref(body);
    return status;
}
