/* tessera-scheduler: places pending sessions on agents with room, never double-booking.
 *
 * Wiring only: start-up, dependencies and the health endpoints come from
 * libcommon/svc.c. Its domain logic arrives with its own issue. */
#include "libcommon/svc.h"

int main(int argc, char **argv)
{
    static const svc_spec spec = {
        .name = "scheduler",
        .summary = "places pending sessions on agents with room, never double-booking",
        .default_listen = "127.0.0.1:8093",
        .needs = SVC_NEEDS_REDIS | SVC_NEEDS_KAFKA,
    };
    return svc_main(argc, argv, &spec);
}
