/* gql_schema.h: the object types of Backend.AI's GraphQL schema as Tessera
 * serves it (the tables of gql_types.h), with the reference's type and
 * field names (Backend.AI's manager, models/gql*). The roots are
 * gql_query.h's and gql_mutation_root.h's; their resolvers call the
 * services' REST API as the caller, so a query sees exactly what the
 * caller's REST calls would: the same scoping (a user its own things, a
 * domain admin its domain, a superadmin everything). docs/api.md "GraphQL"
 * lists what is served and what differs. */
#ifndef GATEWAY_GQL_SCHEMA_H
#define GATEWAY_GQL_SCHEMA_H

#include "gql_types.h"

/* The object types, for the root fields (gql_query.c, gql_mutation_root.c). */
extern const gql_object gql_t_compute_session, gql_t_compute_session_list,
    gql_t_compute_session_connection, gql_t_keypair, gql_t_keypair_list, gql_t_user,
    gql_t_user_list, gql_t_user_connection, gql_t_image, gql_t_agent, gql_t_agent_list, gql_t_group,
    gql_t_domain, gql_t_scaling_group, gql_t_keypair_policy, gql_t_user_policy,
    gql_t_project_policy, gql_t_resource_preset, gql_t_storage_volume, gql_t_storage_volume_list,
    gql_t_vfolder, gql_t_vfolder_list, gql_t_atomic_permissions;

/* The names of the input object types (variables may be declared of them). */
extern const char *const gql_input_types[];

#endif
