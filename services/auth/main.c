/* tessera-auth: identities, keypairs, policies and the access log.
 * Wiring only; each concern has its own file. */
#include "access_log.h"
#include "bootstrap.h"
#include "events.h"
#include "http_api.h"
#include "login.h"
#include "sso_login.h"
#include "password.h"

#include <sodium.h>

extern const pg_migration auth_migrations[];
extern const size_t auth_migrations_count;

static char *admin_email, *admin_username, *admin_password, *credentials_file;
static int64_t lockout_failures, lockout_duration_ms, hash_concurrency;
static int64_t access_log_batch_size, access_log_batch_wait_ms;
static char *sso_secret_file, *sso_issuer, *sso_audience;
static int64_t sso_max_age_ms;

static const cfg_option auth_options[] = {
    {.name = "bootstrap.admin_email",
     .type = CFG_STRING,
     .dst = &admin_email,
     .def = "admin@tessera.local",
     .help = "email of the superadmin created on the first start"},
    {.name = "bootstrap.admin_username",
     .type = CFG_STRING,
     .dst = &admin_username,
     .def = "admin",
     .help = "user name of the superadmin created on the first start"},
    {.name = "bootstrap.admin_password",
     .type = CFG_STRING,
     .dst = &admin_password,
     .help = "password of that superadmin (default: 20 random characters)"},
    {.name = "bootstrap.credentials_file",
     .type = CFG_STRING,
     .dst = &credentials_file,
     .help =
         "where the first start writes the superadmin's keys and password (0600; none if unset)"},
    {.name = "auth.lockout_failures",
     .type = CFG_INT,
     .dst = &lockout_failures,
     .def = "5",
     .min = 1,
     .max = 1000,
     .help = "consecutive failed logins that lock a user"},
    {.name = "auth.lockout_duration",
     .type = CFG_DURATION,
     .dst = &lockout_duration_ms,
     .def = "5m",
     .min = 1000,
     .max = 86400000.0,
     .help = "how long a locked user cannot log in"},
    {.name = "auth.password_hash_concurrency",
     .type = CFG_INT,
     .dst = &hash_concurrency,
     .def = "2",
     .min = 1,
     .max = 64,
     .help = "argon2id hashes computed at once (each takes ~64 MiB and ~0.1 s)"},
    {.name = "auth.sso_secret_file",
     .type = CFG_STRING,
     .dst = &sso_secret_file,
     .def = "",
     .help = "single sign-on (POST /server/token-login): a file holding the HS256 secret shared "
             "with the token issuer (32 bytes or more); empty: off"},
    {.name = "auth.sso_issuer",
     .type = CFG_STRING,
     .dst = &sso_issuer,
     .def = "",
     .help = "single sign-on: the iss a token must have (empty: not checked)"},
    {.name = "auth.sso_audience",
     .type = CFG_STRING,
     .dst = &sso_audience,
     .def = "",
     .help = "single sign-on: the aud a token must name (empty: not checked)"},
    {.name = "auth.sso_max_age",
     .type = CFG_DURATION,
     .dst = &sso_max_age_ms,
     .def = "5m",
     .min = 1000,
     .max = 86400000.0,
     .help = "single sign-on: the longest a token may live (exp - iat)"},
    {.name = "access_log.batch_size",
     .type = CFG_INT,
     .dst = &access_log_batch_size,
     .def = "64",
     .min = 1,
     .max = ACCESS_LOG_BATCH_MAX,
     .help = "most tessera.audit.v1 messages (ApiAccess or ApiAccessBatch) stored together"},
    {.name = "access_log.batch_wait",
     .type = CFG_DURATION,
     .dst = &access_log_batch_wait_ms,
     .def = "5ms",
     .max = 10000,
     .help = "how long a batch of tessera.audit.v1 messages gathers after its first one"},
    {0},
};

static bool auth_setup(svc *s, ts_err *err)
{
    (void)err;
    if (sodium_init() < 0) {
        ts_err_set(err, "libsodium failed to initialize");
        return false;
    }
    login_opts lo = {.lockout_failures = (int)lockout_failures, .lockout_ms = lockout_duration_ms};
    login_configure(&lo);
    sso_config sc = {sso_secret_file, sso_issuer, sso_audience, sso_max_age_ms};
    if (!sso_login_configure(&sc, err)) return false;
    password_configure((int)hash_concurrency);
    auth_routes(s);
    return true;
}

static bool auth_start(svc *s, ts_err *err)
{
    events_init(s);
    bootstrap_opts bo = {.admin_email = admin_email,
                         .admin_username = admin_username,
                         .admin_password = admin_password,
                         .credentials_file = credentials_file};
    if (!bootstrap_run(s, &bo, err)) {
        ts_err_prefix(err, "bootstrap");
        return false;
    }
    access_log_opts ao = {.batch_size = (int)access_log_batch_size,
                          .batch_wait_ms = (int)access_log_batch_wait_ms};
    return access_log_start(s, &ao, err);
}

static void auth_stop(svc *s)
{
    (void)s;
    access_log_stop();
}

/* Who may call what (docs/internal-api.md): secret keys only to the gateway. */
static const svcauth_rule AUTH_ACCESS[] = {
    {"GET", "/v1/credentials", SVCAUTH_GATEWAY},
    {"GET", "/v1/session-context", SVCAUTH_REGISTRY | SVCAUTH_VFOLDER},
    {"GET", "/v1/user-lookup", SVCAUTH_VFOLDER},
    {"POST", "/v1/authorize", SVCAUTH_GATEWAY},
    {"GET", "/v1/role", SVCAUTH_GATEWAY},
    {"POST", "/v1/update-password", SVCAUTH_GATEWAY},
    {"*", "/v1/admin", SVCAUTH_GATEWAY},
    {"*", "/v1/auth", SVCAUTH_GATEWAY},        /* the caller's account, SSH keypair */
    {"*", "/v1/user-config", SVCAUTH_GATEWAY}, /* bootstrap script, dotfiles */
    {"GET", "/v1/manager/announcement", SVCAUTH_GATEWAY},
    {"POST", "/v1/manager/announcement", SVCAUTH_GATEWAY},
};

int main(int argc, char **argv)
{
    static svc_spec spec = {
        .name = "auth",
        .summary = "domains, projects, users, keypairs, policies and the access log",
        .default_listen = "127.0.0.1:8091",
        .needs = SVC_NEEDS_PG | SVC_NEEDS_KAFKA,
        .pg_schema = "auth",
        .options = auth_options,
        .routes = auth_setup,
        .start = auth_start,
        .stop = auth_stop,
        .access = AUTH_ACCESS,
        .n_access = TS_ARRAY_LEN(AUTH_ACCESS),
    };
    spec.migrations = auth_migrations;
    spec.n_migrations = auth_migrations_count;
    return svc_main(argc, argv, &spec);
}
