/* graphql.h: Backend.AI's GraphQL endpoints, POST /admin/gql and (the
 * legacy form current Backend.AI clients still use) POST /admin/graphql,
 * body {"query", "variables"?, "operation_name"? or "operationName"?},
 * signed or through a console login (/func). Executed by gql_exec.h over
 * the schema of gql_schema.h.
 *
 * /admin/gql answers 200 with GraphQL's response format, {"data", "errors"?}.
 * /admin/graphql answers 200 with the data object itself, and any error as
 * a 400 problem `graphql-error` whose `data` holds GraphQL's error list (as
 * Backend.AI's manager does). A body that is not such a request is a 400
 * `invalid-api-params` on both. */
#ifndef GATEWAY_GRAPHQL_H
#define GATEWAY_GRAPHQL_H

#include "gateway.h"

void graphql_routes(gateway *gw);

#endif
