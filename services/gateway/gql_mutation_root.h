/* gql_mutation_root.h: the root mutation fields of Backend.AI's GraphQL
 * schema as Tessera serves it (graphql.c puts it together). */
#ifndef GATEWAY_GQL_MUTATION_ROOT_H
#define GATEWAY_GQL_MUTATION_ROOT_H

#include "gql_types.h"

extern const gql_root_field gql_mutation_fields[]; /* ends with {NULL} */

#endif
