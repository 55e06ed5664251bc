/* metrics.c: Prometheus text exposition built from registered collectors. */
#include "libcommon/metrics.h"

#include <math.h>
#include <pthread.h>
#include <stdlib.h>

struct collector {
    metrics_collector fn;
    void *ctx;
};

struct metrics {
    pthread_mutex_t lock;
    struct collector *list;
    size_t n, cap;
};

metrics *metrics_new(void)
{
    metrics *m = ts_calloc(1, sizeof(*m));
    pthread_mutex_init(&m->lock, NULL);
    return m;
}

void metrics_free(metrics *m)
{
    if (!m) return;
    pthread_mutex_destroy(&m->lock);
    free(m->list);
    free(m);
}

void metrics_add(metrics *m, metrics_collector fn, void *ctx)
{
    pthread_mutex_lock(&m->lock);
    if (m->n == m->cap) {
        m->cap = m->cap ? m->cap * 2 : 8;
        m->list = ts_realloc(m->list, m->cap * sizeof(*m->list));
    }
    m->list[m->n++] = (struct collector){fn, ctx};
    pthread_mutex_unlock(&m->lock);
}

char *metrics_render(metrics *m, size_t *len)
{
    char *buf = NULL;
    size_t size = 0;
    FILE *out = open_memstream(&buf, &size);
    if (!out) ts_panic("open_memstream failed");
    pthread_mutex_lock(&m->lock);
    for (size_t i = 0; i < m->n; i++)
        m->list[i].fn(out, m->list[i].ctx);
    pthread_mutex_unlock(&m->lock);
    fclose(out);
    if (len) *len = size;
    return buf;
}

void metrics_family(FILE *out, const char *name, const char *type, const char *help)
{
    fprintf(out, "# HELP %s ", name);
    for (const char *p = help; *p; p++) {
        if (*p == '\\')
            fputs("\\\\", out);
        else if (*p == '\n')
            fputs("\\n", out);
        else
            fputc(*p, out);
    }
    fprintf(out, "\n# TYPE %s %s\n", name, type);
}

void metrics_sample(FILE *out, const char *name, const char *labels, double value)
{
    if (labels && labels[0])
        fprintf(out, "%s{%s} ", name, labels);
    else
        fprintf(out, "%s ", name);
    if (isnan(value))
        fputs("NaN\n", out);
    else if (isinf(value))
        fputs(value > 0 ? "+Inf\n" : "-Inf\n", out);
    else
        fprintf(out, "%.17g\n", value);
}

void metrics_sample_u64(FILE *out, const char *name, const char *labels, uint64_t value)
{
    if (labels && labels[0])
        fprintf(out, "%s{%s} %llu\n", name, labels, (unsigned long long)value);
    else
        fprintf(out, "%s %llu\n", name, (unsigned long long)value);
}

void metrics_counter(FILE *out, const char *name, const char *help, uint64_t value)
{
    metrics_family(out, name, "counter", help);
    metrics_sample_u64(out, name, NULL, value);
}

void metrics_gauge(FILE *out, const char *name, const char *help, double value)
{
    metrics_family(out, name, "gauge", help);
    metrics_sample(out, name, NULL, value);
}
