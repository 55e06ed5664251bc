/* commands.h: the top-level commands of `tessera` (main.c's table). Each takes
 * its own argv, argv[0] being the command's name, and returns CLI_OK, CLI_FAIL
 * (the API or the system said no; a message is printed) or CLI_USAGE. */
#ifndef TESSERA_CLI_COMMANDS_H
#define TESSERA_CLI_COMMANDS_H

#include "services/cli/client.h"

#include <stdio.h>

typedef struct cli_command cli_command;
struct cli_command {
    const char *name;
    const char *summary;
    const char *usage; /* "tessera login [OPTIONS]\n\nOptions:\n..." */
    int (*run)(cli *c, const cli_command *self, int argc, char **argv);
};

/* "Usage: <usage>\n\n<summary>." on out. */
void cli_command_help(const cli_command *cmd, FILE *out);
/* A usage error of cmd: "tessera <name>: <msg>; try 'tessera <name> --help'": CLI_USAGE. */
int cli_usage_error(const cli_command *cmd, const char *fmt, ...) TS_PRINTF(2, 3);

/* cmd_auth.c */
int cmd_login(cli *c, const cli_command *self, int argc, char **argv);
int cmd_logout(cli *c, const cli_command *self, int argc, char **argv);
int cmd_whoami(cli *c, const cli_command *self, int argc, char **argv);
int cmd_password(cli *c, const cli_command *self, int argc, char **argv);

/* cmd_session.c: `tessera session SUBCOMMAND` (its own --help at every level) */
int cmd_session(cli *c, const cli_command *self, int argc, char **argv);

/* cmd_app.c: `tessera app SESSION APP` */
int cmd_app(cli *c, const cli_command *self, int argc, char **argv);

#endif
