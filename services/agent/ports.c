/* ports.c: host port pool, persisted as one file per allocated port. */
#include "services/agent/ports.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

struct port_pool {
    char *dir;
    int start, end;
    int next; /* round-robin cursor: a just-released port is reused last */
    pthread_mutex_t mu;
};

port_pool *ports_new(const char *state_dir, int start, int end, ts_err *err)
{
    if (start <= 0 || end > 65535 || start > end) {
        ts_err_set(err, "port pool [%d, %d] is not a valid range", start, end);
        return NULL;
    }
    port_pool *p = ts_calloc(1, sizeof(*p));
    p->dir = ts_asprintf("%s/ports", state_dir);
    if (mkdir(p->dir, 0750) < 0 && errno != EEXIST) {
        ts_err_set(err, "mkdir %s: %s", p->dir, strerror(errno));
        free(p->dir);
        free(p);
        return NULL;
    }
    p->start = start;
    p->end = end;
    p->next = start;
    pthread_mutex_init(&p->mu, NULL);
    return p;
}

void ports_free(port_pool *p)
{
    if (!p) return;
    pthread_mutex_destroy(&p->mu);
    free(p->dir);
    free(p);
}

/* Nobody on the host listens on port (TCP, any address). */
static bool _host_port_free(int port)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return true;
    int one = 1; /* connections in TIME_WAIT do not make a port busy */
    (void)setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    a.sin_addr.s_addr = htonl(INADDR_ANY);
    bool ok = bind(fd, (struct sockaddr *)&a, sizeof(a)) == 0;
    close(fd);
    return ok;
}

static bool _take(port_pool *p, int port, const char *kernel_id)
{
    char path[512];
    snprintf(path, sizeof(path), "%s/%d", p->dir, port);
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0640);
    if (fd < 0) return false;
    if (!_host_port_free(port)) {
        close(fd);
        unlink(path);
        return false;
    }
    size_t n = strlen(kernel_id);
    bool ok = write(fd, kernel_id, n) == (ssize_t)n;
    close(fd);
    if (!ok) unlink(path);
    return ok;
}

static void _give_back(port_pool *p, int port)
{
    char path[512];
    snprintf(path, sizeof(path), "%s/%d", p->dir, port);
    unlink(path);
}

bool ports_alloc(port_pool *p, const char *kernel_id, int n, int *out, ts_err *err)
{
    if (n <= 0) return true;
    pthread_mutex_lock(&p->mu);
    int size = p->end - p->start + 1, got = 0;
    for (int i = 0; i < size && got < n; i++) {
        int port = p->next;
        p->next = port >= p->end ? p->start : port + 1;
        if (_take(p, port, kernel_id)) out[got++] = port;
    }
    if (got < n) {
        for (int i = 0; i < got; i++)
            _give_back(p, out[i]);
        pthread_mutex_unlock(&p->mu);
        ts_err_set(err, "host port pool [%d, %d] exhausted: %d port(s) wanted", p->start, p->end,
                   n);
        return false;
    }
    pthread_mutex_unlock(&p->mu);
    return true;
}

bool ports_owner(port_pool *p, int port, char *buf, size_t size)
{
    char path[512];
    snprintf(path, sizeof(path), "%s/%d", p->dir, port);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return false;
    ssize_t k = read(fd, buf, size > 0 ? size - 1 : 0);
    close(fd);
    if (size > 0) buf[k > 0 ? k : 0] = '\0';
    return true;
}

int ports_release_kernel(port_pool *p, const char *kernel_id)
{
    DIR *d = opendir(p->dir);
    if (!d) return 0;
    int n = 0;
    struct dirent *e;
    char owner[128];
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.') continue;
        int port = atoi(e->d_name);
        if (port <= 0) continue;
        if (ports_owner(p, port, owner, sizeof(owner)) && strcmp(owner, kernel_id) == 0) {
            _give_back(p, port);
            n++;
        }
    }
    closedir(d);
    return n;
}
