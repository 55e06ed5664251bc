/* tessera-wsproxy: proxies HTTP, WebSocket and TCP to apps inside sessions.
 *
 * Wiring only: start-up, dependencies and the health endpoints come from
 * libcommon/svc.c. Its domain logic arrives with its own issue. */
#include "libcommon/svc.h"

int main(int argc, char **argv)
{
    static const svc_spec spec = {
        .name = "wsproxy",
        .summary = "proxies HTTP, WebSocket and TCP to apps inside sessions",
        .default_listen = "127.0.0.1:8096",
        .needs = SVC_NEEDS_REDIS,
    };
    return svc_main(argc, argv, &spec);
}
