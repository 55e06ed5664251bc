/* br_ipam.c: address leases in host-local's layout (br_ipam.h). */
#include "services/cni-bridge/br_ipam.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#define LAST_RESERVED "last_reserved_ip.0"

/* mkdir -p of an absolute path */
static bool _mkdirs(const char *path)
{
    char buf[600];
    snprintf(buf, sizeof(buf), "%s", path);
    for (char *p = buf + 1; *p; p++) {
        if (*p != '/') continue;
        *p = '\0';
        if (mkdir(buf, 0755) < 0 && errno != EEXIST) return false;
        *p = '/';
    }
    return mkdir(buf, 0755) == 0 || errno == EEXIST;
}

bool br_ipam_open(br_ipam *s, const br_conf *c, cnip_error *e)
{
    snprintf(s->dir, sizeof(s->dir), "%s/%s", c->data_dir, c->name);
    s->lock_fd = -1;
    if (!_mkdirs(s->dir)) {
        cnip_error_set(e, BR_E_IPAM, "cannot open the address store", "mkdir %s: %s", s->dir,
                       strerror(errno));
        return false;
    }
    char lock[700];
    snprintf(lock, sizeof(lock), "%s/lock", s->dir);
    s->lock_fd = open(lock, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644);
    if (s->lock_fd < 0 || flock(s->lock_fd, LOCK_EX) < 0) {
        cnip_error_set(e, BR_E_IPAM, "cannot lock the address store", "%s: %s", s->dir,
                       strerror(errno));
        if (s->lock_fd >= 0) close(s->lock_fd);
        s->lock_fd = -1;
        return false;
    }
    return true;
}

void br_ipam_close(br_ipam *s)
{
    if (s->lock_fd >= 0) close(s->lock_fd); /* drops the flock */
    s->lock_fd = -1;
}

/* A lease file's content names (cid, ifname): "id\r\nifname", or the id
 * alone as older host-local wrote it. */
static bool _owned_by(const char *text, const char *cid, const char *ifname)
{
    size_t n = strlen(cid);
    if (strncmp(text, cid, n) != 0) return false;
    const char *rest = text + n;
    if (*rest == '\0' || strcmp(rest, "\n") == 0 || strcmp(rest, "\r\n") == 0) return true;
    return strncmp(rest, "\r\n", 2) == 0 && strcmp(rest + 2, ifname) == 0;
}

/* Each lease in the store: its address and content; stop when fn says so. */
static bool _each_lease(br_ipam *s, bool (*fn)(void *arg, const char *name, const char *text),
                        void *arg)
{
    DIR *d = opendir(s->dir);
    if (!d) return false;
    struct dirent *de;
    bool stopped = false;
    while (!stopped && (de = readdir(d)) != NULL) {
        struct in_addr a;
        if (inet_pton(AF_INET, de->d_name, &a) != 1) continue;
        char path[900], text[512];
        snprintf(path, sizeof(path), "%s/%s", s->dir, de->d_name);
        int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
        if (fd < 0) continue;
        ssize_t k = read(fd, text, sizeof(text) - 1);
        close(fd);
        text[k > 0 ? k : 0] = '\0';
        stopped = fn(arg, de->d_name, text);
    }
    closedir(d);
    return stopped;
}

typedef struct {
    const char *cid, *ifname;
    struct in_addr found;
    br_ipam *s;
    int released;
} lease_q;

static bool _find_fn(void *arg, const char *name, const char *text)
{
    lease_q *q = arg;
    if (!_owned_by(text, q->cid, q->ifname)) return false;
    return inet_pton(AF_INET, name, &q->found) == 1;
}

bool br_ipam_find(br_ipam *s, const char *cid, const char *ifname, struct in_addr *out)
{
    lease_q q = {.cid = cid, .ifname = ifname};
    if (!_each_lease(s, _find_fn, &q)) return false;
    *out = q.found;
    return true;
}

static bool _release_fn(void *arg, const char *name, const char *text)
{
    lease_q *q = arg;
    if (!_owned_by(text, q->cid, q->ifname)) return false;
    char path[900];
    snprintf(path, sizeof(path), "%s/%s", q->s->dir, name);
    if (unlink(path) == 0) q->released++;
    return false;
}

int br_ipam_release(br_ipam *s, const char *cid, const char *ifname)
{
    lease_q q = {.cid = cid, .ifname = ifname, .s = s};
    (void)_each_lease(s, _release_fn, &q);
    return q.released;
}

static uint32_t _last_reserved(br_ipam *s)
{
    char path[700], text[64];
    snprintf(path, sizeof(path), "%s/" LAST_RESERVED, s->dir);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return 0;
    ssize_t k = read(fd, text, sizeof(text) - 1);
    close(fd);
    text[k > 0 ? k : 0] = '\0';
    text[strcspn(text, "\r\n ")] = '\0';
    struct in_addr a;
    return inet_pton(AF_INET, text, &a) == 1 ? ntohl(a.s_addr) : 0;
}

/* Written in place (the lock is held; it is only where the next search starts). */
static void _set_last_reserved(br_ipam *s, struct in_addr a)
{
    char path[700], text[INET_ADDRSTRLEN];
    snprintf(path, sizeof(path), "%s/" LAST_RESERVED, s->dir);
    inet_ntop(AF_INET, &a, text, sizeof(text));
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) return;
    (void)!write(fd, text, strlen(text));
    close(fd);
}

/* Take address h for (cid, ifname): 1 taken, 0 held by another, -1 error. */
static int _take(br_ipam *s, uint32_t h, const char *cid, const char *ifname)
{
    struct in_addr a = {.s_addr = htonl(h)};
    char ip[INET_ADDRSTRLEN], path[700];
    inet_ntop(AF_INET, &a, ip, sizeof(ip));
    snprintf(path, sizeof(path), "%s/%s", s->dir, ip);
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd < 0) return errno == EEXIST ? 0 : -1;
    char text[400];
    int n = snprintf(text, sizeof(text), "%s\r\n%s", cid, ifname);
    bool ok = n > 0 && n < (int)sizeof(text) && write(fd, text, (size_t)n) == n;
    if (close(fd) != 0) ok = false;
    if (!ok) {
        unlink(path);
        return -1;
    }
    return 1;
}

bool br_ipam_alloc(br_ipam *s, const br_conf *c, const char *cid, const char *ifname,
                   struct in_addr *out, bool *fresh, cnip_error *e)
{
    *fresh = false;
    if (br_ipam_find(s, cid, ifname, out)) return true;
    uint32_t lo = ntohl(c->range_start.s_addr), hi = ntohl(c->range_end.s_addr);
    uint32_t gw = ntohl(c->gateway.s_addr), last = _last_reserved(s);
    uint32_t h = last >= lo && last < hi ? last + 1 : lo;
    for (uint64_t tried = 0; tried <= (uint64_t)(hi - lo); tried++) {
        if (h != gw) {
            int r = _take(s, h, cid, ifname);
            if (r < 0) {
                cnip_error_set(e, BR_E_IPAM, "cannot write a lease", "%s: %s", s->dir,
                               strerror(errno));
                return false;
            }
            if (r == 1) {
                out->s_addr = htonl(h);
                *fresh = true;
                _set_last_reserved(s, *out);
                return true;
            }
        }
        h = h >= hi ? lo : h + 1;
    }
    char a[INET_ADDRSTRLEN], b[INET_ADDRSTRLEN];
    inet_ntop(AF_INET, &c->range_start, a, sizeof(a));
    inet_ntop(AF_INET, &c->range_end, b, sizeof(b));
    cnip_error_set(e, BR_E_IPAM, "no free address",
                   "every address from %s to %s of network %s is "
                   "leased (%s)",
                   a, b, c->name, s->dir);
    return false;
}
