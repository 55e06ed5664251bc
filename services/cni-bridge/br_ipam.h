/* br_ipam.h: tessera-bridge's address leases, kept the way Debian's
 * host-local plugin keeps them, so either plugin sees the other's:
 *   <dataDir>/<network>/lock        flock()ed while the store is in use
 *   <dataDir>/<network>/<a.b.c.d>   a lease: "<container id>\r\n<ifname>"
 *                                   (older host-local wrote the id alone)
 *   <dataDir>/<network>/last_reserved_ip.0   the last address handed out;
 *                                   the next search starts after it
 * A lease is taken with O_CREAT|O_EXCL, so two plugins allocating at once
 * without the lock still never share an address. */
#ifndef BR_IPAM_H
#define BR_IPAM_H

#include <netinet/in.h>

#include "services/cni-bridge/br_conf.h"

typedef struct br_ipam {
    char dir[600];
    int lock_fd;
} br_ipam;

/* Create (if need be) and lock the store of c's network. */
bool br_ipam_open(br_ipam *s, const br_conf *c, cnip_error *e) TS_MUST_CHECK;
void br_ipam_close(br_ipam *s);

/* The address leased to (cid, ifname), if any. */
bool br_ipam_find(br_ipam *s, const char *cid, const char *ifname,
                  struct in_addr *out) TS_MUST_CHECK;
/* Lease an address of c's range (not the gateway) to (cid, ifname); a lease
 * it already holds is returned again (*fresh false). false with e set when
 * none is free. */
bool br_ipam_alloc(br_ipam *s, const br_conf *c, const char *cid, const char *ifname,
                   struct in_addr *out, bool *fresh, cnip_error *e) TS_MUST_CHECK;
/* Drop every lease of (cid, ifname); how many there were. */
int br_ipam_release(br_ipam *s, const char *cid, const char *ifname);

#endif
