/* tessera-vfolder: virtual folders: metadata, files, uploads and downloads.
 *
 * Wiring only: the option table (into context.h's vf_cfg), start-up
 * (volumes, routes, events, the caller cache, the trash sweeper) and
 * shutdown. Health endpoints come from libcommon/svc.c. */
#include "caller.h"
#include "context.h"
#include "events.h"
#include "files_routes.h"
#include "http_api.h"
#include "sweeper.h"
#include "trash.h"
#include "volumes.h"

#include <string.h>

extern const pg_migration vfolder_migrations[];
extern const size_t vfolder_migrations_count;

#pragma weak vf_files_options
#pragma weak vf_files_start
#pragma weak vf_files_stop

static const cfg_option vf_options[] = {
    {.name = "vfolder.volumes",
     .type = CFG_STRING,
     .dst = &vf_cfg.volumes,
     .def = "local:/var/lib/tessera/vfolder/volumes/local",
     .help = "volumes as name:path[,name:path] (any POSIX file system; created when missing)"},
    {.name = "vfolder.default_host",
     .type = CFG_STRING,
     .dst = &vf_cfg.default_host,
     .def = "local",
     .help = "volume used when a create names no host"},
    {.name = "vfolder.open_hosts",
     .type = CFG_BOOL,
     .dst = &vf_cfg.open_hosts,
     .def = "true",
     .reloadable = true,
     .help =
         "when no policy (keypair, domain, project) names any vfolder host, allow every volume"},
    {.name = "vfolder.trash_retention",
     .type = CFG_DURATION,
     .dst = &vf_cfg.trash_retention_ms,
     .def = "7d",
     .max = 31536000000.0,
     .reloadable = true,
     .help = "trashed folders older than this are purged by the sweeper"},
    {.name = "vfolder.sweep_interval",
     .type = CFG_DURATION,
     .dst = &vf_cfg.sweep_interval_ms,
     .def = "1m",
     .min = 1000,
     .max = 86400000.0,
     .reloadable = true,
     .help = "how often the sweeper looks for trashed folders to purge"},
    {.name = "auth.url",
     .type = CFG_STRING,
     .dst = &vf_cfg.auth_url,
     .def = "http://127.0.0.1:8091",
     .help = "base URL of tessera-auth (caller context, memberships, user look-up)"},
    {.name = "auth.timeout",
     .type = CFG_DURATION,
     .dst = &vf_cfg.auth_timeout_ms,
     .def = "5s",
     .min = 100,
     .max = 600000,
     .help = "time limit of a call to tessera-auth"},
    {.name = "registry.url",
     .type = CFG_STRING,
     .dst = &vf_cfg.registry_url,
     .def = "http://127.0.0.1:8092",
     .help = "base URL of tessera-registry, asked before a delete whether live sessions mount the "
             "folder (empty: not asked)"},
    {.name = "registry.timeout",
     .type = CFG_DURATION,
     .dst = &vf_cfg.registry_timeout_ms,
     .def = "5s",
     .min = 100,
     .max = 600000,
     .help = "time limit of a call to tessera-registry (past it, the delete is refused with 503)"},
    {0},
};

/* vf_options followed by the files half's options, in one table. */
static cfg_option g_options[64];

static void _append_options(const cfg_option *from, size_t *n)
{
    for (const cfg_option *o = from; o && o->name && *n + 1 < TS_ARRAY_LEN(g_options); o++)
        g_options[(*n)++] = *o;
}

static void _build_options(void)
{
    size_t n = 0;
    _append_options(vf_options, &n);
    if (&vf_files_options != NULL) _append_options(vf_files_options, &n);
    _append_options(vf_volume_options, &n);
    _append_options(vf_caller_options, &n);
    memset(&g_options[n], 0, sizeof(g_options[n]));
}

/* Purges what stayed in the trash past vfolder.trash_retention. */
static vf_sweeper g_trash = {.name = "trash",
                             .job = vf_trash_sweep,
                             .first_ms = 2000,
                             .interval_ms = &vf_cfg.sweep_interval_ms};

static bool vf_setup(svc *s, ts_err *err)
{
    if (!vf_volumes_init(vf_cfg.volumes, vf_cfg.default_host, err)) return false;
    vf_http_routes(s);
    return true;
}

static bool vf_start(svc *s, ts_err *err)
{
    vf_events_init(s);
    if (!vf_caller_start(s, err)) return false;
    if (vf_files_start && !vf_files_start(s, err)) return false;
    return vf_sweeper_start(&g_trash, s, err);
}

static void vf_stop(svc *s)
{
    vf_sweeper_stop(&g_trash);
    if (vf_files_stop) vf_files_stop(s);
    vf_caller_stop();
}

/* Who may call what (docs/internal-api.md): the transfer routes are the
 * clients' own, with the signed token request-upload/-download handed out. */
static const svcauth_rule VFOLDER_ACCESS[] = {
    {"*", "/v1/folders", SVCAUTH_GATEWAY},
    {"POST", "/v1/mounts/resolve", SVCAUTH_REGISTRY},
    {"*", "/v1/transfer", SVCAUTH_PUBLIC},
};

int main(int argc, char **argv)
{
    _build_options();
    static svc_spec spec = {
        .name = "vfolder",
        .summary = "virtual folders: metadata, files, uploads and downloads",
        .default_listen = "127.0.0.1:8095",
        .needs = SVC_NEEDS_PG | SVC_NEEDS_KAFKA,
        .pg_schema = "vfolder",
        .options = g_options,
        .routes = vf_setup,
        .start = vf_start,
        .stop = vf_stop,
        .access = VFOLDER_ACCESS,
        .n_access = TS_ARRAY_LEN(VFOLDER_ACCESS),
        .calls_services = true,
    };
    spec.migrations = vfolder_migrations;
    spec.n_migrations = vfolder_migrations_count;
    return svc_main(argc, argv, &spec);
}
