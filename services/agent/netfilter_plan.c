/* netfilter_plan.c: the agent's iptables rules as text (netfilter_plan.h). */
#include "services/agent/netfilter_plan.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "libcommon/ipt.h"

#define CHAIN_LEN 29 /* iptables' limit: 28 characters and the NUL */

/* ---- names ------------------------------------------------------------------------ */

void netfilter_session_key(const char *network, const char *session_id, char out[17])
{
    uint64_t h = ts_fnv1a(TS_FNV_OFFSET, network, strlen(network) + 1); /* and its NUL */
    h = ts_fnv1a(h, session_id, strlen(session_id));
    snprintf(out, 17, "%016llx", (unsigned long long)h);
}

static void _in(const char *net, char out[CHAIN_LEN])
{
    snprintf(out, CHAIN_LEN, "TESSERA-IN-%s", net);
}

static void _fwd(const char *net, char out[CHAIN_LEN])
{
    snprintf(out, CHAIN_LEN, "TESSERA-FWD-%s", net);
}

static void _ses(const char *net, char out[CHAIN_LEN])
{
    snprintf(out, CHAIN_LEN, "TESSERA-SES-%s", net);
}

static void _sess_chain(const char *session, char out[CHAIN_LEN])
{
    snprintf(out, CHAIN_LEN, "TESSERA-S-%s", session);
}

/* ---- iptables-save output ------------------------------------------------------- */

static bool _eq(const char *a, const char *b)
{
    return a && b && strcmp(a, b) == 0;
}

/* "-D ..." for a saved rule. */
static void _delete_line(FILE *f, const ipt_rule *r)
{
    fprintf(f, "-D%s\n", r->line + 2);
}

/* ---- the rules ------------------------------------------------------------------ */

static FILE *_text(char **text, size_t *len)
{
    FILE *f = open_memstream(text, len);
    if (!f) ts_panic("open_memstream: out of memory");
    return f;
}

/* A kernel's two rules; op is "-A", "-D", or "-I" (which puts the SES rule
 * first: before its final DROP). */
static void _kernel_rules(FILE *f, const char *op, const char *net, const netfilter_kernel *k)
{
    char ses[CHAIN_LEN], sc[CHAIN_LEN];
    _ses(net, ses);
    _sess_chain(k->session, sc);
    bool insert = strcmp(op, "-I") == 0;
    fprintf(f, "%s %s%s -s %s/32", op, ses, insert ? " 1" : "", k->ip);
    if (k->mac[0]) fprintf(f, " -m mac --mac-source %s", k->mac);
    fprintf(f, " -m comment --comment \"tessera:%s:%s\" -g %s\n", net, k->id, sc);
    fprintf(f, "%s %s -d %s/32 -m comment --comment \"tessera:%s:%s\" -j ACCEPT\n",
            insert ? "-A" : op, sc, k->ip, net, k->id);
}

/* TESSERA-IN-<net>: what containers may send to the host. */
static void _input_rules(FILE *f, const netfilter_net *n)
{
    char in[CHAIN_LEN];
    _in(n->network, in);
    fprintf(f, "-A %s -s 127.0.0.0/8 -j DROP\n", in);
    fprintf(f, "-A %s -d 127.0.0.0/8 -m conntrack ! --ctstate RELATED,ESTABLISHED,DNAT -j DROP\n",
            in);
    fprintf(f, "-A %s -m conntrack --ctstate RELATED,ESTABLISHED -j ACCEPT\n", in);
    const netfilter_policy *p = n->policy;
    for (int i = 0; i < p->n_host_ports; i++)
        fprintf(f, "-A %s -p %s -m %s --dport %d -j ACCEPT\n", in, p->host_ports[i].proto,
                p->host_ports[i].proto, p->host_ports[i].port);
    fprintf(f, "-A %s -j DROP\n", in);
}

/* TESSERA-FWD-<net>: through the host, into and out of the bridge. */
static void _forward_rules(FILE *f, const netfilter_net *n)
{
    char fwd[CHAIN_LEN], ses[CHAIN_LEN];
    const char *br = n->network;
    const netfilter_policy *p = n->policy;
    _fwd(br, fwd);
    _ses(br, ses);
    fprintf(f, "-A %s -m conntrack --ctstate DNAT --ctorigdst 127.0.0.0/8 -j DROP\n", fwd);
    fprintf(f, "-A %s -i %s -o %s -j %s\n", fwd, br, br, ses);
    fprintf(f, "-A %s -i %s -o %s -j DROP\n", fwd, br, br);
    fprintf(f, "-A %s -m conntrack --ctstate RELATED,ESTABLISHED -j RETURN\n", fwd);
    if (p->n_publish_from == 0)
        fprintf(f, "-A %s -o %s -m conntrack --ctstate DNAT -j RETURN\n", fwd, br);
    for (int i = 0; i < p->n_publish_from; i++)
        fprintf(f, "-A %s -s %s -o %s -m conntrack --ctstate DNAT -j RETURN\n", fwd,
                p->publish_from[i], br);
    fprintf(f, "-A %s -o %s -j DROP\n", fwd, br);
    fprintf(f, "-A %s -i %s -j %s\n", fwd, br, ses);
    for (int i = 0; i < p->n_deny; i++)
        fprintf(f, "-A %s -d %s -j DROP\n", fwd, p->deny[i]);
    if (p->outbound == NETFILTER_OUT_NONE) fprintf(f, "-A %s -j DROP\n", fwd);
}

/* A plan over a save: the network's own chains, the save's filter and nat
 * tables, and the text written. */
typedef struct plan {
    char in[CHAIN_LEN], fwd[CHAIN_LEN], ses[CHAIN_LEN];
    ipt_table filter, nat;
    char *text;
    size_t len;
    FILE *f;
} plan;

static void _plan_open(plan *p, const char *net, const char *save)
{
    _in(net, p->in);
    _fwd(net, p->fwd);
    _ses(net, p->ses);
    ipt_table_read(save, "filter", &p->filter);
    ipt_table_read(save, "nat", &p->nat);
    p->text = NULL;
    p->f = _text(&p->text, &p->len);
}

/* The text (heap); the tables freed. */
static char *_plan_close(plan *p)
{
    fclose(p->f);
    ipt_table_free(&p->filter);
    ipt_table_free(&p->nat);
    return p->text;
}

/* The entry jumps: chain, "-i" or "-o", target. */
typedef struct entry {
    const char *chain, *dir;
    char target[CHAIN_LEN];
} entry;

static int _entries(const char *net, entry out[3])
{
    out[0] = (entry){.chain = "INPUT", .dir = "-i"};
    _in(net, out[0].target);
    out[1] = (entry){.chain = "FORWARD", .dir = "-o"};
    _fwd(net, out[1].target);
    out[2] = (entry){.chain = "FORWARD", .dir = "-i"};
    _fwd(net, out[2].target);
    return 3;
}

static bool _is_masq(const ipt_rule *r, const char *net)
{
    char comment[96];
    snprintf(comment, sizeof(comment), "tessera:%s", net);
    return _eq(r->tok[1], "POSTROUTING") && _eq(ipt_rule_opt(r, "--comment", NULL), comment) &&
           _eq(ipt_rule_opt(r, "-j", NULL), "MASQUERADE");
}

char *netfilter_plan_setup(const netfilter_net *n, const netfilter_kernel *ks, int nk,
                           const char *save)
{
    const char *net = n->network;
    char sc[CHAIN_LEN];
    plan p;
    _plan_open(&p, net, save);
    FILE *f = p.f;
    fputs("*filter\n", f);
    /* declared (and so flushed) first: refilled below, in the same transaction */
    fprintf(f, ":%s - [0:0]\n:%s - [0:0]\n:%s - [0:0]\n", p.in, p.fwd, p.ses);
    for (int i = 0; i < nk; i++) {
        bool seen = false;
        for (int j = 0; j < i && !seen; j++)
            seen = strcmp(ks[j].session, ks[i].session) == 0;
        if (seen) continue;
        _sess_chain(ks[i].session, sc);
        fprintf(f, ":%s - [0:0]\n", sc);
    }
    /* session chains the old TESSERA-SES used and no kernel does now */
    for (int i = 0; i < p.filter.n_rules; i++) {
        const ipt_rule *r = &p.filter.rules[i];
        const char *to = ipt_rule_opt(r, "-g", NULL);
        if (!_eq(r->tok[1], p.ses) || !to || !ipt_table_has_chain(&p.filter, to)) continue;
        bool used = false, dup = false;
        for (int j = 0; j < nk && !used; j++) {
            _sess_chain(ks[j].session, sc);
            used = strcmp(sc, to) == 0;
        }
        for (int j = 0; j < i && !dup; j++)
            dup = _eq(p.filter.rules[j].tok[1], p.ses) &&
                  _eq(ipt_rule_opt(&p.filter.rules[j], "-g", NULL), to);
        if (!used && !dup) fprintf(f, "-F %s\n-X %s\n", to, to);
    }
    /* the entry jumps: one each, first in their chain */
    entry e[3];
    int ne = _entries(net, e);
    bool have[3] = {false, false, false};
    for (int i = 0; i < p.filter.n_rules; i++) {
        const ipt_rule *r = &p.filter.rules[i];
        const char *to = ipt_rule_opt(r, "-j", NULL);
        if (!_eq(to, p.in) && !_eq(to, p.fwd)) continue;
        int match = -1;
        for (int k = 0; k < ne && match < 0; k++) {
            bool neg = false;
            if (_eq(r->tok[1], e[k].chain) && _eq(to, e[k].target) &&
                _eq(ipt_rule_opt(r, e[k].dir, &neg), net) && !neg &&
                !ipt_rule_opt(r, e[k].dir[1] == 'i' ? "-o" : "-i", NULL))
                match = k;
        }
        if (match >= 0 && !have[match])
            have[match] = true;
        else
            _delete_line(f, r);
    }
    for (int k = 0; k < ne; k++)
        if (!have[k])
            fprintf(f, "-I %s 1 %s %s -m comment --comment \"tessera:%s\" -j %s\n", e[k].chain,
                    e[k].dir, net, net, e[k].target);
    _input_rules(f, n);
    _forward_rules(f, n);
    for (int i = 0; i < nk; i++)
        _kernel_rules(f, "-A", net, &ks[i]);
    /* a source outside the subnet is forged; a kernel without rules (alone
     * in its session) goes on: to the bridge-to-bridge DROP, or out */
    char own[NETFILTER_CIDR_LEN];
    if (n->subnet && netfilter_cidr_parse(n->subnet, own))
        fprintf(f, "-A %s ! -s %s -j DROP\n", p.ses, own);
    else
        fprintf(f, "-A %s -j DROP\n", p.ses);
    fputs("COMMIT\n*nat\n", f);
    /* outbound NAT: exactly one rule with nat, none otherwise */
    char subnet[NETFILTER_CIDR_LEN] = "";
    bool want = n->policy->outbound == NETFILTER_OUT_NAT && n->subnet &&
                netfilter_cidr_parse(n->subnet, subnet);
    bool kept = false;
    for (int i = 0; i < p.nat.n_rules; i++) {
        const ipt_rule *r = &p.nat.rules[i];
        if (!_is_masq(r, net)) continue;
        bool neg = false;
        bool right = want && !kept && _eq(ipt_rule_opt(r, "-s", NULL), subnet) &&
                     _eq(ipt_rule_opt(r, "-d", &neg), subnet) && neg;
        if (right)
            kept = true;
        else
            _delete_line(f, r);
    }
    if (want && !kept)
        fprintf(f,
                "-A POSTROUTING -s %s ! -d %s -m comment --comment \"tessera:%s\" -j "
                "MASQUERADE\n",
                subnet, subnet, net);
    fputs("COMMIT\n", f);
    return _plan_close(&p);
}

static bool _session_used(const netfilter_kernel *recs, int n, const char *session,
                          const netfilter_kernel *except_a, const netfilter_kernel *except_b)
{
    for (int i = 0; i < n; i++) {
        const netfilter_kernel *r = &recs[i];
        if (strcmp(r->session, session) != 0) continue;
        if (except_a && (strcmp(r->id, except_a->id) == 0 || strcmp(r->ip, except_a->ip) == 0))
            continue;
        if (except_b && strcmp(r->id, except_b->id) == 0) continue;
        return true;
    }
    return false;
}

/* The record is replaced by k: the same kernel (a repeated ADD) or the same
 * address (given again, its DEL never came). */
bool netfilter_plan_replaced(const netfilter_kernel *r, const netfilter_kernel *k)
{
    return strcmp(r->id, k->id) == 0 || strcmp(r->ip, k->ip) == 0;
}

char *netfilter_plan_add(const netfilter_net *n, const netfilter_kernel *k,
                         const netfilter_kernel *recs, int nr)
{
    char sc[CHAIN_LEN];
    char *text = NULL;
    size_t len = 0;
    FILE *f = _text(&text, &len);
    fputs("*filter\n", f);
    if (!_session_used(recs, nr, k->session, NULL, NULL)) {
        _sess_chain(k->session, sc);
        fprintf(f, ":%s - [0:0]\n", sc);
    }
    for (int i = 0; i < nr; i++)
        if (netfilter_plan_replaced(&recs[i], k)) _kernel_rules(f, "-D", n->network, &recs[i]);
    /* then the session chains that emptied (once each) */
    for (int i = 0; i < nr; i++) {
        const netfilter_kernel *r = &recs[i];
        if (!netfilter_plan_replaced(r, k) || strcmp(r->session, k->session) == 0 ||
            _session_used(recs, nr, r->session, k, NULL))
            continue;
        bool first = true;
        for (int j = 0; j < i && first; j++)
            first =
                !netfilter_plan_replaced(&recs[j], k) || strcmp(recs[j].session, r->session) != 0;
        _sess_chain(r->session, sc);
        if (first) fprintf(f, "-X %s\n", sc);
    }
    _kernel_rules(f, "-I", n->network, k);
    fputs("COMMIT\n", f);
    fclose(f);
    return text;
}

char *netfilter_plan_del(const netfilter_net *n, const netfilter_kernel *k,
                         const netfilter_kernel *recs, int nr)
{
    char *text = NULL;
    size_t len = 0;
    FILE *f = _text(&text, &len);
    fputs("*filter\n", f);
    _kernel_rules(f, "-D", n->network, k);
    if (!_session_used(recs, nr, k->session, NULL, k)) {
        char sc[CHAIN_LEN];
        _sess_chain(k->session, sc);
        fprintf(f, "-X %s\n", sc);
    }
    fputs("COMMIT\n", f);
    fclose(f);
    return text;
}

char *netfilter_plan_remove(const char *net, const char *save)
{
    plan p;
    _plan_open(&p, net, save);
    FILE *f = p.f;
    int changes = 0;
    fputs("*filter\n", f);
    for (int i = 0; i < p.filter.n_rules; i++) {
        const ipt_rule *r = &p.filter.rules[i];
        const char *to = ipt_rule_opt(r, "-j", NULL);
        if ((_eq(to, p.in) || _eq(to, p.fwd)) && !_eq(r->tok[1], p.in) && !_eq(r->tok[1], p.fwd) &&
            !_eq(r->tok[1], p.ses)) {
            _delete_line(f, r);
            changes++;
        }
    }
    /* the network's chains and the session chains its TESSERA-SES goes to */
    const char **gone = ts_calloc((size_t)p.filter.n_rules + 3, sizeof(char *));
    int n_gone = 0;
    const char *own[] = {p.in, p.fwd, p.ses};
    for (int k = 0; k < 3; k++)
        if (ipt_table_has_chain(&p.filter, own[k])) gone[n_gone++] = own[k];
    for (int i = 0; i < p.filter.n_rules; i++) {
        const ipt_rule *r = &p.filter.rules[i];
        const char *to = ipt_rule_opt(r, "-g", NULL);
        if (!_eq(r->tok[1], p.ses) || !to || !ipt_table_has_chain(&p.filter, to)) continue;
        bool dup = false;
        for (int j = 0; j < n_gone && !dup; j++)
            dup = strcmp(gone[j], to) == 0;
        if (!dup) gone[n_gone++] = to;
    }
    for (int i = 0; i < n_gone; i++)
        fprintf(f, "-F %s\n", gone[i]);
    for (int i = 0; i < n_gone; i++)
        fprintf(f, "-X %s\n", gone[i]);
    changes += n_gone;
    fputs("COMMIT\n*nat\n", f);
    for (int i = 0; i < p.nat.n_rules; i++) {
        if (!_is_masq(&p.nat.rules[i], net)) continue;
        _delete_line(f, &p.nat.rules[i]);
        changes++;
    }
    fputs("COMMIT\n", f);
    free(gone);
    char *text = _plan_close(&p);
    if (changes == 0) {
        free(text);
        return NULL;
    }
    return text;
}
