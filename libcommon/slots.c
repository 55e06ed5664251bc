/* slots.c: resource slot amounts as exact fixed point (see slots.h). */
#include "libcommon/slots.h"

#include <ctype.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

/* ---- the slot table ---------------------------------------------------------------------- */

typedef struct slot_def {
    char name[SLOT_NAME_MAX];
    int64_t per_unit; /* quanta in one unit */
    int decimals;     /* fixed decimals when written (shares), or -1: as few as needed */
} slot_def;

static slot_def slot_tab[SLOTS_MAX] = {
    [SLOT_CPU] = {"cpu", 1000, -1},
    [SLOT_MEM] = {"mem", 1, -1},
    [SLOT_CUDA_DEVICE] = {"cuda.device", 1, -1},
    [SLOT_CUDA_SHARES] = {"cuda.shares", SLOT_SHARES_PER_DEVICE, 2},
};
static int slot_n = SLOT_BUILTIN_COUNT; /* read with acquire, written under slot_lock */
static pthread_mutex_t slot_lock = PTHREAD_MUTEX_INITIALIZER;

int slot_count(void)
{
    return __atomic_load_n(&slot_n, __ATOMIC_ACQUIRE);
}

int slot_find(const char *name)
{
    if (!name) return -1;
    int n = slot_count();
    for (int i = 0; i < n; i++)
        if (strcmp(slot_tab[i].name, name) == 0) return i;
    return -1;
}

/* "<vendor>.device" or "<vendor>.shares" with vendor [a-z0-9_-]{1,20}. */
static bool vendor_slot_name(const char *name, bool *shares)
{
    const char *dot = strchr(name, '.');
    if (!dot || dot == name || dot - name > 20) return false;
    for (const char *p = name; p < dot; p++)
        if (!(islower((unsigned char)*p) || isdigit((unsigned char)*p) || *p == '_' || *p == '-'))
            return false;
    if (strcmp(dot + 1, "device") == 0)
        *shares = false;
    else if (strcmp(dot + 1, "shares") == 0)
        *shares = true;
    else
        return false;
    return true;
}

bool slot_intern(const char *name, int *out, ts_err *err)
{
    int id = slot_find(name);
    *out = id;
    if (id >= 0) return true;
    bool shares = false;
    if (!name || !vendor_slot_name(name, &shares)) {
        ts_err_set(err,
                   "unknown slot '%s' (known: cpu, mem, cuda.device, cuda.shares, "
                   "<vendor>.device, <vendor>.shares)",
                   name ? name : "");
        return false;
    }
    pthread_mutex_lock(&slot_lock);
    id = slot_find(name); /* another thread may have added it */
    if (id < 0 && slot_n < SLOTS_MAX) {
        id = slot_n;
        ts_strlcpy(slot_tab[id].name, name, sizeof(slot_tab[id].name));
        slot_tab[id].per_unit = shares ? SLOT_SHARES_PER_DEVICE : 1;
        slot_tab[id].decimals = shares ? 2 : -1;
        __atomic_store_n(&slot_n, id + 1, __ATOMIC_RELEASE);
    }
    pthread_mutex_unlock(&slot_lock);
    *out = id;
    if (id >= 0) return true;
    ts_err_set(err, "slot '%s': too many slot kinds (at most %d)", name, SLOTS_MAX);
    return false;
}

const char *slot_name(int id)
{
    return id >= 0 && id < slot_count() ? slot_tab[id].name : "?";
}

int64_t slot_per_unit(int id)
{
    return id >= 0 && id < slot_count() ? slot_tab[id].per_unit : 1;
}

/* ---- parsing one amount ------------------------------------------------------------------- */

/* Binary multiplier for a memory unit at s (k, m, g, t, p, e; then optional i, b), or 0. */
static int64_t mem_unit(const char *s, size_t len)
{
    static const char units[] = "kmgtpe";
    if (len == 1 && tolower((unsigned char)s[0]) == 'b') return 1;
    if (len < 1 || len > 3) return 0;
    const char *u = strchr(units, tolower((unsigned char)s[0]));
    if (!u || !*u) return 0;
    size_t i = 1;
    if (i < len && tolower((unsigned char)s[i]) == 'i') i++;
    if (i < len && tolower((unsigned char)s[i]) == 'b') i++;
    if (i != len) return 0;
    return (int64_t)1 << (10 * (u - units + 1));
}

static const char *quantum_text(int id, char *buf, size_t size)
{
    int64_t pu = slot_per_unit(id);
    if (pu == 1) return "1";
    int dec = 0;
    for (int64_t p = pu; p > 1; p /= 10)
        dec++;
    snprintf(buf, size, "0.%0*d", dec, 1);
    return buf;
}

#define I128_LIMIT ((__int128)1 << 120)

/* The mantissa at *pp: digits [. digits], at most 36 significant; *frac
 * counts the digits after the point. *pp moves past it. */
static bool _mantissa(const char **pp, const char *end, __int128 *out, int *frac, const char *name,
                      const char *text, ts_err *err)
{
    __int128 m = 0;
    int ndigits = 0, sig = 0;
    bool in_frac = false;
    const char *p = *pp;
    *frac = 0;
    for (; p < end; p++) {
        if (*p == '.' && !in_frac) {
            in_frac = true;
            continue;
        }
        if (!isdigit((unsigned char)*p)) break;
        ndigits++;
        if (in_frac) (*frac)++;
        if (m == 0 && *p == '0') continue; /* leading zeros */
        if (++sig > 36) {
            ts_err_set(err, "%s: amount '%s' has too many digits", name, text);
            return false;
        }
        m = m * 10 + (*p - '0');
    }
    if (ndigits == 0) {
        ts_err_set(err, "%s: '%s' is not an amount", name, text);
        return false;
    }
    *out = m;
    *pp = p;
    return true;
}

/* The exponent at *pp: e[+-]digits, only when a digit follows (so "1e"
 * stays exa-bytes); 0 and *pp unmoved when there is none. */
static int _exponent(const char **pp, const char *end)
{
    const char *p = *pp;
    if (p >= end || (*p != 'e' && *p != 'E')) return 0;
    const char *q = p + 1;
    int sign = 1;
    if (q < end && (*q == '+' || *q == '-')) sign = *q++ == '-' ? -1 : 1;
    if (q >= end || !isdigit((unsigned char)*q)) return 0;
    int e = 0;
    for (; q < end && isdigit((unsigned char)*q); q++)
        if (e < 10000) e = e * 10 + (*q - '0');
    *pp = q;
    return sign * e;
}

/* The unit from p to end (mem only; none is 1). */
static bool _unit(int id, const char *p, const char *end, int64_t *mult, const char *name,
                  const char *text, ts_err *err)
{
    *mult = 1;
    if (p >= end) return true;
    size_t ulen = (size_t)(end - p);
    int64_t u = mem_unit(p, ulen);
    if (id != SLOT_MEM) {
        if (u)
            ts_err_set(err, "%s: unit '%.*s' in '%s' is only allowed for mem", name, (int)ulen, p,
                       text);
        else
            ts_err_set(err, "%s: '%s' is not an amount", name, text);
        return false;
    }
    if (!u) {
        ts_err_set(err, "%s: unknown unit '%.*s' in '%s' (use b, k, m, g, t, p, e)", name,
                   (int)ulen, p, text);
        return false;
    }
    *mult = u;
    return true;
}

/* m * 10^shift * mult, exactly, in quanta. */
static bool _scale(int id, __int128 m, int shift, int64_t mult, int64_t *out, const char *name,
                   const char *text, ts_err *err)
{
    __int128 v = m;
    if (v != 0) {
        for (; shift > 0; shift--) {
            v *= 10;
            if (v > INT64_MAX) goto too_large;
        }
        if (v > I128_LIMIT / mult) goto too_large;
        v *= mult;
        if (shift < 0) {
            __int128 den = 1;
            for (; shift < 0; shift++) {
                den *= 10;
                if (den > v) break; /* more decimals than any quantum can hold */
            }
            if (shift < 0 || v % den != 0) {
                char q[32];
                if (id == SLOT_MEM)
                    ts_err_set(err, "%s: amount '%s' is not a whole number of bytes", name, text);
                else if (slot_per_unit(id) == 1)
                    ts_err_set(err, "%s: amount '%s' must be a whole number", name, text);
                else
                    ts_err_set(err, "%s: amount '%s' has more decimals than the quantum %s", name,
                               text, quantum_text(id, q, sizeof(q)));
                return false;
            }
            v /= den;
        }
        if (v > INT64_MAX) goto too_large;
    }
    *out = (int64_t)v;
    return true;
too_large:
    ts_err_set(err, "%s: amount '%s' is too large", name, text);
    return false;
}

bool slot_parse(int id, const char *text, int64_t *out, ts_err *err)
{
    const char *name = slot_name(id);
    if (id < 0 || id >= slot_count()) {
        ts_err_set(err, "slot id %d is not registered", id);
        return false;
    }
    if (!text) text = "";
    const char *s = text, *end = text + strlen(text);
    while (s < end && isspace((unsigned char)*s))
        s++;
    while (end > s && isspace((unsigned char)end[-1]))
        end--;
    if (s == end) {
        ts_err_set(err, "%s: empty amount", name);
        return false;
    }
    if (*s == '-') {
        ts_err_set(err, "%s: negative amount '%s' (amounts are >= 0)", name, text);
        return false;
    }
    if (*s == '+') s++;
    __int128 m;
    int frac;
    int64_t mult;
    const char *p = s;
    if (!_mantissa(&p, end, &m, &frac, name, text, err)) return false;
    int exp10 = _exponent(&p, end);
    if (!_unit(id, p, end, &mult, name, text, err)) return false;
    /* value = m * 10^(exp10 - frac) * mult * quanta per unit, exactly */
    return _scale(id, m, exp10 - frac, mult * slot_per_unit(id), out, name, text, err);
}

bool slot_parse_json(int id, const json_t *value, int64_t *out, ts_err *err)
{
    char buf[64];
    if (json_is_string(value)) return slot_parse(id, json_string_value(value), out, err);
    if (json_is_integer(value)) {
        snprintf(buf, sizeof(buf), "%lld", (long long)json_integer_value(value));
        return slot_parse(id, buf, out, err);
    }
    if (json_is_real(value)) {
        double d = json_real_value(value);
        if (!isfinite(d)) {
            ts_err_set(err, "%s: amount is not a finite number", slot_name(id));
            return false;
        }
        /* 15 significant digits give back the decimal the client wrote (0.1 -> "0.1"). */
        snprintf(buf, sizeof(buf), "%.15g", d);
        return slot_parse(id, buf, out, err);
    }
    ts_err_set(err, "%s: amount must be a number or a string", slot_name(id));
    return false;
}

char *slot_format(int id, int64_t v, char *buf, size_t size)
{
    int64_t pu = slot_per_unit(id);
    const char *sign = v < 0 ? "-" : "";
    uint64_t a = v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;
    if (pu == 1) {
        snprintf(buf, size, "%s%llu", sign, (unsigned long long)a);
        return buf;
    }
    int dec = 0;
    for (int64_t p = pu; p > 1; p /= 10)
        dec++;
    uint64_t ip = a / (uint64_t)pu, fp = a % (uint64_t)pu;
    int fixed = id >= 0 && id < slot_count() ? slot_tab[id].decimals : -1;
    if (fixed < 0) { /* as few decimals as needed */
        while (dec > 0 && fp % 10 == 0) {
            fp /= 10;
            dec--;
        }
    }
    if (dec == 0)
        snprintf(buf, size, "%s%llu", sign, (unsigned long long)ip);
    else
        snprintf(buf, size, "%s%llu.%0*llu", sign, (unsigned long long)ip, dec,
                 (unsigned long long)fp);
    return buf;
}

/* ---- vectors ------------------------------------------------------------------------------ */

bool slots_is_zero(const slots_t *s)
{
    for (int i = 0; i < SLOTS_MAX; i++)
        if (slots_get(s, i) != 0) return false;
    return true;
}

bool slots_equal(const slots_t *a, const slots_t *b)
{
    for (int i = 0; i < SLOTS_MAX; i++)
        if (slots_get(a, i) != slots_get(b, i)) return false;
    return true;
}

bool slots_set(slots_t *s, const char *name, const char *amount, ts_err *err)
{
    int id;
    int64_t v;
    if (!slot_intern(name, &id, err) || !slot_parse(id, amount, &v, err)) return false;
    slots_put(s, id, v);
    return true;
}

bool slots_from_json(slots_t *s, const json_t *obj, ts_err *err)
{
    if (!json_is_object(obj)) {
        ts_err_set(err, "resource slots must be a JSON object");
        return false;
    }
    slots_t out;
    slots_clear(&out);
    const char *key;
    json_t *val;
    json_object_foreach((json_t *)obj, key, val)
    {
        int id;
        int64_t v;
        if (!slot_intern(key, &id, err) || !slot_parse_json(id, val, &v, err)) return false;
        slots_put(&out, id, v);
    }
    *s = out;
    return true;
}

json_t *slots_to_json(const slots_t *s)
{
    json_t *o = json_object();
    char buf[SLOT_FMT_MAX];
    for (int i = 0; i < SLOTS_MAX; i++)
        if ((s->mask >> i) & 1u)
            json_object_set_new(o, slot_name(i),
                                json_string(slot_format(i, s->v[i], buf, sizeof(buf))));
    return o;
}

bool slots_parse_text(slots_t *s, const char *text, ts_err *err)
{
    slots_t out;
    slots_clear(&out);
    const char *p = text ? text : "";
    while (*p) {
        while (*p == ' ' || *p == ',' || *p == '\t')
            p++;
        if (!*p) break;
        size_t n = strcspn(p, " ,\t");
        const char *eq = memchr(p, '=', n);
        if (!eq) {
            ts_err_set(err, "'%.*s': expected <slot>=<amount>", (int)n, p);
            return false;
        }
        char name[SLOT_NAME_MAX + 1], amount[64];
        size_t nl = (size_t)(eq - p), al = n - nl - 1;
        if (nl >= sizeof(name) || al >= sizeof(amount)) {
            ts_err_set(err, "'%.*s': too long", (int)n, p);
            return false;
        }
        memcpy(name, p, nl);
        name[nl] = '\0';
        memcpy(amount, eq + 1, al);
        amount[al] = '\0';
        if (!slots_set(&out, name, amount, err)) return false;
        p += n;
    }
    *s = out;
    return true;
}

char *slots_format(const slots_t *s, char *buf, size_t size)
{
    size_t off = 0;
    char a[SLOT_FMT_MAX];
    if (size) buf[0] = '\0';
    for (int i = 0; i < SLOTS_MAX && off < size; i++) {
        if (!((s->mask >> i) & 1u)) continue;
        int n = snprintf(buf + off, size - off, "%s%s=%s", off ? " " : "", slot_name(i),
                         slot_format(i, s->v[i], a, sizeof(a)));
        if (n < 0) break;
        off += (size_t)n;
    }
    return buf;
}

bool slots_add(slots_t *a, const slots_t *b, ts_err *err)
{
    slots_t r = *a;
    for (int i = 0; i < SLOTS_MAX; i++) {
        if (!((b->mask >> i) & 1u)) continue;
        int64_t x;
        if (__builtin_add_overflow(slots_get(a, i), b->v[i], &x)) {
            ts_err_set(err, "%s: sum overflows", slot_name(i));
            return false;
        }
        slots_put(&r, i, x);
    }
    *a = r;
    return true;
}

bool slots_sub(slots_t *a, const slots_t *b, ts_err *err)
{
    slots_t r = *a;
    for (int i = 0; i < SLOTS_MAX; i++) {
        if (!((b->mask >> i) & 1u)) continue;
        int64_t x = slots_get(a, i) - b->v[i];
        if (x < 0 || b->v[i] < 0) {
            char h[SLOT_FMT_MAX], t[SLOT_FMT_MAX];
            ts_err_set(err, "%s: cannot take %s from %s", slot_name(i),
                       slot_format(i, b->v[i], t, sizeof(t)),
                       slot_format(i, slots_get(a, i), h, sizeof(h)));
            return false;
        }
        slots_put(&r, i, x);
    }
    *a = r;
    return true;
}

bool slots_le(const slots_t *a, const slots_t *b)
{
    for (int i = 0; i < SLOTS_MAX; i++)
        if (slots_get(a, i) > slots_get(b, i)) return false;
    return true;
}

int slots_short(const slots_t *req, const slots_t *free)
{
    uint32_t m = req->mask;
    while (m) {
        int i = __builtin_ctz(m);
        m &= m - 1;
        if (req->v[i] > 0 && req->v[i] > slots_get(free, i)) return i;
    }
    return -1;
}

double slots_dominant_share(const slots_t *a, const slots_t *cap)
{
    double best = 0;
    uint32_t m = a->mask & cap->mask;
    while (m) {
        int i = __builtin_ctz(m);
        m &= m - 1;
        if (cap->v[i] <= 0) continue;
        double sh = (double)a->v[i] / (double)cap->v[i];
        if (sh > best) best = sh;
    }
    return best;
}
