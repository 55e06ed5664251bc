/* tessera-simagent: N simulated agents (nodes) in one process, speaking the
 * real agent protocol over the bus (docs/agent.md, events.md), for scale tests
 * and the scheduler benchmark. Not part of the default development stack.
 *
 *   - AgentStarted per node at start (slots cpu, mem, cuda.device, cuda.shares;
 *     one DeviceInfo per GPU with simagent.gpu_shares_per_device shares);
 *   - AgentHeartbeat per node every simagent.heartbeat_interval (spread over
 *     the interval), with the node's allocations and kernels;
 *   - one consumer for every node's command topic: a regex subscription
 *     ^tessera\.agent\.cmd\.<prefix>.* (librdkafka), dispatched by topic name;
 *   - CreateKernel -> after simagent.start_delay KernelCreating + KernelStarted;
 *     batch sessions -> KernelExited (exit 0) after simagent.batch_run_time;
 *   - DestroyKernel -> KernelTerminated after simagent.stop_delay (at once for a
 *     kernel it does not know, so the caller is never left waiting);
 *   - generations (a restart, docs/events.md): a CreateKernel of a higher
 *     generation for a kernel it has is created once the current generation is
 *     gone (at once when no destroy is under way); a lower or equal one is a
 *     repeat. A DestroyKernel of a generation below the current one is stale:
 *     KernelTerminated of that generation, the kernel is left alone. Kernel
 *     events carry the generation they are about;
 *   - AgentStopped (graceful) per node on SIGTERM.
 * Node ids are <simagent.id_prefix><index>, index 0 .. count-1. */
#include "libcommon/log.h"
#include "libcommon/slots.h"
#include "libcommon/svc.h"
#include "tessera/v1/agent.pb-c.h"
#include "tessera/v1/agent_cmd.pb-c.h"
#include "tessera/v1/kernel.pb-c.h"

#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define TOPIC_AGENT "tessera.agent.v1"
#define TOPIC_KERNEL "tessera.kernel.v1"
#define CMD_PREFIX "tessera.agent.cmd."
#define ID_MAX 64
#define MAX_GPUS 32

static int64_t opt_count, opt_gpus, opt_start_delay, opt_stop_delay, opt_hb, opt_run_time;
static char *opt_group, *opt_cpu, *opt_mem, *opt_prefix, *opt_arch;
static double opt_shares;

static const cfg_option simagent_options[] = {
    {.name = "simagent.count",
     .type = CFG_INT,
     .dst = &opt_count,
     .def = "10",
     .min = 1,
     .max = 100000,
     .help = "simulated nodes in this process"},
    {.name = "simagent.resource_group",
     .type = CFG_STRING,
     .dst = &opt_group,
     .def = "default",
     .help = "resource group every node serves"},
    {.name = "simagent.cpu",
     .type = CFG_STRING,
     .dst = &opt_cpu,
     .def = "64",
     .help = "cores per node"},
    {.name = "simagent.mem",
     .type = CFG_STRING,
     .dst = &opt_mem,
     .def = "512g",
     .help = "memory per node"},
    {.name = "simagent.gpus",
     .type = CFG_INT,
     .dst = &opt_gpus,
     .def = "8",
     .max = MAX_GPUS,
     .help = "GPU devices per node"},
    {.name = "simagent.gpu_shares_per_device",
     .type = CFG_DOUBLE,
     .dst = &opt_shares,
     .def = "1.0",
     .min = 0.01,
     .max = 100,
     .help = "cuda.shares capacity of each device (0.01 steps)"},
    {.name = "simagent.architecture",
     .type = CFG_STRING,
     .dst = &opt_arch,
     .def = "x86_64",
     .help = "architecture the nodes announce"},
    {.name = "simagent.start_delay",
     .type = CFG_DURATION,
     .dst = &opt_start_delay,
     .def = "1s",
     .max = 3600000,
     .help = "CreateKernel -> KernelCreating + KernelStarted after this"},
    {.name = "simagent.stop_delay",
     .type = CFG_DURATION,
     .dst = &opt_stop_delay,
     .def = "500ms",
     .max = 3600000,
     .help = "DestroyKernel -> KernelTerminated after this"},
    {.name = "simagent.batch_run_time",
     .type = CFG_DURATION,
     .dst = &opt_run_time,
     .def = "2s",
     .max = 86400000,
     .help = "a batch session's kernel exits (code 0) this long after it started"},
    {.name = "simagent.heartbeat_interval",
     .type = CFG_DURATION,
     .dst = &opt_hb,
     .def = "5s",
     .min = 100,
     .max = 3600000,
     .help = "AgentHeartbeat period of each node"},
    {.name = "simagent.id_prefix",
     .type = CFG_STRING,
     .dst = &opt_prefix,
     .def = "sim-",
     .help = "node ids are <prefix><index>"},
    {0},
};

typedef enum { K_CREATING, K_RUNNING, K_EXITED, K_TERMINATING } kstate;

typedef struct kernel {
    char id[ID_MAX], session[ID_MAX];
    kstate state;
    bool batch;
    int exit_code;
    char reason[128];
    Tessera__V1__CreateKernel *cmd;  /* owned: slots and devices for heartbeats */
    int generation;                  /* cmd->generation */
    Tessera__V1__CreateKernel *next; /* owned: a higher generation waiting for this one to end */
} kernel;

typedef struct node {
    char id[ID_MAX];
    uint64_t seq;
    int64_t next_hb_ms;
    kernel *k;
    int nk, capk;
} node;

typedef enum { A_START, A_EXIT, A_TERMINATE } akind;

typedef struct action {
    int64_t due_ms;
    int node;
    akind kind;
    char kernel[ID_MAX];
} action;

static struct {
    svc *s;
    kbus *bus;
    node *nodes;
    int n;
    int hb_cur; /* the node whose heartbeat is due next: due times rise along the ring from it */
    char shares_cap[SLOT_FMT_MAX], cpu[SLOT_FMT_MAX], mem[SLOT_FMT_MAX];
    pthread_mutex_t mu;
    pthread_cond_t cv;
    action *heap;
    int nheap, capheap;
    bool stop;
    pthread_t thread;
    bool thread_started;
    kbus_consumer *consumer;
    _Atomic uint64_t created, started, exited, terminated, heartbeats;
} g = {.mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER};

/* ---- timed actions (a binary heap under g.mu) ------------------------------------------- */

static void heap_push(action a)
{
    if (g.nheap == g.capheap) {
        g.capheap = g.capheap ? g.capheap * 2 : 1024;
        g.heap = ts_realloc(g.heap, sizeof(*g.heap) * (size_t)g.capheap);
    }
    int i = g.nheap++;
    while (i > 0 && g.heap[(i - 1) / 2].due_ms > a.due_ms) {
        g.heap[i] = g.heap[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    g.heap[i] = a;
    pthread_cond_signal(&g.cv);
}

static action heap_pop(void)
{
    action top = g.heap[0], last = g.heap[--g.nheap];
    int i = 0;
    for (;;) {
        int c = 2 * i + 1;
        if (c >= g.nheap) break;
        if (c + 1 < g.nheap && g.heap[c + 1].due_ms < g.heap[c].due_ms) c++;
        if (g.heap[c].due_ms >= last.due_ms) break;
        g.heap[i] = g.heap[c];
        i = c;
    }
    if (g.nheap) g.heap[i] = last;
    return top;
}

/* ---- publishing -------------------------------------------------------------------------- */

static void publish(const char *topic, const char *key, const ProtobufCMessage *m)
{
    ts_err err;
    if (!kbus_publish(g.bus, topic, key, m, NULL, key, &err))
        TLOG_WARN("publish failed", "topic=%s key=%s type=%s error=\"%s\"", topic, key,
                  m->descriptor->name, err.msg);
}

typedef struct capacity {
    Tessera__V1__SlotAmount sa[4];
    Tessera__V1__SlotAmount *sap[4];
    Tessera__V1__DeviceInfo di[MAX_GPUS];
    Tessera__V1__DeviceInfo *dip[MAX_GPUS];
    char devid[MAX_GPUS][8];
    char ndev_text[16], shares_total[SLOT_FMT_MAX];
    size_t nslots;
} capacity;

static void fill_capacity(capacity *c)
{
    memset(c, 0, sizeof(*c));
    const char *names[4] = {"cpu", "mem", "cuda.device", "cuda.shares"};
    snprintf(c->ndev_text, sizeof(c->ndev_text), "%d", (int)opt_gpus);
    int64_t per = llround(opt_shares * SLOT_SHARES_PER_DEVICE);
    slot_format(SLOT_CUDA_SHARES, per * opt_gpus, c->shares_total, sizeof(c->shares_total));
    const char *vals[4] = {g.cpu, g.mem, c->ndev_text, c->shares_total};
    c->nslots = opt_gpus > 0 ? 4 : 2;
    for (size_t i = 0; i < c->nslots; i++) {
        tessera__v1__slot_amount__init(&c->sa[i]);
        c->sa[i].name = (char *)names[i];
        c->sa[i].amount = (char *)vals[i];
        c->sap[i] = &c->sa[i];
    }
    for (int d = 0; d < opt_gpus; d++) {
        Tessera__V1__DeviceInfo *di = &c->di[d];
        tessera__v1__device_info__init(di);
        snprintf(c->devid[d], sizeof(c->devid[d]), "%d", d);
        di->device_id = c->devid[d];
        di->slot_name = "cuda.device";
        di->model = "simulated";
        di->capacity = "1";
        di->shares_capacity = g.shares_cap;
        di->mock = true;
        di->bus_id = "";
        di->numa_node = -1;
        c->dip[d] = di;
    }
}

static void publish_started(const node *n)
{
    capacity c;
    fill_capacity(&c);
    Tessera__V1__AgentStarted m = TESSERA__V1__AGENT_STARTED__INIT;
    m.agent_id = (char *)n->id;
    m.resource_group = opt_group;
    m.architecture = opt_arch;
    m.addr = "127.0.0.1:0";
    m.n_slots = c.nslots;
    m.slots = c.sap;
    m.n_devices = (size_t)opt_gpus;
    m.devices = c.dip;
    m.version = TESSERA_VERSION;
    m.hostname = (char *)n->id;
    m.runtime = "simulated";
    publish(TOPIC_AGENT, n->id, &m.base);
}

/* Under g.mu. */
static void publish_heartbeat(node *n)
{
    capacity c;
    fill_capacity(&c);
    Tessera__V1__AgentHeartbeat m = TESSERA__V1__AGENT_HEARTBEAT__INIT;
    m.agent_id = n->id;
    m.resource_group = opt_group;
    m.seq = ++n->seq;
    m.interval_ms = (int32_t)opt_hb;
    m.n_slots = c.nslots;
    m.slots = c.sap;
    m.n_devices = (size_t)opt_gpus;
    m.devices = c.dip;
    Tessera__V1__AgentHeartbeat__Allocation *al = ts_calloc((size_t)n->nk + 1, sizeof(*al));
    Tessera__V1__AgentHeartbeat__Allocation **alp = ts_calloc((size_t)n->nk + 1, sizeof(*alp));
    Tessera__V1__AgentHeartbeat__Kernel *kk = ts_calloc((size_t)n->nk + 1, sizeof(*kk));
    Tessera__V1__AgentHeartbeat__Kernel **kkp = ts_calloc((size_t)n->nk + 1, sizeof(*kkp));
    static const char *const states[] = {"creating", "running", "exited", "terminating"};
    char(*cid)[ID_MAX + 8] = ts_calloc((size_t)n->nk + 1, ID_MAX + 8);
    for (int i = 0; i < n->nk; i++) {
        kernel *k = &n->k[i];
        tessera__v1__agent_heartbeat__allocation__init(&al[i]);
        al[i].kernel_id = k->id;
        al[i].session_id = k->session;
        al[i].n_slots = k->cmd->n_slots;
        al[i].slots = k->cmd->slots;
        al[i].n_devices = k->cmd->n_devices;
        al[i].devices = k->cmd->devices;
        alp[i] = &al[i];
        tessera__v1__agent_heartbeat__kernel__init(&kk[i]);
        kk[i].kernel_id = k->id;
        kk[i].session_id = k->session;
        kk[i].status = (char *)states[k->state];
        if (k->state != K_CREATING) snprintf(cid[i], ID_MAX + 8, "sim-%s", k->id);
        kk[i].container_id = cid[i];
        kkp[i] = &kk[i];
    }
    m.n_allocations = (size_t)n->nk;
    m.allocations = alp;
    m.n_kernels = (size_t)n->nk;
    m.kernels = kkp;
    Tessera__V1__AgentHeartbeat__Usage u = TESSERA__V1__AGENT_HEARTBEAT__USAGE__INIT;
    m.usage = &u;
    publish(TOPIC_AGENT, n->id, &m.base);
    atomic_fetch_add(&g.heartbeats, 1);
    free(al);
    free(alp);
    free(kk);
    free(kkp);
    free(cid);
}

static void publish_kernel_event(const node *n, const kernel *k, akind what)
{
    char cid[ID_MAX + 8];
    snprintf(cid, sizeof(cid), "sim-%s", k->id);
    if (what == A_START) {
        Tessera__V1__KernelCreating c = TESSERA__V1__KERNEL_CREATING__INIT;
        c.session_id = (char *)k->session;
        c.kernel_id = (char *)k->id;
        c.agent_id = (char *)n->id;
        c.image_digest = "sha256:0000000000000000000000000000000000000000000000000000000000000000";
        publish(TOPIC_KERNEL, k->session, &c.base);
        Tessera__V1__KernelStarted s = TESSERA__V1__KERNEL_STARTED__INIT;
        s.session_id = (char *)k->session;
        s.kernel_id = (char *)k->id;
        s.agent_id = (char *)n->id;
        s.container_id = cid;
        s.kernel_host = "127.0.0.1";
        s.generation = k->generation;
        publish(TOPIC_KERNEL, k->session, &s.base);
    } else if (what == A_EXIT) {
        Tessera__V1__KernelExited e = TESSERA__V1__KERNEL_EXITED__INIT;
        e.session_id = (char *)k->session;
        e.kernel_id = (char *)k->id;
        e.agent_id = (char *)n->id;
        e.exit_code = 0;
        e.reason = "exited";
        e.generation = k->generation;
        publish(TOPIC_KERNEL, k->session, &e.base);
    } else {
        Tessera__V1__KernelTerminated t = TESSERA__V1__KERNEL_TERMINATED__INIT;
        t.session_id = (char *)k->session;
        t.kernel_id = (char *)k->id;
        t.agent_id = (char *)n->id;
        t.exit_code = k->exit_code;
        t.reason = (char *)(k->reason[0] ? k->reason : "user-requested");
        t.generation = k->generation;
        publish(TOPIC_KERNEL, k->session, &t.base);
    }
}

/* ---- kernels (under g.mu) ----------------------------------------------------------------- */

static kernel *find_kernel(node *n, const char *id)
{
    for (int i = 0; i < n->nk; i++)
        if (strcmp(n->k[i].id, id) == 0) return &n->k[i];
    return NULL;
}

static void remove_kernel(node *n, kernel *k)
{
    tessera__v1__create_kernel__free_unpacked(k->cmd, NULL);
    if (k->next) tessera__v1__create_kernel__free_unpacked(k->next, NULL);
    *k = n->k[--n->nk];
}

/* (Re)start k from c (owned from here): CREATING, KernelStarted after the delay. */
static void begin_create(int ni, kernel *k, Tessera__V1__CreateKernel *c)
{
    if (k->cmd && k->cmd != c) tessera__v1__create_kernel__free_unpacked(k->cmd, NULL);
    k->cmd = c;
    k->generation = c->generation;
    k->state = K_CREATING;
    k->batch = c->session_type == TESSERA__V1__SESSION_TYPE__SESSION_TYPE_BATCH;
    k->exit_code = -1;
    k->reason[0] = '\0';
    action a = {ts_now_mono_ms() + opt_start_delay, ni, A_START, ""};
    ts_strlcpy(a.kernel, k->id, sizeof(a.kernel));
    heap_push(a);
}

static void run_action(const action *a)
{
    node *n = &g.nodes[a->node];
    kernel *k = find_kernel(n, a->kernel);
    if (!k) return;
    switch (a->kind) {
    case A_START:
        if (k->state != K_CREATING) return;
        k->state = K_RUNNING;
        publish_kernel_event(n, k, A_START);
        atomic_fetch_add(&g.started, 1);
        if (k->batch) {
            action e = {ts_now_mono_ms() + opt_run_time, a->node, A_EXIT, ""};
            ts_strlcpy(e.kernel, k->id, sizeof(e.kernel));
            heap_push(e);
        }
        return;
    case A_EXIT:
        if (k->state != K_RUNNING) return;
        k->state = K_EXITED;
        k->exit_code = 0;
        publish_kernel_event(n, k, A_EXIT);
        atomic_fetch_add(&g.exited, 1);
        return;
    case A_TERMINATE:
        if (k->state != K_TERMINATING) return; /* created again since */
        publish_kernel_event(n, k, A_TERMINATE);
        atomic_fetch_add(&g.terminated, 1);
        if (k->next) { /* a restart: the next generation now */
            Tessera__V1__CreateKernel *c = k->next;
            k->next = NULL;
            begin_create(a->node, k, c);
            atomic_fetch_add(&g.created, 1);
            return;
        }
        remove_kernel(n, k);
        return;
    }
}

static void *timer_main(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&g.mu);
    while (!g.stop) {
        int64_t now = ts_now_mono_ms();
        while (g.nheap && g.heap[0].due_ms <= now) {
            action a = heap_pop();
            run_action(&a);
        }
        int64_t next = now + 1000;
        if (g.nheap && g.heap[0].due_ms < next) next = g.heap[0].due_ms;
        /* Heartbeats are due in node order around a ring (spread over the
         * interval at start, each one interval after its last), so only the
         * nodes due are touched: a wake costs what it publishes, not g.n
         * (walking 10,000 nodes at each of 500 wakes a second took 40% of a
         * core). A node published late is due one interval after now: still
         * no earlier than the others, which are due within one interval. */
        for (int k = 0; k < g.n; k++) {
            node *n = &g.nodes[g.hb_cur];
            if (n->next_hb_ms > now) break;
            publish_heartbeat(n);
            n->next_hb_ms += opt_hb;
            if (n->next_hb_ms <= now) n->next_hb_ms = now + opt_hb;
            g.hb_cur = (g.hb_cur + 1) % g.n;
        }
        if (g.n && g.nodes[g.hb_cur].next_hb_ms < next) next = g.nodes[g.hb_cur].next_hb_ms;
        int64_t wait = next - ts_now_mono_ms();
        if (wait <= 0) continue;
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_sec += wait / 1000;
        ts.tv_nsec += (wait % 1000) * 1000000;
        if (ts.tv_nsec >= 1000000000) {
            ts.tv_sec++;
            ts.tv_nsec -= 1000000000;
        }
        pthread_cond_timedwait(&g.cv, &g.mu, &ts);
    }
    pthread_mutex_unlock(&g.mu);
    return NULL;
}

/* ---- commands ------------------------------------------------------------------------------ */

/* The node a command topic is for; -1 if none of ours. */
static int node_of_topic(const char *topic)
{
    size_t pl = strlen(CMD_PREFIX), ip = strlen(opt_prefix);
    if (strncmp(topic, CMD_PREFIX, pl) != 0 || strncmp(topic + pl, opt_prefix, ip) != 0) return -1;
    const char *num = topic + pl + ip;
    char *end;
    long i = strtol(num, &end, 10);
    if (!*num || *end || i < 0 || i >= g.n) return -1;
    return (int)i;
}

static kbus_result on_command(const kbus_msg *msg, void *ctx, ts_err *reason)
{
    (void)ctx;
    int ni = node_of_topic(msg->topic);
    if (ni < 0) return KBUS_DONE; /* another process's nodes */
    const char *type = msg->env->type ? msg->env->type : "";
    node *n = &g.nodes[ni];
    if (strcmp(type, "tessera.v1.CreateKernel") == 0) {
        Tessera__V1__CreateKernel *c = (Tessera__V1__CreateKernel *)envelope_payload(
            msg->env, &tessera__v1__create_kernel__descriptor, reason);
        if (!c) return KBUS_REJECT;
        if (strcmp(c->agent_id, n->id) != 0 || !c->kernel_id[0] || strlen(c->kernel_id) >= ID_MAX ||
            strlen(c->session_id) >= ID_MAX) {
            ts_err_set(reason, "CreateKernel for agent '%s' on %s's topic, or a bad kernel id",
                       c->agent_id, n->id);
            tessera__v1__create_kernel__free_unpacked(c, NULL);
            return KBUS_REJECT;
        }
        pthread_mutex_lock(&g.mu);
        kernel *have = find_kernel(n, c->kernel_id);
        if (have) {
            int latest = have->next ? have->next->generation : have->generation;
            if (c->generation <= latest) { /* a repeat: no-op */
                pthread_mutex_unlock(&g.mu);
                tessera__v1__create_kernel__free_unpacked(c, NULL);
                return KBUS_DONE;
            }
            if (have->state == K_TERMINATING) { /* after the current one is gone */
                if (have->next) tessera__v1__create_kernel__free_unpacked(have->next, NULL);
                have->next = c;
            } else { /* no destroy came first: end the current generation now */
                ts_strlcpy(have->reason, "replaced by a new generation", sizeof(have->reason));
                publish_kernel_event(n, have, A_TERMINATE);
                atomic_fetch_add(&g.terminated, 1);
                begin_create(ni, have, c);
                atomic_fetch_add(&g.created, 1);
            }
            pthread_mutex_unlock(&g.mu);
            TLOG_DEBUG("kernel create (new generation)", "agent=%s kernel=%s generation=%d", n->id,
                       c->kernel_id, c->generation);
            return KBUS_DONE;
        }
        if (n->nk == n->capk) {
            n->capk = n->capk ? n->capk * 2 : 8;
            n->k = ts_realloc(n->k, sizeof(*n->k) * (size_t)n->capk);
        }
        kernel *k = &n->k[n->nk++];
        memset(k, 0, sizeof(*k));
        ts_strlcpy(k->id, c->kernel_id, sizeof(k->id));
        ts_strlcpy(k->session, c->session_id, sizeof(k->session));
        begin_create(ni, k, c);
        pthread_mutex_unlock(&g.mu);
        atomic_fetch_add(&g.created, 1);
        TLOG_DEBUG("kernel create", "agent=%s kernel=%s session=%s", n->id, c->kernel_id,
                   c->session_id);
        return KBUS_DONE;
    }
    if (strcmp(type, "tessera.v1.DestroyKernel") == 0) {
        Tessera__V1__DestroyKernel *d = (Tessera__V1__DestroyKernel *)envelope_payload(
            msg->env, &tessera__v1__destroy_kernel__descriptor, reason);
        if (!d) return KBUS_REJECT;
        if (!d->kernel_id[0] || strlen(d->kernel_id) >= ID_MAX || strlen(d->session_id) >= ID_MAX) {
            ts_err_set(reason, "DestroyKernel with a bad kernel id");
            tessera__v1__destroy_kernel__free_unpacked(d, NULL);
            return KBUS_REJECT;
        }
        pthread_mutex_lock(&g.mu);
        kernel *k = find_kernel(n, d->kernel_id);
        if (!k || d->generation < k->generation) { /* unknown, or a stale generation */
            kernel gone = {.state = K_TERMINATING, .exit_code = -1, .generation = d->generation};
            ts_strlcpy(gone.id, d->kernel_id, sizeof(gone.id));
            ts_strlcpy(gone.session, d->session_id, sizeof(gone.session));
            ts_strlcpy(gone.reason, k ? "stale generation" : "not-found", sizeof(gone.reason));
            publish_kernel_event(n, &gone, A_TERMINATE);
        } else if (k->next && d->generation >= k->next->generation) {
            /* the waiting generation is destroyed before it started */
            kernel gone = {
                .state = K_TERMINATING, .exit_code = -1, .generation = k->next->generation};
            ts_strlcpy(gone.id, k->id, sizeof(gone.id));
            ts_strlcpy(gone.session, k->session, sizeof(gone.session));
            ts_strlcpy(gone.reason, d->reason[0] ? d->reason : "user-requested",
                       sizeof(gone.reason));
            tessera__v1__create_kernel__free_unpacked(k->next, NULL);
            k->next = NULL;
            publish_kernel_event(n, &gone, A_TERMINATE);
        } else if (k->state != K_TERMINATING) {
            k->state = K_TERMINATING;
            ts_strlcpy(k->reason, d->reason[0] ? d->reason : "user-requested", sizeof(k->reason));
            action a = {ts_now_mono_ms() + (d->force ? 0 : opt_stop_delay), ni, A_TERMINATE, ""};
            ts_strlcpy(a.kernel, k->id, sizeof(a.kernel));
            heap_push(a);
        }
        pthread_mutex_unlock(&g.mu);
        tessera__v1__destroy_kernel__free_unpacked(d, NULL);
        return KBUS_DONE;
    }
    return KBUS_DONE; /* Execute, StartService: nothing runs here */
}

/* ---- metrics, start, stop ------------------------------------------------------------------ */

static void collect(FILE *out, void *ctx)
{
    (void)ctx;
    struct {
        const char *name, *help;
        double v;
    } rows[] = {
        {"tessera_simagent_kernels_created_total", "CreateKernel commands accepted.",
         (double)atomic_load(&g.created)},
        {"tessera_simagent_kernels_started_total", "Kernels reported started.",
         (double)atomic_load(&g.started)},
        {"tessera_simagent_kernels_exited_total", "Batch kernels reported exited.",
         (double)atomic_load(&g.exited)},
        {"tessera_simagent_kernels_terminated_total", "Kernels reported terminated.",
         (double)atomic_load(&g.terminated)},
        {"tessera_simagent_heartbeats_total", "Heartbeats published.",
         (double)atomic_load(&g.heartbeats)},
    };
    for (size_t i = 0; i < TS_ARRAY_LEN(rows); i++) {
        metrics_family(out, rows[i].name, "counter", rows[i].help);
        metrics_sample(out, rows[i].name, NULL, rows[i].v);
    }
    metrics_gauge(out, "tessera_simagent_nodes", "Simulated nodes.", (double)g.n);
}

static bool validate(ts_err *err)
{
    int64_t v;
    if (!slot_parse(SLOT_CPU, opt_cpu, &v, err) || v <= 0) {
        ts_err_prefix(err, "simagent.cpu");
        return false;
    }
    slot_format(SLOT_CPU, v, g.cpu, sizeof(g.cpu));
    if (!slot_parse(SLOT_MEM, opt_mem, &v, err) || v <= 0) {
        ts_err_prefix(err, "simagent.mem");
        return false;
    }
    slot_format(SLOT_MEM, v, g.mem, sizeof(g.mem));
    double q = opt_shares * SLOT_SHARES_PER_DEVICE;
    if (fabs(q - llround(q)) > 1e-6) {
        ts_err_set(err, "simagent.gpu_shares_per_device: %g is not a multiple of 0.01", opt_shares);
        return false;
    }
    slot_format(SLOT_CUDA_SHARES, llround(q), g.shares_cap, sizeof(g.shares_cap));
    if (!opt_prefix[0] || strlen(opt_prefix) + 12 >= ID_MAX || !opt_group[0]) {
        ts_err_set(err, "simagent.id_prefix and simagent.resource_group must be set (prefix < 50)");
        return false;
    }
    for (const char *p = opt_prefix; *p; p++)
        if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
              *p == '-' || *p == '_')) {
            ts_err_set(err, "simagent.id_prefix: only letters, digits, '-' and '_'");
            return false;
        }
    return true;
}

static bool start(svc *s, ts_err *err)
{
    if (!validate(err)) return false;
    g.s = s;
    g.bus = svc_bus(s);
    g.n = (int)opt_count;
    g.nodes = ts_calloc((size_t)g.n, sizeof(*g.nodes));
    int64_t now = ts_now_mono_ms();
    for (int i = 0; i < g.n; i++) {
        snprintf(g.nodes[i].id, ID_MAX, "%s%d", opt_prefix, i);
        g.nodes[i].next_hb_ms = now + opt_hb * (i + 1) / g.n; /* spread over the interval */
    }
    /* one consumer for every node's topic: ^tessera\.agent\.cmd\.<prefix>.* */
    char *pattern = ts_asprintf("^tessera\\.agent\\.cmd\\.%s.*", opt_prefix);
    const char *topics[] = {pattern, NULL};
    char *group = ts_asprintf("tessera-simagent.%s", opt_prefix);
    g.consumer = kbus_consume_control(g.bus, group, topics, on_command, NULL, err);
    free(group);
    free(pattern);
    if (!g.consumer) return false;
    for (int i = 0; i < g.n; i++)
        publish_started(&g.nodes[i]);
    int rc = pthread_create(&g.thread, NULL, timer_main, NULL);
    if (rc != 0) {
        ts_err_set(err, "timer thread: %s", strerror(rc));
        return false;
    }
    g.thread_started = true;
    metrics_add(svc_metrics(s), collect, NULL);
    TLOG_INFO("simulated agents started", "count=%d group=%s gpus=%d shares_per_gpu=%s prefix=%s",
              g.n, opt_group, (int)opt_gpus, g.shares_cap, opt_prefix);
    return true;
}

static void stop(svc *s)
{
    (void)s;
    if (g.consumer) kbus_consumer_stop(g.consumer);
    g.consumer = NULL;
    if (g.thread_started) {
        pthread_mutex_lock(&g.mu);
        g.stop = true;
        pthread_cond_broadcast(&g.cv);
        pthread_mutex_unlock(&g.mu);
        pthread_join(g.thread, NULL);
    }
    for (int i = 0; i < g.n; i++) {
        Tessera__V1__AgentStopped m = TESSERA__V1__AGENT_STOPPED__INIT;
        m.agent_id = g.nodes[i].id;
        m.reason = "shutdown";
        m.graceful = true;
        publish(TOPIC_AGENT, g.nodes[i].id, &m.base);
    }
}

int main(int argc, char **argv)
{
    static const svc_spec spec = {
        .name = "simagent",
        .summary = "simulated agents: N fake nodes speaking the agent protocol over the bus",
        .default_listen = "127.0.0.1:8100",
        .needs = SVC_NEEDS_KAFKA,
        .options = simagent_options,
        .start = start,
        .stop = stop,
    };
    return svc_main(argc, argv, &spec);
}
