/* gql_shapes.h: each REST item of the services shaped into an object keyed
 * by Backend.AI's GraphQL field names (gql_schema.c's types), so that most
 * fields read their own key. What Tessera does not keep stays absent (the
 * field answers null); the hidden "_user" key carries a user id for the
 * fields that look its e-mail up. */
#ifndef GATEWAY_GQL_SHAPES_H
#define GATEWAY_GQL_SHAPES_H

#include "gql_fetch.h"

json_t *gql_shape_session(gql_exec *ex, const json_t *session);
json_t *gql_shape_session_node(gql_exec *ex, const json_t *session);
json_t *gql_shape_keypair(gql_exec *ex, const json_t *keypair);
json_t *gql_shape_user(gql_exec *ex, const json_t *user);
json_t *gql_shape_user_node(gql_exec *ex, const json_t *user);
json_t *gql_shape_group(gql_exec *ex, const json_t *project);
json_t *gql_shape_domain(gql_exec *ex, const json_t *domain);
json_t *gql_shape_image(gql_exec *ex, const json_t *image);
json_t *gql_shape_agent(gql_exec *ex, const json_t *agent);
json_t *gql_shape_scaling_group(gql_exec *ex, const json_t *resource_group);
json_t *gql_shape_keypair_policy(gql_exec *ex, const json_t *policy);
json_t *gql_shape_preset(gql_exec *ex, const json_t *preset);
json_t *gql_shape_volume(gql_exec *ex, const json_t *volume);
json_t *gql_shape_vfolder(gql_exec *ex, const json_t *folder);
/* The item as it is (the policies keep the reference's names in REST too). */
json_t *gql_shape_as_is(gql_exec *ex, const json_t *item);

#endif
