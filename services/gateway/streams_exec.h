/* streams_exec.h: GET /stream/session/{name}/execute translated to
 * tessera-term's /exec WebSocket (docs/sessions.md, "Streams"; the contract
 * is in services/wsproxy/term/term.c). streams.c upgrades the connection and
 * hands it here, on the stream's own thread.
 *
 * Client -> gateway, first: {"mode": "query"|"batch", "code": "...",
 * "options": {"exec": "...", "build": "..."}}. Query runs code with the
 * kernel's runtime (term "q<code>"); batch runs options.build (when given)
 * then options.exec (else code) with /bin/sh (term "b<command>"), the exec
 * only when the build exited 0 ("build-finished" between them). Afterwards
 * every text message is a line of input (the gateway adds "\n").
 * Gateway -> client: {"status", "console": [["stdout"|"stderr", text]...],
 * "exitCode", "options": null, "files": []}: "continued" with the output so
 * far (at most one per EXEC_FLUSH_MS), "waiting-input", "build-finished",
 * "finished" (then close 1000); {"status": "error", "msg"} on a bad first
 * message or a kernel that cannot be reached (then close). */
#ifndef GATEWAY_STREAMS_EXEC_H
#define GATEWAY_STREAMS_EXEC_H

#include "libcommon/buf.h"
#include "libcommon/ws.h"

#include <jansson.h>
#include <pthread.h>

#define EXEC_FLUSH_MS 200
#define EXEC_MAX_STEPS 2

/* What the first message asks for: up to two programs, run in turn. */
typedef struct exec_plan {
    int n;
    char kind[EXEC_MAX_STEPS]; /* 'q' or 'b' (term's first-frame mode) */
    char *code[EXEC_MAX_STEPS];
    bool build; /* step 0 is a build */
} exec_plan;

/* Parse the first message. False with why (a sentence for the client). */
bool exec_plan_parse(const char *text, size_t len, exec_plan *p, char *why,
                     size_t why_len) TS_MUST_CHECK;
void exec_plan_free(exec_plan *p);

/* The output gathered since the last message: consecutive bytes of one kind
 * form one console entry. Text is UTF-8: a sequence cut between two chunks
 * waits for its end, invalid bytes become U+FFFD. */
#define EXEC_CONSOLE_MAX 64
typedef struct exec_console {
    int n;
    bool err[EXEC_CONSOLE_MAX];
    ts_buf text[EXEC_CONSOLE_MAX];
    ts_buf carry[2]; /* an incomplete UTF-8 tail: stdout, stderr */
} exec_console;
void exec_console_add(exec_console *c, bool is_err, const uint8_t *p, size_t n);
bool exec_console_empty(const exec_console *c) TS_MUST_CHECK;
/* The entries as Backend.AI's console list (new reference); empties c.
 * final: incomplete tails go out too (as U+FFFD). */
json_t *exec_console_take(exec_console *c, bool final);
void exec_console_free(exec_console *c);

/* What the interrupt route reaches (streams.c's table): the connection to
 * the term of the program now running. */
typedef struct exec_ctl {
    pthread_mutex_t lock;
    ws_conn *term; /* NULL between programs */
    bool interrupted;
} exec_ctl;
void exec_ctl_init(exec_ctl *c);
void exec_ctl_destroy(exec_ctl *c);
/* SIGINT to the running program (term "x"); one asked between programs
 * stops the next one from starting. */
void exec_ctl_interrupt(exec_ctl *c);

/* Serve one execute stream on client until it finished or the client left
 * (the term then ends the program). host:port: the session's tessera-term. */
void streams_exec_serve(ws_conn *client, const char *host, int port, exec_ctl *ctl);

#endif
