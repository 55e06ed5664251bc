/* bench_placement.c: `make bench-scheduler-core`.
 *
 * 1,000 agents x 8 GPUs (64 cores, 512 GiB each), 20,000 mixed requests (whole
 * and fractional GPUs, cpu-only), measured:
 *   - the placement engine alone (sched_group_place + commit), per selector;
 *   - a full scheduling pass (queue order + predicates + placement), fifo and drf;
 *   - the pass with Redis reservation, one EVALSHA per session, and batched
 *     (many sessions per EVALSHA, the pipelined variant);
 * then checks the invariant: alloc:* sums == occupancy in agent:* == the
 * in-memory model, and everything released leaves zero behind.
 *
 * Redis: TESSERA_BENCH_REDIS_URL, or a redis-server started here on a free port.
 * BENCH_AGENTS / BENCH_SESSIONS override the sizes. */
#include "bench/scheduler/workload.h"
#include "libcommon/log.h"
#include "services/scheduler/reservation.h"
#include "services/scheduler/reserve_redis.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static int NAGENTS = 1000, NSESS = 20000;
#define NDEV 8
#define NUSERS 200

/* ---- workload ---------------------------------------------------------------------------- */

typedef struct req {
    slots_t slots;
    char kind; /* f: fractional, F: fractional > 1, w: whole, c: cpu only */
} req;

static req *reqs;

static void make_workload(void)
{
    reqs = ts_calloc((size_t)NSESS, sizeof(*reqs));
    for (int i = 0; i < NSESS; i++) {
        bench_request br;
        bench_next_request(&br);
        reqs[i].kind = br.kind;
        ts_err err;
        if (!slots_parse_text(&reqs[i].slots, br.text, &err)) ts_panic("%s", err.msg);
    }
}

static void add_agents(sched_group *g)
{
    for (int i = 0; i < NAGENTS; i++) {
        char id[32];
        snprintf(id, sizeof(id), "agent-%04d", i);
        sched_agent_spec spec = {.id = id, .arch = "x86_64", .ndev = NDEV, .schedulable = true};
        ts_err err;
        if (!slots_parse_text(&spec.total, "cpu=64 mem=512g", &err) ||
            !sched_group_set_agent(g, &spec, &err))
            ts_panic("%s", err.msg);
    }
}

/* ---- results ----------------------------------------------------------------------------- */

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}

static void row(const char *mode, int placed, int failed, double secs, const char *extra)
{
    printf("%-46s %7d %7d %8.3f %12.0f  %s\n", mode, placed, failed, secs, (placed + failed) / secs,
           extra ? extra : "");
}

/* ---- 1: placement alone -------------------------------------------------------------------- */

static void bench_place(sched_selector sel)
{
    sched_group *g = sched_group_new("gpu", sel);
    add_agents(g);
    int64_t *lat = ts_malloc(sizeof(int64_t) * (size_t)NSESS);
    int placed = 0, failed = 0;
    int64_t t0 = ts_now_mono_us();
    for (int i = 0; i < NSESS; i++) {
        struct timespec a, b;
        clock_gettime(CLOCK_MONOTONIC, &a);
        sched_pick p;
        if (sched_group_place(g, &reqs[i].slots, "x86_64", NULL, NULL, &p)) {
            sched_group_commit(g, &p, &reqs[i].slots);
            placed++;
        } else {
            failed++;
        }
        clock_gettime(CLOCK_MONOTONIC, &b);
        lat[i] = (b.tv_sec - a.tv_sec) * 1000000000LL + (b.tv_nsec - a.tv_nsec);
    }
    double secs = (double)(ts_now_mono_us() - t0) / 1e6;
    qsort(lat, (size_t)NSESS, sizeof(*lat), cmp_i64);
    char extra[128], mode[64];
    snprintf(extra, sizeof(extra), "p50 %.1f us, p99 %.1f us, max %.1f us",
             (double)lat[NSESS / 2] / 1000, (double)lat[NSESS * 99 / 100] / 1000,
             (double)lat[NSESS - 1] / 1000);
    snprintf(mode, sizeof(mode), "engine: place+commit, %s", sched_selector_name(sel));
    row(mode, placed, failed, secs, extra);
    free(lat);
    sched_group_free(g);
}

/* ---- 2..4: passes ------------------------------------------------------------------------- */

typedef struct batch {
    resv *v;
    sched_engine *e;
    int n, cap;
    resv_session *s;
    char (*ids)[5][SCHED_ID_MAX]; /* session, ak, user, project, domain */
    resv_kernel *k;
    resv_dev (*dev)[SCHED_MAX_DEVICES];
    char (*kid)[2][SCHED_ID_MAX]; /* kernel, agent */
    slots_t *slots;
    int refused, calls;
} batch;

static void flush(batch *b)
{
    if (!b->n) return;
    resv_result *res = ts_calloc((size_t)b->n, sizeof(*res));
    ts_err err;
    if (!resv_reserve(b->v, b->s, b->n, res, &err)) ts_panic("reserve: %s", err.msg);
    b->calls++;
    for (int i = 0; i < b->n; i++)
        if (res[i].status == RESV_REFUSED) { /* undo in the model */
            b->refused++;
            TS_IGNORE(sched_engine_release(b->e, b->kid[i][0])); /* it holds it: just placed */
        }
    free(res);
    b->n = 0;
}

/* Copies the placement (the session is freed after the pass hands it out). */
static bool collect(void *ctx, const char *group, const sched_session *s, const sched_kplace *k,
                    int nk, ts_err *err)
{
    (void)group, (void)err;
    batch *b = ctx;
    ts_assert(nk == 1);
    int i = b->n++;
    ts_strlcpy(b->ids[i][0], s->id, SCHED_ID_MAX);
    ts_strlcpy(b->ids[i][1], s->access_key, SCHED_ID_MAX);
    ts_strlcpy(b->ids[i][2], s->user_id, SCHED_ID_MAX);
    ts_strlcpy(b->ids[i][3], s->project_id, SCHED_ID_MAX);
    ts_strlcpy(b->ids[i][4], s->domain, SCHED_ID_MAX);
    ts_strlcpy(b->kid[i][0], k[0].kernel->kernel_id, SCHED_ID_MAX);
    ts_strlcpy(b->kid[i][1], k[0].pick.agent->id, SCHED_ID_MAX);
    b->slots[i] = k[0].kernel->slots;
    for (int d = 0; d < k[0].pick.ndev; d++)
        b->dev[i][d] = (resv_dev){k[0].pick.dev[d].dev, k[0].pick.dev[d].shares};
    b->k[i] = (resv_kernel){b->kid[i][0], b->kid[i][1], &b->slots[i], k[0].pick.ndev, b->dev[i]};
    b->s[i] = (resv_session){
        b->ids[i][0], {b->ids[i][1], b->ids[i][2], b->ids[i][3], b->ids[i][4]}, 1, &b->k[i]};
    return true;
}

typedef struct counter {
    batch *b;
    int scheduled, skipped;
} counter;

static void on_outcome(void *ctx, const sched_outcome *o)
{
    counter *c = ctx;
    if (o->scheduled) {
        c->scheduled++;
        if (c->b && c->b->n == c->b->cap) flush(c->b);
    } else {
        c->skipped++;
    }
}

/* outcome + reserve share one ctx in the engine API: route through this. */
typedef struct both {
    counter c;
    batch *b;
    resv *v;
} both;

static bool reserve_route(void *ctx, const char *group, const sched_session *s,
                          const sched_kplace *k, int nk, ts_err *err)
{
    both *x = ctx;
    if (x->b) return collect(x->b, group, s, k, nk, err);
    return sched_reserve_redis(x->v, group, s, k, nk, err);
}

static void outcome_route(void *ctx, const sched_outcome *o)
{
    both *x = ctx;
    on_outcome(&x->c, o);
}

/* Fresh occupancy under the bench's prefix: the agents' capacity, nothing held. */
static void setup_redis_agents(resv *v, sched_group *g)
{
    size_t n = sched_group_agent_count(g);
    resv_agent *ra = ts_calloc(n, sizeof(*ra));
    for (size_t i = 0; i < n; i++) {
        sched_agent *a = sched_group_agent_at(g, i);
        ra[i] = (resv_agent){a->id, &a->total, a->ndev, a->dev_cap, true};
    }
    ts_err err;
    if (!resv_rebuild(v, ra, (int)n, NULL, 0, &err)) ts_panic("%s", err.msg);
    free(ra);
}

/* Model == Redis for every agent, and the Redis invariant. */
static void check(resv *v, sched_group *g, const char *label)
{
    char why[512];
    ts_err err;
    bool holds = false, asked = resv_check_invariant(v, &holds, why, sizeof(why), &err);
    if (!asked || !holds) {
        printf("INVARIANT BROKEN (%s): %s\n", label, asked ? why : err.msg);
        exit(1);
    }
    for (size_t i = 0; i < sched_group_agent_count(g); i++) {
        sched_agent *a = sched_group_agent_at(g, i);
        slots_t total, used;
        int ndev;
        int32_t dc[32], du[32];
        if (!resv_read_agent(v, a->id, &total, &used, &ndev, dc, du, &err))
            ts_panic("read agent: %s", err.msg);
        bool same = slots_equal(&used, &a->used);
        for (int d = 0; d < a->ndev; d++)
            same = same && du[d] == a->dev_used[d];
        if (!same) {
            printf("MODEL != REDIS (%s) on %s\n", label, a->id);
            exit(1);
        }
    }
}

static void bench_pass(sched_order order, resv *v, int batch_size)
{
    sched_engine *e = sched_engine_new();
    sched_rg_policy pol = {order, SCHED_CONCENTRATED, 0, 1};
    ts_err err;
    if (!sched_engine_add_group(e, "gpu", &pol, &err)) ts_panic("%s", err.msg);
    sched_group *g = sched_engine_group(e, "gpu");
    add_agents(g);
    if (v) setup_redis_agents(v, g);
    for (int i = 0; i < NSESS; i++) {
        char id[32];
        snprintf(id, sizeof(id), "sess-%05d", i);
        sched_session *s = sched_session_new(id, 1);
        int u = (int)bench_rnd(NUSERS);
        snprintf(s->access_key, sizeof(s->access_key), "AK%03d", u);
        snprintf(s->user_id, sizeof(s->user_id), "user-%03d", u);
        snprintf(s->project_id, sizeof(s->project_id), "proj-%d", u % 10);
        ts_strlcpy(s->domain, "default", sizeof(s->domain));
        ts_strlcpy(s->arch, "x86_64", sizeof(s->arch));
        snprintf(s->kernels[0].kernel_id, SCHED_ID_MAX, "kern-%05d", i);
        s->kernels[0].slots = reqs[i].slots;
        if (!sched_session_finish(s, &err)) ts_panic("%s", err.msg);
        sched_verdict vd;
        if (!sched_engine_enqueue(e, "gpu", s, &vd)) ts_panic("%s", vd.reason);
    }
    batch b = {0};
    both x = {.v = v};
    if (v && batch_size > 0) {
        b = (batch){.v = v, .e = e, .cap = batch_size};
        b.s = ts_calloc((size_t)batch_size, sizeof(*b.s));
        b.ids = ts_calloc((size_t)batch_size, sizeof(*b.ids));
        b.k = ts_calloc((size_t)batch_size, sizeof(*b.k));
        b.dev = ts_calloc((size_t)batch_size, sizeof(*b.dev));
        b.kid = ts_calloc((size_t)batch_size, sizeof(*b.kid));
        b.slots = ts_calloc((size_t)batch_size, sizeof(*b.slots));
        x.b = &b;
        x.c.b = &b;
    }
    sched_pass_stats st;
    int64_t t0 = ts_now_mono_us();
    sched_engine_pass(e, "gpu", 0, v ? reserve_route : NULL, outcome_route, &x, &st);
    if (x.b) flush(&b);
    double secs = (double)(ts_now_mono_us() - t0) / 1e6;
    int placed = st.scheduled - b.refused;
    char mode[96], extra[160];
    if (!v)
        snprintf(mode, sizeof(mode), "engine: full pass, %s", sched_order_name(order));
    else if (batch_size > 0)
        snprintf(mode, sizeof(mode), "engine+Redis: pass, %d sessions/EVALSHA", batch_size);
    else
        snprintf(mode, sizeof(mode), "engine+Redis: pass, 1 EVALSHA per session");
    snprintf(extra, sizeof(extra), "memo hits %d, refused %d", st.memo_hits,
             st.refused + b.refused);
    row(mode, placed, st.unschedulable, secs, extra);
    if (v) {
        check(v, g, mode);
        /* release everything (batched), then nothing may be left */
        size_t n = sched_engine_alloc_count(e);
        const char **ids = ts_calloc(n ? n : 1, sizeof(*ids));
        char(*kids)[16] = ts_calloc(NSESS, sizeof(*kids));
        size_t m = 0;
        for (int i = 0; i < NSESS; i++) {
            snprintf(kids[i], sizeof(kids[i]), "kern-%05d", i);
            if (sched_engine_release(e, kids[i])) ids[m++] = kids[i];
        }
        int64_t r0 = ts_now_mono_us();
        int released = 0;
        for (size_t i = 0; i < m; i += 512) {
            int k = (int)(m - i < 512 ? m - i : 512);
            int got;
            if (!resv_release(v, ids + i, k, NULL, &got, &err)) ts_panic("release: %s", err.msg);
            released += got;
        }
        double rs = (double)(ts_now_mono_us() - r0) / 1e6;
        snprintf(extra, sizeof(extra), "releases (512 per EVALSHA)");
        row("  Redis release of all of them", released, (int)m - released, rs, extra);
        check(v, g, "after release");
        free(ids);
        free(kids);
    }
    free(b.s);
    free(b.ids);
    free(b.k);
    free(b.dev);
    free(b.kid);
    free(b.slots);
    sched_engine_free(e);
}

/* ---- redis-server -------------------------------------------------------------------------- */

static pid_t redis_pid;
static char redis_url[128];

static bool start_redis(void)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof(a);
    if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof(a)) != 0 ||
        getsockname(fd, (struct sockaddr *)&a, &len) != 0)
        return false;
    close(fd);
    char port[16];
    snprintf(port, sizeof(port), "%d", ntohs(a.sin_port));
    snprintf(redis_url, sizeof(redis_url), "redis://127.0.0.1:%s", port);
    fflush(NULL);
    redis_pid = fork();
    if (redis_pid < 0) return false;
    if (redis_pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        int null = open("/dev/null", O_WRONLY);
        dup2(null, 1);
        dup2(null, 2);
        execlp("redis-server", "redis-server", "--port", port, "--bind", "127.0.0.1", "--save", "",
               "--appendonly", "no", (char *)NULL);
        _exit(127);
    }
    for (int i = 0; i < 500; i++) {
        ts_err err;
        rds *r = rds_connect(redis_url, 500, &err);
        if (r) {
            rds_free(r);
            return true;
        }
        usleep(20000);
    }
    return false;
}

int main(void)
{
    tlog_min_level = TLOG_LEVEL_WARN;
    if (getenv("BENCH_AGENTS")) NAGENTS = atoi(getenv("BENCH_AGENTS"));
    if (getenv("BENCH_SESSIONS")) NSESS = atoi(getenv("BENCH_SESSIONS"));
    make_workload();
    int kinds[128] = {0};
    for (int i = 0; i < NSESS; i++)
        kinds[(int)reqs[i].kind]++;
    printf("scheduler core: %d agents x %d GPUs (64 cores, 512 GiB), %d requests: %d fractional "
           "<= 1, %d fractional > 1, %d whole-GPU, %d cpu-only; one core\n\n",
           NAGENTS, NDEV, NSESS, kinds['f'], kinds['F'], kinds['w'], kinds['c']);
    printf("%-46s %7s %7s %8s %12s  %s\n", "mode", "placed", "failed", "seconds", "attempts/s",
           "notes");
    bench_place(SCHED_CONCENTRATED);
    bench_place(SCHED_DISPERSED);
    bench_place(SCHED_ROUNDROBIN);
    uint64_t seed = bench_rnd_state();
    bench_pass(SCHED_FIFO, NULL, 0);
    bench_rnd_restore(seed);
    bench_pass(SCHED_DRF, NULL, 0);

    const char *url = getenv("TESSERA_BENCH_REDIS_URL");
    if (!url) {
        if (!start_redis()) {
            printf("\nredis-server not available: Redis rows skipped\n");
            return 0;
        }
        url = redis_url;
    }
    ts_err err;
    rds *r = rds_connect(url, 10000, &err);
    if (!r) ts_panic("redis: %s", err.msg);
    resv *v = resv_new(r, "bench:");
    bench_rnd_restore(seed);
    bench_pass(SCHED_FIFO, v, 0);
    bench_rnd_restore(seed);
    bench_pass(SCHED_FIFO, v, 64);
    bench_rnd_restore(seed);
    bench_pass(SCHED_FIFO, v, 512);
    printf("\ninvariant: ok after every Redis run (alloc:* sums == agent:* occupancy == in-memory "
           "model; zero after releasing all)\n");
    resv_free(v);
    rds_free(r);
    if (redis_pid > 0) {
        kill(redis_pid, SIGTERM);
        waitpid(redis_pid, NULL, 0);
    }
    return 0;
}
