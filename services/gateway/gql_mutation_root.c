/* gql_mutation_root.c: the mutation root of Backend.AI's GraphQL schema
 * (gql_mutation_root.h): each mutation's arguments, its result type
 * ({ok, msg} and the item made, named as the reference names them) and its
 * resolver (gql_mutation.h). */
#include "gql_mutation_root.h"

#include "gql_mutation.h"
#include "gql_schema.h"

/* ---- mutation results: {ok, msg} and the item made ------------------------- */

#define RESULT(var, tname)                                                                         \
    static const gql_object var = {                                                                \
        tname, (const gql_field_def[]){GQL_F("ok"), GQL_F("msg"), GQL_FIELDS_END}}
#define RESULT_ITEM(var, tname, key, t)                                                            \
    static const gql_object var = {                                                                \
        tname,                                                                                     \
        (const gql_field_def[]){GQL_F("ok"), GQL_F("msg"), GQL_OBJ(key, t), GQL_FIELDS_END}}

RESULT_ITEM(t_create_keypair, "CreateKeyPair", "keypair", gql_t_keypair);
RESULT(t_modify_keypair, "ModifyKeyPair");
RESULT(t_delete_keypair, "DeleteKeyPair");
RESULT_ITEM(t_create_user, "CreateUser", "user", gql_t_user);
RESULT(t_modify_user, "ModifyUser");
RESULT(t_delete_user, "DeleteUser");
RESULT_ITEM(t_create_domain, "CreateDomain", "domain", gql_t_domain);
RESULT(t_modify_domain, "ModifyDomain");
RESULT(t_delete_domain, "DeleteDomain");
RESULT(t_purge_domain, "PurgeDomain");
RESULT(t_purge_user, "PurgeUser");
RESULT(t_purge_group, "PurgeGroup");
RESULT_ITEM(t_create_group, "CreateGroup", "group", gql_t_group);
RESULT(t_modify_group, "ModifyGroup");
RESULT(t_delete_group, "DeleteGroup");
RESULT_ITEM(t_create_kp_policy, "CreateKeyPairResourcePolicy", "resource_policy",
            gql_t_keypair_policy);
RESULT(t_modify_kp_policy, "ModifyKeyPairResourcePolicy");
RESULT(t_delete_kp_policy, "DeleteKeyPairResourcePolicy");
RESULT_ITEM(t_create_user_policy, "CreateUserResourcePolicy", "resource_policy", gql_t_user_policy);
RESULT(t_modify_user_policy, "ModifyUserResourcePolicy");
RESULT(t_delete_user_policy, "DeleteUserResourcePolicy");
RESULT_ITEM(t_create_project_policy, "CreateProjectResourcePolicy", "resource_policy",
            gql_t_project_policy);
RESULT(t_modify_project_policy, "ModifyProjectResourcePolicy");
RESULT(t_delete_project_policy, "DeleteProjectResourcePolicy");
RESULT_ITEM(t_create_preset, "CreateResourcePreset", "resource_preset", gql_t_resource_preset);
RESULT(t_modify_preset, "ModifyResourcePreset");
RESULT(t_delete_preset, "DeleteResourcePreset");
RESULT_ITEM(t_create_sgroup, "CreateScalingGroup", "scaling_group", gql_t_scaling_group);
RESULT(t_modify_sgroup, "ModifyScalingGroup");
RESULT(t_delete_sgroup, "DeleteScalingGroup");
RESULT(t_assoc_domain, "AssociateScalingGroupWithDomain");
RESULT(t_dissoc_domain, "DisassociateScalingGroupWithDomain");
RESULT(t_assoc_group, "AssociateScalingGroupWithUserGroup");
RESULT(t_dissoc_group, "DisassociateScalingGroupWithUserGroup");
RESULT(t_assoc_keypair, "AssociateScalingGroupWithKeyPair");
RESULT(t_dissoc_keypair, "DisassociateScalingGroupWithKeyPair");
RESULT(t_modify_agent, "ModifyAgent");
static const gql_object t_rescan_images = {
    "RescanImages",
    (const gql_field_def[]){GQL_F("ok"), GQL_F("msg"), GQL_F("task_id"), GQL_FIELDS_END}};

/* The mutations: gql_mutation.c's resolvers with the reference's arguments. */
#define NAME_PROPS                                                                                 \
    (const gql_arg_def[])                                                                          \
    {                                                                                              \
        GQL_REQ("name", GQL_STRING), GQL_REQ("props", GQL_INPUT), GQL_ARGS_END                     \
    }
#define NAME_ONLY                                                                                  \
    (const gql_arg_def[])                                                                          \
    {                                                                                              \
        GQL_REQ("name", GQL_STRING), GQL_ARGS_END                                                  \
    }

const gql_root_field gql_mutation_fields[] = {
    {"create_keypair",
     (const gql_arg_def[]){GQL_REQ("user_id", GQL_STRING), GQL_REQ("props", GQL_INPUT),
                           GQL_ARGS_END},
     &t_create_keypair, false, gql_m_create_keypair},
    {"modify_keypair",
     (const gql_arg_def[]){GQL_REQ("access_key", GQL_STRING), GQL_REQ("props", GQL_INPUT),
                           GQL_ARGS_END},
     &t_modify_keypair, false, gql_m_modify_keypair},
    {"delete_keypair", (const gql_arg_def[]){GQL_REQ("access_key", GQL_STRING), GQL_ARGS_END},
     &t_delete_keypair, false, gql_m_delete_keypair},
    {"create_user",
     (const gql_arg_def[]){GQL_REQ("email", GQL_STRING), GQL_REQ("props", GQL_INPUT), GQL_ARGS_END},
     &t_create_user, false, gql_m_create_user},
    {"modify_user",
     (const gql_arg_def[]){GQL_REQ("email", GQL_STRING), GQL_REQ("props", GQL_INPUT), GQL_ARGS_END},
     &t_modify_user, false, gql_m_modify_user},
    {"delete_user", (const gql_arg_def[]){GQL_REQ("email", GQL_STRING), GQL_ARGS_END},
     &t_delete_user, false, gql_m_delete_user},
    {"purge_user",
     (const gql_arg_def[]){GQL_REQ("email", GQL_STRING), GQL_OPT("props", GQL_INPUT), GQL_ARGS_END},
     &t_purge_user, false, gql_m_delete_user},
    {"create_domain", NAME_PROPS, &t_create_domain, false, gql_m_create_domain},
    {"modify_domain", NAME_PROPS, &t_modify_domain, false, gql_m_modify_domain},
    {"delete_domain", NAME_ONLY, &t_delete_domain, false, gql_m_delete_domain},
    /* Backend.AI's purges erase what its deletes only deactivate; Tessera's
     * deletes already end the object (docs/api.md "GraphQL"): the same */
    {"purge_domain", NAME_ONLY, &t_purge_domain, false, gql_m_delete_domain},
    {"create_group", NAME_PROPS, &t_create_group, false, gql_m_create_group},
    {"modify_group",
     (const gql_arg_def[]){GQL_REQ("gid", GQL_UUID), GQL_REQ("props", GQL_INPUT), GQL_ARGS_END},
     &t_modify_group, false, gql_m_modify_group},
    {"delete_group", (const gql_arg_def[]){GQL_REQ("gid", GQL_UUID), GQL_ARGS_END}, &t_delete_group,
     false, gql_m_delete_group},
    {"purge_group", (const gql_arg_def[]){GQL_REQ("gid", GQL_UUID), GQL_ARGS_END}, &t_purge_group,
     false, gql_m_delete_group},
    {"create_keypair_resource_policy", NAME_PROPS, &t_create_kp_policy, false,
     gql_m_create_kp_policy},
    {"modify_keypair_resource_policy", NAME_PROPS, &t_modify_kp_policy, false,
     gql_m_modify_kp_policy},
    {"delete_keypair_resource_policy", NAME_ONLY, &t_delete_kp_policy, false,
     gql_m_delete_kp_policy},
    {"create_user_resource_policy", NAME_PROPS, &t_create_user_policy, false,
     gql_m_create_user_policy},
    {"modify_user_resource_policy", NAME_PROPS, &t_modify_user_policy, false,
     gql_m_modify_user_policy},
    {"delete_user_resource_policy", NAME_ONLY, &t_delete_user_policy, false,
     gql_m_delete_user_policy},
    {"create_project_resource_policy", NAME_PROPS, &t_create_project_policy, false,
     gql_m_create_project_policy},
    {"modify_project_resource_policy", NAME_PROPS, &t_modify_project_policy, false,
     gql_m_modify_project_policy},
    {"delete_project_resource_policy", NAME_ONLY, &t_delete_project_policy, false,
     gql_m_delete_project_policy},
    {"create_resource_preset", NAME_PROPS, &t_create_preset, false, gql_m_create_preset},
    {"modify_resource_preset", NAME_PROPS, &t_modify_preset, false, gql_m_modify_preset},
    {"delete_resource_preset", NAME_ONLY, &t_delete_preset, false, gql_m_delete_preset},
    {"create_scaling_group", NAME_PROPS, &t_create_sgroup, false, gql_m_create_scaling_group},
    {"modify_scaling_group", NAME_PROPS, &t_modify_sgroup, false, gql_m_modify_scaling_group},
    {"delete_scaling_group", NAME_ONLY, &t_delete_sgroup, false, gql_m_delete_scaling_group},
    {"associate_scaling_group_with_domain",
     (const gql_arg_def[]){GQL_REQ("domain", GQL_STRING), GQL_REQ("scaling_group", GQL_STRING),
                           GQL_ARGS_END},
     &t_assoc_domain, false, gql_m_assoc_domain},
    {"disassociate_scaling_group_with_domain",
     (const gql_arg_def[]){GQL_REQ("domain", GQL_STRING), GQL_REQ("scaling_group", GQL_STRING),
                           GQL_ARGS_END},
     &t_dissoc_domain, false, gql_m_dissoc_domain},
    {"associate_scaling_group_with_user_group",
     (const gql_arg_def[]){GQL_REQ("user_group", GQL_UUID), GQL_REQ("scaling_group", GQL_STRING),
                           GQL_ARGS_END},
     &t_assoc_group, false, gql_m_assoc_group},
    {"disassociate_scaling_group_with_user_group",
     (const gql_arg_def[]){GQL_REQ("user_group", GQL_UUID), GQL_REQ("scaling_group", GQL_STRING),
                           GQL_ARGS_END},
     &t_dissoc_group, false, gql_m_dissoc_group},
    {"associate_scaling_group_with_keypair",
     (const gql_arg_def[]){GQL_REQ("access_key", GQL_STRING), GQL_REQ("scaling_group", GQL_STRING),
                           GQL_ARGS_END},
     &t_assoc_keypair, false, gql_m_assoc_keypair},
    {"disassociate_scaling_group_with_keypair",
     (const gql_arg_def[]){GQL_REQ("access_key", GQL_STRING), GQL_REQ("scaling_group", GQL_STRING),
                           GQL_ARGS_END},
     &t_dissoc_keypair, false, gql_m_dissoc_keypair},
    {"rescan_images", (const gql_arg_def[]){GQL_OPT("registry", GQL_STRING), GQL_ARGS_END},
     &t_rescan_images, false, gql_m_rescan_images},
    {"modify_agent",
     (const gql_arg_def[]){GQL_REQ("id", GQL_STRING), GQL_REQ("props", GQL_INPUT), GQL_ARGS_END},
     &t_modify_agent, false, gql_m_modify_agent},
    {NULL, NULL, NULL, false, NULL},
};
