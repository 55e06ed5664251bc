/* commands.c: the help and usage-error lines every command prints the same
 * way (see commands.h). */
#include "services/cli/commands.h"

#include <ctype.h>
#include <stdarg.h>
#include <string.h>

void cli_command_help(const cli_command *cmd, FILE *out)
{
    fprintf(out, "Usage: %s\n\n%c%s.\n", cmd->usage, toupper((unsigned char)cmd->summary[0]),
            cmd->summary + 1);
    if (!cmd->options) return;
    fprintf(out, "\nOptions:\n%s", cmd->options);
    fprintf(out, "  %-28s %s\n  %-28s %s\n", "--json", "print the API's JSON", "-h, --help",
            "this help");
}

cli_status cli_usage(const char *cmd, const char *sub, const char *fmt, ...)
{
    fprintf(stderr, "tessera %s%s%s: ", cmd, sub ? " " : "", sub ? sub : "");
    va_list ap;
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, "; try 'tessera %s%s%s --help'\n", cmd, sub ? " " : "", sub ? sub : "");
    return CLI_USAGE;
}

bool cli_is_help(const char *arg)
{
    return strcmp(arg, "--help") == 0 || strcmp(arg, "-h") == 0;
}
