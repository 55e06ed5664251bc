/* pbutil.h: protobuf-c messages built from and turned into the JSON the
 * registry stores (slots objects, device allocation arrays, service ports),
 * with an arena that owns every piece of a message being built. */
#ifndef REGISTRY_PBUTIL_H
#define REGISTRY_PBUTIL_H

#include "libcommon/slots.h"
#include "tessera/v1/common.pb-c.h"

#include <jansson.h>

typedef struct arena {
    void **p;
    size_t n, cap;
} arena;

void *ar_alloc(arena *a, size_t size); /* zeroed */
char *ar_str(arena *a, const char *s); /* NULL -> "" */
void ar_free(arena *a);

/* {"cpu": "2", ...} -> SlotAmount list. */
Tessera__V1__SlotAmount **pb_slots(arena *a, json_t *obj, size_t *n);
/* SlotAmount list -> {"cpu": "2", ...} normalized through slots.h; false with
 * err naming the bad slot. */
bool pb_slots_json(Tessera__V1__SlotAmount **v, size_t n, json_t **out, ts_err *err) TS_MUST_CHECK;
/* SlotAmount list -> vector. */
bool pb_slots_vec(Tessera__V1__SlotAmount **v, size_t n, slots_t *out, ts_err *err) TS_MUST_CHECK;

/* [{"device_id", "slot_name", "amount"}] <-> DeviceAllocation list. */
Tessera__V1__DeviceAllocation **pb_devs(arena *a, json_t *arr, size_t *n);
json_t *pb_devs_json(Tessera__V1__DeviceAllocation **v, size_t n);

/* [{"name", "protocol", "container_port", "host_port"}] <-> ServicePort list. */
Tessera__V1__ServicePort **pb_ports(arena *a, json_t *arr, size_t *n);
json_t *pb_ports_json(Tessera__V1__ServicePort **v, size_t n);

/* "jupyter:http:8080,sshd:tcp:2200" (ai.backend.service-ports) -> the stored
 * array; NULL with err on a malformed entry. Also accepts Backend.AI's
 * "name:proto:[8080,8081]" list form (first port). */
json_t *pb_parse_service_ports(const char *label, ts_err *err);

/* sessions.type ("interactive", "batch", "inference") as the enum the events
 * carry; anything else is interactive. */
Tessera__V1__SessionType pb_session_type(const char *type);

#endif
