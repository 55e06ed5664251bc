/* gql_mutation.h: the resolvers of Backend.AI's GraphQL mutations
 * (gql_mutation_root.c lists them with their arguments). Each is one or a
 * few calls of the services' admin REST API as the caller, so the same
 * permission checks apply; see gql_mutation.c for how answers map. */
#ifndef GATEWAY_GQL_MUTATION_H
#define GATEWAY_GQL_MUTATION_H

#include "gql_types.h"

json_t *gql_m_create_keypair(gql_exec *ex, const json_t *args);
json_t *gql_m_modify_agent(gql_exec *ex, const json_t *args);
json_t *gql_m_modify_keypair(gql_exec *ex, const json_t *args);
json_t *gql_m_delete_keypair(gql_exec *ex, const json_t *args);
json_t *gql_m_create_user(gql_exec *ex, const json_t *args);
json_t *gql_m_modify_user(gql_exec *ex, const json_t *args);
json_t *gql_m_delete_user(gql_exec *ex, const json_t *args);
json_t *gql_m_create_domain(gql_exec *ex, const json_t *args);
json_t *gql_m_modify_domain(gql_exec *ex, const json_t *args);
json_t *gql_m_delete_domain(gql_exec *ex, const json_t *args);
json_t *gql_m_create_group(gql_exec *ex, const json_t *args);
json_t *gql_m_modify_group(gql_exec *ex, const json_t *args);
json_t *gql_m_delete_group(gql_exec *ex, const json_t *args);
json_t *gql_m_create_kp_policy(gql_exec *ex, const json_t *args);
json_t *gql_m_modify_kp_policy(gql_exec *ex, const json_t *args);
json_t *gql_m_delete_kp_policy(gql_exec *ex, const json_t *args);
json_t *gql_m_create_user_policy(gql_exec *ex, const json_t *args);
json_t *gql_m_modify_user_policy(gql_exec *ex, const json_t *args);
json_t *gql_m_delete_user_policy(gql_exec *ex, const json_t *args);
json_t *gql_m_create_project_policy(gql_exec *ex, const json_t *args);
json_t *gql_m_modify_project_policy(gql_exec *ex, const json_t *args);
json_t *gql_m_delete_project_policy(gql_exec *ex, const json_t *args);
json_t *gql_m_create_preset(gql_exec *ex, const json_t *args);
json_t *gql_m_modify_preset(gql_exec *ex, const json_t *args);
json_t *gql_m_delete_preset(gql_exec *ex, const json_t *args);
json_t *gql_m_create_scaling_group(gql_exec *ex, const json_t *args);
json_t *gql_m_modify_scaling_group(gql_exec *ex, const json_t *args);
json_t *gql_m_delete_scaling_group(gql_exec *ex, const json_t *args);
json_t *gql_m_assoc_domain(gql_exec *ex, const json_t *args);
json_t *gql_m_dissoc_domain(gql_exec *ex, const json_t *args);
json_t *gql_m_assoc_group(gql_exec *ex, const json_t *args);
json_t *gql_m_dissoc_group(gql_exec *ex, const json_t *args);
json_t *gql_m_assoc_keypair(gql_exec *ex, const json_t *args);
json_t *gql_m_dissoc_keypair(gql_exec *ex, const json_t *args);
json_t *gql_m_rescan_images(gql_exec *ex, const json_t *args);

#endif
