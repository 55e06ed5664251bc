/* fake_agent: speak the agent protocol (and the scheduler's placement) on the
 * bus from a test, one event per line.
 *
 *   fake_agent BOOTSTRAP            reads commands from stdin, one per line
 *   fake_agent BOOTSTRAP CMD ARGS   one command
 *
 * Commands (words separated by blanks; "-" for an empty word):
 *   started AGENT GROUP ARCH "SLOTS" [NGPU]   AgentStarted; SLOTS "cpu=4 mem=8g";
 *                                             NGPU mock GPUs (1.00 share each)
 *   heartbeat AGENT GROUP ["SLOTS"]           AgentHeartbeat
 *   stopped AGENT REASON GRACEFUL(0|1)        AgentStopped
 *   scheduled SESSION GROUP KERNEL=AGENT[=DEV:SHARES,...] ...
 *                                             SessionScheduled (slots: see below)
 *   unschedulable SESSION REASON...           SessionUnschedulable
 *   pulling SESSION KERNEL AGENT DONE TOTAL   KernelPulling
 *   creating SESSION KERNEL AGENT DIGEST      KernelCreating
 *   kstarted SESSION KERNEL AGENT HOST [NAME:PROTO:CPORT:HPORT,...]   KernelStarted
 *   exited SESSION KERNEL AGENT CODE REASON...        KernelExited
 *   terminated SESSION KERNEL AGENT CODE REASON...    KernelTerminated
 *   garbage TOPIC KEY                         a record that is not an envelope
 *   watch AGENT SECONDS                       print the agent's commands as JSON lines
 *   sleep MS
 * A placement's slots are given by a preceding "slots SLOTS" line (default
 * "cpu=1 mem=1g"). Quoted words: "..." keeps blanks. Exit status 0 when every
 * record was acknowledged. */
#include "libcommon/kbus.h"
#include "libcommon/log.h"
#include "libcommon/slots.h"
#include "tessera/v1/agent.pb-c.h"
#include "tessera/v1/agent_cmd.pb-c.h"
#include "tessera/v1/kernel.pb-c.h"
#include "tessera/v1/session.pb-c.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MAXW 64

static kbus *bus;
static char cur_slots[256] = "cpu=1 mem=1g";
static int failures;

static int split(char *line, char **w)
{
    int n = 0;
    char *p = line;
    while (*p && n < MAXW) {
        while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r')
            p++;
        if (!*p) break;
        if (*p == '"') {
            w[n++] = ++p;
            while (*p && *p != '"')
                p++;
        } else {
            w[n++] = p;
            while (*p && *p != ' ' && *p != '\t' && *p != '\n' && *p != '\r')
                p++;
        }
        if (*p) *p++ = '\0';
    }
    for (int i = 0; i < n; i++)
        if (strcmp(w[i], "-") == 0) w[i] = "";
    return n;
}

static char *rest(char **w, int n, int from)
{
    static char buf[1024];
    buf[0] = '\0';
    for (int i = from; i < n; i++) {
        if (i > from) strncat(buf, " ", sizeof(buf) - strlen(buf) - 1);
        strncat(buf, w[i], sizeof(buf) - strlen(buf) - 1);
    }
    return buf;
}

static void publish(const char *topic, const char *key, const ProtobufCMessage *m)
{
    ts_err err = {{0}};
    if (!kbus_publish(bus, topic, key, m, "fake-agent", key, &err)) {
        fprintf(stderr, "fake_agent: publish %s: %s\n", topic, err.msg);
        failures++;
    }
}

/* Slot amounts of a text vector, normalized. */
static Tessera__V1__SlotAmount **amounts(const char *text, size_t *n)
{
    slots_t s;
    ts_err err = {{0}};
    *n = 0;
    if (!slots_parse_text(&s, text, &err)) {
        fprintf(stderr, "fake_agent: slots %s: %s\n", text, err.msg);
        failures++;
        return NULL;
    }
    Tessera__V1__SlotAmount **v = calloc(SLOTS_MAX, sizeof(*v));
    for (int i = 0; i < SLOTS_MAX; i++) {
        if (!((s.mask >> i) & 1u)) continue;
        Tessera__V1__SlotAmount *a = calloc(1, sizeof(*a));
        tessera__v1__slot_amount__init(a);
        a->name = (char *)slot_name(i);
        a->amount = malloc(SLOT_FMT_MAX);
        slot_format(i, s.v[i], a->amount, SLOT_FMT_MAX);
        v[(*n)++] = a;
    }
    return v; /* leaked: a short-lived tool */
}

static Tessera__V1__DeviceInfo **gpus(int n)
{
    Tessera__V1__DeviceInfo **v = calloc((size_t)n + 1, sizeof(*v));
    for (int i = 0; i < n; i++) {
        Tessera__V1__DeviceInfo *d = calloc(1, sizeof(*d));
        tessera__v1__device_info__init(d);
        char *id = malloc(16);
        snprintf(id, 16, "%d", i);
        d->device_id = id;
        d->slot_name = "cuda.device";
        d->model = "mock";
        d->capacity = "1";
        d->shares_capacity = "1.00";
        d->mock = true;
        d->numa_node = -1;
        v[i] = d;
    }
    return v;
}

static void cmd_started(char **w, int n)
{
    Tessera__V1__AgentStarted m = TESSERA__V1__AGENT_STARTED__INIT;
    m.agent_id = w[1];
    m.resource_group = w[2];
    m.architecture = w[3];
    m.addr = "127.0.0.1:0";
    m.version = "fake";
    m.hostname = "fake";
    m.runtime = "runc";
    m.slots = amounts(w[4], &m.n_slots);
    int ng = n > 5 ? atoi(w[5]) : 0;
    m.devices = gpus(ng);
    m.n_devices = (size_t)ng;
    publish("tessera.agent.v1", m.agent_id, &m.base);
}

static void cmd_heartbeat(char **w, int n)
{
    Tessera__V1__AgentHeartbeat m = TESSERA__V1__AGENT_HEARTBEAT__INIT;
    m.agent_id = w[1];
    m.resource_group = w[2];
    m.interval_ms = 1000;
    if (n > 3) m.slots = amounts(w[3], &m.n_slots);
    publish("tessera.agent.v1", m.agent_id, &m.base);
}

static void cmd_stopped(char **w, int n)
{
    Tessera__V1__AgentStopped m = TESSERA__V1__AGENT_STOPPED__INIT;
    m.agent_id = w[1];
    m.reason = n > 2 ? w[2] : "shutdown";
    m.graceful = n > 3 && atoi(w[3]) == 1;
    publish("tessera.agent.v1", m.agent_id, &m.base);
}

/* KERNEL=AGENT[=DEV:SHARES,DEV:SHARES] */
static void cmd_scheduled(char **w, int n)
{
    Tessera__V1__SessionScheduled m = TESSERA__V1__SESSION_SCHEDULED__INIT;
    m.session_id = w[1];
    m.resource_group = w[2];
    m.scheduler = "fake";
    m.kernels = calloc((size_t)n, sizeof(*m.kernels));
    for (int i = 3; i < n; i++) {
        Tessera__V1__KernelPlacement *p = calloc(1, sizeof(*p));
        tessera__v1__kernel_placement__init(p);
        char *kid = strdup(w[i]);
        char *eq = strchr(kid, '=');
        if (!eq) continue;
        *eq = '\0';
        p->kernel_id = kid;
        p->agent_id = eq + 1;
        char *devs = strchr(p->agent_id, '=');
        if (devs) *devs++ = '\0';
        p->cluster_role = i == 3 ? "main" : "sub";
        p->cluster_idx = i - 3;
        p->slots = amounts(cur_slots, &p->n_slots);
        p->devices = calloc(32, sizeof(*p->devices));
        char *save = NULL;
        for (char *d = devs ? strtok_r(devs, ",", &save) : NULL; d;
             d = strtok_r(NULL, ",", &save)) {
            Tessera__V1__DeviceAllocation *a = calloc(1, sizeof(*a));
            tessera__v1__device_allocation__init(a);
            char *c = strchr(d, ':');
            if (!c) continue;
            *c = '\0';
            a->device_id = d;
            a->slot_name = "cuda.shares";
            a->amount = c + 1;
            p->devices[p->n_devices++] = a;
        }
        m.kernels[m.n_kernels++] = p;
    }
    publish("tessera.session.v1", m.session_id, &m.base);
}

static void cmd_unschedulable(char **w, int n)
{
    Tessera__V1__SessionUnschedulable m = TESSERA__V1__SESSION_UNSCHEDULABLE__INIT;
    m.session_id = w[1];
    m.reason = rest(w, n, 2);
    m.reason_code = "no_capacity";
    publish("tessera.session.v1", m.session_id, &m.base);
}

static void cmd_kernel(char **w, int n)
{
    const char *t = w[0];
    if (!strcmp(t, "pulling")) {
        Tessera__V1__KernelPulling m = TESSERA__V1__KERNEL_PULLING__INIT;
        m.session_id = w[1], m.kernel_id = w[2], m.agent_id = w[3];
        m.image = "fake";
        m.bytes_done = n > 4 ? atoll(w[4]) : 0;
        m.bytes_total = n > 5 ? atoll(w[5]) : 0;
        m.layers_done = n > 6 ? atoi(w[6]) : 0;
        m.layers_total = n > 7 ? atoi(w[7]) : 0;
        publish("tessera.kernel.v1", m.session_id, &m.base);
    } else if (!strcmp(t, "creating")) {
        Tessera__V1__KernelCreating m = TESSERA__V1__KERNEL_CREATING__INIT;
        m.session_id = w[1], m.kernel_id = w[2], m.agent_id = w[3];
        m.image_digest = n > 4 ? w[4] : "";
        publish("tessera.kernel.v1", m.session_id, &m.base);
    } else if (!strcmp(t, "kstarted")) {
        Tessera__V1__KernelStarted m = TESSERA__V1__KERNEL_STARTED__INIT;
        m.session_id = w[1], m.kernel_id = w[2], m.agent_id = w[3];
        m.container_id = "fake-container";
        m.kernel_host = n > 4 ? w[4] : "127.0.0.1";
        m.service_ports = calloc(16, sizeof(*m.service_ports));
        char *spec = n > 5 ? strdup(w[5]) : NULL;
        char *save = NULL;
        for (char *e = spec ? strtok_r(spec, ",", &save) : NULL; e && m.n_service_ports < 16;
             e = strtok_r(NULL, ",", &save)) {
            Tessera__V1__ServicePort *p = calloc(1, sizeof(*p));
            tessera__v1__service_port__init(p);
            char *f[4] = {0};
            int k = 0;
            for (char *x = e; k < 4; k++) {
                f[k] = x;
                x = strchr(x, ':');
                if (!x) break;
                *x++ = '\0';
            }
            p->name = f[0];
            p->protocol = f[1] ? f[1] : "tcp";
            p->container_port = f[2] ? atoi(f[2]) : 0;
            p->host_port = f[3] ? atoi(f[3]) : 0;
            m.service_ports[m.n_service_ports++] = p;
        }
        publish("tessera.kernel.v1", m.session_id, &m.base);
    } else if (!strcmp(t, "exited")) {
        Tessera__V1__KernelExited m = TESSERA__V1__KERNEL_EXITED__INIT;
        m.session_id = w[1], m.kernel_id = w[2], m.agent_id = w[3];
        m.exit_code = n > 4 ? atoi(w[4]) : 0;
        m.reason = rest(w, n, 5);
        publish("tessera.kernel.v1", m.session_id, &m.base);
    } else {
        Tessera__V1__KernelTerminated m = TESSERA__V1__KERNEL_TERMINATED__INIT;
        m.session_id = w[1], m.kernel_id = w[2], m.agent_id = w[3];
        m.exit_code = n > 4 ? atoi(w[4]) : -1;
        m.reason = rest(w, n, 5);
        publish("tessera.kernel.v1", m.session_id, &m.base);
    }
}

/* ---- watch
 * --------------------------------------------------------------------------------------- */

static kbus_result on_cmd(const kbus_msg *msg, void *ctx, ts_err *reason)
{
    (void)ctx;
    json_t *o = json_pack("{s:s, s:s}", "type", msg->env->type, "key", msg->key ? msg->key : "");
    if (!strcmp(msg->env->type, "tessera.v1.CreateKernel")) {
        Tessera__V1__CreateKernel *m = (Tessera__V1__CreateKernel *)envelope_payload(
            msg->env, &tessera__v1__create_kernel__descriptor, reason);
        if (m) {
            json_t *env = json_object(), *slots = json_object();
            for (size_t i = 0; i < m->n_environ; i++)
                json_object_set_new(env, m->environ[i]->key, json_string(m->environ[i]->value));
            for (size_t i = 0; i < m->n_slots; i++)
                json_object_set_new(slots, m->slots[i]->name, json_string(m->slots[i]->amount));
            json_object_set_new(o, "session_id", json_string(m->session_id));
            json_object_set_new(o, "kernel_id", json_string(m->kernel_id));
            json_object_set_new(o, "image", json_string(m->image));
            json_object_set_new(o, "image_digest", json_string(m->image_digest));
            json_object_set_new(o, "session_type", json_integer(m->session_type));
            json_object_set_new(o, "startup_command", json_string(m->startup_command));
            json_object_set_new(o, "environ", env);
            json_object_set_new(o, "slots", slots);
            json_object_set_new(o, "devices", json_integer((json_int_t)m->n_devices));
            protobuf_c_message_free_unpacked(&m->base, NULL);
        }
    } else if (!strcmp(msg->env->type, "tessera.v1.DestroyKernel")) {
        Tessera__V1__DestroyKernel *m = (Tessera__V1__DestroyKernel *)envelope_payload(
            msg->env, &tessera__v1__destroy_kernel__descriptor, reason);
        if (m) {
            json_object_set_new(o, "session_id", json_string(m->session_id));
            json_object_set_new(o, "kernel_id", json_string(m->kernel_id));
            json_object_set_new(o, "reason", json_string(m->reason));
            json_object_set_new(o, "force", json_boolean(m->force));
            protobuf_c_message_free_unpacked(&m->base, NULL);
        }
    }
    char *s = json_dumps(o, JSON_COMPACT);
    printf("%s\n", s);
    fflush(stdout);
    free(s);
    json_decref(o);
    return KBUS_DONE;
}

static void cmd_watch(char **w, int n)
{
    char topic[256], group[128];
    snprintf(topic, sizeof(topic), "tessera.agent.cmd.%s", w[1]);
    snprintf(group, sizeof(group), "fake-agent-watch-%d-%lld", (int)getpid(),
             (long long)ts_now_wall_ms());
    const char *topics[] = {topic, NULL};
    ts_err err = {{0}};
    kbus_consumer *c = kbus_consume(bus, group, topics, on_cmd, NULL, &err);
    if (!c) {
        fprintf(stderr, "fake_agent: watch: %s\n", err.msg);
        failures++;
        return;
    }
    usleep((useconds_t)((n > 2 ? atoi(w[2]) : 5) * 1000000));
    kbus_consumer_stop(c);
}

static void run(char *line)
{
    char *w[MAXW];
    int n = split(line, w);
    if (n == 0 || w[0][0] == '#') return;
    const char *c = w[0];
    if (!strcmp(c, "started") && n >= 5)
        cmd_started(w, n);
    else if (!strcmp(c, "heartbeat") && n >= 3)
        cmd_heartbeat(w, n);
    else if (!strcmp(c, "stopped") && n >= 2)
        cmd_stopped(w, n);
    else if (!strcmp(c, "slots") && n >= 2)
        ts_strlcpy(cur_slots, rest(w, n, 1), sizeof(cur_slots));
    else if (!strcmp(c, "scheduled") && n >= 4)
        cmd_scheduled(w, n);
    else if (!strcmp(c, "unschedulable") && n >= 3)
        cmd_unschedulable(w, n);
    else if ((!strcmp(c, "pulling") || !strcmp(c, "creating") || !strcmp(c, "kstarted") ||
              !strcmp(c, "exited") || !strcmp(c, "terminated")) &&
             n >= 4)
        cmd_kernel(w, n);
    else if (!strcmp(c, "garbage") && n >= 3) {
        ts_err err = {{0}};
        if (!kbus_produce_raw(bus, w[1], w[2], "not an envelope", 15, &err)) failures++;
    } else if (!strcmp(c, "watch") && n >= 2)
        cmd_watch(w, n);
    else if (!strcmp(c, "sleep") && n >= 2)
        usleep((useconds_t)atoi(w[1]) * 1000);
    else {
        fprintf(stderr, "fake_agent: bad command: %s\n", c);
        failures++;
    }
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: fake_agent BOOTSTRAP [COMMAND ARGS...]\n");
        return 2;
    }
    tlog_init("fake-agent", "test");
    if (!tlog_set_level("warn")) return 2;
    kbus_opts o = {.bootstrap = argv[1],
                   .service = "fake-agent",
                   .instance = "test",
                   .linger_ms = 0,
                   .max_attempts = 3,
                   .retry_backoff_ms = 100};
    ts_err err = {{0}};
    bus = kbus_new(&o, &err);
    if (!bus) {
        fprintf(stderr, "fake_agent: %s\n", err.msg);
        return 1;
    }
    if (argc > 2) {
        char line[4096] = "";
        for (int i = 2; i < argc; i++) {
            bool q = strchr(argv[i], ' ') != NULL;
            if (i > 2) strncat(line, " ", sizeof(line) - strlen(line) - 1);
            if (q) strncat(line, "\"", sizeof(line) - strlen(line) - 1);
            strncat(line, argv[i], sizeof(line) - strlen(line) - 1);
            if (q) strncat(line, "\"", sizeof(line) - strlen(line) - 1);
        }
        run(line);
    } else {
        char line[4096];
        while (fgets(line, sizeof(line), stdin))
            run(line);
    }
    if (!kbus_flush(bus, 10000)) {
        fprintf(stderr, "fake_agent: not every record was acknowledged\n");
        failures++;
    }
    kbus_close(bus, 5000);
    return failures ? 1 : 0;
}
