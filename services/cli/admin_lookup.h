/* admin_lookup.h: names where the admin API wants ids (`tessera admin user
 * get alice@example.com`, `--user alice`): a list query of the resource and
 * the one row whose lookup member matches. */
#ifndef TESSERA_CLI_ADMIN_LOOKUP_H
#define TESSERA_CLI_ADMIN_LOOKUP_H

#include "services/cli/admin.h"

/* The rows of a list answer: the answer when it is an array, else its
 * "items". */
json_t *admin_items(json_t *answer);

/* The id of r named by arg into *id (heap): arg itself when r has no lookup
 * or arg is a UUID, otherwise the one record whose lookup member equals arg
 * (case-insensitively). Not CLI_OK (printed) when the lookup fails or finds
 * none or several. */
cli_status admin_resolve_id(cli *c, const admin_resource *r, const char *arg, char **id);

#endif
