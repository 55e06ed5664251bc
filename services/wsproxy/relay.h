/* relay.h: a connection's bytes both ways and its run loop: reads and writes
 * (edge-triggered, each direction over its fixed buffer), the framing of
 * bodies (Content-Length, chunked: tracked, not decoded), tunnels after a 101
 * with half-closes passed on, the lingering close after an error reply, and
 * the timeouts (408, 504, idle). proxy.c calls in from epoll events, its
 * deadline scan and its run-again list; while a connection runs, its
 * session and route are in the log context. */
#ifndef WSPROXY_RELAY_H
#define WSPROXY_RELAY_H

#include "services/wsproxy/conn.h"

#include <stdint.h>

/* An epoll event (TAG_CLIENT or TAG_UPSTREAM) for c. */
void relay_on_event(conn *c, int kind, uint32_t events);
/* c's deadline may have passed. */
void relay_on_deadline(conn *c);
/* Run c again (it was on the worker's run-again list). */
void relay_resume(conn *c);

#endif
