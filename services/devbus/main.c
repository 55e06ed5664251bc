/* tessera-devbus: development only. Hosts librdkafka's built-in mock Kafka
 * cluster (real wire protocol, everything in memory) so the other services
 * and kcat have a bus on one machine without a Kafka installation. Creates
 * every tessera topic with the configured partition count, prints
 * "bootstrap=<host:port,...>" on stdout and writes the address to
 * devbus.bootstrap_file for the other services (KAFKA_BOOTSTRAP).
 *
 * The mock brokers listen on 127.0.0.1 on ports chosen by the kernel
 * (librdkafka 2.0.2 offers no way to choose them). Per-agent command topics
 * (tessera.agent.cmd.<agent-id>) are created on first use. */
#include "libcommon/log.h"
#include "libcommon/svc.h"

#include <librdkafka/rdkafka.h>
#include <librdkafka/rdkafka_mock.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int64_t opt_brokers, opt_partitions;
static char *opt_bootstrap_file;

static const cfg_option devbus_options[] = {
    {"devbus.brokers", CFG_INT, &opt_brokers, "3", 1, 9, NULL, false, NULL,
     "number of mock brokers"},
    {"devbus.partitions", CFG_INT, &opt_partitions, "3", 1, 64, NULL, false, NULL,
     "partitions of each pre-created topic"},
    {"devbus.bootstrap_file", CFG_STRING, &opt_bootstrap_file, NULL, 0, 0, NULL, false, NULL,
     "file to write the bootstrap address to (written atomically; optional)"},
    {NULL},
};

/* Every topic of docs/events.md except the per-agent command topics. */
static const char *const devbus_topics[] = {
    "tessera.session.v1", "tessera.kernel.v1", "tessera.agent.v1", "tessera.vfolder.v1",
    "tessera.auth.v1",    "tessera.audit.v1",  "tessera.usage.v1", "tessera.dlq.v1",
};

static rd_kafka_t *host_rk; /* the client instance that hosts the cluster */
static rd_kafka_mock_cluster_t *mcluster;
static char *bootstrap;

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
    metrics_family(out, "tessera_devbus_brokers", "gauge", "mock brokers running");
    metrics_sample(out, "tessera_devbus_brokers", NULL, mcluster ? (double)opt_brokers : 0);
    metrics_family(out, "tessera_devbus_topics", "gauge", "topics pre-created at start");
    metrics_sample(out, "tessera_devbus_topics", NULL,
                   mcluster ? (double)TS_ARRAY_LEN(devbus_topics) : 0);
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
    mcluster = rd_kafka_mock_cluster_new(host_rk, (int)opt_brokers);
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
    svc_add_check(s, "mock-cluster", check_cluster, NULL);
    metrics_add(svc_metrics(s), collect, NULL);
    TLOG_INFO("mock kafka cluster up", "bootstrap=%s brokers=%d partitions=%d topics=%zu file=%s",
              bootstrap, (int)opt_brokers, (int)opt_partitions, TS_ARRAY_LEN(devbus_topics),
              opt_bootstrap_file ? opt_bootstrap_file : "");
    return true;
}

static void devbus_stop(svc *s)
{
    (void)s;
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
    return svc_main(argc, argv, &spec);
}
