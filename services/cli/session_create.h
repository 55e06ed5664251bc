/* session_create.h: `tessera session create IMAGE`: enqueue a session
 * (POST /session with enqueueOnly) and, unless --enqueue-only, poll it until
 * it runs, ends or --max-wait passes, showing the status as it changes on
 * stderr. */
#ifndef TESSERA_CLI_SESSION_CREATE_H
#define TESSERA_CLI_SESSION_CREATE_H

#include "services/cli/session_args.h"

/* The exit status (a cli_status): CLI_FAIL also when the session ended
 * badly (a batch session that failed, an error). */
int session_create(cli *c, const session_sub *self, int argc, char **argv);

#endif
