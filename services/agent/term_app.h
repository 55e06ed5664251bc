/* term_app.h: the built-in terminal app. Every kernel gets tessera-term
 * (services/wsproxy/term/term.c, a static program) bind-mounted read-only at
 * TERM_APP_PATH, and a kernel whose image declares no terminal app of its own
 * gets the service port ttyd:http:7681 (Backend.AI's clients call the terminal
 * app "ttyd"), which starts tessera-term when it is first opened
 * (app_start.h). The host path of the program is agent.term_path. */
#ifndef AGENT_TERM_APP_H
#define AGENT_TERM_APP_H

#include <jansson.h>

#include "services/agent/service_ports.h"

#define TERM_APP_NAME "ttyd"
#define TERM_APP_PORT 7681
#define TERM_APP_PATH "/opt/tessera/bin/tessera-term"

/* The host path of tessera-term: configured (agent.term_path), or when that
 * is "", tessera-term in the directory of the running program (build/bin in
 * the dev stack, $(PREFIX)/bin after `make install`). Heap string, or NULL
 * with err set when it is not an executable regular file. */
char *term_app_locate(const char *configured, ts_err *err);

/* Whether a runtime path may go into tessera-term's start command: not
 * empty, only [A-Za-z0-9/._+-] (the command is run by /bin/sh -c, and these
 * need no quoting there). */
bool term_app_runtime_ok(const char *path) TS_MUST_CHECK;

/* Append ttyd:http:7681 (start command: tessera-term on that port, with
 * --runtime <runtime_path> when the kernel's image has one: the runtime of
 * /exec's query mode) unless the image already has a port named ttyd or uses
 * container port 7681, or the ports are full. A runtime path that fails
 * term_app_runtime_ok, or would not fit, is left out (a warning is logged):
 * query mode then runs /bin/sh. Returns the new count. */
int term_app_add_port(kernel_service_port *ports, int n, const char *runtime_path);

/* Append the read-only bind mount of host_path at TERM_APP_PATH to an OCI
 * mounts array (nothing when host_path is NULL or ""). */
void term_app_mount(json_t *mounts, const char *host_path);

#endif
