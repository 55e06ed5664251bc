/* netfilter_records.h: the kernels of a network the agent's rules know
 * (netfilter.h), kept as empty files in <records_dir>/<net>/ named
 * "<session>,<ip>,<mac>,<kernel id>" ("-" for no MAC; tmpfs: gone at a
 * reboot, with the rules). Everything that goes into iptables-restore input
 * is checked here first. */
#ifndef AGENT_NETFILTER_RECORDS_H
#define AGENT_NETFILTER_RECORDS_H

#include "services/agent/netfilter_plan.h"

/* 1 to max letters, digits, '_', '.', '-', not starting with '.' or '-'. */
bool nfrec_name_ok(const char *s, size_t max) TS_MUST_CHECK;
/* A kernel usable in a rule (id, IPv4 address, MAC or "", session key);
 * false with err set (err may be NULL). */
bool nfrec_kernel_ok(const netfilter_kernel *k, ts_err *err) TS_MUST_CHECK;

/* The records of the network (heap array, *count of them; NULL when none). */
netfilter_kernel *nfrec_list(const netfilter_net *n, int *count);
bool nfrec_write(const netfilter_net *n, const netfilter_kernel *k, ts_err *err) TS_MUST_CHECK;
void nfrec_remove(const netfilter_net *n, const netfilter_kernel *k);
/* Every record of the network, and its directory. */
void nfrec_remove_all(const netfilter_net *n);

#endif
