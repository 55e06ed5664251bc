/* session_exec.h: `tessera session exec NAME -- COMMAND` (batch mode) and
 * `tessera session run NAME CODE` (query mode): POST /session/NAME with a
 * fresh runId, the console printed as it came (stdout items to stdout,
 * stderr items to stderr). */
#ifndef TESSERA_CLI_SESSION_EXEC_H
#define TESSERA_CLI_SESSION_EXEC_H

#include "services/cli/session_args.h"

/* Both end with the command's own exit code (0..255) when the run reports
 * one, else with a cli_status: they are the process's exit status. */
int session_exec(cli *c, const session_sub *self, int argc, char **argv);
int session_run(cli *c, const session_sub *self, int argc, char **argv);

#endif
