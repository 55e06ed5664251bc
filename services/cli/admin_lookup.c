/* admin_lookup.c: a name where the admin API wants an id (see
 * admin_lookup.h). */
#include "services/cli/admin_lookup.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define LOOKUP_LIMIT "1000"

json_t *admin_items(json_t *answer)
{
    return json_is_array(answer) ? answer : json_object_get(answer, "items");
}

cli_status admin_resolve_id(cli *c, const admin_resource *r, const char *arg, char **id)
{
    *id = NULL;
    if (!r->lookup || ts_uuid_valid(arg)) {
        *id = ts_strdup(arg);
        return CLI_OK;
    }
    char *path = ts_asprintf("%s?limit=" LOOKUP_LIMIT, r->path);
    if (r->lookup_query) client_query_add(&path, r->lookup_query, arg);
    json_t *answer = NULL;
    cli_status rc = client_call(c, "GET", path, NULL, true, &answer);
    free(path);
    if (rc != CLI_OK) return rc;
    size_t i, matches = 0;
    json_t *item;
    json_array_foreach(admin_items(answer), i, item)
    {
        for (size_t k = 0; r->lookup[k]; k++) {
            const char *v = json_string_value(json_object_get(item, r->lookup[k]));
            if (!v || strcasecmp(v, arg) != 0) continue;
            if (!matches++) *id = ts_strdup(json_string_value(json_object_get(item, r->id_key)));
            break;
        }
    }
    json_decref(answer);
    if (matches == 1 && *id) return CLI_OK;
    free(*id);
    *id = NULL;
    if (matches == 0)
        fprintf(stderr, "tessera: not found: no %s '%s' (by %s)\n", r->name, arg, r->lookup[0]);
    else
        fprintf(stderr, "tessera: ambiguous: %zu %ss are named '%s'; give the id\n", matches,
                r->name, arg);
    return CLI_FAIL;
}
