/* term_exec.h: tessera-term's /exec WebSocket: one program per connection,
 * run with pipes (no pty), its output streamed, its stdin fed and signals
 * sent on request. The gateway's streamed execution (Backend.AI's
 * /stream/session/{name}/execute) reaches kernels through it.
 *
 * Client -> term, the first message (text): a mode byte, then the code:
 *   q<code>     query mode: <runtime> -c <code> (--runtime, default /bin/sh)
 *   b<command>  batch mode: /bin/sh -c <command>
 *   anything else: close 1008 and nothing runs.
 * Afterwards, frames whose first byte is the kind:
 *   i<bytes> to the program's stdin; c: close its stdin (EOF); x: SIGINT to
 *   its process group; k: SIGKILL to it. An unknown kind: close 1008; a frame
 *   or message over 1 MiB: close 1009.
 * Term -> client, binary frames whose first byte is the kind:
 *   o<bytes> stdout, e<bytes> stderr; w: the program waits for input (a
 *   process of its group is blocked reading its stdin, or polling it:
 *   term_proc.h, and it wrote nothing for 100 ms; once per wait, again only
 *   after new input); x<status>: it
 *   ended (exit status, 128+signal), then close 1000.
 * The program runs in a session and process group of its own (setsid), in
 * tessera-term's directory, environment and user. When the connection ends
 * before the program does, the group gets SIGINT, then SIGKILL 3 s later if
 * any of it is left; what is left of the group after a normal end likewise.
 * The connection's process is a child subreaper: it reaps the program and
 * its descendants. */
#ifndef TERM_EXEC_H
#define TERM_EXEC_H

/* Serve /exec on an upgraded connection until it ends. */
void term_exec(int fd, const char *runtime);

#endif
