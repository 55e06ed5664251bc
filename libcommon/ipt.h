/* ipt.h: iptables as text, for the agent's network rules
 * (services/agent/netfilter.c) and tessera-portmap (services/cni-portmap):
 *   - one table of `iptables-save` output: its chains and its rules, each
 *     rule split into words the way iptables-save quotes them ("..." with \"
 *     and \\ escapes, as in comments);
 *   - iptables-save and iptables-restore run as programs (libcommon/proc.c),
 *     found in PATH or in the sbin directories a CNI plugin's PATH may lack. */
#ifndef TESSERA_IPT_H
#define TESSERA_IPT_H

#include "libcommon/common.h"

typedef struct ipt_rule {
    char *line; /* "-A CHAIN ..." as saved */
    char **tok; /* its words, unquoted: tok[0] "-A", tok[1] the chain */
    int n_tok;
} ipt_rule;

typedef struct ipt_table {
    char **chains; /* every chain declared in the section */
    int n_chains;
    ipt_rule *rules; /* every rule in the section */
    int n_rules;
} ipt_table;

/* The section *<name> ("nat", "filter") of a save (none: an empty table).
 * false with err set, and t empty, on a line it cannot read. */
bool ipt_table_parse(const char *save, const char *name, ipt_table *t, ts_err *err) TS_MUST_CHECK;
/* The same, leaving out the lines it cannot read (they are nobody's we know). */
void ipt_table_read(const char *save, const char *name, ipt_table *t);
void ipt_table_free(ipt_table *t);
bool ipt_table_has_chain(const ipt_table *t, const char *chain) TS_MUST_CHECK;

/* The value after the first occurrence of opt in the rule, or NULL; when
 * negated is not NULL, *negated says whether a "!" stands before opt. */
const char *ipt_rule_opt(const ipt_rule *r, const char *opt, bool *negated);

/* Run name (an iptables program) with args (NULL-terminated, at most 6),
 * in on its stdin (may be NULL), its stdout in *out (heap; out may be NULL).
 * false with err set when it cannot run, fails, times out or writes more
 * than 64 MiB. */
bool ipt_run(const char *name, const char *const *args, const char *in, char **out,
             ts_err *err) TS_MUST_CHECK;

#endif
