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

/* CNI error codes (spec, "Error") and ours (100+). */
enum {
    PM_E_VERSION = 1,    /* incompatible CNI version */
    PM_E_ENV = 4,        /* invalid necessary environment variables */
    PM_E_IO = 5,         /* I/O failure */
    PM_E_DECODE = 6,     /* failed to decode content */
    PM_E_CONFIG = 7,     /* invalid network config */
    PM_E_IPTABLES = 100, /* iptables-save / iptables-restore failed */
    PM_E_MISSING = 101,  /* CHECK: a rule or chain is missing */
};

typedef struct pm_error {
    int code;
    char msg[256];
    char details[768];
} pm_error;

void pm_error_set(pm_error *e, int code, const char *msg, const char *details_fmt, ...)
    TS_PRINTF(4, 5);

typedef enum pm_cmd { PM_ADD, PM_DEL, PM_CHECK, PM_VERSION } pm_cmd;

#define PM_MAX_MAPPINGS 1024
#define PM_MAX_NAME 64 /* network name */
#define PM_MAX_ID 160  /* container id */
#define PM_IP_LEN 16   /* "255.255.255.255" */

typedef struct pm_mapping {
    int host_port, container_port;
    const char *proto;       /* "tcp" or "udp" */
    char host_ip[PM_IP_LEN]; /* "" = every local address */
} pm_mapping;

typedef struct pm_conf {
    char cni_version[16];
    char name[PM_MAX_NAME + 1];
    bool snat;
    pm_mapping *maps; /* heap; IPv6 hostIP entries are left out (IPv4 only) */
    int n_maps;
    json_t *prev_result;               /* owned; NULL when absent */
    char container_ip[PM_IP_LEN];      /* "" when prevResult has no IPv4 address */
    char container_net[PM_IP_LEN + 3]; /* its network, "10.88.0.0/16" */
} pm_conf;

/* The versions this plugin speaks, newest last, NULL-terminated. */
extern const char *const pm_supported_versions[];

/* CNI_CONTAINERID and the network name: non-empty, an alphanumeric first,
 * then alphanumerics, '_', '.', '-' (the CNI spec's rule), at most max. */
bool pm_valid_name(const char *s, size_t max);

/* Parse and check stdin for cmd (not PM_VERSION). false with e set. */
bool pm_conf_parse(const char *text, size_t len, pm_cmd cmd, pm_conf *c, pm_error *e) TS_MUST_CHECK;
void pm_conf_free(pm_conf *c);

#endif
