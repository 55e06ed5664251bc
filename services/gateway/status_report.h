/* status_report.h: the platform status (GET /admin/status, status.h) as
 * data: the targets it probes, what one probe saw, and the JSON answer made
 * of them (one row per service, the dependencies merged from what the
 * services' /readyz said). No I/O here. */
#ifndef GATEWAY_STATUS_REPORT_H
#define GATEWAY_STATUS_REPORT_H

#include "libcommon/common.h"

#include <jansson.h>

#define STATUS_NAME_MAX 64
#define STATUS_URL_MAX 300

typedef struct status_target {
    char name[STATUS_NAME_MAX]; /* "registry", an agent's id */
    char kind[16];              /* "service" | "agent" */
    char url[STATUS_URL_MAX];   /* base URL, no trailing slash */
} status_target;

/* gateway.status_targets: "name=http://host:port" items, comma-separated
 * (spaces around items ignored; empty text: none). At most max items into
 * out, *n of them. False with err naming the bad item: no "=", an empty or
 * too long name or URL, a URL that is not http:// or https://, more than
 * max items. */
bool status_targets_parse(const char *text, status_target *out, size_t max, size_t *n,
                          ts_err *err) TS_MUST_CHECK;

/* What probing one target saw. */
typedef struct status_probe {
    status_target t;
    bool reached;       /* /healthz answered (any status) */
    long health_status; /* its HTTP status */
    json_t *health;     /* its JSON body or NULL (owned) */
    long ready_status;  /* /readyz's status, 0 when it did not answer */
    json_t *ready;      /* its JSON body or NULL (owned) */
    char error[256];    /* why not reached, or why /readyz did not answer */
    int64_t latency_ms; /* /healthz's round trip */
} status_probe;

void status_probe_clear(status_probe *p);

/* One row of the answer:
 * {"service", "kind", "address", "state": "ready"|"not-ready"|"unreachable",
 *  "version" (null when unknown), "ready": bool, "checks": {...},
 *  "failed_checks": {name: why}, "latency_ms" (null when unreachable),
 *  "error": "unreachable: <reason>" (only when unreachable)}. */
json_t *status_row(const status_probe *p);

/* The dependencies from the rows' probes (probes[i] made rows[i]):
 * "postgresql", "redis", "oci-registry" from each /readyz's "dependencies",
 * "kafka" (the bus) from the services' "kafka" checks; each
 * {"status": "ok" | "<the first failure, with the service that saw it>" |
 *  "unknown: no service reported it", "version" (when one reported it),
 *   "reported_by": [services], "url" (the OCI registry's)}. */
json_t *status_dependencies(const status_probe *probes, size_t n);

#endif
