/* kernel_events.c: tessera.kernel.v1 producers (kernel_events.h). */
#include "services/agent/kernel_events.h"

#include "libcommon/log.h"
#include "tessera/v1/kernel.pb-c.h"

#include <stdlib.h>

static char *_s(const char *v)
{
    return (char *)(v ? v : "");
}

static void _publish(const kev_ctx *c, const ProtobufCMessage *m)
{
    ts_err err = {{0}};
    const char *key = c->session_id && *c->session_id ? c->session_id : c->kernel_id;
    if (!kbus_publish(c->bus, KERNEL_TOPIC, key, m, c->correlation_id, c->kernel_id, &err)) {
        TLOG_ERROR("kernel event not published", "type=%s error=\"%s\"", m->descriptor->name,
                   err.msg);
        return;
    }
    TLOG_DEBUG("kernel event published", "type=%s", m->descriptor->name);
}

void kev_pulling(const kev_ctx *c, const char *image, const image_progress *pr)
{
    Tessera__V1__KernelPulling m = TESSERA__V1__KERNEL_PULLING__INIT;
    m.session_id = _s(c->session_id);
    m.kernel_id = _s(c->kernel_id);
    m.agent_id = _s(c->agent_id);
    m.image = _s(image);
    m.bytes_done = pr->bytes_done;
    m.bytes_total = pr->bytes_total;
    m.layers_done = pr->layers_done;
    m.layers_total = pr->layers_total;
    _publish(c, &m.base);
}

void kev_creating(const kev_ctx *c, const char *digest)
{
    Tessera__V1__KernelCreating m = TESSERA__V1__KERNEL_CREATING__INIT;
    m.session_id = _s(c->session_id);
    m.kernel_id = _s(c->kernel_id);
    m.agent_id = _s(c->agent_id);
    m.image_digest = _s(digest);
    _publish(c, &m.base);
}

void kev_started(const kev_ctx *c, const char *kernel_host, const kernel_service_port *ports,
                 int n_ports)
{
    Tessera__V1__KernelStarted m = TESSERA__V1__KERNEL_STARTED__INIT;
    m.session_id = _s(c->session_id);
    m.kernel_id = _s(c->kernel_id);
    m.agent_id = _s(c->agent_id);
    m.container_id = _s(c->kernel_id);
    m.kernel_host = _s(kernel_host);
    m.generation = c->generation;
    Tessera__V1__ServicePort sp[KERNEL_MAX_PORTS];
    Tessera__V1__ServicePort *spp[KERNEL_MAX_PORTS];
    for (int i = 0; i < n_ports && i < KERNEL_MAX_PORTS; i++) {
        tessera__v1__service_port__init(&sp[i]);
        sp[i].name = (char *)ports[i].name;
        sp[i].protocol = (char *)ports[i].protocol;
        sp[i].container_port = ports[i].container_port;
        sp[i].host_port = ports[i].host_port;
        spp[i] = &sp[i];
    }
    m.n_service_ports = (size_t)(n_ports < KERNEL_MAX_PORTS ? n_ports : KERNEL_MAX_PORTS);
    m.service_ports = spp;
    _publish(c, &m.base);
}

/* KernelExited and KernelTerminated carry the same fields. */
#define KEV_END_FIELDS(m, c, exit_code, reason)                                                    \
    do {                                                                                           \
        (m).session_id = _s((c)->session_id);                                                      \
        (m).kernel_id = _s((c)->kernel_id);                                                        \
        (m).agent_id = _s((c)->agent_id);                                                          \
        (m).exit_code = (exit_code);                                                               \
        (m).reason = _s(reason);                                                                   \
        (m).generation = (c)->generation;                                                          \
    } while (0)

void kev_exited(const kev_ctx *c, int exit_code, const char *reason)
{
    Tessera__V1__KernelExited m = TESSERA__V1__KERNEL_EXITED__INIT;
    KEV_END_FIELDS(m, c, exit_code, reason);
    _publish(c, &m.base);
}

void kev_terminated(const kev_ctx *c, int exit_code, const char *reason)
{
    Tessera__V1__KernelTerminated m = TESSERA__V1__KERNEL_TERMINATED__INIT;
    KEV_END_FIELDS(m, c, exit_code, reason);
    _publish(c, &m.base);
}
