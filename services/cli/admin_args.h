/* admin_args.h: the flags of one `tessera admin RESOURCE VERB`, read from the
 * resource's field table: parsing and checking (usage errors exit 2), the
 * generated --help, and the JSON body or query they make. */
#ifndef TESSERA_CLI_ADMIN_ARGS_H
#define TESSERA_CLI_ADMIN_ARGS_H

#include "services/cli/admin.h"

#include <stdio.h>

#define ADMIN_MAX_FIELDS 32
#define ADMIN_MAX_POS 64

typedef struct admin_args {
    json_t *value[ADMIN_MAX_FIELDS]; /* by index into r->fields; NULL: not given */
    const char *pos[ADMIN_MAX_POS];  /* positional arguments */
    size_t npos;
    const char *limit, *offset; /* list paging, as given (checked) */
    bool help;                  /* --help: print admin_args_usage, run nothing */
} admin_args;

/* Parse argv (the words after the verb). --json sets c->json. False (a
 * usage error printed: the command ends with CLI_USAGE) on an unknown flag, a
 * bad value, a missing required flag or argument; a is then released, else
 * admin_args_free releases it. */
bool admin_args_parse(cli *c, const admin_resource *r, const admin_verb *v, int argc, char **argv,
                      admin_args *a) TS_MUST_CHECK;
void admin_args_free(admin_args *a);

/* "create NAME [OPTIONS]" (heap) and the full --help text. */
char *admin_args_synopsis(const admin_resource *r, const admin_verb *v);
void admin_args_usage(FILE *out, const admin_resource *r, const admin_verb *v);

/* The request the arguments make: *body (NULL when the verb sends none) and
 * *path (r->path with the list query). Names given where ids are wanted
 * (fields with a ref, member lists) are looked up first (admin_resolve_id:
 * its status when that fails). */
cli_status admin_args_build(cli *c, const admin_resource *r, const admin_verb *v,
                            const admin_args *a, json_t **body, char **path);

#endif
