/* probe_proc.c: the probe's checks of files and processes (see
 * probe_proc.h). */
#define _GNU_SOURCE
#include "probe_proc.h"

#include "probe_out.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

int probe_proc_wopen(int argc, char **argv)
{
    probe_out_begin();
    for (int i = 0; i < argc; i++) {
        /* O_WRONLY without O_TRUNC or O_CREAT, and nothing is written */
        int fd = open(argv[i], O_WRONLY | O_NOCTTY | O_NONBLOCK | O_CLOEXEC);
        int e = fd < 0 ? errno : 0;
        probe_out_entry(argv[i], fd >= 0 ? "writable" : "refused", fd, e, "");
        if (fd >= 0) close(fd);
    }
    probe_out_end();
    return 0;
}

int probe_proc_ptrace(int argc, char **argv)
{
    probe_out_begin();
    for (int i = 0; i < argc; i++) {
        pid_t pid = (pid_t)atoi(argv[i]);
        char k[64];
        int kr = kill(pid, 0);
        int ke = kr < 0 ? errno : 0;
        snprintf(k, sizeof(k), "kill:%s", argv[i]);
        probe_out_entry(k, kr == 0 ? "exists" : "refused", kr, ke, "");
        /* in a child: a tracer that exits detaches at once */
        int pfd[2];
        long pr = -1;
        int pe = 0;
        if (pipe(pfd) == 0) {
            pid_t c = fork();
            if (c == 0) {
                close(pfd[0]);
                long r = ptrace(PTRACE_SEIZE, pid, NULL, NULL);
                int res[2] = {(int)r, r < 0 ? errno : 0};
                ssize_t w = write(pfd[1], res, sizeof(res));
                _exit(w == (ssize_t)sizeof(res) ? 0 : 1);
            }
            close(pfd[1]);
            int res[2] = {-1, EIO};
            if (c > 0 && read(pfd[0], res, sizeof(res)) == (ssize_t)sizeof(res)) {
                pr = res[0];
                pe = res[1];
            }
            close(pfd[0]);
            if (c > 0) waitpid(c, NULL, 0);
        }
        snprintf(k, sizeof(k), "ptrace:%s", argv[i]);
        probe_out_entry(k, pr == 0 ? "attached" : "refused", pr, pe, "");
    }
    probe_out_end();
    return 0;
}

int probe_proc_pids(void)
{
    DIR *d = opendir("/proc");
    if (!d) return 1;
    probe_out_begin();
    struct dirent *de;
    while ((de = readdir(d))) {
        if (!isdigit((unsigned char)de->d_name[0])) continue;
        char path[300], cmd[512];
        snprintf(path, sizeof(path), "/proc/%s/cmdline", de->d_name);
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        ssize_t n = fd >= 0 ? read(fd, cmd, sizeof(cmd) - 1) : -1;
        if (fd >= 0) close(fd);
        if (n < 0) n = 0;
        for (ssize_t i = 0; i < n; i++)
            if (cmd[i] == 0) cmd[i] = ' ';
        cmd[n] = 0;
        probe_out_key(de->d_name);
        probe_out_str(cmd);
    }
    closedir(d);
    probe_out_end();
    return 0;
}
