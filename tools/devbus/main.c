/* tessera-devbus: development only. Hosts librdkafka's built-in mock Kafka
 * cluster (real wire protocol, everything in memory) so the other services
 * and kcat have a bus on one machine without a Kafka installation. Creates
 * every tessera topic with the configured partition count, prints
 * "bootstrap=<host:port,...>" on stdout and writes the address to
 * devbus.bootstrap_file for the other services (KAFKA_BOOTSTRAP).
 *
 * The mock brokers listen on ports chosen by the kernel (librdkafka 2.0.2
 * offers no way to choose them), on 127.0.0.1 or devbus.broker_addr (see
 * bind() below), and advertise that address. Per-agent command topics
 * (tessera.agent.cmd.<agent-id>) are created on first use.
 *
 * The mock brokers speak plain Kafka only (librdkafka's mock cluster has no
 * TLS listener). For a bus with TLS (deploy/dev/dev-up.sh with
 * TESSERA_DEV_TLS=on) devbus.listen_addr puts the brokers on another address
 * (127.0.0.2) while they keep advertising devbus.broker_addr, where a TLS
 * terminator (stunnel) listens on the same ports and forwards to them.
 *
 * Each partition of the pre-created topics keeps devbus.retention bytes of
 * messages (retention.h): the mock's own cap, 5 MiB, dropped messages a
 * consumer under load had not read yet.
 *
 * Faults (tests/faults, deploy/dev/restart.sh bus): SIGUSR1 takes every mock
 * broker down (connections closed, new ones refused; the messages stay in
 * this process), SIGUSR2 brings them up again. A signal, not an HTTP route:
 * only the process's owner or root can send it (as they could kill it), and
 * the devbus needs no service credentials to start (tests start it alone).
 * /metrics shows tessera_devbus_brokers_up. */
#include "libcommon/log.h"
#include "libcommon/svc.h"
#include "retention.h"

#include <librdkafka/rdkafka.h>
#include <librdkafka/rdkafka_mock.h>

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

static int64_t opt_brokers, opt_partitions, opt_retention;
static char *opt_bootstrap_file, *opt_broker_addr, *opt_listen_addr;

static const cfg_option devbus_options[] = {
    {.name = "devbus.brokers",
     .type = CFG_INT,
     .dst = &opt_brokers,
     .def = "3",
     .min = 1,
     .max = 9,
     .help = "number of mock brokers"},
    {.name = "devbus.partitions",
     .type = CFG_INT,
     .dst = &opt_partitions,
     .def = "3",
     .min = 1,
     .max = 64,
     .help = "partitions of each pre-created topic"},
    {.name = "devbus.retention",
     .type = CFG_BYTES,
     .dst = &opt_retention,
     .def = "256m",
     .max = 68719476736.0,
     .help = "messages kept on each partition of the pre-created topics, read or not (in "
             "memory; the oldest go beyond it); 0 = the mock cluster's own 5 MiB, which a "
             "consumer a few seconds behind under load overruns (docs/events.md)"},
    {.name = "devbus.bootstrap_file",
     .type = CFG_STRING,
     .dst = &opt_bootstrap_file,
     .help = "file to write the bootstrap address to (written atomically; optional)"},
    {.name = "devbus.broker_addr",
     .type = CFG_STRING,
     .dst = &opt_broker_addr,
     .def = "127.0.0.1",
     .help = "IPv4 address of this host the mock brokers listen on and advertise (clients in other "
             "network namespaces or on other hosts need one they reach)"},
    {.name = "devbus.listen_addr",
     .type = CFG_STRING,
     .dst = &opt_listen_addr,
     .def = "",
     .help = "IPv4 address the mock brokers listen on when it is not devbus.broker_addr (they "
             "still advertise devbus.broker_addr, where a TLS terminator listens on the same ports "
             "and forwards here); empty = devbus.broker_addr"},
    {0},
};

/* Every topic of docs/events.md except the per-agent command topics. */
static const char *const devbus_topics[] = {
    "tessera.session.v1", "tessera.kernel.v1", "tessera.agent.v1", "tessera.vfolder.v1",
    "tessera.auth.v1",    "tessera.audit.v1",  "tessera.usage.v1", "tessera.dlq.v1",
};

static rd_kafka_t *host_rk; /* the client instance that hosts the cluster */
static rd_kafka_mock_cluster_t *mcluster;
static char *bootstrap;
static atomic_bool brokers_up = true;

/* librdkafka 2.0.2's mock brokers bind 127.0.0.1 port 0 and advertise the
 * address getsockname() then gives; nothing chooses another. This process's
 * bind() (which librdkafka's calls reach: an executable's definition comes
 * first) puts such a bind on the listen address instead while the cluster is
 * made (rebind_to set), so the brokers listen there. When the listen address
 * is not the advertised one (devbus.listen_addr), getsockname() reports the
 * advertised address for the brokers' ports (they are advertised there), and
 * bind() maps a broker's advertised address back to the listen address (a
 * broker brought up again after SIGUSR1 binds its recorded address). Any
 * other bind or getsockname is passed on unchanged. */
#define DEVBUS_MAX_PORTS 16
static struct in_addr rebind_addr; /* where the brokers listen */
static struct in_addr advert_addr; /* what they advertise */
static atomic_bool rebind_to;      /* while the cluster is made */
static atomic_bool masquerade;     /* rebind_addr != advert_addr */
static _Atomic uint16_t broker_ports[DEVBUS_MAX_PORTS];
static atomic_int broker_port_count;

static bool _is_broker_port(uint16_t port)
{
    int n = atomic_load(&broker_port_count);
    for (int i = 0; i < n && i < DEVBUS_MAX_PORTS; i++)
        if (atomic_load(&broker_ports[i]) == port) return true;
    return false;
}

int bind(int fd, const struct sockaddr *addr, socklen_t len)
{
    struct sockaddr_in in;
    if (addr && len >= (socklen_t)sizeof(in) && addr->sa_family == AF_INET) {
        memcpy(&in, addr, sizeof(in));
        bool made = atomic_load(&rebind_to) && in.sin_port == 0 &&
                    in.sin_addr.s_addr == htonl(INADDR_LOOPBACK);
        bool again = atomic_load(&masquerade) && in.sin_port != 0 &&
                     in.sin_addr.s_addr == advert_addr.s_addr && _is_broker_port(in.sin_port);
        if (made || again) {
            in.sin_addr = rebind_addr;
            return (int)syscall(SYS_bind, fd, (const struct sockaddr *)&in, (socklen_t)sizeof(in));
        }
    }
    return (int)syscall(SYS_bind, fd, addr, len);
}

int getsockname(int fd, struct sockaddr *addr, socklen_t *len)
{
    int rc = (int)syscall(SYS_getsockname, fd, addr, len);
    if (rc != 0 || !atomic_load(&masquerade) || !addr || !len) return rc;
    struct sockaddr_in in;
    if (*len < (socklen_t)sizeof(in) || addr->sa_family != AF_INET) return rc;
    memcpy(&in, addr, sizeof(in));
    if (in.sin_addr.s_addr != rebind_addr.s_addr) return rc;
    if (atomic_load(&rebind_to) && !_is_broker_port(in.sin_port)) {
        int i = atomic_fetch_add(&broker_port_count, 1);
        if (i < DEVBUS_MAX_PORTS) atomic_store(&broker_ports[i], in.sin_port);
    }
    if (!_is_broker_port(in.sin_port)) return rc;
    in.sin_addr = advert_addr;
    memcpy(addr, &in, sizeof(in));
    return rc;
}
static pthread_t control_thread;
static bool control_running;

static void quiet_log(const rd_kafka_t *rk, int level, const char *fac, const char *buf)
{
    (void)rk;
    char q[600];
    TLOG(level <= 3 ? TLOG_LEVEL_WARN : TLOG_LEVEL_DEBUG, "librdkafka", "facility=%s detail=%s",
         fac, tlog_quote(q, sizeof(q), buf));
}

/* Write the address to path via a temporary file and rename, so a reader
 * never sees a half-written file. */
static bool write_bootstrap_file(const char *path, const char *addr, ts_err *err)
{
    char *tmp = ts_asprintf("%s.tmp.%ld", path, (long)getpid());
    FILE *f = fopen(tmp, "w");
    if (!f) {
        ts_err_set(err, "%s: %s", tmp, strerror(errno));
        free(tmp);
        return false;
    }
    bool ok = fprintf(f, "%s\n", addr) > 0;
    ok = (fflush(f) == 0) && ok;
    ok = (fsync(fileno(f)) == 0) && ok;
    ok = (fclose(f) == 0) && ok;
    if (!ok || rename(tmp, path) != 0) {
        ts_err_set(err, "%s: %s", path, strerror(errno));
        unlink(tmp);
        free(tmp);
        return false;
    }
    free(tmp);
    return true;
}

static bool check_cluster(svc *s, void *ctx, ts_err *err)
{
    (void)s;
    (void)ctx;
    if (!mcluster || !bootstrap || !bootstrap[0]) {
        ts_err_set(err, "mock cluster not running");
        return false;
    }
    return true;
}

static void collect(FILE *out, void *ctx)
{
    (void)ctx;
    metrics_gauge(out, "tessera_devbus_brokers", "mock brokers running",
                  mcluster ? (double)opt_brokers : 0);
    metrics_gauge(out, "tessera_devbus_brokers_up",
                  "1 while the mock brokers accept connections, 0 after SIGUSR1 took them down",
                  atomic_load(&brokers_up) ? 1 : 0);
    metrics_gauge(out, "tessera_devbus_topics", "topics pre-created at start",
                  mcluster ? (double)TS_ARRAY_LEN(devbus_topics) : 0);
}

/* The signals of the broker controls: blocked in every thread (main() blocks
 * them before any thread exists), taken by the control thread only. */
static void control_signals(sigset_t *set)
{
    sigemptyset(set);
    sigaddset(set, SIGUSR1);
    sigaddset(set, SIGUSR2);
}

/* Every broker down (up false) or up. */
static void set_brokers(bool up)
{
    int failed = 0;
    for (int32_t id = 1; id <= (int32_t)opt_brokers; id++) {
        rd_kafka_resp_err_t e = up ? rd_kafka_mock_broker_set_up(mcluster, id)
                                   : rd_kafka_mock_broker_set_down(mcluster, id);
        if (e) {
            TLOG_WARN("mock broker control failed", "broker=%d up=%d error=\"%s\"", (int)id, up,
                      rd_kafka_err2str(e));
            failed++;
        }
    }
    atomic_store(&brokers_up, up);
    TLOG_WARN(up ? "mock brokers up" : "mock brokers down", "brokers=%d failed=%d",
              (int)opt_brokers, failed);
}

/* SIGUSR1: brokers down; SIGUSR2: up. Returns when control_stop is set
 * (checked every 200 ms). */
static atomic_bool control_stop;
static void *control_main(void *arg)
{
    (void)arg;
    sigset_t set;
    control_signals(&set);
    const struct timespec tick = {0, 200 * 1000 * 1000};
    while (!atomic_load(&control_stop)) {
        int sig = sigtimedwait(&set, NULL, &tick);
        if (sig < 0) {
            if (errno == EINTR || errno == EAGAIN) continue;
            TLOG_ERROR("broker control: sigtimedwait failed", "error=\"%s\"", strerror(errno));
            return NULL;
        }
        set_brokers(sig == SIGUSR2);
    }
    return NULL;
}

static void cleanup(void)
{
    if (mcluster) rd_kafka_mock_cluster_destroy(mcluster);
    mcluster = NULL;
    if (host_rk) rd_kafka_destroy(host_rk);
    host_rk = NULL;
    free(bootstrap);
    bootstrap = NULL;
}

static bool devbus_start(svc *s, ts_err *err)
{
    char errstr[512];
    rd_kafka_conf_t *conf = rd_kafka_conf_new();
    rd_kafka_conf_set_log_cb(conf, quiet_log);
    /* The host instance never produces; it only owns the cluster's threads. */
    host_rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, errstr, sizeof(errstr));
    if (!host_rk) {
        rd_kafka_conf_destroy(conf);
        ts_err_set(err, "mock cluster host: %s", errstr);
        return false;
    }
    const char *baddr = opt_broker_addr && *opt_broker_addr ? opt_broker_addr : "127.0.0.1";
    const char *laddr = opt_listen_addr && *opt_listen_addr ? opt_listen_addr : baddr;
    if (inet_pton(AF_INET, baddr, &advert_addr) != 1 ||
        inet_pton(AF_INET, laddr, &rebind_addr) != 1) {
        ts_err_set(err, "devbus.broker_addr '%s' or devbus.listen_addr '%s' is not an IPv4 address",
                   baddr, laddr);
        rd_kafka_destroy(host_rk);
        host_rk = NULL;
        return false;
    }
    atomic_store(&masquerade, rebind_addr.s_addr != advert_addr.s_addr);
    atomic_store(&rebind_to,
                 rebind_addr.s_addr != htonl(INADDR_LOOPBACK) || atomic_load(&masquerade));
    mcluster = rd_kafka_mock_cluster_new(host_rk, (int)opt_brokers);
    atomic_store(&rebind_to, false);
    if (!mcluster) {
        ts_err_set(err, "mock cluster with %d brokers could not be created", (int)opt_brokers);
        rd_kafka_destroy(host_rk);
        host_rk = NULL;
        return false;
    }
    int replicas = opt_brokers < 3 ? (int)opt_brokers : 3;
    for (size_t i = 0; i < TS_ARRAY_LEN(devbus_topics); i++) {
        rd_kafka_resp_err_t e =
            rd_kafka_mock_topic_create(mcluster, devbus_topics[i], (int)opt_partitions, replicas);
        if (e) {
            ts_err_set(err, "create topic %s: %s", devbus_topics[i], rd_kafka_err2str(e));
            cleanup();
            return false;
        }
        if (opt_retention > 0 && !devbus_set_retention(mcluster, devbus_topics[i],
                                                       (int)opt_partitions, opt_retention, err)) {
            ts_err_prefix(err, "devbus.retention");
            cleanup();
            return false;
        }
    }
    bootstrap = ts_strdup(rd_kafka_mock_cluster_bootstraps(mcluster));
    if (opt_bootstrap_file && opt_bootstrap_file[0] &&
        !write_bootstrap_file(opt_bootstrap_file, bootstrap, err)) {
        ts_err_prefix(err, "devbus.bootstrap_file");
        cleanup();
        return false;
    }
    printf("bootstrap=%s\n", bootstrap);
    fflush(stdout);
    int rc = pthread_create(&control_thread, NULL, control_main, NULL);
    if (rc != 0) {
        ts_err_set(err, "broker control thread: %s", strerror(rc));
        cleanup();
        return false;
    }
    control_running = true;
    svc_add_check(s, "mock-cluster", check_cluster, NULL);
    metrics_add(svc_metrics(s), collect, NULL);
    TLOG_INFO(
        "mock kafka cluster up",
        "bootstrap=%s listen_addr=%s brokers=%d partitions=%d topics=%zu retention_bytes=%lld "
        "file=%s",
        bootstrap, laddr, (int)opt_brokers, (int)opt_partitions, TS_ARRAY_LEN(devbus_topics),
        (long long)opt_retention, opt_bootstrap_file ? opt_bootstrap_file : "");
    return true;
}

static void devbus_stop(svc *s)
{
    (void)s;
    if (control_running) {
        atomic_store(&control_stop, true);
        pthread_join(control_thread, NULL);
        control_running = false;
    }
    if (opt_bootstrap_file && opt_bootstrap_file[0] && bootstrap) unlink(opt_bootstrap_file);
    cleanup();
    TLOG_INFO("mock kafka cluster stopped", "");
}

int main(int argc, char **argv)
{
    static const svc_spec spec = {
        .name = "devbus",
        .summary = "development only: an in-memory Kafka (librdkafka mock cluster) for one machine",
        .default_listen = "127.0.0.1:8099",
        .needs = 0,
        .options = devbus_options,
        .start = devbus_start,
        .stop = devbus_stop,
    };
    /* Before any thread exists, so that every thread inherits the mask and
     * only the control thread takes them. */
    sigset_t set;
    control_signals(&set);
    pthread_sigmask(SIG_BLOCK, &set, NULL);
    return svc_main(argc, argv, &spec);
}
