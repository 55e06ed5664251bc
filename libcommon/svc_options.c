/* svc_options.c: the options every service shares (svc_options.h). */
#include "libcommon/svc_options.h"

#include <stddef.h>

svc_options svc_opts;
cfg_option svc_common_table[] = {
    {"log.level", CFG_ENUM, &svc_opts.log_level, "info", 0, 0, "debug|info|warn|error", true, NULL,
     "lowest level written to the log"},
    {"service.instance", CFG_STRING, &svc_opts.instance, "", 0, 0, NULL, false, NULL,
     "instance name in logs and events (default: the host name)"},
    {"http.listen", CFG_STRING, &svc_opts.http_listen, NULL /* per service */, 0, 0, NULL, false,
     NULL, "address the HTTP server listens on, host:port"},
    {"http.shared_listen", CFG_STRING, &svc_opts.http_shared_listen, "", 0, 0, NULL, false, NULL,
     "an address shared with the service's other instances on this host (SO_REUSEPORT), joined "
     "once ready, left when draining; empty: none (docs/operations.md, \"Replicas\")"},
    {"http.max_body", CFG_BYTES, &svc_opts.http_max_body, "1m", 1024, 1073741824.0, NULL, false,
     NULL, "largest request body accepted (larger: 413)"},
    {"http.threads", CFG_INT, &svc_opts.http_threads, "4", 1, 256, NULL, false, NULL,
     "HTTP worker threads"},
    {"http.ca_file", CFG_STRING, &svc_opts.http_ca_file, "", 0, 0, NULL, false, NULL,
     "PEM file of the CA(s) this service's calls to other services trust for https:// URLs "
     "(an agent's https addr: agent.advertise_addr); empty = the system's"},
    {"http.tls_cert", CFG_STRING, &svc_opts.http_tls_cert, "", 0, 0, NULL, false, NULL,
     "PEM file of the certificate (chain) the HTTP listener serves TLS with; with http.tls_key "
     "the listener speaks https only (TLS 1.2+); empty: plain HTTP"},
    {"http.tls_key", CFG_STRING, &svc_opts.http_tls_key, "", 0, 0, NULL, false, NULL,
     "PEM file of http.tls_cert's private key (0600); set both or neither"},
    {"http.allow_plaintext", CFG_BOOL, &svc_opts.http_allow_plaintext, "false", 0, 0, NULL, false,
     NULL,
     "allow http.listen (or http.shared_listen) on an address that is not loopback without TLS; "
     "otherwise start-up refuses it (the gateway's public listener is not checked: "
     "docs/operations.md, \"Several hosts: encryption\")"},
    {"http.idle_timeout", CFG_DURATION, &svc_opts.http_idle_timeout_ms, "60s", 1000, 3600000, NULL,
     false, NULL, "idle keep-alive connections are closed after this"},
    {"http.header_timeout", CFG_DURATION, &svc_opts.http_header_timeout_ms, "10s", 1000, 600000,
     NULL, false, NULL,
     "a new connection's first request head must be complete within this (else 408)"},
    {"http.body_timeout", CFG_DURATION, &svc_opts.http_body_timeout_ms, "60s", 1000, 3600000, NULL,
     false, NULL,
     "a request body (up to http.max_body) must be complete within this of its head (else 408)"},
    {"shutdown.drain_timeout", CFG_DURATION, &svc_opts.drain_timeout_ms, "10s", 0, 600000, NULL,
     false, NULL, "on SIGTERM, how long in-flight requests may take to finish"},
    {"service_auth.key_file", CFG_STRING, &svc_opts.svcauth_key_file, "", 0, 0, NULL, true, NULL,
     "this service's own key (0600), which signs its calls to other services; make one with "
     "--new-service-key FILE (docs/operations.md, \"Service credentials\")"},
    {"service_auth.trust_file", CFG_STRING, &svc_opts.svcauth_trust_file, "", 0, 0, NULL, true,
     NULL, "the public keys of the services that may call this one: \"<service> <key>\" lines"},
    {"service_auth.max_skew", CFG_DURATION, &svc_opts.svcauth_max_skew_ms, "30s", 1000, 600000,
     NULL, true, NULL,
     "how far a signed internal call's time may be from this host's clock (and how long its "
     "signature is remembered against replays)"},
    {.name = "deps.down_after_failures",
     .type = CFG_INT,
     .dst = &svc_opts.deps_down_after_failures,
     .def = "3",
     .min = 1,
     .max = 1000,
     .reloadable = true,
     .help = "a dependency (PostgreSQL, Redis, the bus) is judged down, and bus consumers "
             "pause, only after this many connection-level failures (refused, reset, timed "
             "out) in a row, and deps.down_after without an answer (docs/reliability.md)"},
    {.name = "deps.down_after",
     .type = CFG_DURATION,
     .dst = &svc_opts.deps_down_after_ms,
     .def = "5s",
     .min = 0,
     .max = 600000,
     .reloadable = true,
     .help = "how long a dependency must fail without one answer, since the first failure "
             "in a row, before it is judged down (a slow answer that timed out is not an "
             "outage)"},
    {NULL},
};

const cfg_option svc_pg_table[] = {
    {"pg.dsn", CFG_STRING, &svc_opts.pg_dsn, "postgresql://tessera@127.0.0.1:5432/tessera", 0, 0,
     NULL, false, NULL, "PostgreSQL connection string (libpq URI or key=value)"},
    {"pg.pool_size", CFG_INT, &svc_opts.pg_pool_size, "4", 1, 256, NULL, false, NULL,
     "PostgreSQL connections kept open"},
    {"pg.connect_timeout", CFG_DURATION, &svc_opts.pg_connect_timeout_ms, "30s", 0, 3600000, NULL,
     false, NULL, "how long start-up retries connecting to PostgreSQL"},
    {"pg.prepare", CFG_BOOL, &svc_opts.pg_prepare, "true", 0, 0, NULL, false, NULL,
     "prepare each distinct statement once per connection (false behind a connection pooler "
     "that does not keep named prepared statements)"},
    {"pg.allow_plaintext", CFG_BOOL, &svc_opts.pg_allow_plaintext, "false", 0, 0, NULL, false, NULL,
     "allow pg.dsn to name another host without TLS (an sslmode other than require, verify-ca "
     "or verify-full); otherwise start-up refuses it (docs/operations.md, \"Several hosts: "
     "encryption\")"},
    {NULL},
};

const cfg_option svc_redis_table[] = {
    {"redis.url", CFG_STRING, &svc_opts.redis_url, "redis://127.0.0.1:6379/0", 0, 0, NULL, false,
     NULL, "Redis URL: redis://[:password@]host:port[/db] or unix:///path"},
    {"redis.timeout", CFG_DURATION, &svc_opts.redis_timeout_ms, "2s", 10, 60000, NULL, false, NULL,
     "Redis connect and command timeout"},
    {"redis.allow_plaintext", CFG_BOOL, &svc_opts.redis_allow_plaintext, "false", 0, 0, NULL, false,
     NULL,
     "allow redis.url to name another host (the client has no TLS: reach a Redis elsewhere "
     "through a local TLS tunnel on 127.0.0.1); otherwise start-up refuses it"},
    {NULL},
};

const cfg_option svc_kafka_table[] = {
    {"kafka.bootstrap", CFG_STRING, &svc_opts.kafka_bootstrap, "127.0.0.1:9092", 0, 0, NULL, false,
     "KAFKA_BOOTSTRAP", "Kafka bootstrap servers, host:port[,host:port]"},
    {"kafka.linger", CFG_DURATION, &svc_opts.kafka_linger_ms, "2ms", 0, 1000, NULL, false, NULL,
     "producer linger: how long to batch before sending"},
    {"kafka.max_attempts", CFG_INT, &svc_opts.kafka_max_attempts, "5", 1, 100, NULL, false, NULL,
     "tries of a failing event before it goes to tessera.dlq.v1"},
    {"kafka.retry_backoff", CFG_DURATION, &svc_opts.kafka_retry_backoff_ms, "200ms", 0, 60000, NULL,
     false, NULL, "wait between tries of a failing event"},
    {"kafka.fetch_wait", CFG_DURATION, &svc_opts.kafka_fetch_wait_ms, "500ms", 1, 10000, NULL,
     false, NULL,
     "longest a broker may hold a fetch with nothing new (a real broker answers as soon as a "
     "message arrives, so this costs no latency there; each idle consumer sends a fetch per "
     "broker this often; librdkafka's mock cluster waits it out, so the dev stack uses 10ms)"},
    {"kafka.control_fetch_wait", CFG_DURATION, &svc_opts.kafka_control_fetch_wait_ms, "0ms", 0,
     10000, NULL, false, NULL,
     "kafka.fetch_wait for the consumers a user waits on (session and kernel events, agent "
     "commands); 0 = kafka.fetch_wait (the dev stack uses 3ms: each hop of a create waits for it "
     "on the mock cluster)"},
    {"kafka.session_timeout", CFG_DURATION, &svc_opts.kafka_session_timeout_ms, "6s", 2000, 3600000,
     NULL, false, NULL,
     "consumer group session timeout: a member silent this long is evicted and its partitions "
     "go to the others (6s is the least a default Kafka broker accepts)"},
    {"kafka.pause_max_backoff", CFG_DURATION, &svc_opts.kafka_pause_max_backoff_ms, "5s", 100,
     600000, NULL, false, NULL,
     "while a dependency (PostgreSQL, Redis, the brokers) is down, a consumer pauses on its "
     "message and tries again, backing off from kafka.retry_backoff up to this"},
    {"kafka.message_timeout", CFG_DURATION, &svc_opts.kafka_message_timeout_ms, "0ms", 0, 86400000,
     NULL, false, NULL,
     "how long a produced event may wait for the brokers before it is given up (0: never; "
     "events wait in memory until the brokers are back)"},
    {"kafka.security_protocol", CFG_ENUM, &svc_opts.kafka_security_protocol, "plaintext", 0, 0,
     "plaintext|ssl", false, NULL,
     "ssl: TLS to every broker, its certificate checked against kafka.ssl_ca_file and the "
     "address it is reached at"},
    {"kafka.ssl_ca_file", CFG_STRING, &svc_opts.kafka_ssl_ca_file, "", 0, 0, NULL, false, NULL,
     "PEM file of the CA(s) that sign the brokers' certificates (with "
     "kafka.security_protocol=ssl; empty: the system's)"},
    {"kafka.allow_plaintext", CFG_BOOL, &svc_opts.kafka_allow_plaintext, "false", 0, 0, NULL, false,
     NULL,
     "allow kafka.bootstrap to name another host with kafka.security_protocol=plaintext; "
     "otherwise start-up refuses it"},
    {NULL},
};
