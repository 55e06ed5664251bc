/* gql_query.h: the root query fields of Backend.AI's GraphQL schema as
 * Tessera serves it (graphql.c puts it together): each reads the services
 * as the caller (gql_fetch.h) and shapes what they answer (gql_shapes.h). */
#ifndef GATEWAY_GQL_QUERY_H
#define GATEWAY_GQL_QUERY_H

#include "gql_types.h"

extern const gql_root_field gql_query_fields[]; /* ends with {NULL} */

#endif
