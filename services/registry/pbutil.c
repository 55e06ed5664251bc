/* pbutil.c: see pbutil.h. */
#include "pbutil.h"

#include "libcommon/pgjson.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void *ar_alloc(arena *a, size_t size)
{
    if (a->n == a->cap) {
        a->cap = a->cap ? a->cap * 2 : 32;
        a->p = ts_realloc(a->p, a->cap * sizeof(*a->p));
    }
    void *m = ts_calloc(1, size ? size : 1);
    a->p[a->n++] = m;
    return m;
}

char *ar_str(arena *a, const char *s)
{
    if (!s) s = "";
    size_t n = strlen(s);
    char *d = ar_alloc(a, n + 1);
    memcpy(d, s, n);
    return d;
}

void ar_free(arena *a)
{
    for (size_t i = 0; i < a->n; i++)
        free(a->p[i]);
    free(a->p);
    memset(a, 0, sizeof(*a));
}

Tessera__V1__SlotAmount **pb_slots(arena *a, json_t *obj, size_t *n)
{
    *n = json_is_object(obj) ? json_object_size(obj) : 0;
    Tessera__V1__SlotAmount **v = ar_alloc(a, (*n + 1) * sizeof(*v));
    size_t i = 0;
    const char *key;
    json_t *val;
    if (*n) {
        json_object_foreach(obj, key, val)
        {
            Tessera__V1__SlotAmount *s = ar_alloc(a, sizeof(*s));
            tessera__v1__slot_amount__init(s);
            s->name = ar_str(a, key);
            if (json_is_string(val)) {
                s->amount = ar_str(a, json_string_value(val));
            } else {
                char buf[64];
                if (json_is_integer(val))
                    snprintf(buf, sizeof(buf), "%lld", (long long)json_integer_value(val));
                else
                    snprintf(buf, sizeof(buf), "%.15g", json_number_value(val));
                s->amount = ar_str(a, buf);
            }
            v[i++] = s;
        }
    }
    *n = i;
    return v;
}

bool pb_slots_vec(Tessera__V1__SlotAmount **v, size_t n, slots_t *out, ts_err *err)
{
    slots_clear(out);
    for (size_t i = 0; i < n; i++)
        if (!slots_set(out, v[i]->name, v[i]->amount, err)) return false;
    return true;
}

bool pb_slots_json(Tessera__V1__SlotAmount **v, size_t n, json_t **out, ts_err *err)
{
    slots_t s;
    if (!pb_slots_vec(v, n, &s, err)) return false;
    *out = slots_to_json(&s);
    return true;
}

Tessera__V1__DeviceAllocation **pb_devs(arena *a, json_t *arr, size_t *n)
{
    *n = json_is_array(arr) ? json_array_size(arr) : 0;
    Tessera__V1__DeviceAllocation **v = ar_alloc(a, (*n + 1) * sizeof(*v));
    for (size_t i = 0; i < *n; i++) {
        json_t *o = json_array_get(arr, i);
        Tessera__V1__DeviceAllocation *d = ar_alloc(a, sizeof(*d));
        tessera__v1__device_allocation__init(d);
        d->device_id = ar_str(a, pgjson_str(o, "device_id"));
        d->slot_name = ar_str(a, pgjson_str(o, "slot_name"));
        d->amount = ar_str(a, pgjson_str(o, "amount"));
        v[i] = d;
    }
    return v;
}

json_t *pb_devs_json(Tessera__V1__DeviceAllocation **v, size_t n)
{
    json_t *arr = json_array();
    for (size_t i = 0; i < n; i++)
        json_array_append_new(arr, json_pack("{s:s, s:s, s:s}", "device_id", v[i]->device_id,
                                             "slot_name", v[i]->slot_name, "amount", v[i]->amount));
    return arr;
}

Tessera__V1__ServicePort **pb_ports(arena *a, json_t *arr, size_t *n)
{
    *n = json_is_array(arr) ? json_array_size(arr) : 0;
    Tessera__V1__ServicePort **v = ar_alloc(a, (*n + 1) * sizeof(*v));
    for (size_t i = 0; i < *n; i++) {
        json_t *o = json_array_get(arr, i);
        Tessera__V1__ServicePort *p = ar_alloc(a, sizeof(*p));
        tessera__v1__service_port__init(p);
        p->name = ar_str(a, pgjson_str(o, "name"));
        p->protocol = ar_str(a, pgjson_str(o, "protocol"));
        p->container_port = (int32_t)json_integer_value(json_object_get(o, "container_port"));
        p->host_port = (int32_t)json_integer_value(json_object_get(o, "host_port"));
        v[i] = p;
    }
    return v;
}

json_t *pb_ports_json(Tessera__V1__ServicePort **v, size_t n)
{
    json_t *arr = json_array();
    for (size_t i = 0; i < n; i++)
        json_array_append_new(arr,
                              json_pack("{s:s, s:s, s:i, s:i}", "name", v[i]->name, "protocol",
                                        v[i]->protocol, "container_port", (int)v[i]->container_port,
                                        "host_port", (int)v[i]->host_port));
    return arr;
}

static bool name_ok(const char *s, size_t n)
{
    if (n == 0 || n > 64) return false;
    for (size_t i = 0; i < n; i++)
        if (!isalnum((unsigned char)s[i]) && s[i] != '-' && s[i] != '_' && s[i] != '.')
            return false;
    return true;
}

json_t *pb_parse_service_ports(const char *label, ts_err *err)
{
    json_t *arr = json_array();
    const char *p = label ? label : "";
    while (*p) {
        while (*p == ' ' || *p == ',')
            p++;
        if (!*p) break;
        /* name:proto:port or name:proto:[p1,p2] */
        const char *c1 = strchr(p, ':');
        const char *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
        if (!c1 || !c2) goto bad;
        const char *port = c2 + 1;
        const char *end;
        if (*port == '[') {
            end = strchr(port, ']');
            if (!end) goto bad;
            end++;
            port++;
        } else {
            end = port + strcspn(port, ",");
        }
        char proto[16];
        size_t np = (size_t)(c2 - c1 - 1);
        if (!name_ok(p, (size_t)(c1 - p)) || np == 0 || np >= sizeof(proto)) goto bad;
        memcpy(proto, c1 + 1, np);
        proto[np] = '\0';
        if (strcmp(proto, "http") != 0 && strcmp(proto, "tcp") != 0 &&
            strcmp(proto, "preopen") != 0 && strcmp(proto, "pty") != 0)
            goto bad;
        char *e;
        long n = strtol(port, &e, 10);
        if (e == port || n < 1 || n > 65535) goto bad;
        char name[65];
        memcpy(name, p, (size_t)(c1 - p));
        name[c1 - p] = '\0';
        json_array_append_new(arr, json_pack("{s:s, s:s, s:i, s:i}", "name", name, "protocol",
                                             proto, "container_port", (int)n, "host_port", 0));
        p = end;
    }
    return arr;
bad:
    ts_err_set(err, "malformed ai.backend.service-ports entry near '%.40s' (want name:proto:port)",
               p);
    json_decref(arr);
    return NULL;
}

Tessera__V1__SessionType pb_session_type(const char *type)
{
    if (strcmp(type, "batch") == 0) return TESSERA__V1__SESSION_TYPE__SESSION_TYPE_BATCH;
    if (strcmp(type, "inference") == 0) return TESSERA__V1__SESSION_TYPE__SESSION_TYPE_INFERENCE;
    return TESSERA__V1__SESSION_TYPE__SESSION_TYPE_INTERACTIVE;
}
