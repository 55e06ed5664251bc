/* session_files.h: `tessera session upload NAME FILE...`, `tessera session
 * download NAME PATH... [-o DIR]` and `tessera session files NAME [PATH]`:
 * files in and out of a running session's /home/work (docs/sessions.md,
 * "Files"). upload sends one multipart/form-data body (each FILE as a part
 * named src whose filename is its base name; the gateway's http.max_body,
 * 1 MiB by default, bounds the whole body); download asks for a tar of the
 * PATHs and unpacks it into DIR (default: .) with tar(1). */
#ifndef TESSERA_CLI_SESSION_FILES_H
#define TESSERA_CLI_SESSION_FILES_H

#include "services/cli/session_args.h"

int session_upload(cli *c, const session_sub *self, int argc, char **argv);
int session_download(cli *c, const session_sub *self, int argc, char **argv);
int session_files(cli *c, const session_sub *self, int argc, char **argv);

#endif
