/* pm_rules.c: tessera-portmap's iptables rules as text (pm_rules.h). */
#include "services/cni-portmap/pm_rules.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *_chain(const ipt_rule *r)
{
    return r->tok[1];
}

/* Some rule of chain jumps to target (and has opt = val, when opt is given). */
static bool _has_rule(const ipt_table *t, const char *chain, const char *target, const char *opt,
                      const char *val)
{
    for (int i = 0; i < t->n_rules; i++) {
        const ipt_rule *r = &t->rules[i];
        if (strcmp(_chain(r), chain) != 0) continue;
        const char *j = ipt_rule_opt(r, "-j", NULL);
        if (!j || strcmp(j, target) != 0) continue;
        const char *v = opt ? ipt_rule_opt(r, opt, NULL) : NULL;
        if (!opt || (v && strcmp(v, val) == 0)) return true;
    }
    return false;
}

/* ---- names ------------------------------------------------------------------------ */

void pm_chain_name(const char *net, const char *cid, char out[PM_CHAIN_LEN])
{
    uint64_t h = 0xcbf29ce484222325ULL; /* FNV-1a 64 */
    const char *parts[] = {net, cid};
    for (int k = 0; k < 2; k++) {
        for (const unsigned char *p = (const unsigned char *)parts[k]; *p; p++) {
            h ^= *p;
            h *= 0x100000001b3ULL;
        }
        h *= 0x100000001b3ULL; /* a NUL byte between the two */
    }
    snprintf(out, PM_CHAIN_LEN, PM_CHAIN_PREFIX "%016llx", (unsigned long long)h);
}

void pm_comment(const char *net, const char *cid, char *out, size_t size)
{
    snprintf(out, size, "tessera-portmap:%s:%s", net, cid);
}

/* A plan for one container: its chain and comment, and the text written
 * into p->f (heap, NUL-terminated once closed). */
typedef struct plan {
    char chain[PM_CHAIN_LEN], comment[256];
    char *text;
    size_t len;
    FILE *f;
} plan;

static FILE *_plan_open(plan *p, const char *net, const char *cid)
{
    pm_chain_name(net, cid, p->chain);
    pm_comment(net, cid, p->comment, sizeof(p->comment));
    p->text = NULL;
    p->f = open_memstream(&p->text, &p->len);
    if (!p->f) ts_panic("open_memstream: out of memory");
    return p->f;
}

static char *_plan_close(plan *p)
{
    fclose(p->f);
    return p->text;
}

/* ---- DEL ------------------------------------------------------------------------------ */

/* Rules outside the container's chain that belong to the container: they
 * jump to its chain or carry its comment. Written as "-D ..." lines. */
static int _delete_jumps(FILE *f, const ipt_table *t, const char *chain, const char *comment)
{
    int n = 0;
    for (int i = 0; i < t->n_rules; i++) {
        const ipt_rule *r = &t->rules[i];
        if (strcmp(_chain(r), chain) == 0) continue;
        const char *j = ipt_rule_opt(r, "-j", NULL);
        const char *c = ipt_rule_opt(r, "--comment", NULL);
        if ((j && strcmp(j, chain) == 0) || (c && strcmp(c, comment) == 0)) {
            fprintf(f, "-D%s\n", r->line + 2);
            n++;
        }
    }
    return n;
}

char *pm_plan_del(const char *net, const char *cid, const ipt_table *t)
{
    plan p;
    FILE *f = _plan_open(&p, net, cid);
    fputs("*nat\n", f);
    int n = _delete_jumps(f, t, p.chain, p.comment);
    bool have = ipt_table_has_chain(t, p.chain);
    if (have) fprintf(f, "-F %s\n-X %s\n", p.chain, p.chain);
    fputs("COMMIT\n", f);
    char *text = _plan_close(&p);
    if (n == 0 && !have) {
        free(text);
        return NULL;
    }
    return text;
}

/* ---- ADD ------------------------------------------------------------------------------ */

static void _dest(FILE *f, const pm_mapping *m)
{
    if (m->host_ip[0]) fprintf(f, " -d %s/32", m->host_ip);
}

/* The container's chain: per mapping, the masquerade marks (snat), then DNAT. */
static void _container_rules(FILE *f, const pm_conf *c, const char *chain)
{
    for (int i = 0; i < c->n_maps; i++) {
        const pm_mapping *m = &c->maps[i];
        if (c->snat) {
            const char *from[] = {c->container_net, "127.0.0.0/8"};
            for (int k = 0; k < 2; k++) {
                fprintf(f, "-A %s", chain);
                _dest(f, m);
                fprintf(f, " -s %s -p %s -m %s --dport %d -j " PM_CHAIN_SETMARK "\n", from[k],
                        m->proto, m->proto, m->host_port);
            }
        }
        fprintf(f, "-A %s", chain);
        _dest(f, m);
        fprintf(f, " -p %s -m %s --dport %d -j DNAT --to-destination %s:%d\n", m->proto, m->proto,
                m->host_port, c->container_ip, m->container_port);
    }
}

/* The jumps from TESSERA-HP-DNAT: per protocol, the distinct host ports, 15 a rule. */
static void _jumps(FILE *f, const pm_conf *c, const char *chain, const char *comment)
{
    static const char *const protos[] = {"tcp", "udp"};
    for (int k = 0; k < 2; k++) {
        int n = 0;
        for (int i = 0; i < c->n_maps; i++) {
            const pm_mapping *m = &c->maps[i];
            if (strcmp(m->proto, protos[k]) != 0) continue;
            bool seen = false;
            for (int j = 0; j < i && !seen; j++)
                seen =
                    c->maps[j].host_port == m->host_port && strcmp(c->maps[j].proto, m->proto) == 0;
            if (seen) continue;
            if (n % PM_MULTIPORT_MAX == 0) {
                if (n) fprintf(f, " -j %s\n", chain);
                fprintf(f,
                        "-A " PM_CHAIN_DNAT " -p %s -m comment --comment \"%s\" -m multiport "
                        "--dports ",
                        protos[k], comment);
            } else {
                fputc(',', f);
            }
            fprintf(f, "%d", m->host_port);
            n++;
        }
        if (n) fprintf(f, " -j %s\n", chain);
    }
}

/* The container's jump lines ("-A TESSERA-HP-DNAT ...", as recorded) put
 * first in the chain ("-I TESSERA-HP-DNAT 1 ..."): a host port handed out
 * again goes to its new container even where a rule of an earlier one was
 * left behind (a DEL that never came), which would otherwise match first. */
static void _jumps_first(FILE *f, const char *jumps)
{
    const char *a = "-A " PM_CHAIN_DNAT " ";
    size_t alen = strlen(a);
    for (const char *j = jumps; *j;) {
        const char *nl = strchr(j, '\n');
        size_t n = nl ? (size_t)(nl - j) : strlen(j);
        if (n > alen && strncmp(j, a, alen) == 0)
            fprintf(f, "-I " PM_CHAIN_DNAT " 1 %.*s\n", (int)(n - alen), j + alen);
        else
            fprintf(f, "%.*s\n", (int)n, j);
        j += n + (nl ? 1 : 0);
    }
}

char *pm_plan_add(const pm_conf *c, const char *cid, const ipt_table *t)
{
    plan p;
    FILE *f = _plan_open(&p, c->name, cid);
    fputs("*nat\n", f);
    /* chains first: shared ones only when missing (a declaration flushes) */
    bool dnat = ipt_table_has_chain(t, PM_CHAIN_DNAT);
    bool mark = ipt_table_has_chain(t, PM_CHAIN_SETMARK);
    bool masq = ipt_table_has_chain(t, PM_CHAIN_MASQ);
    if (!dnat) fputs(":" PM_CHAIN_DNAT " - [0:0]\n", f);
    if (c->snat && !mark) fputs(":" PM_CHAIN_SETMARK " - [0:0]\n", f);
    if (c->snat && !masq) fputs(":" PM_CHAIN_MASQ " - [0:0]\n", f);
    fprintf(f, ":%s - [0:0]\n", p.chain);
    /* the shared rules, where missing */
    static const char *const entries[] = {"PREROUTING", "OUTPUT"};
    for (int k = 0; k < 2; k++)
        if (!_has_rule(t, entries[k], PM_CHAIN_DNAT, NULL, NULL))
            fprintf(f, "-A %s -m addrtype --dst-type LOCAL -j " PM_CHAIN_DNAT "\n", entries[k]);
    if (c->snat) {
        if (!_has_rule(t, PM_CHAIN_SETMARK, "MARK", "--set-xmark", PM_MARK))
            fputs("-A " PM_CHAIN_SETMARK " -m comment --comment \"tessera-portmap: mark for "
                  "masquerade\" -j MARK --set-xmark " PM_MARK "\n",
                  f);
        if (!_has_rule(t, PM_CHAIN_MASQ, "MASQUERADE", "--mark", PM_MARK))
            fputs("-A " PM_CHAIN_MASQ " -m mark --mark " PM_MARK " -j MASQUERADE\n", f);
        if (!_has_rule(t, "POSTROUTING", PM_CHAIN_MASQ, NULL, NULL))
            fputs("-I POSTROUTING 1 -m comment --comment \"tessera-portmap: masquerade marked\" "
                  "-j " PM_CHAIN_MASQ "\n",
                  f);
    }
    /* the container's: old jumps out, its chain (flushed above) filled, new jumps */
    (void)_delete_jumps(f, t, p.chain, p.comment);
    _container_rules(f, c, p.chain);
    char *jumps = pm_jump_lines(c, cid);
    _jumps_first(f, jumps);
    free(jumps);
    fputs("COMMIT\n", f);
    return _plan_close(&p);
}

/* ---- without reading the table (pm_rules.h, "Fast paths") ------------------------------- */

char *pm_jump_lines(const pm_conf *c, const char *cid)
{
    plan p;
    FILE *f = _plan_open(&p, c->name, cid);
    _jumps(f, c, p.chain, p.comment);
    return _plan_close(&p);
}

char *pm_plan_add_fast(const pm_conf *c, const char *cid, const char *jumps)
{
    plan p;
    FILE *f = _plan_open(&p, c->name, cid);
    fprintf(f, "*nat\n:%s - [0:0]\n", p.chain);
    _container_rules(f, c, p.chain);
    _jumps_first(f, jumps);
    fputs("COMMIT\n", f);
    return _plan_close(&p);
}

char *pm_plan_del_fast(const char *net, const char *cid, const char *jumps)
{
    plan p;
    FILE *f = _plan_open(&p, net, cid);
    fputs("*nat\n", f);
    size_t prefix = strlen("-A " PM_CHAIN_DNAT " ");
    for (const char *j = jumps; *j;) {
        const char *nl = strchr(j, '\n');
        size_t n = nl ? (size_t)(nl - j) : strlen(j);
        if (n > prefix && strncmp(j, "-A " PM_CHAIN_DNAT " ", prefix) == 0)
            fprintf(f, "-D%.*s\n", (int)(n - 2), j + 2);
        j += n + (nl ? 1 : 0);
    }
    fprintf(f, "-F %s\n-X %s\nCOMMIT\n", p.chain, p.chain);
    return _plan_close(&p);
}

/* ---- CHECK ---------------------------------------------------------------------------- */

static bool _words_eq(const ipt_rule *r, const char *opt, const char *val)
{
    const char *v = ipt_rule_opt(r, opt, NULL);
    return val ? v && strcmp(v, val) == 0 : v == NULL;
}

/* A rule in chain for mapping m: -p, --dport and -d as made, -s src (NULL:
 * none), jumping to target, with --to-destination to (NULL: not checked). */
static bool _has_mapping_rule(const ipt_table *t, const char *chain, const pm_mapping *m,
                              const char *src, const char *target, const char *to)
{
    char port[8], dst[PM_IP_LEN + 3];
    snprintf(port, sizeof(port), "%d", m->host_port);
    snprintf(dst, sizeof(dst), "%s/32", m->host_ip);
    for (int i = 0; i < t->n_rules; i++) {
        const ipt_rule *r = &t->rules[i];
        if (strcmp(_chain(r), chain) != 0) continue;
        if (_words_eq(r, "-p", m->proto) && _words_eq(r, "--dport", port) &&
            _words_eq(r, "-d", m->host_ip[0] ? dst : NULL) && _words_eq(r, "-s", src) &&
            _words_eq(r, "-j", target) && (!to || _words_eq(r, "--to-destination", to)))
            return true;
    }
    return false;
}

/* A jump from TESSERA-HP-DNAT with the comment, for proto, listing port. */
static bool _has_jump(const ipt_table *t, const char *chain, const char *comment,
                      const pm_mapping *m)
{
    for (int i = 0; i < t->n_rules; i++) {
        const ipt_rule *r = &t->rules[i];
        if (strcmp(_chain(r), PM_CHAIN_DNAT) != 0 || !_words_eq(r, "-j", chain) ||
            !_words_eq(r, "--comment", comment) || !_words_eq(r, "-p", m->proto))
            continue;
        const char *ports = ipt_rule_opt(r, "--dports", NULL);
        for (const char *p = ports; p && *p;) {
            char *end;
            long v = strtol(p, &end, 10);
            if (end != p && v == m->host_port && (*end == ',' || !*end)) return true;
            p = strchr(p, ',');
            if (p) p++;
        }
    }
    return false;
}

bool pm_plan_check(const pm_conf *c, const char *cid, const ipt_table *t, cnip_error *e)
{
    char chain[PM_CHAIN_LEN], comment[256];
    pm_chain_name(c->name, cid, chain);
    pm_comment(c->name, cid, comment, sizeof(comment));
    const char *missing = NULL;
    char what[160] = "";
    if (!ipt_table_has_chain(t, PM_CHAIN_DNAT))
        missing = "chain " PM_CHAIN_DNAT;
    else if (!_has_rule(t, "PREROUTING", PM_CHAIN_DNAT, NULL, NULL))
        missing = "the jump from PREROUTING to " PM_CHAIN_DNAT;
    else if (!_has_rule(t, "OUTPUT", PM_CHAIN_DNAT, NULL, NULL))
        missing = "the jump from OUTPUT to " PM_CHAIN_DNAT;
    else if (c->snat && !_has_rule(t, PM_CHAIN_SETMARK, "MARK", "--set-xmark", PM_MARK))
        missing = "the mark rule of " PM_CHAIN_SETMARK;
    else if (c->snat && !_has_rule(t, PM_CHAIN_MASQ, "MASQUERADE", "--mark", PM_MARK))
        missing = "the masquerade rule of " PM_CHAIN_MASQ;
    else if (c->snat && !_has_rule(t, "POSTROUTING", PM_CHAIN_MASQ, NULL, NULL))
        missing = "the jump from POSTROUTING to " PM_CHAIN_MASQ;
    else if (!ipt_table_has_chain(t, chain))
        missing = "the container's chain";
    for (int i = 0; !missing && i < c->n_maps; i++) {
        const pm_mapping *m = &c->maps[i];
        char to[PM_IP_LEN + 8];
        snprintf(to, sizeof(to), "%s:%d", c->container_ip, m->container_port);
        snprintf(what, sizeof(what), "host port %d/%s%s%s", m->host_port, m->proto,
                 m->host_ip[0] ? " on " : "", m->host_ip);
        if (!_has_jump(t, chain, comment, m))
            missing = "the jump from " PM_CHAIN_DNAT;
        else if (!_has_mapping_rule(t, chain, m, NULL, "DNAT", to))
            missing = "the DNAT rule";
        else if (c->snat &&
                 !_has_mapping_rule(t, chain, m, c->container_net, PM_CHAIN_SETMARK, NULL))
            missing = "the hairpin masquerade mark";
        else if (c->snat && !_has_mapping_rule(t, chain, m, "127.0.0.0/8", PM_CHAIN_SETMARK, NULL))
            missing = "the localhost masquerade mark";
    }
    if (!missing) return true;
    cnip_error_set(e, PM_E_MISSING, "port mapping rules missing", "%s%s%s (chain %s)", missing,
                   what[0] ? " for " : "", what, chain);
    return false;
}
