/* session_args.c: the help, options and words of `tessera session`'s
 * subcommands (see session_args.h). */
#include "services/cli/session_args.h"

#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

void session_opts_init(session_opts *o, cli *c, const session_sub *sub, int argc, char **argv,
                       const char *shortopts, const struct option *longopts)
{
    *o = (session_opts){.c = c,
                        .sub = sub,
                        .argc = argc,
                        .argv = argv,
                        .shortopts = shortopts,
                        .longopts = longopts,
                        .status = CLI_OK};
    optind = 0;
}

bool session_next_opt(session_opts *o, int *opt)
{
    while (o->status == CLI_OK && !o->help) {
        opterr = 0;
        *opt = getopt_long(o->argc, o->argv, o->shortopts, o->longopts, NULL);
        if (*opt == -1) return false;
        if (*opt == 'h') {
            cli_command_help(o->sub, stdout);
            o->help = true;
        } else if (*opt == 'J') { /* --json */
            o->c->json = true;
        } else if (*opt == 'k') { /* --kernel, where the subcommand takes it */
            o->c->kernel = optarg;
        } else if (*opt == '?' || *opt == ':') {
            o->status = cli_usage("session", o->sub->name,
                                  *opt == ':' ? "missing value for '%s'" : "unknown option '%s'",
                                  o->argv[optind - 1]);
        } else {
            return true;
        }
    }
    return false;
}

bool session_opts_stop(const session_opts *o)
{
    return o->help || o->status != CLI_OK;
}

cli_status session_positionals(const session_opts *o, int n, const char *what)
{
    int left = o->argc - optind;
    if ((n >= 0 && left < n) || (n < 0 && left < -n))
        return cli_usage("session", o->sub->name, "%s is missing", what);
    if (n >= 0 && left > n)
        return cli_usage("session", o->sub->name, "unexpected argument '%s'", o->argv[optind + n]);
    return CLI_OK;
}

bool session_words(cli *c, const session_sub *sub, int argc, char **argv, const char *shortopts,
                   int n, const char *what, cli_status *status)
{
    static const struct option longopts[] = {
        {"json", no_argument, NULL, 'J'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    static const struct option with_kernel[] = {
        {"json", no_argument, NULL, 'J'},
        {"kernel", required_argument, NULL, 'k'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    session_opts o;
    int opt;
    session_opts_init(&o, c, sub, argc, argv, shortopts,
                      strchr(shortopts, 'k') ? with_kernel : longopts);
    while (session_next_opt(&o, &opt)) {
    }
    *status = o.status;
    if (session_opts_stop(&o)) return false;
    *status = session_positionals(&o, n, what);
    return *status == CLI_OK;
}

void session_kernel_query(const cli *c, char **path)
{
    if (c->kernel && *c->kernel) client_query_add(path, "kernel", c->kernel);
}

char *session_path(const char *name, const char *suffix)
{
    char *e = httpc_escape(name);
    char *p = ts_asprintf("/session/%s%s", e, suffix ? suffix : "");
    free(e);
    return p;
}

const char *session_str(const json_t *o, const char *key)
{
    return json_string_value(json_object_get(o, key));
}

void session_random_hex(char *out, size_t nbytes)
{
    unsigned char b[16];
    if (nbytes > sizeof(b)) nbytes = sizeof(b);
    if (getrandom(b, nbytes, 0) != (ssize_t)nbytes) {
        srand((unsigned)time(NULL) ^ (unsigned)getpid());
        for (size_t i = 0; i < nbytes; i++)
            b[i] = (unsigned char)rand();
    }
    for (size_t i = 0; i < nbytes; i++)
        sprintf(out + 2 * i, "%02x", b[i]);
}
