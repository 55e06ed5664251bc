/* limits.c: the resource-limit values (slot amounts, vfolder host
 * permissions) and path names that policies, domains and projects validate
 * the same way (see limits.h). */
#include "limits.h"

#include "libcommon/pgjson.h"
#include "libcommon/utf8.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- names --------------------------------------------------------------- */

bool limits_name_ok(const char *name)
{
    if (!name || !*name || !utf8_valid(name)) return false;
    size_t len = strlen(name), n = pgjson_utf8_len(name);
    if (n > 64) return false;
    if (strcmp(name, ".") == 0 || strcmp(name, "..") == 0) return false;
    if (name[0] == ' ' || name[len - 1] == ' ') return false;
    for (const unsigned char *p = (const unsigned char *)name; *p; p++)
        if (*p < 0x20 || *p == 0x7f || *p == '/') return false;
    return true;
}

bool limits_field_name(json_t *obj, const char *key, bool required, const char **out,
                       http_resp *resp)
{
    if (!pgjson_field_str(obj, key, required, 1, 64, out, resp)) return false;
    if (*out && !limits_name_ok(*out)) {
        http_problem(
            resp, 400, "invalid-api-params", NULL,
            "\"%s\" must not contain '/', be \".\" or \"..\", or start or end with a space", key);
        *out = NULL;
        return false;
    }
    return true;
}

/* ---- slot amounts -------------------------------------------------------- */

static bool slot_name_ok(const char *s)
{
    size_t n = strlen(s);
    if (n < 1 || n > 64) return false;
    bool seg_start = true;
    int dots = 0;
    for (const char *p = s; *p; p++) {
        char c = *p;
        if (c == '.') {
            if (seg_start || ++dots > 1) return false;
            seg_start = true;
            continue;
        }
        bool lower = c >= 'a' && c <= 'z';
        bool ok = lower || (c >= '0' && c <= '9') || c == '_' || c == '-';
        if (!ok || (seg_start && !lower)) return false;
        seg_start = false;
    }
    return !seg_start;
}

/* "0012.500" -> "12.5"; ip and fp are the digit runs (fp may be empty). */
static void decimal_text(const char *ip, size_t ni, const char *fp, size_t nf, char *out,
                         size_t size)
{
    while (ni > 1 && *ip == '0')
        ip++, ni--;
    while (nf > 0 && fp[nf - 1] == '0')
        nf--;
    if (nf)
        snprintf(out, size, "%.*s.%.*s", (int)ni, ip, (int)nf, fp);
    else
        snprintf(out, size, "%.*s", (int)ni, ip);
}

/* Decimal text with an optional binary suffix (bytes slots only). */
static bool amount_text(const char *slot, const char *s, char *out, size_t size, ts_err *err)
{
    bool bytes = strcmp(slot, "mem") == 0;
    const char *p = s;
    size_t ni = strspn(p, "0123456789");
    const char *ip = p;
    p += ni;
    const char *fp = "";
    size_t nf = 0;
    if (*p == '.') {
        fp = ++p;
        nf = strspn(p, "0123456789");
        p += nf;
        if (nf == 0) ni = 0; /* "8." is not a number */
    }
    unsigned shift = 0;
    if (bytes && *p && !p[1]) {
        const char *units = "kmgt", *u = strchr(units, *p | 0x20);
        if (u && *u) shift = 10 * (unsigned)(u - units + 1), p++;
    }
    if (ni == 0 || *p) {
        ts_err_set(err, "\"%s\": amount must be a non-negative decimal number%s", slot,
                   bytes ? " (optionally with k, m, g or t)" : "");
        return false;
    }
    if (ni > 18 || nf > 6) {
        ts_err_set(err, "\"%s\": at most 18 integer and 6 fraction digits", slot);
        return false;
    }
    if (!bytes) {
        decimal_text(ip, ni, fp, nf, out, size);
        return true;
    }
    /* Bytes: (integer part and fraction) * 2^shift must be whole and fit int64. */
    unsigned __int128 scaled = 0, pow10 = 1;
    for (size_t i = 0; i < ni; i++)
        scaled = scaled * 10 + (unsigned)(ip[i] - '0');
    for (size_t i = 0; i < nf; i++) {
        scaled = scaled * 10 + (unsigned)(fp[i] - '0');
        pow10 *= 10;
    }
    scaled <<= shift;
    if (scaled % pow10) {
        ts_err_set(err, "\"%s\": must come to a whole number of bytes", slot);
        return false;
    }
    unsigned __int128 v = scaled / pow10;
    if (v > (unsigned __int128)INT64_MAX) {
        ts_err_set(err, "\"%s\": too large", slot);
        return false;
    }
    snprintf(out, size, "%llu", (unsigned long long)v);
    return true;
}

bool limits_slot_amount(const char *slot, json_t *v, char *out, size_t size, ts_err *err)
{
    char buf[64];
    if (json_is_integer(v)) {
        if (json_integer_value(v) < 0) {
            ts_err_set(err, "\"%s\": amount must not be negative", slot);
            return false;
        }
        snprintf(buf, sizeof(buf), "%lld", (long long)json_integer_value(v));
        return amount_text(slot, buf, out, size, err);
    }
    if (json_is_real(v)) {
        double d = json_real_value(v);
        if (!isfinite(d) || d < 0 || d >= 1e18) {
            ts_err_set(err, "\"%s\": amount must be a non-negative number below 1e18", slot);
            return false;
        }
        snprintf(buf, sizeof(buf), "%.6f", d);
        return amount_text(slot, buf, out, size, err);
    }
    if (json_is_string(v)) {
        if (json_string_length(v) >= sizeof(buf)) {
            ts_err_set(err, "\"%s\": amount text too long", slot);
            return false;
        }
        return amount_text(slot, json_string_value(v), out, size, err);
    }
    ts_err_set(err, "\"%s\": amount must be a number or decimal text", slot);
    return false;
}

bool limits_field_slots(json_t *obj, const char *key, char **out, http_resp *resp)
{
    *out = NULL;
    json_t *v = json_object_get(obj, key);
    if (!v || json_is_null(v)) return true;
    if (!json_is_object(v) || json_object_size(v) > LIMITS_MAX_SLOTS) {
        http_problem(resp, 400, "invalid-api-params", NULL,
                     "\"%s\" must be an object of at most %d slot amounts", key, LIMITS_MAX_SLOTS);
        return false;
    }
    json_t *norm = json_object();
    const char *slot;
    json_t *amount;
    json_object_foreach(v, slot, amount)
    {
        ts_err err = {{0}};
        char text[64];
        if (!slot_name_ok(slot)) {
            char q[80];
            ts_strlcpy(q, slot, sizeof(q));
            http_problem(resp, 400, "invalid-api-params", NULL,
                         "\"%s\": \"%s\" is not a slot name (like cpu, mem, cuda.device)", key,
                         utf8_valid(q) ? q : "?");
            json_decref(norm);
            return false;
        }
        if (!limits_slot_amount(slot, amount, text, sizeof(text), &err)) {
            http_problem(resp, 400, "invalid-api-params", NULL, "%s: %s", key, err.msg);
            json_decref(norm);
            return false;
        }
        json_object_set_new(norm, slot, json_string(text));
    }
    *out = json_dumps(norm, JSON_COMPACT | JSON_SORT_KEYS);
    json_decref(norm);
    return true;
}

/* ---- vfolder host permissions ------------------------------------------ */

static const char *const vfolder_perms[] = {
    "create-vfolder",
    "modify-vfolder",
    "delete-vfolder",
    "mount-in-session",
    "upload-file",
    "download-file",
    "invite-others",
    "set-user-specific-permission",
    NULL,
};

static bool host_name_ok(const char *s)
{
    size_t n = strlen(s);
    if (n < 1 || n > 64) return false;
    for (const char *p = s; *p; p++)
        if (!strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._:-", *p))
            return false;
    return true;
}

/* An array of distinct known permissions. */
static bool perms_ok(json_t *arr)
{
    if (!json_is_array(arr) || json_array_size(arr) > TS_ARRAY_LEN(vfolder_perms)) return false;
    unsigned seen = 0;
    size_t i;
    json_t *p;
    json_array_foreach(arr, i, p)
    {
        const char *s = json_string_value(p);
        unsigned bit = 0;
        for (unsigned k = 0; s && vfolder_perms[k]; k++)
            if (strcmp(vfolder_perms[k], s) == 0) bit = 1u << k;
        if (!bit || (seen & bit)) return false;
        seen |= bit;
    }
    return true;
}

bool limits_field_vfolder_hosts(json_t *obj, const char *key, char **out, http_resp *resp)
{
    *out = NULL;
    json_t *v = json_object_get(obj, key);
    if (!v || json_is_null(v)) return true;
    if (!json_is_object(v) || json_object_size(v) > LIMITS_MAX_HOSTS) {
        http_problem(resp, 400, "invalid-api-params", NULL,
                     "\"%s\" must be an object of at most %d hosts, each with a list of "
                     "permissions",
                     key, LIMITS_MAX_HOSTS);
        return false;
    }
    const char *host;
    json_t *perms;
    json_object_foreach(v, host, perms)
    {
        if (!host_name_ok(host) || !perms_ok(perms)) {
            http_problem(resp, 400, "invalid-api-params", NULL,
                         "\"%s\": each host (1 to 64 of A-Z a-z 0-9 . _ : -) needs an array of "
                         "distinct permissions among create-vfolder, modify-vfolder, "
                         "delete-vfolder, mount-in-session, upload-file, download-file, "
                         "invite-others, set-user-specific-permission",
                         key);
            return false;
        }
    }
    *out = json_dumps(v, JSON_COMPACT | JSON_SORT_KEYS);
    return true;
}

/* ---- the limits domains and projects share -------------------------------- */

bool limits_fields_parse(json_t *body, limits_fields *f, http_resp *resp)
{
    bool active, present, has_idle;
    long long idle;
    if (!pgjson_field_str(body, "description", false, 0, LIMITS_DESCRIPTION_MAX, &f->description,
                          resp) ||
        !pgjson_field_bool(body, "is_active", false, &active, &present, resp) ||
        !pgjson_field_int(body, "idle_timeout", false, 0, LIMITS_IDLE_TIMEOUT_MAX, &idle, &has_idle,
                          resp) ||
        !limits_field_slots(body, "total_resource_slots", &f->slots, resp) ||
        !limits_field_vfolder_hosts(body, "allowed_vfolder_hosts", &f->hosts, resp))
        return false;
    if (present) f->is_active = active ? "true" : "false";
    if (has_idle) {
        snprintf(f->idle_buf, sizeof(f->idle_buf), "%lld", idle);
        f->idle_timeout = f->idle_buf;
    }
    return true;
}

void limits_fields_free(limits_fields *f)
{
    free(f->slots);
    free(f->hosts);
}
