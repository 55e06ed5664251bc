/* http_api.h: the agent's internal HTTP API (docs/internal-api.md), called by
 * the registry for what needs an answer now, and by people debugging:
 *
 *   GET  /v1/agent                      node, capacity, devices, address
 *   GET  /v1/kernels                    kernels on this agent (tombstones too)
 *   GET  /v1/kernels/{id}               one kernel, with its runtime state
 *   POST /v1/kernels/{id}/execute       Backend.AI execute (query / batch modes)
 *   GET  /v1/kernels/{id}/logs          console output (tail), {"result": {"logs"}}
 *   .../v1/kernels/{id}/files...        files in /home/work (kernel_files.h)
 *
 * Execute runs through `runc exec`, time-limited (agent.exec_timeout) and
 * with each output stream capped (agent.exec_output_cap). */
#ifndef AGENT_HTTP_API_H
#define AGENT_HTTP_API_H

#include "libcommon/svc.h"
#include "services/agent/container.h"
#include "services/agent/kernels.h"
#include "services/agent/node.h"

/* What the handlers need of the agent (agent.c fills it once started). */
typedef struct http_api_agent {
    const char *agent_id;
    const char *resource_group;
    const char *addr;        /* "http://host:port" of this API */
    const char *kernel_host; /* the host that serves the kernels' published ports */
    const node_info *node;
    runtime *rt;
    kernels *ks;
    int64_t exec_timeout_ms; /* the longest an execute may run */
    int64_t exec_output_cap; /* bytes kept per stream */
} http_api_agent;

/* Where the handlers find the agent: get(ctx) returns it, or NULL while it is
 * starting (the handlers answer 503). Lives as long as the routes. */
typedef struct http_api_source {
    const http_api_agent *(*get)(void *ctx);
    void *ctx;
} http_api_source;

void http_api_routes(svc *s, const http_api_source *src);

/* Every handler's entry (src: the http_api_source): the agent, or a 503
 * problem (NULL). The agent and the kernel of the path go into the log
 * context. */
const http_api_agent *http_api_agent_of(http_req *req, http_resp *resp, const void *src);

/* The argv that runs code in query mode with the image's runtime (label
 * ai.backend.runtime-path; "" = /bin/sh): {runtime, "-c", code, NULL}.
 * Points into its arguments. */
void http_api_query_argv(const char *runtime_path, const char *code, const char *argv[4]);

#endif
