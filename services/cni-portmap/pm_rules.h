/* pm_rules.h: tessera-portmap's iptables rules, as text: the nat table as
 * `iptables-save -t nat` prints it, parsed (libcommon/ipt.h), and what ADD and DEL feed to one
 * `iptables-restore --noflush` (or what CHECK expects to find).
 *
 * Chains (nat table):
 *   TESSERA-HP-DNAT     shared; PREROUTING and OUTPUT jump to it for packets
 *                       to a local address (-m addrtype --dst-type LOCAL);
 *                       holds one jump per container and protocol (multiport,
 *                       15 ports a rule), commented tessera-portmap:<net>:<id>
 *   TESSERA-HP-<hash>   per container (FNV-1a 64 of network name and container
 *                       id, 16 hex digits: 27 characters): per mapping, mark
 *                       for masquerade what comes from the container network
 *                       (hairpin) or from 127.0.0.0/8 (snat only), then DNAT
 *                       to <container ip>:<container port>
 *   TESSERA-HP-SETMARK  shared (snat): MARK 0x2000/0x2000
 *   TESSERA-HP-MASQ     shared (snat), first in POSTROUTING: MASQUERADE
 *                       what carries the mark
 * Shared chains are declared only when the table lacks them: in
 * iptables-restore a `:CHAIN` line flushes an existing chain even with
 * --noflush. The per-container chain is declared on every ADD, which is
 * what makes a repeated ADD replace its rules instead of adding copies. */
#ifndef PM_RULES_H
#define PM_RULES_H

#include "libcommon/ipt.h"
#include "services/cni-portmap/pm_conf.h"

#define PM_CHAIN_PREFIX "TESSERA-HP-"
#define PM_CHAIN_DNAT "TESSERA-HP-DNAT"
#define PM_CHAIN_SETMARK "TESSERA-HP-SETMARK"
#define PM_CHAIN_MASQ "TESSERA-HP-MASQ"
#define PM_MARK "0x2000/0x2000"
#define PM_CHAIN_LEN 29 /* iptables' limit: 28 characters and the NUL */
#define PM_MULTIPORT_MAX 15

/* "TESSERA-HP-" and 16 hex digits of the network name and container id. */
void pm_chain_name(const char *net, const char *cid, char out[PM_CHAIN_LEN]);
/* "tessera-portmap:<net>:<cid>" */
void pm_comment(const char *net, const char *cid, char *out, size_t size);

/* iptables-restore input (heap) for ADD: the shared chains and their entry
 * rules where missing, the container's chain (re)declared and filled, its
 * old jumps deleted and the new ones appended. c has at least one mapping
 * and a container address. */
char *pm_plan_add(const pm_conf *c, const char *cid, const ipt_table *t);
/* iptables-restore input (heap) for DEL: every rule that jumps to the
 * container's chain or carries its comment deleted, the chain flushed and
 * removed. NULL when the table has none of them (nothing to do). */
char *pm_plan_del(const char *net, const char *cid, const ipt_table *t);
/* Fast paths: ADD and DEL without iptables-save (main.c decides when).
 * pm_jump_lines: the container's "-A TESSERA-HP-DNAT ..." lines (heap;
 * what the record of the container keeps; ADD inserts them first in the
 * chain, "-I TESSERA-HP-DNAT 1 ...", so that the newest mapping of a host
 * port wins over a rule an earlier container left).
 * pm_plan_add_fast: the container's chain declared and filled and those
 * jumps inserted, trusting that the shared chains and their entry rules are
 * there and the container has no jumps yet; iptables-restore refuses it
 * when a shared chain is missing.
 * pm_plan_del_fast: those jumps deleted ("-D", exactly as recorded) and the
 * container's chain flushed and removed; refused when any of it is gone. */
char *pm_jump_lines(const pm_conf *c, const char *cid);
char *pm_plan_add_fast(const pm_conf *c, const char *cid, const char *jumps);
char *pm_plan_del_fast(const char *net, const char *cid, const char *jumps);
/* CHECK: every rule ADD makes is in the table. false with e set
 * (PM_E_MISSING) naming the first one missing. */
bool pm_plan_check(const pm_conf *c, const char *cid, const ipt_table *t,
                   cnip_error *e) TS_MUST_CHECK;

#endif
