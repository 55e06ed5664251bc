/* net_listen.h: a TCP listening socket from a listen address, as the
 * services' http.listen takes it: "host:port", ":port" (every address) or
 * "[v6addr]:port"; port 0 picks a free one (net_bound_port tells which). */
#ifndef TESSERA_NET_LISTEN_H
#define TESSERA_NET_LISTEN_H

#include "libcommon/common.h"

/* addr -> host ("" for any) and port text; false with err when malformed. */
bool net_listen_parse(const char *addr, char *host, size_t hsize, char *port, size_t psize,
                      ts_err *err) TS_MUST_CHECK;
/* A non-blocking, close-on-exec socket bound to addr (SO_REUSEADDR) and
 * listening; -1 with err (an address in use says so). */
int net_listen_open(const char *addr, ts_err *err);
/* The same with SO_REUSEPORT: several processes (of one user) listen on
 * addr together and the kernel spreads new connections over them; the
 * others must share it too (a plain listener on addr: in use). */
int net_listen_open_shared(const char *addr, ts_err *err);
/* The port fd is bound to (0 when it cannot be read). */
int net_bound_port(int fd);

#endif
