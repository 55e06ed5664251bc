/* netfilter.c: the agent's iptables rules for a CNI network (netfilter.h). */
#include "services/agent/netfilter.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "libcommon/proc.h"

#define IPT_TIMEOUT_MS 30000
#define IPT_SAVE_CAP (64u << 20)
#define CHAIN_LEN 29 /* iptables' limit: 28 characters and the NUL */

/* ---- the policy -------------------------------------------------------------------- */

void netfilter_policy_default(netfilter_policy *p)
{
    memset(p, 0, sizeof(*p));
    strcpy(p->deny[p->n_deny++], "169.254.0.0/16");
    p->outbound = NETFILTER_OUT_NAT;
}

bool netfilter_cidr_parse(const char *s, char out[NETFILTER_CIDR_LEN])
{
    char ip[INET_ADDRSTRLEN];
    const char *slash = strchr(s, '/');
    size_t n = slash ? (size_t)(slash - s) : strlen(s);
    if (n == 0 || n >= sizeof(ip)) return false;
    memcpy(ip, s, n);
    ip[n] = '\0';
    struct in_addr a;
    if (inet_pton(AF_INET, ip, &a) != 1) return false;
    int prefix = 32;
    if (slash) {
        const char *p = slash + 1;
        if (!*p || strlen(p) > 2) return false;
        prefix = 0;
        for (; *p; p++) {
            if (*p < '0' || *p > '9') return false;
            prefix = prefix * 10 + (*p - '0');
        }
        if (prefix > 32) return false;
    }
    uint32_t mask = prefix ? 0xffffffffu << (32 - prefix) : 0;
    a.s_addr = htonl(ntohl(a.s_addr) & mask);
    inet_ntop(AF_INET, &a, ip, sizeof(ip));
    snprintf(out, NETFILTER_CIDR_LEN, "%s/%d", ip, prefix);
    return true;
}

/* The next comma-separated item of *p (spaces around it dropped) into buf;
 * false at the end. */
static bool _item(const char **p, char *buf, size_t size)
{
    while (**p == ',' || **p == ' ' || **p == '\t')
        (*p)++;
    if (!**p) return false;
    const char *end = strchr(*p, ',');
    size_t n = end ? (size_t)(end - *p) : strlen(*p);
    while (n && ((*p)[n - 1] == ' ' || (*p)[n - 1] == '\t'))
        n--;
    snprintf(buf, size, "%.*s", (int)n, *p);
    *p += n;
    return true;
}

static bool _cidrs(const char *option, const char *text, char (*out)[NETFILTER_CIDR_LEN], int *n,
                   ts_err *err)
{
    *n = 0;
    char item[64];
    for (const char *p = text ? text : ""; _item(&p, item, sizeof(item));) {
        if (*n == NETFILTER_MAX_CIDRS) {
            ts_err_set(err, "%s: at most %d networks", option, NETFILTER_MAX_CIDRS);
            return false;
        }
        if (!netfilter_cidr_parse(item, out[*n])) {
            ts_err_set(err, "%s: '%s' is not an IPv4 network (a.b.c.d/len or a.b.c.d)", option,
                       item);
            return false;
        }
        (*n)++;
    }
    return true;
}

static bool _ports(const char *text, netfilter_policy *p, ts_err *err)
{
    char item[64];
    for (const char *s = text ? text : ""; _item(&s, item, sizeof(item));) {
        if (p->n_host_ports == NETFILTER_MAX_PORTS) {
            ts_err_set(err, "agent.cni_host_ports: at most %d ports", NETFILTER_MAX_PORTS);
            return false;
        }
        netfilter_port *hp = &p->host_ports[p->n_host_ports];
        const char *num = item;
        strcpy(hp->proto, "tcp");
        char *slash = strchr(item, '/');
        if (slash) {
            *slash = '\0';
            if (strcasecmp(item, "tcp") != 0 && strcasecmp(item, "udp") != 0) {
                ts_err_set(err, "agent.cni_host_ports: '%s/%s': the protocol is tcp or udp", item,
                           slash + 1);
                return false;
            }
            snprintf(hp->proto, sizeof(hp->proto), "%s", strcasecmp(item, "udp") ? "tcp" : "udp");
            num = slash + 1;
        }
        char *end;
        long v = strtol(num, &end, 10);
        if (!*num || *end || v < 1 || v > 65535) {
            ts_err_set(err, "agent.cni_host_ports: '%s' is not a port (1-65535)", num);
            return false;
        }
        hp->port = (int)v;
        p->n_host_ports++;
    }
    return true;
}

bool netfilter_policy_parse(const char *deny, const char *publish_from, const char *host_ports,
                            const char *outbound, netfilter_policy *p, ts_err *err)
{
    memset(p, 0, sizeof(*p));
    if (!_cidrs("agent.cni_deny", deny, p->deny, &p->n_deny, err) ||
        !_cidrs("agent.cni_publish_from", publish_from, p->publish_from, &p->n_publish_from, err) ||
        !_ports(host_ports, p, err))
        return false;
    if (!outbound || !*outbound || strcmp(outbound, "nat") == 0) {
        p->outbound = NETFILTER_OUT_NAT;
    } else if (strcmp(outbound, "routed") == 0) {
        p->outbound = NETFILTER_OUT_ROUTED;
    } else if (strcmp(outbound, "none") == 0) {
        p->outbound = NETFILTER_OUT_NONE;
    } else {
        ts_err_set(err, "agent.cni_outbound: '%s': nat, routed or none", outbound);
        return false;
    }
    return true;
}

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

typedef struct nf_rule {
    char *line; /* "-A CHAIN ..." as saved */
    char **tok; /* its words, unquoted: tok[0] "-A", tok[1] the chain */
    int n;
} nf_rule;

typedef struct nf_table {
    char **chains;
    int n_chains;
    nf_rule *rules;
    int n_rules;
} nf_table;

/* Words of a saved rule: "..." quoted with \" and \\ escapes, as
 * iptables-save writes comments. false on an unterminated quote. */
static bool _split(const char *line, nf_rule *r)
{
    char *buf = ts_malloc(strlen(line) + 1), *w = buf;
    int cap = 16;
    r->tok = ts_malloc(sizeof(char *) * (size_t)cap);
    r->n = 0;
    for (const char *p = line;;) {
        while (*p == ' ' || *p == '\t')
            p++;
        if (!*p) break;
        if (r->n + 1 >= cap) {
            cap *= 2;
            r->tok = ts_realloc(r->tok, sizeof(char *) * (size_t)cap);
        }
        r->tok[r->n++] = w;
        if (*p == '"') {
            for (p++; *p && *p != '"'; p++) {
                if (*p == '\\' && p[1]) p++;
                *w++ = *p;
            }
            if (*p != '"') {
                free(buf);
                free(r->tok);
                r->tok = NULL;
                r->n = 0;
                return false;
            }
            p++;
        } else {
            while (*p && *p != ' ' && *p != '\t')
                *w++ = *p++;
        }
        *w++ = '\0';
    }
    if (r->n == 0) free(buf); /* tok[0] owns buf otherwise */
    return true;
}

/* The section *name of a save: its chains and rules (lines it cannot read
 * are left out: they are nobody's we know). */
static void _table_parse(const char *save, const char *name, nf_table *t)
{
    memset(t, 0, sizeof(*t));
    bool in = false;
    int cap_c = 0, cap_r = 0;
    for (const char *p = save ? save : ""; *p;) {
        const char *nl = strchr(p, '\n');
        size_t n = nl ? (size_t)(nl - p) : strlen(p);
        char *line = ts_strndup(p, n);
        p += n + (nl ? 1 : 0);
        if (line[0] == '*') {
            in = strcmp(line + 1, name) == 0;
        } else if (in && strcmp(line, "COMMIT") == 0) {
            in = false;
        } else if (in && line[0] == ':') {
            if (t->n_chains == cap_c) {
                cap_c = cap_c ? cap_c * 2 : 16;
                t->chains = ts_realloc(t->chains, sizeof(char *) * (size_t)cap_c);
            }
            t->chains[t->n_chains++] = ts_strndup(line + 1, strcspn(line + 1, " "));
        } else if (in && strncmp(line, "-A ", 3) == 0) {
            nf_rule r = {.line = line};
            if (_split(line, &r) && r.n >= 2) { /* else r.tok is NULL or short */
                if (t->n_rules == cap_r) {
                    cap_r = cap_r ? cap_r * 2 : 64;
                    t->rules = ts_realloc(t->rules, sizeof(nf_rule) * (size_t)cap_r);
                }
                t->rules[t->n_rules++] = r;
                continue; /* the rule keeps line */
            }
            if (r.tok) {
                if (r.n) free(r.tok[0]);
                free(r.tok);
            }
        }
        free(line);
    }
}

static void _table_free(nf_table *t)
{
    for (int i = 0; i < t->n_chains; i++)
        free(t->chains[i]);
    for (int i = 0; i < t->n_rules; i++) {
        free(t->rules[i].line);
        if (t->rules[i].n) free(t->rules[i].tok[0]);
        free(t->rules[i].tok);
    }
    free(t->chains);
    free(t->rules);
    memset(t, 0, sizeof(*t));
}

static bool _has_chain(const nf_table *t, const char *chain)
{
    for (int i = 0; i < t->n_chains; i++)
        if (strcmp(t->chains[i], chain) == 0) return true;
    return false;
}

/* The value after opt in the rule (NULL: none); *negated when a "!" is
 * before opt. */
static const char *_opt(const nf_rule *r, const char *opt, bool *negated)
{
    for (int i = 2; i + 1 < r->n; i++) {
        if (strcmp(r->tok[i], opt) != 0) continue;
        if (negated) *negated = strcmp(r->tok[i - 1], "!") == 0;
        return r->tok[i + 1];
    }
    return NULL;
}

static bool _eq(const char *a, const char *b)
{
    return a && b && strcmp(a, b) == 0;
}

/* "-D ..." for a saved rule. */
static void _delete_line(FILE *f, const nf_rule *r)
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

static bool _is_masq(const nf_rule *r, const char *net)
{
    char comment[96];
    snprintf(comment, sizeof(comment), "tessera:%s", net);
    return _eq(r->tok[1], "POSTROUTING") && _eq(_opt(r, "--comment", NULL), comment) &&
           _eq(_opt(r, "-j", NULL), "MASQUERADE");
}

char *netfilter_plan_setup(const netfilter_net *n, const netfilter_kernel *ks, int nk,
                           const char *save)
{
    const char *net = n->network;
    char in[CHAIN_LEN], fwd[CHAIN_LEN], ses[CHAIN_LEN], sc[CHAIN_LEN];
    _in(net, in);
    _fwd(net, fwd);
    _ses(net, ses);
    nf_table filter, nat;
    _table_parse(save, "filter", &filter);
    _table_parse(save, "nat", &nat);
    char *text = NULL;
    size_t len = 0;
    FILE *f = _text(&text, &len);
    fputs("*filter\n", f);
    /* declared (and so flushed) first: refilled below, in the same transaction */
    fprintf(f, ":%s - [0:0]\n:%s - [0:0]\n:%s - [0:0]\n", in, fwd, ses);
    for (int i = 0; i < nk; i++) {
        bool seen = false;
        for (int j = 0; j < i && !seen; j++)
            seen = strcmp(ks[j].session, ks[i].session) == 0;
        if (seen) continue;
        _sess_chain(ks[i].session, sc);
        fprintf(f, ":%s - [0:0]\n", sc);
    }
    /* session chains the old TESSERA-SES used and no kernel does now */
    for (int i = 0; i < filter.n_rules; i++) {
        const nf_rule *r = &filter.rules[i];
        const char *to = _opt(r, "-g", NULL);
        if (!_eq(r->tok[1], ses) || !to || !_has_chain(&filter, to)) continue;
        bool used = false, dup = false;
        for (int j = 0; j < nk && !used; j++) {
            _sess_chain(ks[j].session, sc);
            used = strcmp(sc, to) == 0;
        }
        for (int j = 0; j < i && !dup; j++)
            dup = _eq(filter.rules[j].tok[1], ses) && _eq(_opt(&filter.rules[j], "-g", NULL), to);
        if (!used && !dup) fprintf(f, "-F %s\n-X %s\n", to, to);
    }
    /* the entry jumps: one each, first in their chain */
    entry e[3];
    int ne = _entries(net, e);
    bool have[3] = {false, false, false};
    for (int i = 0; i < filter.n_rules; i++) {
        const nf_rule *r = &filter.rules[i];
        const char *to = _opt(r, "-j", NULL);
        if (!_eq(to, in) && !_eq(to, fwd)) continue;
        int match = -1;
        for (int k = 0; k < ne && match < 0; k++) {
            bool neg = false;
            if (_eq(r->tok[1], e[k].chain) && _eq(to, e[k].target) &&
                _eq(_opt(r, e[k].dir, &neg), net) && !neg &&
                !_opt(r, e[k].dir[1] == 'i' ? "-o" : "-i", NULL))
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
        fprintf(f, "-A %s ! -s %s -j DROP\n", ses, own);
    else
        fprintf(f, "-A %s -j DROP\n", ses);
    fputs("COMMIT\n*nat\n", f);
    /* outbound NAT: exactly one rule with nat, none otherwise */
    char subnet[NETFILTER_CIDR_LEN] = "";
    bool want = n->policy->outbound == NETFILTER_OUT_NAT && n->subnet &&
                netfilter_cidr_parse(n->subnet, subnet);
    bool kept = false;
    for (int i = 0; i < nat.n_rules; i++) {
        const nf_rule *r = &nat.rules[i];
        if (!_is_masq(r, net)) continue;
        bool neg = false;
        bool right = want && !kept && _eq(_opt(r, "-s", NULL), subnet) &&
                     _eq(_opt(r, "-d", &neg), subnet) && neg;
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
    fclose(f);
    _table_free(&filter);
    _table_free(&nat);
    return text;
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
static bool _replaced(const netfilter_kernel *r, const netfilter_kernel *k)
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
        if (_replaced(&recs[i], k)) _kernel_rules(f, "-D", n->network, &recs[i]);
    /* then the session chains that emptied (once each) */
    for (int i = 0; i < nr; i++) {
        const netfilter_kernel *r = &recs[i];
        if (!_replaced(r, k) || strcmp(r->session, k->session) == 0 ||
            _session_used(recs, nr, r->session, k, NULL))
            continue;
        bool first = true;
        for (int j = 0; j < i && first; j++)
            first = !_replaced(&recs[j], k) || strcmp(recs[j].session, r->session) != 0;
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
    char in[CHAIN_LEN], fwd[CHAIN_LEN], ses[CHAIN_LEN];
    _in(net, in);
    _fwd(net, fwd);
    _ses(net, ses);
    nf_table filter, nat;
    _table_parse(save, "filter", &filter);
    _table_parse(save, "nat", &nat);
    char *text = NULL;
    size_t len = 0;
    FILE *f = _text(&text, &len);
    int changes = 0;
    fputs("*filter\n", f);
    for (int i = 0; i < filter.n_rules; i++) {
        const nf_rule *r = &filter.rules[i];
        const char *to = _opt(r, "-j", NULL);
        if ((_eq(to, in) || _eq(to, fwd)) && !_eq(r->tok[1], in) && !_eq(r->tok[1], fwd) &&
            !_eq(r->tok[1], ses)) {
            _delete_line(f, r);
            changes++;
        }
    }
    /* the network's chains and the session chains its TESSERA-SES goes to */
    const char **gone = ts_calloc((size_t)filter.n_rules + 3, sizeof(char *));
    int n_gone = 0;
    const char *own[] = {in, fwd, ses};
    for (int k = 0; k < 3; k++)
        if (_has_chain(&filter, own[k])) gone[n_gone++] = own[k];
    for (int i = 0; i < filter.n_rules; i++) {
        const nf_rule *r = &filter.rules[i];
        const char *to = _opt(r, "-g", NULL);
        if (!_eq(r->tok[1], ses) || !to || !_has_chain(&filter, to)) continue;
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
    for (int i = 0; i < nat.n_rules; i++) {
        if (!_is_masq(&nat.rules[i], net)) continue;
        _delete_line(f, &nat.rules[i]);
        changes++;
    }
    fputs("COMMIT\n", f);
    fclose(f);
    free(gone);
    _table_free(&filter);
    _table_free(&nat);
    if (changes == 0) {
        free(text);
        return NULL;
    }
    return text;
}

/* ---- records ------------------------------------------------------------------ */

static bool _name_ok(const char *s, size_t max)
{
    size_t n = strlen(s);
    if (n == 0 || n > max) return false;
    for (const char *p = s; *p; p++)
        if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
              *p == '-' || *p == '_' || *p == '.'))
            return false;
    return s[0] != '.' && s[0] != '-';
}

static bool _mac_ok(const char *s)
{
    if (!*s) return true;
    if (strlen(s) != 17) return false;
    for (int i = 0; i < 17; i++) {
        bool colon = i % 3 == 2;
        if (colon ? s[i] != ':' : !((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
            return false;
    }
    return true;
}

/* Everything that goes into iptables-restore input is checked here. */
static bool _kernel_ok(const netfilter_kernel *k, ts_err *err)
{
    struct in_addr a;
    bool hex = strlen(k->session) == 16 && strspn(k->session, "0123456789abcdef") == 16;
    if (_name_ok(k->id, NETFILTER_ID_LEN - 1) && inet_pton(AF_INET, k->ip, &a) == 1 &&
        _mac_ok(k->mac) && hex)
        return true;
    ts_err_set(err, "kernel %.80s: not usable in a rule (ip '%s', mac '%s')", k->id, k->ip, k->mac);
    return false;
}

static char *_records_dir(const netfilter_net *n)
{
    return ts_asprintf("%s/%s", n->records_dir, n->network);
}

static bool _mkdirs(const char *path, ts_err *err)
{
    char *p = ts_strdup(path);
    bool ok = true;
    for (char *s = p + 1; ok; s++) {
        if (*s != '/' && *s) continue;
        char c = *s;
        *s = '\0';
        if (mkdir(p, 0700) < 0 && errno != EEXIST) {
            ts_err_set(err, "mkdir %s: %s", p, strerror(errno));
            ok = false;
        }
        *s = c;
        if (!c) break;
    }
    free(p);
    return ok;
}

/* The records of the network (heap array, *n of them). */
static netfilter_kernel *_records(const netfilter_net *n, int *count)
{
    *count = 0;
    char *dir = _records_dir(n);
    DIR *d = opendir(dir);
    free(dir);
    if (!d) return NULL;
    netfilter_kernel *ks = NULL;
    int cap = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        netfilter_kernel k;
        memset(&k, 0, sizeof(k));
        char name[256];
        ts_strlcpy(name, e->d_name, sizeof(name));
        char *f[4], *save = NULL;
        int nf = 0;
        for (char *t = strtok_r(name, ",", &save); t && nf < 4; t = strtok_r(NULL, ",", &save))
            f[nf++] = t;
        if (nf != 4) continue;
        ts_strlcpy(k.session, f[0], sizeof(k.session));
        ts_strlcpy(k.ip, f[1], sizeof(k.ip));
        ts_strlcpy(k.mac, strcmp(f[2], "-") == 0 ? "" : f[2], sizeof(k.mac));
        ts_strlcpy(k.id, f[3], sizeof(k.id));
        if (!_kernel_ok(&k, NULL)) continue;
        if (*count == cap) {
            cap = cap ? cap * 2 : 16;
            ks = ts_realloc(ks, sizeof(*ks) * (size_t)cap);
        }
        ks[(*count)++] = k;
    }
    closedir(d);
    return ks;
}

static char *_record_path(const netfilter_net *n, const netfilter_kernel *k)
{
    return ts_asprintf("%s/%s/%s,%s,%s,%s", n->records_dir, n->network, k->session, k->ip,
                       k->mac[0] ? k->mac : "-", k->id);
}

static bool _record_write(const netfilter_net *n, const netfilter_kernel *k, ts_err *err)
{
    char *dir = _records_dir(n);
    bool ok = _mkdirs(dir, err);
    free(dir);
    if (!ok) return false;
    char *path = _record_path(n, k);
    int fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd < 0) ts_err_set(err, "create %s: %s", path, strerror(errno));
    if (fd >= 0) close(fd);
    free(path);
    return fd >= 0;
}

static void _record_remove(const netfilter_net *n, const netfilter_kernel *k)
{
    char *path = _record_path(n, k);
    (void)unlink(path);
    free(path);
}

/* ---- on the host ------------------------------------------------------------------ */

/* One thing at a time changes rules and records in this process: a setup, a
 * removal, or a batch of kernels' ADDs and DELs (_busy). A kernel's change
 * is queued; whoever finds nothing running takes every change queued for
 * the network of the first and applies them in one restore while the others
 * wait for their result (group commit: kernels starting at once cost a few
 * iptables-restore runs, not one each). */
static pthread_mutex_t _mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t _cv = PTHREAD_COND_INITIALIZER;
static bool _busy;

typedef struct change {
    const netfilter_net *net;
    bool add;
    netfilter_kernel k; /* DEL: the id only */
    bool done, ok;
    ts_err err;
    struct change *next;
} change;
static change *_queue;

static void _exclusive_begin(void)
{
    pthread_mutex_lock(&_mu);
    while (_busy)
        pthread_cond_wait(&_cv, &_mu);
    _busy = true;
    pthread_mutex_unlock(&_mu);
}

static void _exclusive_end(void)
{
    pthread_mutex_lock(&_mu);
    _busy = false;
    pthread_cond_broadcast(&_cv);
    pthread_mutex_unlock(&_mu);
}

static bool _ipt(const char *const *argv, const char *in, char **out, ts_err *err)
{
    proc_opts o = {.argv = argv,
                   .stdin_data = in,
                   .stdin_len = in ? strlen(in) : 0,
                   .timeout_ms = IPT_TIMEOUT_MS,
                   .cap_bytes = IPT_SAVE_CAP};
    exec_result r;
    if (!proc_run(&o, &r, err)) {
        ts_err_prefix(err, "%s", argv[0]);
        return false;
    }
    bool ok = r.exit_code == 0 && !r.out_truncated;
    if (!ok) {
        char *msg = r.err_len ? r.err : r.out;
        size_t n = strlen(msg);
        while (n && (msg[n - 1] == '\n' || msg[n - 1] == ' '))
            msg[--n] = '\0';
        ts_err_set(err, "%s: %s%.300s", argv[0], r.timed_out ? "timed out " : "", msg);
    }
    if (ok && out) {
        *out = r.out;
        r.out = NULL;
    }
    exec_result_free(&r);
    return ok;
}

static bool _restore(const char *rules, ts_err *err)
{
    const char *argv[] = {"iptables-restore", "--noflush", "--wait=10", NULL};
    return _ipt(argv, rules, NULL, err);
}

static bool _save(char **out, ts_err *err)
{
    const char *argv[] = {"iptables-save", NULL};
    return _ipt(argv, NULL, out, err);
}

static bool _net_ok(const netfilter_net *n, ts_err *err)
{
    if (_name_ok(n->network, 15)) return true;
    ts_err_set(err, "network '%s': want 1 to 15 letters, digits, '_', '.', '-'", n->network);
    return false;
}

/* Exclusive: the records (those of kernels gone from kernels_dir dropped),
 * the tables, one restore. */
static bool _setup_now(const netfilter_net *n, ts_err *err)
{
    int nk = 0;
    netfilter_kernel *ks = _records(n, &nk);
    for (int i = 0; n->kernels_dir && i < nk;) {
        char *kdir = ts_asprintf("%s/%s", n->kernels_dir, ks[i].id);
        bool there = access(kdir, F_OK) == 0;
        free(kdir);
        if (there) {
            i++;
            continue;
        }
        _record_remove(n, &ks[i]);
        ks[i] = ks[--nk];
    }
    char *save = NULL;
    bool ok = _save(&save, err);
    if (ok) {
        char *rules = netfilter_plan_setup(n, ks, nk, save);
        ok = _restore(rules, err);
        free(rules);
    }
    free(save);
    free(ks);
    if (!ok) ts_err_prefix(err, "network %s: rules", n->network);
    return ok;
}

bool netfilter_setup(const netfilter_net *n, ts_err *err)
{
    if (!_net_ok(n, err)) return false;
    _exclusive_begin();
    bool ok = _setup_now(n, err);
    _exclusive_end();
    return ok;
}

/* A plan's lines between "*filter" and "COMMIT" into f; frees the plan. */
static void _body(FILE *f, char *plan)
{
    size_t head = strlen("*filter\n"), n = strlen(plan);
    if (n > head + strlen("COMMIT\n")) fwrite(plan + head, 1, n - head - strlen("COMMIT\n"), f);
    free(plan);
}

/* Exclusive: a batch of one network's changes, in order, in one restore
 * (records first: what a rebuild makes); refused (a chain or rule is not
 * what the records say): rebuild. Sets each change's ok and err. */
static void _apply(change *batch)
{
    const netfilter_net *n = batch->net;
    int nr = 0;
    netfilter_kernel *recs = _records(n, &nr);
    char *text = NULL;
    size_t len = 0;
    FILE *f = _text(&text, &len);
    fputs("*filter\n", f);
    int changes = 0;
    for (change *c = batch; c; c = c->next) {
        c->ok = true;
        if (c->add) {
            char *plan = netfilter_plan_add(n, &c->k, recs, nr);
            for (int i = 0; i < nr;) {
                if (!_replaced(&recs[i], &c->k)) {
                    i++;
                    continue;
                }
                _record_remove(n, &recs[i]);
                recs[i] = recs[--nr];
            }
            if (!_record_write(n, &c->k, &c->err)) {
                c->ok = false;
                free(plan);
                continue;
            }
            _body(f, plan);
            recs = ts_realloc(recs, sizeof(*recs) * (size_t)(nr + 1));
            recs[nr++] = c->k;
        } else {
            int at = -1;
            for (int i = 0; i < nr && at < 0; i++)
                if (strcmp(recs[i].id, c->k.id) == 0) at = i;
            if (at < 0) continue; /* nothing of it: nothing to do */
            _body(f, netfilter_plan_del(n, &recs[at], recs, nr));
            _record_remove(n, &recs[at]);
            recs[at] = recs[--nr];
        }
        changes++;
    }
    fputs("COMMIT\n", f);
    fclose(f);
    ts_err quick = {{0}}, err = {{0}};
    if (changes && !_restore(text, &quick) && !_setup_now(n, &err)) {
        for (change *c = batch; c; c = c->next) {
            if (!c->ok) continue;
            c->ok = false;
            c->err = err;
            if (c->add) _record_remove(n, &c->k);
        }
    }
    free(text);
    free(recs);
}

/* Queue c and wait until it is applied (by this thread or another). */
static bool _submit(change *c, ts_err *err)
{
    pthread_mutex_lock(&_mu);
    change **tail = &_queue;
    while (*tail)
        tail = &(*tail)->next;
    c->next = NULL;
    *tail = c;
    while (!c->done) {
        if (_busy) {
            pthread_cond_wait(&_cv, &_mu);
            continue;
        }
        _busy = true;
        change *batch = NULL, **bt = &batch;
        const char *net = _queue->net->network;
        for (change **p = &_queue; *p;) {
            change *x = *p;
            if (strcmp(x->net->network, net) != 0) {
                p = &x->next;
                continue;
            }
            *p = x->next;
            x->next = NULL;
            *bt = x;
            bt = &x->next;
        }
        pthread_mutex_unlock(&_mu);
        _apply(batch);
        pthread_mutex_lock(&_mu);
        for (change *x = batch, *next; x; x = next) {
            next = x->next; /* x is its waiter's, gone once it is done */
            x->done = true;
        }
        _busy = false;
        pthread_cond_broadcast(&_cv);
    }
    bool ok = c->ok;
    if (!ok && err) *err = c->err;
    pthread_mutex_unlock(&_mu);
    return ok;
}

bool netfilter_kernel_add(const netfilter_net *n, const netfilter_kernel *k, ts_err *err)
{
    if (!_net_ok(n, err) || !_kernel_ok(k, err)) return false;
    change c = {.net = n, .add = true, .k = *k};
    return _submit(&c, err);
}

bool netfilter_kernel_record(const netfilter_net *n, const netfilter_kernel *k, ts_err *err)
{
    if (!_net_ok(n, err) || !_kernel_ok(k, err)) return false;
    _exclusive_begin();
    int nr = 0;
    netfilter_kernel *recs = _records(n, &nr);
    bool known = false;
    for (int i = 0; i < nr && !known; i++)
        known = strcmp(recs[i].id, k->id) == 0;
    bool ok = known || _record_write(n, k, err);
    free(recs);
    _exclusive_end();
    return ok;
}

bool netfilter_kernel_del(const netfilter_net *n, const char *kernel_id, ts_err *err)
{
    if (!_net_ok(n, err)) return false;
    change c = {.net = n, .add = false};
    ts_strlcpy(c.k.id, kernel_id, sizeof(c.k.id));
    return _submit(&c, err);
}

bool netfilter_remove(const char *network, const char *records_dir, ts_err *err)
{
    netfilter_net n = {.network = network, .records_dir = records_dir};
    if (!_net_ok(&n, err)) return false;
    _exclusive_begin();
    char *save = NULL;
    bool ok = _save(&save, err);
    char *rules = ok ? netfilter_plan_remove(network, save) : NULL;
    if (rules) ok = _restore(rules, err);
    free(rules);
    free(save);
    if (ok) {
        int nr = 0;
        netfilter_kernel *recs = _records(&n, &nr);
        for (int i = 0; i < nr; i++)
            _record_remove(&n, &recs[i]);
        free(recs);
        char *dir = _records_dir(&n);
        (void)rmdir(dir);
        free(dir);
    }
    _exclusive_end();
    if (!ok) ts_err_prefix(err, "network %s: removing its rules", network);
    return ok;
}
