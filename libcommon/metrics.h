/* metrics.h: Prometheus text exposition (format 0.0.4) for /metrics.
 * Modules register collectors that write whole families; the renderer writes
 * them in registration order. Every family gets # HELP and # TYPE once. */
#ifndef TESSERA_METRICS_H
#define TESSERA_METRICS_H

#include "libcommon/common.h"

#include <stdio.h>

typedef void (*metrics_collector)(FILE *out, void *ctx);

typedef struct metrics metrics;

metrics *metrics_new(void);
void metrics_free(metrics *m);
void metrics_add(metrics *m, metrics_collector fn, void *ctx);
/* Heap buffer with the whole exposition; *len set. */
char *metrics_render(metrics *m, size_t *len);

/* Writing helpers for collectors. type: "counter" or "gauge". */
void metrics_family(FILE *out, const char *name, const char *type, const char *help);
/* labels: already formatted, e.g. `topic="tessera.audit.v1"`, or NULL. */
void metrics_sample(FILE *out, const char *name, const char *labels, double value);
void metrics_sample_u64(FILE *out, const char *name, const char *labels, uint64_t value);
/* A whole family of one sample without labels (# HELP, # TYPE, the value). */
void metrics_counter(FILE *out, const char *name, const char *help, uint64_t value);
void metrics_gauge(FILE *out, const char *name, const char *help, double value);

#endif
