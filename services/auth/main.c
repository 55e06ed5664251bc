/* tessera-auth: identities, keypairs, policies and the access log.
 * Wiring only; each concern has its own file. */
#include "access_log.h"

extern const pg_migration auth_migrations[];
extern const size_t auth_migrations_count;

static bool auth_start(svc *s, ts_err *err)
{
    return access_log_start(s, err);
}

static void auth_stop(svc *s)
{
    (void)s;
    access_log_stop();
}

int main(int argc, char **argv)
{
    static svc_spec spec = {
        .name = "auth",
        .summary = "domains, projects, users, keypairs, policies and the access log",
        .default_listen = "127.0.0.1:8091",
        .needs = SVC_NEEDS_PG | SVC_NEEDS_KAFKA,
        .pg_schema = "auth",
        .start = auth_start,
        .stop = auth_stop,
    };
    spec.migrations = auth_migrations;
    spec.n_migrations = auth_migrations_count;
    return svc_main(argc, argv, &spec);
}
