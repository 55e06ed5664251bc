/* probe_net.h: the probe's network checks. Each returns the exit status:
 * 0 when the probe itself worked (whatever it found), 1 when it could not
 * (serve), 2 on a usage error.
 *
 *   rawsock                  raw sockets: {"inet_raw": {...}, "packet": {...}}
 *   tcp [-t MS] ADDR:PORT... connect to each at once (non-blocking):
 *                            {"ADDR:PORT": {"result": open|refused|
 *                            unreachable|timeout|error, "errno", "err"}}
 *   udp [-t MS] ADDR:PORT... send a datagram to each, wait for any answer:
 *                            reply|refused|no-reply|error
 *   ping [-t MS] ADDR...     ICMP echo with a ping socket (SOCK_DGRAM), else a
 *                            raw socket: reply|no-reply|no-socket|error
 *   serve TCPPORT UDPPORT [SECONDS]
 *                            daemonize: answer every TCP connection with
 *                            BANNER "\n" and echo UDP datagrams prefixed
 *                            with BANNER " " ({"pid"}); gone after SECONDS
 *                            when given */
#ifndef TESSERA_PROBE_NET_H
#define TESSERA_PROBE_NET_H

int probe_net_rawsock(void);
int probe_net_tcp(int argc, char **argv);
int probe_net_udp(int argc, char **argv);
int probe_net_ping(int argc, char **argv);
int probe_net_serve(int argc, char **argv);

#endif
