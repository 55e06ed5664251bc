/* session_args.h: what the subcommands of `tessera session` share
 * (cmd_session.c holds their table): their help, reading their options and
 * words the same way, and the API paths and values they use. */
#ifndef TESSERA_CLI_SESSION_ARGS_H
#define TESSERA_CLI_SESSION_ARGS_H

#include "services/cli/commands.h"

#include <getopt.h>

/* A subcommand is a cli_command (commands.h) named by its word ("create"),
 * its usage in full ("tessera session create IMAGE [OPTIONS]") and its option
 * lines in options. */
typedef cli_command session_sub;

/* Reading a subcommand's options with getopt_long: --json ('J') sets
 * c->json, --kernel ('k', where a subcommand takes it) c->kernel, and --help
 * ('h') prints the help, all here. */
typedef struct session_opts {
    cli *c;
    const session_sub *sub;
    int argc;
    char **argv;
    const char *shortopts;
    const struct option *longopts;
    cli_status status; /* a bad value: the handler sets it to cli_usage(...) */
    bool help;         /* the help was printed */
} session_opts;

/* Start reading (getopt starts afresh). */
void session_opts_init(session_opts *o, cli *c, const session_sub *sub, int argc, char **argv,
                       const char *shortopts, const struct option *longopts);
/* The next option into *opt. False at the end of the options, after the
 * help, after an unknown option or a missing value (a usage error printed),
 * or once o->status is not CLI_OK. */
bool session_next_opt(session_opts *o, int *opt) TS_MUST_CHECK;
/* After the loop: whether the subcommand ends now with o->status (the help
 * was shown, or a usage error printed). */
bool session_opts_stop(const session_opts *o) TS_MUST_CHECK;
/* The words after the options: exactly n (n < 0: at least -n), what naming
 * them in the error ("NAME"). CLI_OK or CLI_USAGE (printed). */
cli_status session_positionals(const session_opts *o, int n, const char *what);

/* For a subcommand with no options of its own (--json, --help, and --kernel
 * when shortopts has "k:"): read them,
 * then n words as session_positionals. False with the status the subcommand
 * ends with (CLI_OK after the help); true: the words start at
 * argv[optind]. */
bool session_words(cli *c, const session_sub *sub, int argc, char **argv, const char *shortopts,
                   int n, const char *what, cli_status *status) TS_MUST_CHECK;

/* "/session/<escaped name>" + suffix (may be NULL) (heap). */
char *session_path(const char *name, const char *suffix);
/* ?kernel=<c->kernel> added to path (heap, replaced) when --kernel was
 * given: the kernel of a cluster session a request is for. */
void session_kernel_query(const cli *c, char **path);
/* A string member of an answer, or NULL. */
const char *session_str(const json_t *o, const char *key);
/* 2 * nbytes (<= 16) random hex digits into out. */
void session_random_hex(char *out, size_t nbytes);

#endif
