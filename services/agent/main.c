/* tessera-agent: runs kernels as OCI containers on this node and reports its capacity.
 *
 * Wiring only: start-up, dependencies and the health endpoints come from
 * libcommon/svc.c. Its domain logic arrives with its own issue. */
#include "libcommon/svc.h"

int main(int argc, char **argv)
{
    static const svc_spec spec = {
        .name = "agent",
        .summary = "runs kernels as OCI containers on this node and reports its capacity",
        .default_listen = "127.0.0.1:8094",
        .needs = SVC_NEEDS_KAFKA,
    };
    return svc_main(argc, argv, &spec);
}
