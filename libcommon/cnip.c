/* cnip.c: the agent's CNI plugins' shared input and output (cnip.h). */
#include "libcommon/cnip.h"

#include <errno.h>
#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

const char *const cnip_supported_versions[] = {"0.3.0", "0.3.1", "0.4.0", "1.0.0", NULL};

void cnip_error_set(cnip_error *e, int code, const char *msg, const char *details_fmt, ...)
{
    if (!e) return;
    e->code = code;
    snprintf(e->msg, sizeof(e->msg), "%s", msg);
    va_list ap;
    va_start(ap, details_fmt);
    vsnprintf(e->details, sizeof(e->details), details_fmt, ap);
    va_end(ap);
}

bool cnip_version_supported(const char *v)
{
    for (int i = 0; v && cnip_supported_versions[i]; i++)
        if (strcmp(v, cnip_supported_versions[i]) == 0) return true;
    return false;
}

bool cnip_valid_name(const char *s, size_t max)
{
    if (!s || !*s || strlen(s) > max) return false;
    for (const char *p = s; *p; p++) {
        bool alnum =
            (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9');
        if (!alnum && (p == s || (*p != '_' && *p != '.' && *p != '-'))) return false;
    }
    return true;
}

bool cnip_command(cnip_cmd *cmd, cnip_error *e)
{
    const char *s = getenv("CNI_COMMAND");
    if (!s || !*s) {
        cnip_error_set(e, CNIP_E_ENV, "invalid environment", "CNI_COMMAND is not set");
        return false;
    }
    static const struct {
        const char *name;
        cnip_cmd cmd;
    } cmds[] = {
        {"ADD", CNIP_ADD}, {"DEL", CNIP_DEL}, {"CHECK", CNIP_CHECK}, {"VERSION", CNIP_VERSION}};
    for (size_t i = 0; i < TS_ARRAY_LEN(cmds); i++) {
        if (strcmp(s, cmds[i].name) == 0) {
            *cmd = cmds[i].cmd;
            return true;
        }
    }
    cnip_error_set(e, CNIP_E_ENV, "invalid environment",
                   "CNI_COMMAND %.40s: want ADD, DEL, CHECK or VERSION", s);
    return false;
}

bool cnip_env(cnip_cmd cmd, const char **cid, const char **netns, const char **ifname,
              cnip_error *e)
{
    *cid = getenv("CNI_CONTAINERID");
    *netns = getenv("CNI_NETNS");
    *ifname = getenv("CNI_IFNAME");
    if (!*cid || !**cid) {
        cnip_error_set(e, CNIP_E_ENV, "invalid environment", "CNI_CONTAINERID is not set");
    } else if (!cnip_valid_name(*cid, CNIP_MAX_ID)) {
        cnip_error_set(e, CNIP_E_ENV, "invalid environment",
                       "CNI_CONTAINERID %.80s: want letters, digits, '_', '.', '-' (at most %d)",
                       *cid, CNIP_MAX_ID);
    } else if (!*ifname || !**ifname) {
        cnip_error_set(e, CNIP_E_ENV, "invalid environment", "CNI_IFNAME is not set");
    } else if (cmd != CNIP_DEL && (!*netns || !**netns)) {
        cnip_error_set(e, CNIP_E_ENV, "invalid environment", "CNI_NETNS is not set");
    } else {
        return true;
    }
    return false;
}

char *cnip_read_stdin(size_t *len, cnip_error *e)
{
    size_t cap = 8192, n = 0;
    char *buf = ts_malloc(cap);
    for (;;) {
        if (n + 1 >= cap) {
            if (cap >= CNIP_STDIN_MAX) {
                cnip_error_set(e, CNIP_E_IO, "network configuration too large", "over %u bytes",
                               CNIP_STDIN_MAX);
                free(buf);
                return NULL;
            }
            cap *= 2;
            buf = ts_realloc(buf, cap);
        }
        ssize_t r = read(0, buf + n, cap - 1 - n);
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) {
            cnip_error_set(e, CNIP_E_IO, "cannot read the network configuration", "stdin: %s",
                           strerror(errno));
            free(buf);
            return NULL;
        }
        if (r == 0) break;
        n += (size_t)r;
    }
    buf[n] = '\0';
    *len = n;
    return buf;
}

json_t *cnip_conf_open(const char *text, size_t len, cnip_cmd cmd, char *version,
                       size_t version_size, char *name, size_t name_size, cnip_error *e)
{
    json_error_t je;
    json_t *root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &je);
    if (!root) {
        cnip_error_set(e, CNIP_E_DECODE, "failed to decode the network configuration",
                       "line %d: %s", je.line, je.text);
        return NULL;
    }
    if (!json_is_object(root)) {
        cnip_error_set(e, CNIP_E_DECODE, "failed to decode the network configuration",
                       "not a JSON object");
        json_decref(root);
        return NULL;
    }
    json_t *v = json_object_get(root, "cniVersion"), *n = json_object_get(root, "name");
    const char *ver = json_string_value(v), *nm = json_string_value(n);
    bool ok = false;
    if (!v) {
        cnip_error_set(e, CNIP_E_CONFIG, "invalid network config", "cniVersion is missing");
    } else if (!ver) {
        cnip_error_set(e, CNIP_E_CONFIG, "invalid network config", "cniVersion is not a string");
    } else if (!cnip_version_supported(ver)) {
        cnip_error_set(e, CNIP_E_VERSION, "incompatible CNI versions",
                       "config is %.20s, plugin supports 0.3.0, 0.3.1, 0.4.0, 1.0.0", ver);
    } else if (cmd == CNIP_CHECK && strncmp(ver, "0.3.", 4) == 0) {
        cnip_error_set(e, CNIP_E_VERSION, "incompatible CNI versions",
                       "CHECK needs cniVersion 0.4.0 or later, config is %s", ver);
    } else if (!n) {
        cnip_error_set(e, CNIP_E_CONFIG, "invalid network config", "name is missing");
    } else if (!nm || !cnip_valid_name(nm, CNIP_MAX_NAME)) {
        cnip_error_set(e, CNIP_E_CONFIG, "invalid network config",
                       "name %.80s: want letters, digits, '_', '.', '-' (at most %d)",
                       nm ? nm : "(not a string)", CNIP_MAX_NAME);
    } else {
        ok = true;
    }
    if (!ok) {
        json_decref(root);
        return NULL;
    }
    snprintf(version, version_size, "%s", ver);
    snprintf(name, name_size, "%s", nm);
    return root;
}

int cnip_fail(const char *version, const cnip_error *e)
{
    json_t *j = json_pack("{s:s, s:i, s:s, s:s}", "cniVersion", version ? version : "1.0.0", "code",
                          e->code, "msg", e->msg, "details", e->details);
    json_dumpf(j, stdout, JSON_COMPACT);
    fputc('\n', stdout);
    json_decref(j);
    fflush(stdout);
    return 1;
}

int cnip_version(void)
{
    json_t *v = json_array();
    for (int i = 0; cnip_supported_versions[i]; i++)
        json_array_append_new(v, json_string(cnip_supported_versions[i]));
    json_t *j = json_pack("{s:s, s:o}", "cniVersion", "1.0.0", "supportedVersions", v);
    json_dumpf(j, stdout, JSON_COMPACT);
    fputc('\n', stdout);
    json_decref(j);
    return 0;
}

int cnip_main(const cnip_plugin *p)
{
    cnip_error e = {0};
    cnip_request r = {0};
    if (!cnip_command(&r.cmd, &e)) return cnip_fail(NULL, &e);
    if (r.cmd == CNIP_VERSION) return cnip_version();
    if (!cnip_env(r.cmd, &r.cid, &r.netns, &r.ifname, &e)) return cnip_fail(NULL, &e);
    size_t len = 0;
    char *text = cnip_read_stdin(&len, &e);
    if (!text) return cnip_fail(NULL, &e);
    bool ok = p->parse(p->self, &r, text, len, &e);
    free(text);
    if (!ok) return cnip_fail(NULL, &e);
    if (r.cmd == CNIP_ADD)
        ok = p->add(p->self, &r, &e);
    else if (r.cmd == CNIP_DEL)
        ok = p->del(p->self, &r, &e);
    else
        ok = p->check(p->self, &r, &e);
    int rc = 0;
    if (!ok)
        rc = cnip_fail(p->version(p->self), &e);
    else if (r.cmd == CNIP_ADD)
        p->print_result(p->self, &r);
    if (p->release) p->release(p->self);
    if (fflush(stdout) != 0) rc = 1;
    return rc;
}
