/* http_api.h: the agent's internal HTTP API (docs/internal-api.md), called by
 * the registry for what needs an answer now, and by people debugging:
 *
 *   GET  /v1/agent                      node, capacity, devices, address
 *   GET  /v1/kernels                    kernels on this agent (tombstones too)
 *   GET  /v1/kernels/{id}               one kernel, with its runtime state
 *   POST /v1/kernels/{id}/execute       Backend.AI execute (query / batch modes)
 *   GET  /v1/kernels/{id}/logs          console output (tail), {"result": {"logs"}}
 *
 * Execute runs through `runc exec`, time-limited (agent.exec_timeout) and
 * with each output stream capped (agent.exec_output_cap). */
#ifndef AGENT_HTTP_API_H
#define AGENT_HTTP_API_H

#include "libcommon/svc.h"

void http_api_routes(svc *s);

/* The argv that runs code in query mode with the image's runtime (label
 * ai.backend.runtime-path; "" = /bin/sh): {runtime, "-c", code, NULL}.
 * Points into its arguments. */
void http_api_query_argv(const char *runtime_path, const char *code, const char *argv[4]);

#endif
