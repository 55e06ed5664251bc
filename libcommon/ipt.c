/* ipt.c: iptables as text (ipt.h). */
#include "libcommon/ipt.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "libcommon/proc.h"

#define IPT_TIMEOUT_MS 30000
#define IPT_SAVE_CAP (64u << 20)

/* Split a saved rule into words. false on an unterminated quote. */
static bool _split(const char *line, ipt_rule *r)
{
    char *buf = ts_malloc(strlen(line) + 1), *w = buf; /* the words, back to back */
    int cap = 16;
    r->tok = ts_malloc(sizeof(char *) * (size_t)cap);
    r->n_tok = 0;
    for (const char *p = line;;) {
        while (*p == ' ' || *p == '\t')
            p++;
        if (!*p) break;
        if (r->n_tok + 1 >= cap) {
            cap *= 2;
            r->tok = ts_realloc(r->tok, sizeof(char *) * (size_t)cap);
        }
        r->tok[r->n_tok++] = w;
        if (*p == '"') {
            for (p++; *p && *p != '"'; p++) {
                if (*p == '\\' && p[1]) p++;
                *w++ = *p;
            }
            if (*p != '"') {
                free(buf);
                free(r->tok);
                r->tok = NULL;
                r->n_tok = 0;
                return false;
            }
            p++;
        } else {
            while (*p && *p != ' ' && *p != '\t')
                *w++ = *p++;
        }
        *w++ = '\0';
    }
    if (r->n_tok == 0) free(buf); /* tok[0] owns buf otherwise */
    return true;
}

static void _rule_free(ipt_rule *r)
{
    free(r->line);
    if (r->n_tok) free(r->tok[0]);
    free(r->tok);
}

/* The section; strict: stop at a line it cannot read (false, err set). */
static bool _parse(const char *save, const char *name, bool strict, ipt_table *t, ts_err *err)
{
    memset(t, 0, sizeof(*t));
    bool in = false;
    int lineno = 0, cap_c = 0, cap_r = 0;
    for (const char *p = save ? save : ""; *p;) {
        const char *nl = strchr(p, '\n');
        size_t n = nl ? (size_t)(nl - p) : strlen(p);
        char *line = ts_strndup(p, n);
        p += n + (nl ? 1 : 0);
        lineno++;
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
            ipt_rule r = {.line = line};
            if (_split(line, &r) && r.n_tok >= 2) {
                if (t->n_rules == cap_r) {
                    cap_r = cap_r ? cap_r * 2 : 64;
                    t->rules = ts_realloc(t->rules, sizeof(ipt_rule) * (size_t)cap_r);
                }
                t->rules[t->n_rules++] = r;
                continue; /* the rule keeps line */
            }
            if (strict) {
                ts_err_set(err, "iptables-save line %d: cannot read: %.200s", lineno, line);
                _rule_free(&r);
                ipt_table_free(t);
                return false;
            }
            r.line = NULL;
            _rule_free(&r);
        }
        free(line);
    }
    return true;
}

bool ipt_table_parse(const char *save, const char *name, ipt_table *t, ts_err *err)
{
    return _parse(save, name, true, t, err);
}

void ipt_table_read(const char *save, const char *name, ipt_table *t)
{
    ts_err ignored;
    /* not strict: it never fails */
    TS_IGNORE(_parse(save, name, false, t, &ignored));
}

void ipt_table_free(ipt_table *t)
{
    for (int i = 0; i < t->n_chains; i++)
        free(t->chains[i]);
    for (int i = 0; i < t->n_rules; i++)
        _rule_free(&t->rules[i]);
    free(t->chains);
    free(t->rules);
    memset(t, 0, sizeof(*t));
}

bool ipt_table_has_chain(const ipt_table *t, const char *chain)
{
    for (int i = 0; i < t->n_chains; i++)
        if (strcmp(t->chains[i], chain) == 0) return true;
    return false;
}

const char *ipt_rule_opt(const ipt_rule *r, const char *opt, bool *negated)
{
    for (int i = 2; i + 1 < r->n_tok; i++) {
        if (strcmp(r->tok[i], opt) != 0) continue;
        if (negated) *negated = strcmp(r->tok[i - 1], "!") == 0;
        return r->tok[i + 1];
    }
    return NULL;
}

/* name in PATH, then in the sbin directories a plugin's PATH may lack. */
static char *_find(const char *name)
{
    const char *path = getenv("PATH");
    char *dirs = ts_asprintf("%s:/usr/sbin:/sbin:/usr/bin:/bin", path && *path ? path : "");
    char *save = NULL, *found = NULL;
    for (char *d = strtok_r(dirs, ":", &save); d && !found; d = strtok_r(NULL, ":", &save)) {
        if (d[0] != '/') continue;
        char *p = ts_asprintf("%s/%s", d, name);
        if (access(p, X_OK) == 0)
            found = p;
        else
            free(p);
    }
    free(dirs);
    return found;
}

bool ipt_run(const char *name, const char *const *args, const char *in, char **out, ts_err *err)
{
    char *bin = _find(name);
    if (!bin) {
        ts_err_set(err, "%s not found (PATH, /usr/sbin, /sbin)", name);
        return false;
    }
    const char *argv[8] = {bin};
    for (int i = 0; args[i] && i < 6; i++)
        argv[i + 1] = args[i];
    proc_opts o = {.argv = argv,
                   .stdin_data = in,
                   .stdin_len = in ? strlen(in) : 0,
                   .timeout_ms = IPT_TIMEOUT_MS,
                   .cap_bytes = IPT_SAVE_CAP};
    exec_result r;
    bool ok = proc_run(&o, &r, err);
    free(bin);
    if (!ok) {
        ts_err_prefix(err, "%s", name);
        return false;
    }
    if (r.exit_code != 0 || r.out_truncated) {
        char *msg = r.err_len ? r.err : r.out;
        size_t n = strlen(msg);
        while (n && (msg[n - 1] == '\n' || msg[n - 1] == ' '))
            msg[--n] = '\0';
        if (r.timed_out)
            ts_err_set(err, "%s: timed out after %d ms", name, IPT_TIMEOUT_MS);
        else if (r.out_truncated)
            ts_err_set(err, "%s: output over %u bytes", name, IPT_SAVE_CAP);
        else
            ts_err_set(err, "%s: exit %d: %.300s", name, r.exit_code, msg);
        ok = false;
    }
    if (ok && out) {
        *out = r.out;
        r.out = NULL;
    }
    exec_result_free(&r);
    return ok;
}
