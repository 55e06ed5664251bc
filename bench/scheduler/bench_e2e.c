/* bench_e2e.c: the end-to-end scheduler benchmark's driver (make bench-scheduler,
 * bench/scheduler/run.sh starts the processes): enqueue N sessions of mixed
 * sizes as fast as they are taken, watch tessera.session.v1 for SessionScheduled
 * / SessionUnschedulable, then report placements per second, enqueue-to-
 * scheduled latency p50/p99 and check the invariant.
 *
 * This driver is the bus path: SessionEnqueued published straight to
 * tessera.session.v1 (what the registry publishes after its COMMIT). The API
 * path (signed POST /session through the gateway and the registry) is
 * bench_api.py; it calls this program with BENCH_CHECK_ONLY=1 for the Redis
 * half of the invariant (prints "invariant=ok allocs=N sess=N", exit 0 when ok).
 *
 * Environment: KAFKA_BOOTSTRAP, BENCH_REDIS_URL, BENCH_SESSIONS (20000),
 * BENCH_GROUP ("bench"), BENCH_TIMEOUT (seconds, 120), BENCH_RATE (sessions per
 * second; 0 = as fast as they are taken), BENCH_PREFIX (scheduler.key_prefix),
 * BENCH_CHECK_ONLY. */
#include "bench/scheduler/workload.h"
#include "libcommon/envelope.h"
#include "libcommon/kbus.h"
#include "libcommon/log.h"
#include "libcommon/rds.h"
#include "libcommon/slots.h"
#include "services/scheduler/reservation.h"
#include "tessera/v1/session.pb-c.h"

#include <librdkafka/rdkafka.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define NUSERS 200

static int NSESS = 20000;
static char run_id[16];
static int64_t *t_enq, *t_sched;
static bool *unsched;
static atomic_int n_sched, n_unsched_only, n_dup;
static _Atomic int64_t t_last_sched;
static atomic_bool stop_consumer, assigned;
static const char *bootstrap;

/* ---- workload (workload.h: the same mix as bench_placement.c) ------------------------------ */

typedef struct req {
    char slots[4][2][24];
    int nslots;
    char kind;
} req;

static req *reqs;
static int kinds[128];

static void put(req *r, const char *name, const char *amount)
{
    ts_strlcpy(r->slots[r->nslots][0], name, 24);
    ts_strlcpy(r->slots[r->nslots][1], amount, 24);
    r->nslots++;
}

static void make_workload(void)
{
    reqs = ts_calloc((size_t)NSESS, sizeof(*reqs));
    for (int i = 0; i < NSESS; i++) {
        req *r = &reqs[i];
        bench_request br;
        bench_next_request(&br);
        char *save = NULL;
        for (char *tok = strtok_r(br.text, " ", &save); tok; tok = strtok_r(NULL, " ", &save)) {
            char *eq = strchr(tok, '=');
            *eq = '\0';
            put(r, tok, eq + 1);
        }
        r->kind = br.kind;
        kinds[(int)r->kind]++;
    }
}

/* ---- watching tessera.session.v1 ------------------------------------------------------------- */

static int index_of(const char *sid)
{
    size_t pl = strlen(run_id);
    if (strncmp(sid, run_id, pl) != 0 || sid[pl] != '-') return -1;
    int i = atoi(sid + pl + 1);
    return i >= 0 && i < NSESS ? i : -1;
}

static void rebalance_cb(rd_kafka_t *rk, rd_kafka_resp_err_t err,
                         rd_kafka_topic_partition_list_t *parts, void *opaque)
{
    (void)opaque;
    if (err == RD_KAFKA_RESP_ERR__ASSIGN_PARTITIONS) {
        for (int i = 0; i < parts->cnt; i++)
            parts->elems[i].offset = RD_KAFKA_OFFSET_END;
        rd_kafka_assign(rk, parts);
        atomic_store(&assigned, true);
    } else {
        rd_kafka_assign(rk, NULL);
    }
}

static void *consumer_main(void *arg)
{
    (void)arg;
    rd_kafka_conf_t *conf = rd_kafka_conf_new();
    char errstr[512], group[64];
    snprintf(group, sizeof(group), "bench-e2e.%s", run_id);
    rd_kafka_conf_set(conf, "bootstrap.servers", bootstrap, errstr, sizeof(errstr));
    rd_kafka_conf_set(conf, "group.id", group, errstr, sizeof(errstr));
    rd_kafka_conf_set(conf, "enable.auto.commit", "false", errstr, sizeof(errstr));
    rd_kafka_conf_set(conf, "fetch.wait.max.ms", "10", errstr, sizeof(errstr));
    rd_kafka_conf_set(conf, "log_level", "3", errstr, sizeof(errstr));
    rd_kafka_conf_set_rebalance_cb(conf, rebalance_cb);
    rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_CONSUMER, conf, errstr, sizeof(errstr));
    if (!rk) ts_panic("consumer: %s", errstr);
    rd_kafka_poll_set_consumer(rk);
    rd_kafka_topic_partition_list_t *subs = rd_kafka_topic_partition_list_new(1);
    rd_kafka_topic_partition_list_add(subs, "tessera.session.v1", RD_KAFKA_PARTITION_UA);
    rd_kafka_subscribe(rk, subs);
    rd_kafka_topic_partition_list_destroy(subs);
    while (!atomic_load(&stop_consumer)) {
        rd_kafka_message_t *m = rd_kafka_consumer_poll(rk, 50);
        if (!m) continue;
        if (!m->err) {
            int64_t now = ts_now_mono_us();
            ts_err err;
            Tessera__V1__Envelope *env = envelope_unpack(m->payload, m->len, &err);
            if (env && strcmp(env->type, "tessera.v1.SessionScheduled") == 0) {
                int i = index_of(env->subject_id);
                if (i >= 0 && t_sched[i] == 0) {
                    t_sched[i] = now;
                    atomic_fetch_add(&n_sched, 1);
                    if (unsched[i]) atomic_fetch_sub(&n_unsched_only, 1);
                    atomic_store(&t_last_sched, now);
                } else if (i >= 0) {
                    atomic_fetch_add(&n_dup, 1);
                }
            } else if (env && strcmp(env->type, "tessera.v1.SessionUnschedulable") == 0) {
                int i = index_of(env->subject_id);
                if (i >= 0 && !unsched[i]) {
                    unsched[i] = true;
                    if (!t_sched[i]) atomic_fetch_add(&n_unsched_only, 1);
                }
            }
            if (env) envelope_free(env);
        }
        rd_kafka_message_destroy(m);
    }
    rd_kafka_consumer_close(rk);
    rd_kafka_destroy(rk);
    return NULL;
}

/* ---- enqueue -----------------------------------------------------------------------------------
 */

static void enqueue_bus(kbus *bus, const char *group, int rate)
{
    int64_t start = ts_now_mono_us();
    for (int i = 0; i < NSESS; i++) {
        if (rate > 0)
            while (ts_now_mono_us() - start < (int64_t)i * 1000000 / rate)
                usleep(200);
        char sid[48], kid[48], ak[16], user[16], proj[16];
        snprintf(sid, sizeof(sid), "%s-%d", run_id, i);
        snprintf(kid, sizeof(kid), "%s-%d-k0", run_id, i);
        int u = (int)bench_rnd(NUSERS);
        snprintf(ak, sizeof(ak), "AK%03d", u);
        snprintf(user, sizeof(user), "user-%03d", u);
        snprintf(proj, sizeof(proj), "proj-%d", u % 10);
        Tessera__V1__SlotAmount sa[4], *sap[4];
        for (int s = 0; s < reqs[i].nslots; s++) {
            tessera__v1__slot_amount__init(&sa[s]);
            sa[s].name = reqs[i].slots[s][0];
            sa[s].amount = reqs[i].slots[s][1];
            sap[s] = &sa[s];
        }
        Tessera__V1__SessionEnqueued__KernelRequest kr =
            TESSERA__V1__SESSION_ENQUEUED__KERNEL_REQUEST__INIT;
        Tessera__V1__SessionEnqueued__KernelRequest *krp = &kr;
        kr.kernel_id = kid;
        kr.cluster_role = "main";
        kr.n_slots = (size_t)reqs[i].nslots;
        kr.slots = sap;
        Tessera__V1__SessionEnqueued m = TESSERA__V1__SESSION_ENQUEUED__INIT;
        m.session_id = sid;
        m.session_name = sid;
        m.session_type = TESSERA__V1__SESSION_TYPE__SESSION_TYPE_BATCH;
        m.access_key = ak;
        m.user_id = user;
        m.project_id = proj;
        m.domain_name = "default";
        m.resource_group = (char *)group;
        m.image = "bench/none:latest";
        m.architecture = "x86_64";
        m.cluster_size = 1;
        m.cluster_mode = "single-node";
        m.n_kernels = 1;
        m.kernels = &krp;
        m.enqueued_at_ms = ts_now_wall_ms();
        t_enq[i] = ts_now_mono_us();
        ts_err err;
        while (!kbus_publish(bus, "tessera.session.v1", sid, &m.base, NULL, sid, &err))
            usleep(1000); /* local queue full: wait for the brokers */
    }
}

/* ---- results -----------------------------------------------------------------------------------
 */

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}

static long long count_keys(rds *r, const char *pattern)
{
    /* the bench owns this Redis: KEYS is fine */
    const char *argv[] = {"EVAL", "return #redis.call('KEYS', ARGV[1])", "0", pattern};
    ts_err err;
    redisReply *rep = rds_command(r, 4, argv, NULL, &err);
    long long n = rep && rep->type == REDIS_REPLY_INTEGER ? rep->integer : -1;
    if (rep) freeReplyObject(rep);
    return n;
}

typedef enum inv_result { INV_OK, INV_BROKEN, INV_ERROR } inv_result;

/* The Redis invariant: broken (why says where) or not asked (err). */
static inv_result invariant(resv *v, char *why, size_t size, ts_err *err)
{
    bool holds;
    if (!resv_check_invariant(v, &holds, why, size, err)) return INV_ERROR;
    return holds ? INV_OK : INV_BROKEN;
}

/* BENCH_CHECK_ONLY: the Redis half of the invariant, for bench_api.py */
static int check_only(const char *redis_url)
{
    ts_err err;
    rds *r = rds_connect(redis_url, 5000, &err);
    if (!r) {
        fprintf(stderr, "bench_e2e: %s\n", err.msg);
        return 2;
    }
    resv *v = resv_new(r, getenv("BENCH_PREFIX") ? getenv("BENCH_PREFIX") : "");
    char why[512] = "";
    inv_result inv = invariant(v, why, sizeof(why), &err);
    for (char *c = why; *c; c++)
        if (*c == ' ' || *c == '=') *c = '_';
    printf("invariant=%s allocs=%lld sess=%lld\n",
           inv == INV_OK ? "ok" : (inv == INV_BROKEN ? why : "error"), count_keys(r, "alloc:*"),
           count_keys(r, "sess:*"));
    if (inv == INV_ERROR) fprintf(stderr, "bench_e2e: %s\n", err.msg);
    resv_free(v);
    rds_free(r);
    return inv == INV_OK ? 0 : 1;
}

/* Long: the benchmark's one run in order: start, submit, wait, report. */
int main(void)
{
    tlog_init("bench", "bench");
    tlog_min_level = TLOG_LEVEL_WARN;
    bootstrap = getenv("KAFKA_BOOTSTRAP");
    const char *redis_url = getenv("BENCH_REDIS_URL");
    const char *group = getenv("BENCH_GROUP") ? getenv("BENCH_GROUP") : "bench";
    int timeout_s = getenv("BENCH_TIMEOUT") ? atoi(getenv("BENCH_TIMEOUT")) : 120;
    if (getenv("BENCH_SESSIONS")) NSESS = atoi(getenv("BENCH_SESSIONS"));
    if (redis_url && getenv("BENCH_CHECK_ONLY")) return check_only(redis_url);
    if (!bootstrap || !redis_url || NSESS <= 0) {
        fprintf(stderr, "bench_e2e: KAFKA_BOOTSTRAP and BENCH_REDIS_URL are needed\n");
        return 2;
    }
    snprintf(run_id, sizeof(run_id), "b%lld", (long long)(ts_now_wall_ms() % 100000000));
    make_workload();
    t_enq = ts_calloc((size_t)NSESS, sizeof(*t_enq));
    t_sched = ts_calloc((size_t)NSESS, sizeof(*t_sched));
    unsched = ts_calloc((size_t)NSESS, sizeof(*unsched));

    pthread_t th;
    pthread_create(&th, NULL, consumer_main, NULL);
    for (int i = 0; i < 300 && !atomic_load(&assigned); i++)
        usleep(100000);
    if (!atomic_load(&assigned)) ts_panic("the watcher got no partition in 30 s");
    usleep(500000);

    kbus_opts o = {.bootstrap = bootstrap,
                   .service = "bench",
                   .instance = run_id,
                   .linger_ms = 5,
                   .max_attempts = 1,
                   .retry_backoff_ms = 100};
    ts_err err;
    kbus *bus = kbus_new(&o, &err);
    if (!bus) ts_panic("%s", err.msg);
    printf("end to end: %d sessions (%d fractional <= 1, %d fractional > 1, %d whole-GPU, %d "
           "cpu-only) enqueued via %s\n",
           NSESS, kinds['f'], kinds['F'], kinds['w'], kinds['c'],
           "the bus (SessionEnqueued published directly)");
    fflush(stdout);
    int64_t t0 = ts_now_mono_us();
    int rate = getenv("BENCH_RATE") ? atoi(getenv("BENCH_RATE")) : 0;
    if (rate > 0) printf("paced at %d sessions/s\n", rate);
    enqueue_bus(bus, group, rate);
    if (!kbus_flush(bus, 60000)) ts_panic("enqueue: not acknowledged");
    int64_t t_enq_done = ts_now_mono_us();

    /* done when every session was answered and nothing moved for 2 s */
    int64_t deadline = t0 + (int64_t)timeout_s * 1000000;
    int last = -1;
    int64_t quiet_since = ts_now_mono_us();
    while (ts_now_mono_us() < deadline) {
        usleep(100000);
        int s = atomic_load(&n_sched), u = atomic_load(&n_unsched_only);
        if (s + u != last) {
            last = s + u;
            quiet_since = ts_now_mono_us();
        }
        if (s + u >= NSESS && ts_now_mono_us() - quiet_since > 2000000) break;
        if (ts_now_mono_us() - quiet_since > 10000000) break;
    }
    atomic_store(&stop_consumer, true);
    pthread_join(th, NULL);
    kbus_close(bus, 2000);

    int ns = atomic_load(&n_sched);
    int64_t *lat = ts_calloc((size_t)ns + 1, sizeof(*lat));
    int k = 0;
    for (int i = 0; i < NSESS; i++)
        if (t_sched[i]) lat[k++] = t_sched[i] - t_enq[i];
    qsort(lat, (size_t)k, sizeof(*lat), cmp_i64);
    double span = (double)(atomic_load(&t_last_sched) - t0) / 1e6;
    double enq_s = (double)(t_enq_done - t0) / 1e6;

    rds *r = rds_connect(redis_url, 5000, &err);
    if (!r) ts_panic("%s", err.msg);
    resv *v = resv_new(r, getenv("BENCH_PREFIX") ? getenv("BENCH_PREFIX") : "");
    char why[512] = "";
    inv_result inv = invariant(v, why, sizeof(why), &err);
    long long allocs = count_keys(r, "alloc:*"), sess = count_keys(r, "sess:*");

    printf("\n%-44s %s\n", "metric", "value");
    printf("%-44s %d\n", "sessions enqueued", NSESS);
    printf("%-44s %.2f s (%.0f/s)\n", "enqueue time", enq_s, NSESS / enq_s);
    printf("%-44s %d\n", "scheduled (SessionScheduled seen)", ns);
    printf("%-44s %d\n", "unschedulable (no room left)", atomic_load(&n_unsched_only));
    printf("%-44s %d\n", "unanswered", NSESS - ns - atomic_load(&n_unsched_only));
    printf("%-44s %d\n", "duplicate SessionScheduled", atomic_load(&n_dup));
    printf("%-44s %.2f s\n", "first enqueue -> last placement", span);
    printf("%-44s %.0f\n", "placements per second", span > 0 ? ns / span : 0);
    if (k) {
        printf("%-44s %.1f ms\n", "enqueue -> scheduled p50", lat[k / 2] / 1000.0);
        printf("%-44s %.1f ms\n", "enqueue -> scheduled p99", lat[(k * 99) / 100] / 1000.0);
        printf("%-44s %.1f ms\n", "enqueue -> scheduled max", lat[k - 1] / 1000.0);
    }
    printf("%-44s %s\n", "invariant (Redis reservations = occupancy)",
           inv == INV_OK ? "ok" : (inv == INV_BROKEN ? why : err.msg));
    printf("%-44s %lld alloc:*, %lld sess:*, %d scheduled -> %s\n", "reservations = placements",
           allocs, sess, ns, allocs == ns && sess == ns ? "ok" : "MISMATCH");
    printf("%-44s %s\n", "kernels holding slots in PostgreSQL",
           "not measured: the registry is not in the bus path");
    resv_free(v);
    rds_free(r);
    bool ok = inv == INV_OK && allocs == ns && sess == ns && ns > 0;
    return ok ? 0 : 1;
}
