/* app_start.c: apps of a kernel started and stopped on demand (app_start.h). */
#include "services/agent/app_start.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "libcommon/log.h"
#include "services/agent/runtime_listeners.h"

#define PROBE_TIMEOUT_MS 300
#define PROBE_INTERVAL_MS 100
#define LAUNCH_TIMEOUT_MS 15000

/* One launch at a time on this agent, so that two starts of the same app
 * that arrive together do not both launch it (the second sees it listening
 * or already launched). */
static pthread_mutex_t g_launch_mu = PTHREAD_MUTEX_INITIALIZER;

/* Whether ip:port accepts a TCP connection within timeout_ms. */
static bool _listening(const char *ip, int port, int timeout_ms)
{
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    if (inet_pton(AF_INET, ip, &sa.sin_addr) != 1) return false;
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) return false;
    bool ok = false;
    if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0) {
        ok = true;
    } else if (errno == EINPROGRESS) {
        struct pollfd p = {.fd = fd, .events = POLLOUT};
        int soerr = 0;
        socklen_t len = sizeof(soerr);
        ok = poll(&p, 1, timeout_ms) == 1 &&
             getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &len) == 0 && soerr == 0;
    }
    close(fd);
    return ok;
}

static const kernel_service_port *_find(const kernel_view *v, const char *app)
{
    for (int i = 0; i < v->n_ports; i++)
        if (strcmp(v->ports[i].name, app) == 0) return &v->ports[i];
    return NULL;
}

/* Run cmd detached in the kernel: the exec'd shell puts it in the background
 * with stdio on /dev/null and returns at once. */
static bool _launch(runtime *rt, const char *kernel_id, const char *cmd, ts_err *err)
{
    const char *argv[] = {"/bin/sh",     "-c", "/bin/sh -c \"$1\" </dev/null >/dev/null 2>&1 &",
                          "tessera-app", cmd,  NULL};
    exec_result r;
    if (!runtime_exec(rt, kernel_id, argv, NULL, LAUNCH_TIMEOUT_MS, 4096, &r, err)) return false;
    bool ok = r.exit_code == 0;
    if (!ok)
        ts_err_set(err, "the start command could not be run (exit code %d%s%.*s)", r.exit_code,
                   r.err_len ? ": " : "", (int)(r.err_len > 200 ? 200 : r.err_len),
                   r.err ? r.err : "");
    exec_result_free(&r);
    return ok;
}

app_start_result app_start(runtime *rt, const kernel_view *v, const char *app, int wait_ms,
                           const kernel_service_port **port, ts_err *err)
{
    const kernel_service_port *p = _find(v, app);
    *port = p;
    if (!p) return APP_NOT_FOUND;
    kernel_status st;
    if (!runtime_status(rt, v->kernel_id, &st, err)) return APP_FAILED;
    if (st.state != KERNEL_RUNNING || !st.ip[0]) {
        ts_err_set(err, "kernel %s is not running", v->kernel_id);
        return APP_FAILED;
    }
    pthread_mutex_lock(&g_launch_mu);
    if (_listening(st.ip, p->container_port, PROBE_TIMEOUT_MS)) {
        pthread_mutex_unlock(&g_launch_mu);
        return APP_RUNNING;
    }
    if (!p->start[0]) {
        pthread_mutex_unlock(&g_launch_mu);
        return APP_NO_COMMAND;
    }
    TLOG_INFO("app start", "app=%s port=%d", app, p->container_port);
    bool launched = _launch(rt, v->kernel_id, p->start, err);
    int64_t deadline = ts_now_mono_ms() + wait_ms;
    bool up = false;
    /* the lock is held until the app listens, so a second start waits
     * for it instead of launching another copy */
    while (launched && !(up = _listening(st.ip, p->container_port, PROBE_TIMEOUT_MS)) &&
           ts_now_mono_ms() < deadline)
        usleep(PROBE_INTERVAL_MS * 1000);
    pthread_mutex_unlock(&g_launch_mu);
    if (!launched) return APP_FAILED;
    if (!up) {
        TLOG_WARN("app did not start listening", "app=%s port=%d wait_ms=%d", app,
                  p->container_port, wait_ms);
        return APP_TIMEOUT;
    }
    return APP_STARTED;
}

app_stop_result app_stop(runtime *rt, const kernel_view *v, const char *app, int grace_ms,
                         const kernel_service_port **port, ts_err *err)
{
    const kernel_service_port *p = _find(v, app);
    *port = p;
    if (!p) return APP_STOP_NOT_FOUND;
    int n = 0;
    /* under the launch lock: a start that arrives meanwhile waits, then
     * finds the port closed and starts it again */
    pthread_mutex_lock(&g_launch_mu);
    bool ok = runtime_stop_listeners(rt, v->kernel_id, p->container_port, grace_ms, &n, err);
    pthread_mutex_unlock(&g_launch_mu);
    if (!ok) return APP_STOP_FAILED;
    return n ? APP_STOPPED : APP_NOT_LISTENING;
}
