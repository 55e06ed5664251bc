/* tessera-registry: sessions, kernels, agents, resource groups and images (system of record).
 *
 * Wiring only: start-up, dependencies and the health endpoints come from
 * libcommon/svc.c. Its domain logic arrives with its own issue. */
#include "libcommon/svc.h"

int main(int argc, char **argv)
{
    static const svc_spec spec = {
        .name = "registry",
        .summary = "sessions, kernels, agents, resource groups and images (system of record)",
        .default_listen = "127.0.0.1:8092",
        .needs = SVC_NEEDS_PG | SVC_NEEDS_REDIS | SVC_NEEDS_KAFKA,
        .pg_schema = "registry",
    };
    return svc_main(argc, argv, &spec);
}
