/* tessera-gateway: the public REST API (Backend.AI dialect) in front of the
 * internal services. Wiring only; routes live in http_api.c. */
#include "audit.h"
#include "http_api.h"
#include "upstream.h"

static char *auth_url, *registry_url, *vfolder_url;

static const cfg_option gateway_options[] = {
    {"auth.url", CFG_STRING, &auth_url, "http://127.0.0.1:8091", 0, 0, NULL, false, NULL,
     "base URL of tessera-auth"},
    {"registry.url", CFG_STRING, &registry_url, "http://127.0.0.1:8092", 0, 0, NULL, false, NULL,
     "base URL of tessera-registry"},
    {"vfolder.url", CFG_STRING, &vfolder_url, "http://127.0.0.1:8095", 0, 0, NULL, false, NULL,
     "base URL of tessera-vfolder"},
    {NULL},
};

static upstream upstreams[] = {
    {"auth", &auth_url},
    {"registry", &registry_url},
    {"vfolder", &vfolder_url},
};

static bool gateway_setup(svc *s, ts_err *err)
{
    (void)err;
    gateway_routes(s);
    return true;
}

static bool gateway_start(svc *s, ts_err *err)
{
    (void)err;
    upstream_add_checks(s, upstreams, TS_ARRAY_LEN(upstreams));
    return true;
}

int main(int argc, char **argv)
{
    static const svc_spec spec = {
        .name = "gateway",
        .summary = "the public REST API (Backend.AI-compatible) in front of the internal services",
        .default_listen = "127.0.0.1:8090",
        .needs = SVC_NEEDS_REDIS | SVC_NEEDS_KAFKA,
        .options = gateway_options,
        .routes = gateway_setup,
        .start = gateway_start,
        .on_request = audit_request,
    };
    return svc_main(argc, argv, &spec);
}
