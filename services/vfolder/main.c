/* tessera-vfolder: virtual folders: metadata, files, uploads and downloads.
 *
 * Wiring only: start-up, dependencies and the health endpoints come from
 * libcommon/svc.c. Its domain logic arrives with its own issue. */
#include "libcommon/svc.h"

int main(int argc, char **argv)
{
    static const svc_spec spec = {
        .name = "vfolder",
        .summary = "virtual folders: metadata, files, uploads and downloads",
        .default_listen = "127.0.0.1:8095",
        .needs = SVC_NEEDS_PG | SVC_NEEDS_KAFKA,
        .pg_schema = "vfolder",
    };
    return svc_main(argc, argv, &spec);
}
