/* netfilter_records.c: the kernels of a network, on disk (netfilter_records.h). */
#include "services/agent/netfilter_records.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

bool nfrec_name_ok(const char *s, size_t max)
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

bool nfrec_kernel_ok(const netfilter_kernel *k, ts_err *err)
{
    struct in_addr a;
    bool hex = strlen(k->session) == 16 && strspn(k->session, "0123456789abcdef") == 16;
    if (nfrec_name_ok(k->id, NETFILTER_ID_LEN - 1) && inet_pton(AF_INET, k->ip, &a) == 1 &&
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

netfilter_kernel *nfrec_list(const netfilter_net *n, int *count)
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
        if (!nfrec_kernel_ok(&k, NULL)) continue;
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

bool nfrec_write(const netfilter_net *n, const netfilter_kernel *k, ts_err *err)
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

void nfrec_remove(const netfilter_net *n, const netfilter_kernel *k)
{
    char *path = _record_path(n, k);
    (void)unlink(path);
    free(path);
}

void nfrec_remove_all(const netfilter_net *n)
{
    int nr = 0;
    netfilter_kernel *recs = nfrec_list(n, &nr);
    for (int i = 0; i < nr; i++)
        nfrec_remove(n, &recs[i]);
    free(recs);
    char *dir = _records_dir(n);
    (void)rmdir(dir);
    free(dir);
}
