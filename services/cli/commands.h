/* commands.h: the top-level commands of `tessera` (main.c's table) and the
 * helpers they share for their help and usage errors (commands.c). Each
 * command takes its own argv, argv[0] being the command's name, and returns
 * the process's exit status (an int, as main returns it): a cli_status
 * (client.h: CLI_OK, CLI_FAIL when the API or the system said no and a
 * message is printed, CLI_USAGE), or for `tessera session exec` and `run`
 * the exit code of the command that ran in the session. */
#ifndef TESSERA_CLI_COMMANDS_H
#define TESSERA_CLI_COMMANDS_H

#include "services/cli/client.h"

#include <stdio.h>

typedef struct cli_command cli_command;
struct cli_command {
    const char *name;
    const char *summary;
    const char *usage; /* "tessera login [OPTIONS]\n\nOptions:\n..." */
    int (*run)(cli *c, const cli_command *self, int argc, char **argv); /* the exit status */
    bool no_args;        /* takes no arguments (checked before run) */
    const char *options; /* option lines printed after the usage, then --json and --help; or NULL */
};

/* "Usage: <usage>\n\n<summary>." on out, then the options when the command
 * has them. */
void cli_command_help(const cli_command *cmd, FILE *out);
/* A usage error of `tessera CMD [SUB]` on stderr: "tessera CMD SUB: <msg>;
 * try 'tessera CMD SUB --help'" (sub NULL: without it). Returns CLI_USAGE. */
cli_status cli_usage(const char *cmd, const char *sub, const char *fmt, ...) TS_PRINTF(3, 4);
/* "--help" or "-h". */
bool cli_is_help(const char *arg) TS_MUST_CHECK;

/* cmd_info.c */
int cmd_version(cli *c, const cli_command *self, int argc, char **argv);
int cmd_status(cli *c, const cli_command *self, int argc, char **argv);

/* cmd_auth.c */
int cmd_login(cli *c, const cli_command *self, int argc, char **argv);
int cmd_logout(cli *c, const cli_command *self, int argc, char **argv);
int cmd_whoami(cli *c, const cli_command *self, int argc, char **argv);
int cmd_password(cli *c, const cli_command *self, int argc, char **argv);

/* cmd_session.c: `tessera session SUBCOMMAND` (its own --help at every level) */
int cmd_session(cli *c, const cli_command *self, int argc, char **argv);

/* cmd_session_template.c: `tessera session-template SUBCOMMAND` (its own --help) */
int cmd_session_template(cli *c, const cli_command *self, int argc, char **argv);

/* cmd_events.c: `tessera events` (session events or a background task, as they come) */
int cmd_events(cli *c, const cli_command *self, int argc, char **argv);

/* cmd_app.c: `tessera app SESSION APP` */
int cmd_app(cli *c, const cli_command *self, int argc, char **argv);

/* cmd_admin.c: `tessera admin RESOURCE VERB` (its own --help at every level) */
int cmd_admin(cli *c, const cli_command *self, int argc, char **argv);

/* cmd_vfolder.c: `tessera vfolder SUBCOMMAND` (its own --help at every level) */
int cmd_vfolder(cli *c, const cli_command *self, int argc, char **argv);

/* cmd_resource.c: `tessera resource presets|check` (its own --help), `tessera scaling-groups` */
int cmd_resource(cli *c, const cli_command *self, int argc, char **argv);
int cmd_scaling_groups(cli *c, const cli_command *self, int argc, char **argv);

/* cmd_graphql.c: `tessera graphql QUERY` (Backend.AI's GraphQL, POST /admin/gql) */
int cmd_graphql(cli *c, const cli_command *self, int argc, char **argv);

/* cmd_user.c: `tessera user-config ...`, `tessera ssh-keypair ...` (their own
 * --help), and `tessera admin announcement ...` (argv[0] "announcement") */
int cmd_user_config(cli *c, const cli_command *self, int argc, char **argv);
int cmd_ssh_keypair(cli *c, const cli_command *self, int argc, char **argv);
int cli_admin_announcement(cli *c, int argc, char **argv);

/* cmd_config.c: `tessera admin config ...` and `tessera admin registry ...`
 * (argv[0] "config" / "registry"; their own --help) */
int cli_admin_config(cli *c, int argc, char **argv);
int cli_admin_registry(cli *c, int argc, char **argv);

/* cmd_usage.c: `tessera usage` (totals in the caller's scope), `tessera admin
 * usage month|period` (argv[0] "usage"; Backend.AI's reports) */
int cmd_usage(cli *c, const cli_command *self, int argc, char **argv);
int cli_admin_usage(cli *c, int argc, char **argv);

#endif
