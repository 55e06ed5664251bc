/* pm_conf.h: tessera-portmap's input: the CNI environment and the network
 * configuration on stdin, checked before anything touches the host.
 *
 * Config (CNI 0.3.0 to 1.0.0, a chained plugin): `cniVersion`, `name`,
 * `runtimeConfig.portMappings` [{hostPort, containerPort, protocol, hostIP}],
 * `snat` (default true), `prevResult` (needed by ADD and CHECK: its first
 * IPv4 address is the container's). Other keys are ignored, as CNI plugins
 * do. Errors carry the CNI error code to answer with. */
#ifndef PM_CONF_H
#define PM_CONF_H

#include <jansson.h>

#include "libcommon/common.h"
#include "libcommon/cnip.h"

/* tessera-portmap's own error codes (the spec's are in cnip.h). */
enum {
    PM_E_IPTABLES = 100, /* iptables-save / iptables-restore failed */
    PM_E_MISSING = 101,  /* CHECK: a rule or chain is missing */
};

#define PM_MAX_MAPPINGS 1024
#define PM_IP_LEN 16 /* "255.255.255.255" */

typedef struct pm_mapping {
    int host_port, container_port;
    const char *proto;       /* "tcp" or "udp" */
    char host_ip[PM_IP_LEN]; /* "" = every local address */
} pm_mapping;

typedef struct pm_conf {
    char cni_version[16];
    char name[CNIP_MAX_NAME + 1];
    bool snat;
    pm_mapping *maps; /* heap; IPv6 hostIP entries are left out (IPv4 only) */
    int n_maps;
    json_t *prev_result;               /* owned; NULL when absent */
    char container_ip[PM_IP_LEN];      /* "" when prevResult has no IPv4 address */
    char container_net[PM_IP_LEN + 3]; /* its network, "10.88.0.0/16" */
} pm_conf;

/* Some mapping answers on a loopback address: it has no hostIP (every local
 * address) or one in 127.0.0.0/8. Only then does a DNAT to the container
 * need route_localnet on the interface towards it (pm_host.h). */
bool pm_conf_on_loopback(const pm_conf *c) TS_MUST_CHECK;

/* Parse and check stdin for cmd (not CNIP_VERSION). false with e set. */
bool pm_conf_parse(const char *text, size_t len, cnip_cmd cmd, pm_conf *c,
                   cnip_error *e) TS_MUST_CHECK;
void pm_conf_free(pm_conf *c);

#endif
