/* runtime_listeners.c: who listens on a kernel's port (runtime_listeners.h). */
#include "services/agent/runtime_listeners.h"

#include <dirent.h>
#include <signal.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "libcommon/common.h"
#include "libcommon/log.h"
#include "libcommon/proc.h"
#include "services/agent/runtime_state.h"

#define TCP_LISTEN 0x0A /* the last of the states a socket with a local port may be in */
#define MAX_INODES 256

int listeners_parse_inodes(const char *text, int port, unsigned long *inodes, int max)
{
    int n = 0;
    const char *line = text ? strchr(text, '\n') : NULL; /* skip the header */
    while (line && *line && n < max) {
        line++;
        /* "  0: 00000000:1E61 00000000:0000 0A 00000000:00000000 00:00000000
         *  00000000  1000        0 12345 1 ..." */
        char local[64], remote[64];
        unsigned st;
        unsigned long inode;
        int fields =
            sscanf(line, "%*s %63s %63s %x %*s %*s %*s %*s %*s %lu", local, remote, &st, &inode);
        const char *colon = fields == 4 ? strrchr(local, ':') : NULL;
        /* listening, or a connection accepted on the port (its local end) */
        if (colon && st >= 1 && st <= TCP_LISTEN && inode != 0) {
            char *end = NULL;
            long p = strtol(colon + 1, &end, 16);
            if (end && *end == '\0' && p == port) inodes[n++] = inode;
        }
        line = strchr(line, '\n');
    }
    return n;
}

static int _inodes_of(pid_t init, int port, unsigned long *inodes, int max)
{
    int n = 0;
    static const char *const files[] = {"tcp", "tcp6"};
    for (size_t i = 0; i < TS_ARRAY_LEN(files) && n < max; i++) {
        char path[64];
        snprintf(path, sizeof(path), "/proc/%d/net/%s", (int)init, files[i]);
        char *text = rts_read_file(path, 4 << 20);
        if (!text) continue;
        n += listeners_parse_inodes(text, port, inodes + n, max - n);
        free(text);
    }
    return n;
}

/* Whether pid's cgroup line names the kernel's cgroup (or one below it). */
static bool _in_kernel(pid_t pid, const char *hint)
{
    char path[64], text[4096];
    snprintf(path, sizeof(path), "/proc/%d/cgroup", (int)pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return false;
    ssize_t n = read(fd, text, sizeof(text) - 1);
    close(fd);
    text[n > 0 ? n : 0] = '\0';
    return n > 0 && strstr(text, hint) != NULL;
}

static bool _holds(pid_t pid, const unsigned long *inodes, int n_inodes)
{
    char dir[64];
    snprintf(dir, sizeof(dir), "/proc/%d/fd", (int)pid);
    DIR *d = opendir(dir);
    if (!d) return false;
    bool found = false;
    struct dirent *e;
    while (!found && (e = readdir(d))) {
        if (e->d_name[0] == '.') continue;
        char link[96], target[64];
        snprintf(link, sizeof(link), "%s/%s", dir, e->d_name);
        ssize_t len = readlink(link, target, sizeof(target) - 1);
        if (len <= 0) continue;
        target[len] = '\0';
        unsigned long ino;
        if (sscanf(target, "socket:[%lu]", &ino) != 1) continue;
        for (int i = 0; i < n_inodes && !found; i++)
            found = inodes[i] == ino;
    }
    closedir(d);
    return found;
}

bool runtime_listeners(runtime *rt, const char *id, int port, pid_t *pids, int max, int *n,
                       ts_err *err)
{
    *n = 0;
    kstate st;
    if (!rts_state_load(rt, id, &st)) {
        ts_err_set(err, "kernel %s has no state on this agent", id);
        return false;
    }
    rts_state_free(&st);
    if (st.init_pid <= 0) {
        ts_err_set(err, "kernel %s is not running", id);
        return false;
    }
    unsigned long inodes[MAX_INODES];
    int n_inodes = _inodes_of(st.init_pid, port, inodes, MAX_INODES);
    if (n_inodes == 0) return true;
    char hint[160];
    rts_cg_hint(id, hint, sizeof(hint));
    DIR *d = opendir("/proc");
    if (!d) {
        ts_err_set(err, "/proc: cannot be read");
        return false;
    }
    struct dirent *e;
    while ((e = readdir(d)) && *n < max) {
        char *end = NULL;
        long pid = strtol(e->d_name, &end, 10);
        if (!end || *end || pid <= 1) continue;
        if (_in_kernel((pid_t)pid, hint) && _holds((pid_t)pid, inodes, n_inodes))
            pids[(*n)++] = (pid_t)pid;
    }
    closedir(d);
    return true;
}

bool runtime_stop_listeners(runtime *rt, const char *id, int port, int grace_ms, int *n,
                            ts_err *err)
{
    pid_t pids[LISTENERS_MAX];
    if (!runtime_listeners(rt, id, port, pids, LISTENERS_MAX, n, err)) return false;
    char hint[160];
    rts_cg_hint(id, hint, sizeof(hint));
    for (int i = 0; i < *n; i++) {
        TLOG_INFO("app stop", "kernel=%s port=%d pid=%d", id, port, (int)pids[i]);
        if (!proc_signal_checked(pids[i], SIGTERM, hint))
            TLOG_DEBUG("app listener already gone", "kernel=%s pid=%d", id, (int)pids[i]);
    }
    int64_t deadline = ts_now_mono_ms() + grace_ms;
    for (int i = 0; i < *n; i++) {
        int64_t left = deadline - ts_now_mono_ms();
        if (proc_wait_gone(pids[i], left > 0 ? (int)left : 0)) continue;
        TLOG_WARN("app did not stop on SIGTERM: killed", "kernel=%s port=%d pid=%d grace_ms=%d", id,
                  port, (int)pids[i], grace_ms);
        if (proc_signal_checked(pids[i], SIGKILL, hint) && !proc_wait_gone(pids[i], 1000))
            TLOG_WARN("app listener still there after SIGKILL", "kernel=%s pid=%d", id,
                      (int)pids[i]);
    }
    return true;
}
