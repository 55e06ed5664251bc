/* userns.c: the containers' user namespace mapping and the host side of it
 * (userns.h). */
#include "services/agent/userns.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <net/if.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "libcommon/log.h"

bool userns_supported(char *why, size_t size)
{
    if (access("/proc/self/ns/user", F_OK) != 0) {
        snprintf(why, size, "the kernel has no user namespaces (/proc/self/ns/user: %s)",
                 strerror(errno));
        return false;
    }
    FILE *f = fopen("/proc/sys/user/max_user_namespaces", "re");
    long max = -1;
    if (f) {
        if (fscanf(f, "%ld", &max) != 1) max = -1;
        fclose(f);
    }
    if (max == 0) {
        snprintf(why, size, "user namespaces are disabled (user.max_user_namespaces = 0)");
        return false;
    }
    why[0] = '\0';
    return true;
}

bool userns_configure(const char *mode, int64_t base, int64_t size, bool *on, userns_map *out,
                      ts_err *err)
{
    *on = false;
    memset(out, 0, sizeof(*out));
    const char *m = mode && *mode ? mode : "auto";
    if (strcmp(m, "off") == 0) return true;
    if (strcmp(m, "auto") != 0 && strcmp(m, "on") != 0) {
        ts_err_set(err, "agent.userns '%s': auto, on or off", m);
        return false;
    }
    if (base <= 0 || size <= 0 || base + size - 1 > (int64_t)UINT32_MAX - 1) {
        ts_err_set(err,
                   "agent.userns_base %lld, agent.userns_size %lld: the host ids base..base+size-1 "
                   "must lie within 1..4294967294",
                   (long long)base, (long long)size);
        return false;
    }
    char why[256];
    if (!userns_supported(why, sizeof(why))) {
        if (strcmp(m, "on") == 0) {
            ts_err_set(err, "agent.userns = on: %s", why);
            return false;
        }
        TLOG_WARN("no user namespaces: kernels run as the image's work user without capabilities",
                  "reason=\"%s\"", why);
        return true;
    }
    out->base = (uint32_t)base;
    out->size = (uint32_t)size;
    *on = true;
    return true;
}

uint32_t userns_host_id(const userns_map *m, uint32_t id)
{
    return m && m->size ? m->base + id : id;
}

bool userns_own(const userns_map *m, const char *path, uint32_t uid, uint32_t gid, mode_t mode,
                ts_err *err)
{
    if (lchown(path, userns_host_id(m, uid), userns_host_id(m, gid)) != 0) {
        ts_err_set(err, "chown %s: %s", path, strerror(errno));
        return false;
    }
    if (chmod(path, mode) != 0) {
        ts_err_set(err, "chmod %s: %s", path, strerror(errno));
        return false;
    }
    return true;
}

bool userns_share_dir(const userns_map *m, const char *path, ts_err *err)
{
    if (!m || !m->size) return true;
    if (chown(path, 0, m->base) != 0 || chmod(path, 0710) != 0) {
        ts_err_set(err, "%s: owner root:%u, mode 0710: %s", path, m->base, strerror(errno));
        return false;
    }
    return true;
}

/* Whether uid/gid may search directory st (owner, group, other bits, in
 * the kernel's order; ACLs aside). */
static bool _may_search(const struct stat *st, uint32_t uid, uint32_t gid)
{
    if (st->st_uid == uid) return st->st_mode & S_IXUSR;
    if (st->st_gid == gid) return st->st_mode & S_IXGRP;
    return st->st_mode & S_IXOTH;
}

bool userns_reachable(const userns_map *m, const char *path, char *why, size_t size)
{
    if (why && size) why[0] = '\0';
    if (!m || !m->size || !path || path[0] != '/') return true;
    char buf[4096];
    if (ts_strlcpy(buf, path, sizeof(buf)) >= sizeof(buf)) return false;
    /* every directory above the last component: "/", "/a", "/a/b" ... */
    char *last = strrchr(buf, '/');
    for (char *p = buf; p && p <= last; p = strchr(p + 1, '/')) {
        char *cut = p == buf ? p + 1 : p; /* "/" itself, else up to this slash */
        char saved = *cut;
        *cut = '\0';
        struct stat st;
        bool ok = false;
        if (stat(buf, &st) != 0) {
            if (why) snprintf(why, size, "%s: %s", buf, strerror(errno));
        } else if (!S_ISDIR(st.st_mode) || !_may_search(&st, m->base, m->base)) {
            if (why)
                snprintf(why, size, "%s (%04o %u:%u) is not searchable by host uid %u", buf,
                         (unsigned)(st.st_mode & 07777), (unsigned)st.st_uid, (unsigned)st.st_gid,
                         m->base);
        } else {
            ok = true;
        }
        *cut = saved;
        if (!ok) return false;
    }
    return true;
}

/* /run/netns a shared mount point, as iproute2 (and cni.c) make it, so
 * namespaces mounted there show in every mount namespace at once. */
static void _netns_dir_setup(void)
{
    mkdir("/run", 0755);
    mkdir("/run/netns", 0755);
    if (mount("", "/run/netns", "none", MS_SHARED | MS_REC, NULL) == 0) return;
    if (errno != EINVAL) return;
    if (mount("/run/netns", "/run/netns", "none", MS_BIND | MS_REC, NULL) == 0)
        (void)mount("", "/run/netns", "none", MS_SHARED | MS_REC, NULL);
}
static pthread_once_t _dir_once = PTHREAD_ONCE_INIT;

/* The child: in its new namespaces, with every capability there; brings lo
 * up, then waits for the parent to have mounted the namespaces. Only
 * async-signal-safe calls (it is the fork of a threaded process). */
static int _ns_child(int wait_fd)
{
    int rc = 0;
    int s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    struct ifreq ifr;
    memset(&ifr, 0, sizeof(ifr));
    memcpy(ifr.ifr_name, "lo", 3);
    if (s < 0 || ioctl(s, SIOCGIFFLAGS, &ifr) != 0) {
        rc = 3;
    } else {
        ifr.ifr_flags |= IFF_UP;
        if (ioctl(s, SIOCSIFFLAGS, &ifr) != 0) rc = 3;
    }
    char c;
    while (read(wait_fd, &c, 1) < 0 && errno == EINTR) {
    }
    return rc;
}

#define NS_CHILD_STACK (64 * 1024)

typedef struct ns_child_arg {
    int wait_fd;
    pid_t agent;
} ns_child_arg;

/* Close every descriptor but keep. */
static void _close_all_but(int keep)
{
    if (keep > 0 && syscall(SYS_close_range, 0u, (unsigned)keep - 1, 0u) == 0 &&
        syscall(SYS_close_range, (unsigned)keep + 1, ~0u, 0u) == 0)
        return;
    long max = sysconf(_SC_OPEN_MAX);
    for (int fd = 0; fd < (max > 0 ? max : 65536); fd++)
        if (fd != keep) (void)close(fd);
}

static int _ns_child_main(void *p)
{
    const ns_child_arg *a = p;
    int wait_fd = a->wait_fd;
    /* Never outlive the agent: a child left behind would hold its listening
     * socket (a restarted agent could not bind it). */
    (void)prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != a->agent) return 4;
    /* clone copied the agent's whole descriptor table as it was at that
     * instant, the write ends of the pipes of other namespace children being
     * made on other threads included. Holding one, this child would keep
     * that one waiting, and be kept waiting by it in return: keep the read
     * end of its own pipe only. */
    _close_all_but(wait_fd);
    return _ns_child(wait_fd);
}

static bool _write_map(pid_t pid, const char *file, const userns_map *m, ts_err *err)
{
    char path[64], map[64];
    snprintf(path, sizeof(path), "/proc/%d/%s", (int)pid, file);
    int n = snprintf(map, sizeof(map), "0 %u %u\n", m->base, m->size);
    int fd = open(path, O_WRONLY | O_CLOEXEC);
    bool ok = fd >= 0 && write(fd, map, (size_t)n) == n;
    if (!ok) ts_err_set(err, "write %s: %s", path, strerror(errno));
    if (fd >= 0) close(fd);
    return ok;
}

static bool _pin(pid_t pid, const char *ns, const char *path, ts_err *err)
{
    char src[64];
    snprintf(src, sizeof(src), "/proc/%d/ns/%s", (int)pid, ns);
    int fd = open(path, O_RDONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0);
    if (fd < 0) {
        ts_err_set(err, "create %s: %s", path, strerror(errno));
        return false;
    }
    close(fd);
    if (mount(src, path, NULL, MS_BIND, NULL) != 0) {
        ts_err_set(err, "bind %s at %s: %s", src, path, strerror(errno));
        unlink(path);
        return false;
    }
    return true;
}

static void _unpin(const char *path)
{
    (void)umount2(path, MNT_DETACH);
    (void)unlink(path);
}

bool userns_ns_create(const userns_map *m, const char *userns_path, const char *netns_path,
                      ts_err *err)
{
    pthread_once(&_dir_once, _netns_dir_setup);
    int p[2];
    if (pipe2(p, O_CLOEXEC) != 0) {
        ts_err_set(err, "pipe: %s", strerror(errno));
        return false;
    }
    /* A process, not a thread: a threaded process cannot enter a new user
     * namespace. CLONE_VM, on a stack of its own: a copy of the agent's page
     * tables cost 2 ms at 10 MiB of RSS and 18 ms at 1 GiB, the shared memory
     * nothing. The child makes four system calls and exits; the one thing it
     * shares that it writes is the calling thread's errno, which it sets only
     * when one of them fails (then this thread's error message may name the
     * wrong errno, nothing worse). */
    void *stack = mmap(NULL, NS_CHILD_STACK, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
    if (stack == MAP_FAILED) {
        ts_err_set(err, "create user and network namespaces: stack: %s", strerror(errno));
        close(p[0]);
        close(p[1]);
        return false;
    }
    ns_child_arg arg = {.wait_fd = p[0], .agent = getpid()};
    pid_t pid = clone(_ns_child_main, (char *)stack + NS_CHILD_STACK,
                      CLONE_VM | CLONE_NEWUSER | CLONE_NEWNET | SIGCHLD, &arg);
    close(p[0]);
    if (pid < 0) {
        ts_err_set(err, "create user and network namespaces: clone: %s", strerror(errno));
        close(p[1]);
        munmap(stack, NS_CHILD_STACK);
        return false;
    }
    bool ok = _write_map(pid, "uid_map", m, err) && _write_map(pid, "gid_map", m, err) &&
              _pin(pid, "user", userns_path, err);
    if (ok && !_pin(pid, "net", netns_path, err)) {
        _unpin(userns_path);
        ok = false;
    }
    close(p[1]);
    int st = 0;
    while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {
    }
    munmap(stack, NS_CHILD_STACK);
    if (ok && !(WIFEXITED(st) && WEXITSTATUS(st) == 0)) {
        ts_err_set(err, "bring up lo in %s: failed (child status %d)", netns_path, st);
        _unpin(netns_path);
        _unpin(userns_path);
        ok = false;
    }
    if (!ok) ts_err_prefix(err, "user and network namespaces");
    return ok;
}

bool userns_ns_delete(const char *userns_path, ts_err *err)
{
    if (umount2(userns_path, MNT_DETACH) != 0 && errno != EINVAL && errno != ENOENT) {
        if (err) ts_err_set(err, "umount %s: %s", userns_path, strerror(errno));
        return false;
    }
    if (unlink(userns_path) != 0 && errno != ENOENT) {
        if (err) ts_err_set(err, "remove %s: %s", userns_path, strerror(errno));
        return false;
    }
    return true;
}

bool userns_stage_bind(const char *src, const char *stage_path, ts_err *err)
{
    struct stat st;
    if (stat(src, &st) != 0) {
        ts_err_set(err, "%s: %s", src, strerror(errno));
        return false;
    }
    if (S_ISDIR(st.st_mode)) {
        if (mkdir(stage_path, 0700) != 0 && errno != EEXIST) {
            ts_err_set(err, "mkdir %s: %s", stage_path, strerror(errno));
            return false;
        }
    } else {
        int fd = open(stage_path, O_WRONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
        if (fd < 0) {
            ts_err_set(err, "create %s: %s", stage_path, strerror(errno));
            return false;
        }
        close(fd);
    }
    if (mount(src, stage_path, NULL, MS_BIND | MS_REC, NULL) != 0) {
        ts_err_set(err, "bind %s at %s: %s", src, stage_path, strerror(errno));
        return false;
    }
    /* no mount events from src's peers reach the stage, nor the other way */
    if (mount(NULL, stage_path, NULL, MS_PRIVATE | MS_REC, NULL) != 0) {
        ts_err_set(err, "make %s private: %s", stage_path, strerror(errno));
        (void)umount2(stage_path, MNT_DETACH);
        return false;
    }
    return true;
}

bool userns_unstage(const char *stage_dir)
{
    DIR *d = opendir(stage_dir);
    if (!d) return errno == ENOENT;
    bool ok = true;
    struct dirent *e;
    char path[4096];
    while ((e = readdir(d)) != NULL) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
        snprintf(path, sizeof(path), "%s/%s", stage_dir, e->d_name);
        /* stacked mounts: until it is not a mount point any more */
        for (int i = 0; i < 16 && umount2(path, MNT_DETACH | UMOUNT_NOFOLLOW) == 0; i++) {
        }
        if (remove(path) != 0 && errno != ENOENT) {
            TLOG_WARN("staged bind mount not removed", "path=%s error=\"%s\"", path,
                      strerror(errno));
            ok = false;
        }
    }
    closedir(d);
    if (ok && rmdir(stage_dir) != 0 && errno != ENOENT) ok = false;
    return ok;
}
