/* status_report.c: see status_report.h. */
#include "status_report.h"

#include <stdio.h>
#include <string.h>

static bool set_err(ts_err *err, const char *item, size_t len, const char *why)
{
    ts_err_set(err, "gateway.status_targets: \"%.*s\": %s", (int)(len > 80 ? 80 : len), item, why);
    return false;
}

/* One "name=url" item (len bytes at item, trimmed). */
static bool parse_item(const char *item, size_t len, status_target *t, ts_err *err)
{
    const char *eq = memchr(item, '=', len);
    if (!eq) return set_err(err, item, len, "not name=URL");
    size_t nlen = (size_t)(eq - item), ulen = len - nlen - 1;
    const char *url = eq + 1;
    while (nlen && (item[nlen - 1] == ' ' || item[nlen - 1] == '\t'))
        nlen--;
    while (ulen && (*url == ' ' || *url == '\t'))
        url++, ulen--;
    while (ulen > 1 && url[ulen - 1] == '/')
        ulen--;
    if (!nlen || nlen >= sizeof(t->name)) return set_err(err, item, len, "empty or long name");
    if (ulen >= sizeof(t->url)) return set_err(err, item, len, "URL too long");
    if (!((ulen > 7 && strncmp(url, "http://", 7) == 0) ||
          (ulen > 8 && strncmp(url, "https://", 8) == 0)))
        return set_err(err, item, len, "the URL is not http:// or https://");
    *t = (status_target){{0}};
    memcpy(t->name, item, nlen);
    memcpy(t->url, url, ulen);
    ts_strlcpy(t->kind, "service", sizeof(t->kind));
    return true;
}

bool status_targets_parse(const char *text, status_target *out, size_t max, size_t *n, ts_err *err)
{
    *n = 0;
    for (const char *p = text ? text : ""; *p;) {
        p += strspn(p, " \t");
        size_t len = strcspn(p, ",");
        size_t trimmed = len;
        while (trimmed && (p[trimmed - 1] == ' ' || p[trimmed - 1] == '\t'))
            trimmed--;
        if (trimmed) {
            if (*n == max) return set_err(err, p, trimmed, "too many targets");
            if (!parse_item(p, trimmed, &out[*n], err)) return false;
            (*n)++;
        }
        p += len;
        if (*p == ',') p++;
    }
    return true;
}

void status_probe_clear(status_probe *p)
{
    json_decref(p->health);
    json_decref(p->ready);
    p->health = p->ready = NULL;
}

json_t *status_row(const status_probe *p)
{
    const char *version = json_string_value(json_object_get(p->health, "version"));
    json_t *checks = json_object_get(p->ready, "checks");
    json_t *failed = json_object();
    const char *name;
    json_t *v;
    json_object_foreach(checks, name, v)
    {
        const char *s = json_string_value(v);
        if (!s || strcmp(s, "ok") != 0) json_object_set(failed, name, v);
    }
    const char *rs = json_string_value(json_object_get(p->ready, "status"));
    bool ready = p->ready_status == 200 && rs && strcmp(rs, "ready") == 0;
    char error[320] = "";
    if (!p->reached)
        snprintf(error, sizeof(error), "unreachable: %s", p->error[0] ? p->error : "no answer");
    else if (p->health_status != 200)
        snprintf(error, sizeof(error), "unreachable: GET /healthz answered %ld", p->health_status);
    else if (!p->ready_status)
        snprintf(error, sizeof(error), "unreachable: GET /readyz: %s",
                 p->error[0] ? p->error : "no answer");
    else if (!json_is_object(p->ready))
        snprintf(error, sizeof(error), "unreachable: GET /readyz answered %ld without JSON",
                 p->ready_status);
    const char *state = error[0] ? "unreachable" : ready ? "ready" : "not-ready";
    json_t *row =
        json_pack("{s:s, s:s, s:s, s:s, s:b, s:o, s:o}", "service", p->t.name, "kind", p->t.kind,
                  "address", p->t.url, "state", state, "ready", ready, "checks",
                  checks ? json_incref(checks) : json_object(), "failed_checks", failed);
    json_object_set_new(row, "version", version ? json_string(version) : json_null());
    json_object_set_new(row, "latency_ms",
                        p->reached ? json_integer((json_int_t)p->latency_ms) : json_null());
    if (error[0]) json_object_set_new(row, "error", json_string(error));
    return row;
}

/* Add what service said of one dependency (status text, version or NULL). */
static void merge(json_t *deps, const char *dep, const char *service, const char *status,
                  const char *version, const char *url)
{
    json_t *d = json_object_get(deps, dep);
    if (!d) {
        d = json_pack("{s:s, s:[]}", "status", "ok", "reported_by");
        json_object_set_new(deps, dep, d);
    }
    json_array_append_new(json_object_get(d, "reported_by"), json_string(service));
    const char *now = json_string_value(json_object_get(d, "status"));
    if (status && strcmp(status, "ok") != 0 && strcmp(now, "ok") == 0) {
        char msg[400];
        snprintf(msg, sizeof(msg), "%s (seen by %s)", status, service);
        json_object_set_new(d, "status", json_string(msg));
    }
    if (version && !json_object_get(d, "version"))
        json_object_set_new(d, "version", json_string(version));
    if (url && !json_object_get(d, "url")) json_object_set_new(d, "url", json_string(url));
}

json_t *status_dependencies(const status_probe *probes, size_t n)
{
    json_t *deps = json_object();
    for (size_t i = 0; i < n; i++) {
        const status_probe *p = &probes[i];
        if (!json_is_object(p->ready)) continue;
        const char *name;
        json_t *v;
        json_object_foreach(json_object_get(p->ready, "dependencies"), name, v)
            merge(deps, name, p->t.name, json_string_value(json_object_get(v, "status")),
                  json_string_value(json_object_get(v, "version")),
                  json_string_value(json_object_get(v, "url")));
        const char *bus =
            json_string_value(json_object_get(json_object_get(p->ready, "checks"), "kafka"));
        if (bus) merge(deps, "kafka", p->t.name, bus, NULL, NULL);
    }
    static const char *const known[] = {"postgresql", "redis", "kafka", "oci-registry"};
    for (size_t i = 0; i < TS_ARRAY_LEN(known); i++)
        if (!json_object_get(deps, known[i]))
            json_object_set_new(deps, known[i],
                                json_pack("{s:s, s:[]}", "status",
                                          "unknown: no service reported it", "reported_by"));
    return deps;
}
