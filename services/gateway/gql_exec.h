/* gql_exec.h: runs a GraphQL request against a schema written as the
 * tables of gql_types.h: object types whose fields are read from JSON
 * (whatever a root field's resolver fetched), and root fields with typed
 * arguments and a resolver. Schema-agnostic; Backend.AI's schema is
 * graphql.c's, of gql_schema.h's types.
 *
 * What it does, in the specification's order:
 *  - picks the operation (operationName, or the only one);
 *  - validates the whole document against the schema before anything runs:
 *    known fields and arguments, required arguments, leaf fields without and
 *    object fields with a selection set, known fragments and type conditions,
 *    no fragment cycles, every fragment and variable used and defined;
 *  - coerces the variables (declared types: the schema's scalars, lists,
 *    non-null, input objects as JSON objects; defaults);
 *  - executes: @skip / @include, aliases, fragments and inline fragments
 *    (a type condition applies when it names the object's type), __typename,
 *    lists and nulls; a resolver's error nulls its field and adds an entry
 *    to `errors` with message, locations and path.
 * Introspection (__schema, __type) is refused, as Backend.AI refuses it by
 * default. Cost is bounded: the parser's limits, GQL_MAX_ROOT_FIELDS root
 * fields (each is a resolver's calls), and GQL_MAX_RESULT_FIELDS completed
 * fields per request (fragments spread many times cannot blow up). */
#ifndef GATEWAY_GQL_EXEC_H
#define GATEWAY_GQL_EXEC_H

#include "gql_types.h"

#define GQL_MAX_RESULT_FIELDS 200000
#define GQL_MAX_ROOT_FIELDS 32

/* Run req against schema; user is the resolvers' context (gql_user). The
 * answer, a new reference: {"data": ..., "errors": [...]} as GraphQL's
 * response format (no "errors" member when there were none; "data" null
 * when the request did not validate). *valid says whether execution
 * started (false: a parse, validation or variable error). */
json_t *gql_execute(const gql_schema *schema, const gql_request *req, void *user, bool *valid);

#endif
