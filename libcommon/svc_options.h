/* svc_options.h: the options every service shares (svc.h): the common ones
 * (log, HTTP, service credentials) and those of the dependencies a service
 * has (PostgreSQL, Redis, Kafka), as config tables and the values they fill.
 * Read by svc.c only. */
#pragma once

#include "libcommon/config.h"

#include <stdbool.h>
#include <stdint.h>

typedef struct svc_options {
    char *log_level;
    char *instance;
    char *http_listen;
    char *http_shared_listen;
    int64_t http_max_body;
    int64_t http_threads;
    int64_t http_idle_timeout_ms;
    int64_t http_header_timeout_ms;
    int64_t http_body_timeout_ms;
    int64_t drain_timeout_ms;
    char *pg_dsn;
    int64_t pg_pool_size;
    int64_t pg_connect_timeout_ms;
    bool pg_prepare;
    char *redis_url;
    int64_t redis_timeout_ms;
    char *kafka_bootstrap;
    int64_t kafka_linger_ms;
    int64_t kafka_max_attempts;
    int64_t kafka_retry_backoff_ms;
    int64_t kafka_fetch_wait_ms;
    int64_t kafka_control_fetch_wait_ms;
    int64_t kafka_session_timeout_ms;
    int64_t kafka_pause_max_backoff_ms;
    int64_t kafka_message_timeout_ms;
    char *kafka_security_protocol;
    char *kafka_ssl_ca_file;
    bool kafka_allow_plaintext;
    bool pg_allow_plaintext;
    bool redis_allow_plaintext;
    char *svcauth_key_file;
    char *http_ca_file;
    char *http_tls_cert;
    char *http_tls_key;
    bool http_allow_plaintext;
    char *svcauth_trust_file;
    int64_t svcauth_max_skew_ms;
    int64_t deps_down_after_failures;
    int64_t deps_down_after_ms;
} svc_options;

extern svc_options svc_opts;

extern cfg_option svc_common_table[];
extern const cfg_option svc_pg_table[];
extern const cfg_option svc_redis_table[];
extern const cfg_option svc_kafka_table[];
