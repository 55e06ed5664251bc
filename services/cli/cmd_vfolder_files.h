/* cmd_vfolder_files.h: the files half of `tessera vfolder`: upload,
 * download, ls, mkdir, mv, rm (cmd_vfolder_files.c). The folder commands
 * (create, list, info, share, ...) are in cmd_vfolder.c, which hands the
 * others to cmd_vfolder_files. */
#ifndef TESSERA_CLI_CMD_VFOLDER_FILES_H
#define TESSERA_CLI_CMD_VFOLDER_FILES_H

#include "services/cli/commands.h"

/* Whether sub is one of the file commands ("upload", "download", "ls",
 * "mkdir", "mv", "rm"). */
bool cmd_vfolder_files_owns(const char *sub) TS_MUST_CHECK;

/* argv[0] is one of them: the command's exit status. cmd_vfolder.c hands
 * them over. */
cli_status cmd_vfolder_files(cli *c, int argc, char **argv);

#endif
