/* cmd_vfolder_files.h: the files half of `tessera vfolder`: upload,
 * download, ls, mkdir, mv, rm (cmd_vfolder_files.c). The folder commands
 * (create, list, info, share, ...) are in cmd_vfolder.c, which hands the
 * others to cmd_vfolder_files. */
#ifndef TESSERA_CLI_CMD_VFOLDER_FILES_H
#define TESSERA_CLI_CMD_VFOLDER_FILES_H

#include "services/cli/commands.h"

/* argv[0] is the subcommand: CLI_OK, CLI_FAIL or CLI_USAGE, or -1 when it
 * is not one of ours ("upload", "download", "ls", "mkdir", "mv", "rm").
 * cmd_vfolder.c calls it (declared weak there) for subcommands it does not
 * know. */
int cmd_vfolder_files(cli *c, int argc, char **argv);

#endif
