/* service_ports.c: see service_ports.h. */
#include "libcommon/service_ports.h"

json_t *service_ports_view(const json_t *stored, const char *host)
{
    json_t *out = json_array();
    size_t i;
    const json_t *p;
    json_array_foreach(stored, i, p)
    {
        json_t *hp = json_array();
        json_int_t h = json_integer_value(json_object_get(p, "host_port"));
        if (h > 0) json_array_append_new(hp, json_integer(h));
        json_array_append_new(out, json_pack("{s:O, s:O, s:[O], s:o, s:s}", "name",
                                             json_object_get(p, "name"), "protocol",
                                             json_object_get(p, "protocol"), "container_ports",
                                             json_object_get(p, "container_port"), "host_ports", hp,
                                             "host", host ? host : ""));
    }
    return out;
}
