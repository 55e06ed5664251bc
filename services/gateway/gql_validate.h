/* gql_validate.h: a GraphQL operation checked against the schema before
 * anything runs, by graphql-js's rules and with its messages: known fields,
 * arguments, fragments and types; required arguments; selection sets where
 * they belong; no fragment cycle; every fragment and variable used and
 * defined; and a budget of visited selections. */
#ifndef GATEWAY_GQL_VALIDATE_H
#define GATEWAY_GQL_VALIDATE_H

#include "gql_types.h"

/* The document's operation ex->op against ex->schema (errors added to the
 * request's); true when it is valid. */
bool gqlx_validate(gql_exec *ex) TS_MUST_CHECK;

#endif
