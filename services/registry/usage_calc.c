/* usage_calc.c: see usage_calc.h. */
#include "usage_calc.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MS_2000 946684800000LL

bool usage_sample_check(const usage_sample *s, ts_err *err)
{
    if (s->start_ms < MS_2000 || s->end_ms < s->start_ms) {
        ts_err_set(err, "interval %lld..%lld ms is not a time span", (long long)s->start_ms,
                   (long long)s->end_ms);
        return false;
    }
    if (s->end_ms - s->start_ms > USAGE_MAX_INTERVAL_MS) {
        ts_err_set(err, "interval of %lld ms is longer than a day",
                   (long long)(s->end_ms - s->start_ms));
        return false;
    }
    if (s->cpu_used_ms < 0 || s->mem_bytes < 0 || s->mem_peak_bytes < 0 || s->gpu_mem_bytes < 0 ||
        s->gpu_mem_peak_bytes < 0 || s->gpu_busy_ms < 0 || s->net_rx_bytes < 0 ||
        s->net_tx_bytes < 0 || s->io_read_bytes < 0 || s->io_write_bytes < 0) {
        ts_err_set(err, "negative amount");
        return false;
    }
    return true;
}

void usage_alloc_from_devices(const json_t *devices, usage_alloc *out)
{
    memset(out, 0, sizeof(*out));
    size_t i;
    json_t *d;
    json_array_foreach(devices, i, d)
    {
        const char *slot = json_string_value(json_object_get(d, "slot_name"));
        json_t *a = json_object_get(d, "amount");
        double amount =
            json_is_string(a) ? strtod(json_string_value(a), NULL) : json_number_value(a);
        if (!slot || !(amount > 0) || amount > 1e6) continue;
        if (strcmp(slot, "cuda.device") == 0)
            out->gpu_devices += amount;
        else if (strcmp(slot, "cuda.shares") == 0)
            out->gpu_shares += amount;
    }
}

void usage_totals_add(usage_totals *t, const usage_sample *s, const usage_alloc *a)
{
    double secs = (double)(s->end_ms - s->start_ms) / 1000.0;
    t->cpu_ms += s->cpu_used_ms;
    t->mem_byte_s += (double)s->mem_bytes * secs;
    int64_t peak = s->mem_peak_bytes > s->mem_bytes ? s->mem_peak_bytes : s->mem_bytes;
    if (peak > t->mem_peak_bytes) t->mem_peak_bytes = peak;
    int64_t gpeak =
        s->gpu_mem_peak_bytes > s->gpu_mem_bytes ? s->gpu_mem_peak_bytes : s->gpu_mem_bytes;
    if (gpeak > t->gpu_mem_peak_bytes) t->gpu_mem_peak_bytes = gpeak;
    t->gpu_device_s += a->gpu_devices * secs;
    t->gpu_share_s += a->gpu_shares * secs;
    t->gpu_busy_ms += s->gpu_busy_ms;
    t->net_rx_bytes += s->net_rx_bytes;
    t->net_tx_bytes += s->net_tx_bytes;
    t->io_read_bytes += s->io_read_bytes;
    t->io_write_bytes += s->io_write_bytes;
    t->samples++;
    if (t->first_ms == 0 || s->start_ms < t->first_ms) t->first_ms = s->start_ms;
    if (s->end_ms > t->last_ms) t->last_ms = s->end_ms;
}

/* v's part of [lo, hi) of a span of len ms (0 <= lo <= hi <= len, len > 0):
 * floors of the running sum, so the parts of a span add up to v exactly. */
static int64_t _part(int64_t v, int64_t lo, int64_t hi, int64_t len)
{
    __int128 a = (__int128)v * lo / len, b = (__int128)v * hi / len;
    return (int64_t)(b - a);
}

size_t usage_split_sample(const usage_sample *s, const usage_alloc *a,
                          usage_hour out[USAGE_MAX_SAMPLE_HOURS])
{
    int64_t len = s->end_ms - s->start_ms;
    int64_t h0 = s->start_ms - s->start_ms % USAGE_HOUR_MS;
    size_t n = 0;
    for (int64_t h = h0; n == 0 || (h < s->end_ms && n < USAGE_MAX_SAMPLE_HOURS);
         h += USAGE_HOUR_MS) {
        usage_hour *o = &out[n++];
        memset(o, 0, sizeof(*o));
        o->hour_ms = h;
        int64_t from = s->start_ms > h ? s->start_ms : h;
        int64_t to = s->end_ms < h + USAGE_HOUR_MS ? s->end_ms : h + USAGE_HOUR_MS;
        usage_sample p = *s;
        p.start_ms = from;
        p.end_ms = to;
        if (len > 0) {
            int64_t lo = from - s->start_ms, hi = to - s->start_ms;
            p.cpu_used_ms = _part(s->cpu_used_ms, lo, hi, len);
            p.gpu_busy_ms = _part(s->gpu_busy_ms, lo, hi, len);
            p.net_rx_bytes = _part(s->net_rx_bytes, lo, hi, len);
            p.net_tx_bytes = _part(s->net_tx_bytes, lo, hi, len);
            p.io_read_bytes = _part(s->io_read_bytes, lo, hi, len);
            p.io_write_bytes = _part(s->io_write_bytes, lo, hi, len);
        }
        /* memory and GPU seconds follow the part's own length */
        usage_totals_add(&o->t, &p, a);
        o->t.samples = 0;
    }
    out[n - 1].t.samples = 1;
    return n;
}

usage_phase usage_phase_of(const char *status)
{
    static const struct {
        const char *status;
        usage_phase phase;
    } map[] = {
        {"PENDING", USAGE_PHASE_PENDING},          {"SCHEDULED", USAGE_PHASE_PENDING},
        {"PREPARING", USAGE_PHASE_PREPARING},      {"PULLING", USAGE_PHASE_PREPARING},
        {"PREPARED", USAGE_PHASE_PREPARING},       {"CREATING", USAGE_PHASE_PREPARING},
        {"RESTARTING", USAGE_PHASE_PREPARING},     {"RUNNING", USAGE_PHASE_RUNNING},
        {"RUNNING_DEGRADED", USAGE_PHASE_RUNNING}, {"TERMINATING", USAGE_PHASE_TERMINATING},
    };
    for (size_t i = 0; status && i < TS_ARRAY_LEN(map); i++)
        if (strcmp(status, map[i].status) == 0) return map[i].phase;
    return USAGE_PHASE_OTHER;
}

const char *usage_phase_name(usage_phase p)
{
    static const char *const names[] = {"pending", "preparing", "running", "terminating", "other"};
    return (unsigned)p < TS_ARRAY_LEN(names) ? names[p] : "other";
}

void usage_status_seconds(const usage_status_change *h, size_t n, double out[USAGE_N_PHASES])
{
    for (int i = 0; i < USAGE_N_PHASES; i++)
        out[i] = 0;
    for (size_t i = 0; i + 1 < n; i++) {
        int64_t d = h[i + 1].at_ms - h[i].at_ms;
        if (d > 0) out[usage_phase_of(h[i].status)] += (double)d / 1000.0;
    }
}

size_t usage_status_hours(const usage_status_change *h, size_t n, usage_hour **out)
{
    *out = NULL;
    size_t cap = 0, used = 0;
    for (size_t i = 0; i + 1 < n; i++) {
        int64_t from = h[i].at_ms, to = h[i + 1].at_ms;
        usage_phase ph = usage_phase_of(h[i].status);
        while (from < to) {
            int64_t hour = from - from % USAGE_HOUR_MS;
            int64_t end = to < hour + USAGE_HOUR_MS ? to : hour + USAGE_HOUR_MS;
            /* the hours come in order but for a clock that went back: look
             * for this one from the end */
            size_t k = used;
            while (k > 0 && (*out)[k - 1].hour_ms > hour)
                k--;
            if (k == 0 || (*out)[k - 1].hour_ms != hour) {
                if (used == cap) {
                    cap = cap ? cap * 2 : 8;
                    *out = ts_realloc(*out, cap * sizeof(**out));
                }
                memmove(&(*out)[k + 1], &(*out)[k], (used - k) * sizeof(**out));
                memset(&(*out)[k], 0, sizeof(**out));
                (*out)[k].hour_ms = hour;
                used++;
                k++;
            }
            (*out)[k - 1].t.phase_s[ph] += (double)(end - from) / 1000.0;
            from = end;
        }
    }
    return used;
}

/* n digits at s -> *v; false when one is not a digit. */
static bool digits(const char *s, int n, int *v)
{
    *v = 0;
    for (int i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9') return false;
        *v = *v * 10 + (s[i] - '0');
    }
    return true;
}

static bool civil_ms(int y, int m, int d, int64_t *ms)
{
    if (y < 1970 || y > 9999 || m < 1 || m > 12 || d < 1 || d > 31) return false;
    struct tm tm = {.tm_year = y - 1900, .tm_mon = m - 1, .tm_mday = d};
    time_t t = timegm(&tm);
    struct tm back;
    if (t == (time_t)-1 || !gmtime_r(&t, &back)) return false;
    /* 2026-02-30 normalises to March: not a date */
    if (back.tm_year != y - 1900 || back.tm_mon != m - 1 || back.tm_mday != d) return false;
    *ms = (int64_t)t * 1000;
    return true;
}

bool usage_parse_day(const char *s, int64_t *ms, ts_err *err)
{
    int y, m, d;
    size_t n = s ? strlen(s) : 0;
    bool ok = false;
    if (n == 8)
        ok = digits(s, 4, &y) && digits(s + 4, 2, &m) && digits(s + 6, 2, &d);
    else if (n == 10 && s[4] == '-' && s[7] == '-')
        ok = digits(s, 4, &y) && digits(s + 5, 2, &m) && digits(s + 8, 2, &d);
    if (!ok || !civil_ms(y, m, d, ms)) {
        ts_err_set(err, "not a date (YYYYMMDD or YYYY-MM-DD)");
        return false;
    }
    return true;
}

bool usage_parse_month(const char *s, int64_t *from_ms, int64_t *to_ms, ts_err *err)
{
    int y, m;
    if (!s || strlen(s) != 6 || !digits(s, 4, &y) || !digits(s + 4, 2, &m) ||
        !civil_ms(y, m, 1, from_ms) ||
        !civil_ms(m == 12 ? y + 1 : y, m == 12 ? 1 : m + 1, 1, to_ms)) {
        ts_err_set(err, "not a month (YYYYMM)");
        return false;
    }
    return true;
}

static const char *const group_names[] = {"user", "project", "domain", "resource_group", "image"};

bool usage_group_parse(const char *s, usage_group *out)
{
    for (size_t i = 0; s && i < TS_ARRAY_LEN(group_names); i++)
        if (strcmp(s, group_names[i]) == 0) {
            *out = (usage_group)i;
            return true;
        }
    return false;
}

const char *usage_group_name(usage_group g)
{
    return group_names[g];
}
