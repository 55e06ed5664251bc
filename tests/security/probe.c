/* probe.c: the security suite's tenant-side probe (tests/security/).
 *
 * A static program put into a busybox test image (tools/oci-image.py --add)
 * and run inside a session through the public execute API. It tries what a
 * tenant must not be able to do and prints what happened as one JSON object
 * on stdout; the tests decide what passes. Built with
 * `gcc -static -O2 -o probe tests/security/probe*.c` (glibc's static libc):
 * probe.c dispatches, probe_syscalls.c, probe_net.c and probe_proc.c hold
 * the checks, probe_out.c prints.
 *
 *   probe syscalls [NAME...]     each dangerous syscall, in a child process of
 *                                its own, with harmless arguments:
 *                                {"NAME": {"result": refused|reached|allowed|
 *                                killed, "ret", "errno", "err", "detail"}}
 *                                (scratch files in $TESSERA_PROBE_SCRATCH,
 *                                default /tmp/.tessera-probe)
 *   probe rawsock                raw sockets: {"inet_raw": {...}, "packet": {...}}
 *   probe tcp [-t MS] ADDR:PORT...   connect to each at once (non-blocking):
 *                                {"ADDR:PORT": {"result": open|refused|
 *                                unreachable|timeout|error, "errno", "err"}}
 *   probe udp [-t MS] ADDR:PORT...   send a datagram to each, wait for any
 *                                answer: reply|refused|no-reply|error
 *   probe ping [-t MS] ADDR...   ICMP echo with a ping socket (SOCK_DGRAM),
 *                                else a raw socket: reply|no-reply|no-socket|error
 *   probe serve TCPPORT UDPPORT [SECONDS]
 *                                daemonize: answer every TCP connection with
 *                                "tessera-probe\n" and echo UDP datagrams
 *                                prefixed with "tessera-probe " ({"pid"});
 *                                gone after SECONDS when given
 *   probe wopen FILE...          open(O_WRONLY) each (never writes a byte)
 *   probe ptrace PID...          kill(PID, 0) and ptrace(PTRACE_SEIZE, PID)
 *   probe pids                   the processes this pid namespace shows
 *
 * Exit status 0 when the probe itself worked (whatever it found), 2 on usage
 * errors.
 */
#define _GNU_SOURCE
#include "probe_net.h"
#include "probe_proc.h"
#include "probe_syscalls.h"

#include <stdio.h>
#include <string.h>

static int usage(void)
{
    fprintf(stderr,
            "usage: probe syscalls [NAME...] | rawsock | tcp [-t MS] ADDR:PORT... | "
            "udp [-t MS] ADDR:PORT... | ping [-t MS] ADDR... | serve TCPPORT UDPPORT [SECONDS] | "
            "wopen FILE... | ptrace PID... | pids\n");
    return 2;
}

int main(int argc, char **argv)
{
    if (argc < 2) return usage();
    const char *c = argv[1];
    argc -= 2;
    argv += 2;
    int rc;
    if (strcmp(c, "syscalls") == 0)
        rc = probe_syscalls(argc, argv);
    else if (strcmp(c, "rawsock") == 0)
        rc = probe_net_rawsock();
    else if (strcmp(c, "tcp") == 0)
        rc = probe_net_tcp(argc, argv);
    else if (strcmp(c, "udp") == 0)
        rc = probe_net_udp(argc, argv);
    else if (strcmp(c, "ping") == 0)
        rc = probe_net_ping(argc, argv);
    else if (strcmp(c, "serve") == 0)
        rc = probe_net_serve(argc, argv);
    else if (strcmp(c, "wopen") == 0)
        rc = probe_proc_wopen(argc, argv);
    else if (strcmp(c, "ptrace") == 0)
        rc = probe_proc_ptrace(argc, argv);
    else if (strcmp(c, "pids") == 0)
        rc = probe_proc_pids();
    else
        return usage();
    if (rc == 2) return usage();
    fflush(stdout);
    return rc;
}
