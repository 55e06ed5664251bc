/* context.h: the registry's process-wide state, in one leaf module that calls
 * nothing else of the folder: its configuration (reg_settings, filled from
 * main.c's option table before start-up, read-only afterwards) and its
 * service handle (set once by main.c at set-up, before any route, consumer or
 * thread runs). Every other module reads them here; nothing calls main.c. */
#ifndef REGISTRY_CONTEXT_H
#define REGISTRY_CONTEXT_H

#include "libcommon/svc.h"

typedef struct reg_config {
    char *auth_url;
    int64_t auth_timeout_ms;
    int64_t context_cache_ttl_ms;
    int64_t context_cache_entries;
    int64_t largest_agent_cache_ms;
    char *oci_registry;
    bool oci_plain_http;
    char *oci_ca_file;
    int64_t oci_timeout_ms;
    int64_t agent_lost_timeout_ms;
    int64_t lost_check_interval_ms;
    int64_t pending_check_interval_ms;
    int64_t event_consumers;
    bool auto_register_images;
    int64_t reconcile_interval_ms;
    int64_t kernel_reconcile_interval_ms;
    int64_t stuck_timeout_ms;
    char *redis_prefix;
    int64_t default_wait_ms;
    int64_t max_wait_ms;
    int64_t max_waiting_creates;
    char *default_slots;
    char *wsproxy_url;
    char *vfolder_url;
    int64_t vfolder_timeout_ms;
    int64_t usage_sample_retention_ms;
    char *cluster_subnet;
} reg_config;

/* The options (main.c's table says what each means and its default). */
extern reg_config reg_settings;

/* The service: PostgreSQL pool, Redis, the bus, the router, metrics. */
svc *reg_service(void);
void reg_context_set_service(svc *s);

#endif
