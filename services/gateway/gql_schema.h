/* gql_schema.h: Backend.AI's GraphQL schema as Tessera serves it (the
 * tables of gql_exec.h). Its object types and their field names are the
 * reference's (Backend.AI's manager, models/gql*); gql_query.c resolves the
 * root fields by calling the services' REST API as the caller, so a query
 * sees exactly what the caller's REST calls would: the same scoping (a user
 * its own things, a domain admin its domain, a superadmin everything).
 * docs/api.md "GraphQL" lists what is served and what differs. */
#ifndef GATEWAY_GQL_SCHEMA_H
#define GATEWAY_GQL_SCHEMA_H

#include "gateway.h"
#include "gql_exec.h"
#include "identity.h"

/* The resolvers' context: the request being answered and its caller. */
typedef struct gql_ctx {
    gateway *gw;
    http_req *req;
    const gw_identity *id;
    json_t *users; /* id -> user object, read once when a field needs it */
} gql_ctx;

extern const gql_schema gql_backendai_schema;

/* The object types (gql_schema.c), for gql_query.c's root fields. */
extern const gql_object gql_t_compute_session, gql_t_compute_session_list,
    gql_t_compute_session_connection, gql_t_keypair, gql_t_keypair_list, gql_t_user,
    gql_t_user_list, gql_t_user_connection, gql_t_image, gql_t_agent, gql_t_agent_list,
    gql_t_group, gql_t_domain, gql_t_scaling_group, gql_t_keypair_policy, gql_t_user_policy,
    gql_t_project_policy, gql_t_resource_preset, gql_t_storage_volume,
    gql_t_storage_volume_list, gql_t_vfolder, gql_t_vfolder_list;

/* Computed fields that need the caller's context (gql_query.c). */
json_t *gql_get_user_email(gql_exec *ex, const json_t *src);
json_t *gql_get_full_name(gql_exec *ex, const json_t *src);

/* The root query fields (gql_query.c). */
extern const gql_root_field gql_query_fields[];

/* The mutations' resolvers (gql_mutation.c). */
#define GQL_MUTATIONS(X)                                                                           \
    X(create_keypair) X(modify_keypair) X(delete_keypair) X(create_user) X(modify_user)           \
    X(delete_user) X(create_domain) X(modify_domain) X(delete_domain) X(create_group)             \
    X(modify_group) X(delete_group) X(create_kp_policy) X(modify_kp_policy)                       \
    X(delete_kp_policy) X(create_user_policy) X(modify_user_policy) X(delete_user_policy)         \
    X(create_project_policy) X(modify_project_policy) X(delete_project_policy)                    \
    X(create_preset) X(modify_preset) X(delete_preset) X(create_scaling_group)                    \
    X(modify_scaling_group) X(delete_scaling_group) X(assoc_domain) X(dissoc_domain)              \
    X(assoc_group) X(dissoc_group) X(assoc_keypair) X(dissoc_keypair) X(rescan_images)
#define GQL_DECLARE_MUTATION(name) json_t *gql_m_##name(gql_exec *ex, const json_t *args);
GQL_MUTATIONS(GQL_DECLARE_MUTATION)

#endif
