/* netfilter.h: the agent's iptables rules for one CNI network on the host
 * (the rules themselves: netfilter_plan.h; the policy: netfilter_policy.h).
 *
 * The kernels of a network are kept as empty files in
 * <records_dir>/<net>/ (netfilter_records.h). Setup rebuilds the network's
 * chains from them in one iptables-restore (after an agent restart, or
 * whenever a faster change was refused); a kernel's ADD or DEL changes only
 * its two rules (and its session's chain when it is the first or the last of
 * it), in one iptables-restore and without iptables-save.
 *
 * One thing at a time changes rules and records in this process: a setup, a
 * removal, or a batch of kernels' ADDs and DELs. A kernel's change is queued;
 * whoever finds nothing running takes every change queued for the network of
 * the first and applies them in one restore while the others wait for their
 * result (group commit: kernels starting at once cost a few iptables-restore
 * runs, not one each). */
#ifndef AGENT_NETFILTER_H
#define AGENT_NETFILTER_H

#include "services/agent/netfilter_plan.h"

/* ---- on the host (one at a time in the process) -------------------------------- */

/* Read the tables and apply netfilter_plan_setup with the records. */
bool netfilter_setup(const netfilter_net *net, ts_err *err) TS_MUST_CHECK;
/* k's rules (setup when the quick change is refused), and its record. */
bool netfilter_kernel_add(const netfilter_net *net, const netfilter_kernel *k,
                          ts_err *err) TS_MUST_CHECK;
/* Record k unless its kernel has a record (nothing else: the next setup
 * makes its rules). For kernels that ran before the records existed. */
bool netfilter_kernel_record(const netfilter_net *net, const netfilter_kernel *k,
                             ts_err *err) TS_MUST_CHECK;
/* The kernel's rules and record; none is success (without running anything). */
bool netfilter_kernel_del(const netfilter_net *net, const char *kernel_id,
                          ts_err *err) TS_MUST_CHECK;
/* Every rule and chain of the network, and its records. */
bool netfilter_remove(const char *network, const char *records_dir, ts_err *err) TS_MUST_CHECK;

#endif
