/* gql_schema.c: Backend.AI's GraphQL object types, field by field, with the
 * reference's names (gql_schema.h). gql_query.c shapes each REST answer
 * into an object keyed by these names, so most fields read their own key;
 * JSONString fields are serialized JSON text, as the reference sends them.
 * A field the reference has but Tessera does not keep answers null. */
#include "gql_schema.h"

#define S(n) {.name = n}
#define J(n) {.name = n, .leaf = GQL_AS_JSONSTR}
#define OBJ(n, t) {.name = n, .type = &(t)}
#define LIST(n, t) {.name = n, .type = &(t), .list = true}
#define GET(n, g) {.name = n, .get = (g)}
#define END {.name = NULL}

static const gql_object t_kv = {"KVPair", (const gql_field_def[]){S("key"), S("value"), END}};
static const gql_object t_resource_limit = {
    "ResourceLimit", (const gql_field_def[]){S("key"), S("min"), S("max"), END}};
static const gql_object t_page_info = {
    "PageInfo", (const gql_field_def[]){S("hasNextPage"), S("hasPreviousPage"),
                                        S("startCursor"), S("endCursor"), END}};

/* ---- sessions ------------------------------------------------------------- */

static const gql_object t_compute_container = {
    "ComputeContainer",
    (const gql_field_def[]){
        S("id"), S("idx"), S("role"), S("hostname"), S("kernel_id"), S("cluster_idx"),
        S("local_rank"), S("cluster_role"), S("cluster_hostname"), S("session_id"), S("image"),
        S("architecture"), S("registry"), S("status"), S("status_info"), J("status_data"),
        S("created_at"), S("terminated_at"), S("starts_at"), S("scheduled_at"),
        J("abusing_report"), S("agent"), S("agent_addr"), S("container_id"), J("resource_opts"),
        J("occupied_slots"), J("live_stat"), J("last_stat"), S("preopen_ports"), END}};

const gql_object gql_t_compute_session = {
    "ComputeSession",
    (const gql_field_def[]){
        S("id"), S("session_id"), S("main_kernel_id"), S("tag"), S("name"), S("type"),
        S("main_kernel_role"), S("priority"), S("image"), S("architecture"), S("registry"),
        S("cluster_template"), S("cluster_mode"), S("cluster_size"), S("domain_name"),
        S("group_name"), S("group_id"), GET("user_email", gql_get_user_email),
        GET("full_name", gql_get_full_name), S("user_id"), S("access_key"),
        GET("created_user_email", gql_get_user_email), S("created_user_id"), S("status"),
        S("status_info"), J("status_data"), J("status_history"), S("created_at"),
        S("terminated_at"), S("starts_at"), S("scheduled_at"), S("status_changed"),
        S("startup_command"), S("result"), S("commit_status"), S("abusing_reports"),
        J("idle_checks"), S("agent_ids"), S("agents"), J("resource_opts"), S("scaling_group"),
        J("service_ports"), S("mounts"), S("vfolder_mounts"), J("occupying_slots"),
        J("occupied_slots"), J("requested_slots"), S("num_queries"),
        LIST("containers", t_compute_container), LIST("dependencies", gql_t_compute_session),
        J("inference_metrics"),
        /* the legacy names older clients still ask for */
        S("session_name"), S("sess_id"), S("lang"), S("cpu_used"), S("mem_max_bytes"),
        S("io_read_bytes"), S("io_write_bytes"), END}};

const gql_object gql_t_compute_session_list = {
    "ComputeSessionList",
    (const gql_field_def[]){LIST("items", gql_t_compute_session), S("total_count"), END}};

static const gql_object t_compute_session_node = {
    "ComputeSessionNode",
    (const gql_field_def[]){
        S("id"), S("row_id"), S("tag"), S("name"), S("type"), S("priority"),
        S("cluster_template"), S("cluster_mode"), S("cluster_size"), S("domain_name"),
        S("project_id"), S("user_id"), S("access_key"), S("status"), S("status_info"),
        J("status_data"), J("status_history"), S("created_at"), S("terminated_at"),
        S("starts_at"), S("scheduled_at"), S("startup_command"), S("result"),
        S("commit_status"), S("abusing_reports"), J("idle_checks"), S("agent_ids"),
        J("resource_opts"), S("scaling_group"), J("service_ports"), S("vfolder_mounts"),
        J("occupied_slots"), J("requested_slots"), S("image_references"), S("num_queries"),
        J("inference_metrics"), END}};

static const gql_object t_compute_session_edge = {
    "ComputeSessionEdge",
    (const gql_field_def[]){OBJ("node", t_compute_session_node), S("cursor"), END}};

const gql_object gql_t_compute_session_connection = {
    "ComputeSessionConnection",
    (const gql_field_def[]){LIST("edges", t_compute_session_edge),
                            OBJ("pageInfo", t_page_info), S("count"), END}};

/* ---- identity ------------------------------------------------------------- */

static const gql_object t_user_info = {
    "UserInfo", (const gql_field_def[]){GET("email", gql_get_user_email),
                                        GET("full_name", gql_get_full_name), END}};

const gql_object gql_t_keypair = {
    "KeyPair",
    (const gql_field_def[]){
        S("id"), GET("user_id", gql_get_user_email), GET("full_name", gql_get_full_name),
        S("access_key"), S("secret_key"), S("is_active"), S("is_admin"), S("is_default"),
        S("resource_policy"), S("created_at"), S("last_used"), S("rate_limit"),
        S("num_queries"), S("rolling_count"), S("user"), S("projects"), S("ssh_public_key"),
        S("concurrency_used"), S("concurrency_limit"), OBJ("user_info", t_user_info), END}};

const gql_object gql_t_keypair_list = {
    "KeyPairList", (const gql_field_def[]){LIST("items", gql_t_keypair), S("total_count"), END}};

static const gql_object t_user_group = {"UserGroup",
                                        (const gql_field_def[]){S("id"), S("name"), END}};

#define USER_FIELDS                                                                                \
    S("username"), S("email"), S("need_password_change"), S("full_name"), S("description"),      \
        S("is_active"), S("status"), S("status_info"), S("created_at"), S("modified_at"),         \
        S("domain_name"), S("role"), S("resource_policy"), S("allowed_client_ip"),                \
        S("totp_activated"), S("sudo_session_enabled"), S("main_access_key"),                     \
        S("container_uid"), S("container_main_gid"), S("container_gids")

const gql_object gql_t_user = {
    "User", (const gql_field_def[]){S("id"), S("uuid"), USER_FIELDS,
                                    LIST("groups", t_user_group), END}};

const gql_object gql_t_user_list = {
    "UserList", (const gql_field_def[]){LIST("items", gql_t_user), S("total_count"), END}};

static const gql_object t_user_node = {
    "UserNode", (const gql_field_def[]){S("id"), S("row_id"), USER_FIELDS, END}};

static const gql_object t_user_edge = {
    "UserEdge", (const gql_field_def[]){OBJ("node", t_user_node), S("cursor"), END}};

const gql_object gql_t_user_connection = {
    "UserConnection", (const gql_field_def[]){LIST("edges", t_user_edge),
                                              OBJ("pageInfo", t_page_info), S("count"), END}};

#define GROUPING_FIELDS                                                                            \
    S("name"), S("description"), S("is_active"), S("created_at"), S("modified_at"),              \
        J("total_resource_slots"), J("allowed_vfolder_hosts"), S("integration_id"),               \
        S("scaling_groups")

const gql_object gql_t_group = {
    "Group", (const gql_field_def[]){S("id"), GROUPING_FIELDS, S("domain_name"),
                                     S("resource_policy"), S("type"), J("container_registry"),
                                     END}};

const gql_object gql_t_domain = {
    "Domain", (const gql_field_def[]){GROUPING_FIELDS, S("allowed_docker_registries"), END}};

/* ---- resources ------------------------------------------------------------ */

const gql_object gql_t_image = {
    "Image",
    (const gql_field_def[]){
        S("id"), S("name"), S("namespace"), S("base_image_name"), S("project"),
        S("humanized_name"), S("tag"), LIST("tags", t_kv), S("version"), S("registry"),
        S("architecture"), S("is_local"), S("digest"), LIST("labels", t_kv), S("aliases"),
        S("size_bytes"), S("status"), LIST("resource_limits", t_resource_limit),
        S("supported_accelerators"), S("installed"), S("installed_agents"), S("hash"), END}};

const gql_object gql_t_agent = {
    "Agent",
    (const gql_field_def[]){
        S("id"), S("status"), S("status_changed"), S("region"), S("scaling_group"),
        S("schedulable"), J("available_slots"), J("occupied_slots"), S("addr"),
        S("architecture"), S("first_contact"), S("lost_at"), J("live_stat"), S("version"),
        J("compute_plugins"), J("hardware_metadata"), S("auto_terminate_abusing_kernel"),
        J("local_config"), S("container_count"), S("mem_slots"), S("cpu_slots"), S("gpu_slots"),
        S("tpu_slots"), S("used_mem_slots"), S("used_cpu_slots"), S("used_gpu_slots"),
        S("used_tpu_slots"), S("cpu_cur_pct"), S("mem_cur_bytes"), END}};

const gql_object gql_t_agent_list = {
    "AgentList", (const gql_field_def[]){LIST("items", gql_t_agent), S("total_count"), END}};

const gql_object gql_t_scaling_group = {
    "ScalingGroup",
    (const gql_field_def[]){S("name"), S("description"), S("is_active"), S("is_public"),
                            S("created_at"), S("wsproxy_addr"), S("wsproxy_api_token"),
                            S("driver"), J("driver_opts"), S("scheduler"), J("scheduler_opts"),
                            S("use_host_network"), END}};

const gql_object gql_t_keypair_policy = {
    "KeyPairResourcePolicy",
    (const gql_field_def[]){
        S("name"), S("created_at"), S("default_for_unspecified"), J("total_resource_slots"),
        S("max_session_lifetime"), S("max_concurrent_sessions"),
        S("max_containers_per_session"), S("idle_timeout"), J("allowed_vfolder_hosts"),
        S("max_vfolder_count"), S("max_vfolder_size"), S("max_quota_scope_size"),
        S("max_concurrent_sftp_sessions"), S("max_pending_session_count"),
        J("max_pending_session_resource_slots"), END}};

const gql_object gql_t_user_policy = {
    "UserResourcePolicy",
    (const gql_field_def[]){S("id"), S("name"), S("created_at"), S("max_vfolder_count"),
                            S("max_quota_scope_size"), S("max_session_count_per_model_session"),
                            S("max_customized_image_count"), END}};

const gql_object gql_t_project_policy = {
    "ProjectResourcePolicy",
    (const gql_field_def[]){S("id"), S("name"), S("created_at"), S("max_vfolder_count"),
                            S("max_quota_scope_size"), S("max_network_count"), END}};

const gql_object gql_t_resource_preset = {
    "ResourcePreset", (const gql_field_def[]){S("id"), S("name"), J("resource_slots"),
                                              S("shared_memory"), S("scaling_group_name"), END}};

/* ---- storage -------------------------------------------------------------- */

const gql_object gql_t_storage_volume = {
    "StorageVolume",
    (const gql_field_def[]){S("id"), S("backend"), S("fsprefix"), S("path"), S("capabilities"),
                            J("hardware_metadata"), J("performance_metric"), J("usage"),
                            S("proxy"), S("name"), END}};

const gql_object gql_t_storage_volume_list = {
    "StorageVolumeList",
    (const gql_field_def[]){LIST("items", gql_t_storage_volume), S("total_count"), END}};

const gql_object gql_t_vfolder = {
    "VirtualFolder",
    (const gql_field_def[]){
        S("id"), S("host"), S("quota_scope_id"), S("name"), S("user"), S("user_email"),
        S("group"), S("group_name"), S("creator"), S("domain_name"), S("unmanaged_path"),
        S("usage_mode"), S("permission"), S("ownership_type"), S("max_files"), S("max_size"),
        S("created_at"), S("last_used"), S("num_files"), S("cur_size"), S("cloneable"),
        S("status"), END}};

const gql_object gql_t_vfolder_list = {
    "VirtualFolderList",
    (const gql_field_def[]){LIST("items", gql_t_vfolder), S("total_count"), END}};

/* ---- mutation results: {ok, msg} and the item made ------------------------- */

#define RESULT(var, tname)                                                                         \
    static const gql_object var = {tname, (const gql_field_def[]){S("ok"), S("msg"), END}}
#define RESULT_ITEM(var, tname, key, t)                                                            \
    static const gql_object var = {tname,                                                          \
                                   (const gql_field_def[]){S("ok"), S("msg"), OBJ(key, t), END}}

RESULT_ITEM(t_create_keypair, "CreateKeyPair", "keypair", gql_t_keypair);
RESULT(t_modify_keypair, "ModifyKeyPair");
RESULT(t_delete_keypair, "DeleteKeyPair");
RESULT_ITEM(t_create_user, "CreateUser", "user", gql_t_user);
RESULT(t_modify_user, "ModifyUser");
RESULT(t_delete_user, "DeleteUser");
RESULT_ITEM(t_create_domain, "CreateDomain", "domain", gql_t_domain);
RESULT(t_modify_domain, "ModifyDomain");
RESULT(t_delete_domain, "DeleteDomain");
RESULT_ITEM(t_create_group, "CreateGroup", "group", gql_t_group);
RESULT(t_modify_group, "ModifyGroup");
RESULT(t_delete_group, "DeleteGroup");
RESULT_ITEM(t_create_kp_policy, "CreateKeyPairResourcePolicy", "resource_policy",
            gql_t_keypair_policy);
RESULT(t_modify_kp_policy, "ModifyKeyPairResourcePolicy");
RESULT(t_delete_kp_policy, "DeleteKeyPairResourcePolicy");
RESULT_ITEM(t_create_user_policy, "CreateUserResourcePolicy", "resource_policy",
            gql_t_user_policy);
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
static const gql_object t_rescan_images = {
    "RescanImages", (const gql_field_def[]){S("ok"), S("msg"), S("task_id"), END}};

/* The mutations: gql_mutation.c's resolvers with the reference's arguments. */
#define A(n, t) {n, t, false}
#define R(n, t) {n, t, true}
#define ENDA {NULL, 0, false}
#define NAME_PROPS (const gql_arg_def[]){R("name", GQL_STRING), R("props", GQL_INPUT), ENDA}
#define NAME_ONLY (const gql_arg_def[]){R("name", GQL_STRING), ENDA}

static const gql_root_field MUTATIONS[] = {
    {"create_keypair",
     (const gql_arg_def[]){R("user_id", GQL_STRING), R("props", GQL_INPUT), ENDA},
     &t_create_keypair, false, gql_m_create_keypair},
    {"modify_keypair",
     (const gql_arg_def[]){R("access_key", GQL_STRING), R("props", GQL_INPUT), ENDA},
     &t_modify_keypair, false, gql_m_modify_keypair},
    {"delete_keypair", (const gql_arg_def[]){R("access_key", GQL_STRING), ENDA},
     &t_delete_keypair, false, gql_m_delete_keypair},
    {"create_user", (const gql_arg_def[]){R("email", GQL_STRING), R("props", GQL_INPUT), ENDA},
     &t_create_user, false, gql_m_create_user},
    {"modify_user", (const gql_arg_def[]){R("email", GQL_STRING), R("props", GQL_INPUT), ENDA},
     &t_modify_user, false, gql_m_modify_user},
    {"delete_user", (const gql_arg_def[]){R("email", GQL_STRING), ENDA}, &t_delete_user, false,
     gql_m_delete_user},
    {"create_domain", NAME_PROPS, &t_create_domain, false, gql_m_create_domain},
    {"modify_domain", NAME_PROPS, &t_modify_domain, false, gql_m_modify_domain},
    {"delete_domain", NAME_ONLY, &t_delete_domain, false, gql_m_delete_domain},
    {"create_group", NAME_PROPS, &t_create_group, false, gql_m_create_group},
    {"modify_group", (const gql_arg_def[]){R("gid", GQL_UUID), R("props", GQL_INPUT), ENDA},
     &t_modify_group, false, gql_m_modify_group},
    {"delete_group", (const gql_arg_def[]){R("gid", GQL_UUID), ENDA}, &t_delete_group, false,
     gql_m_delete_group},
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
     (const gql_arg_def[]){R("domain", GQL_STRING), R("scaling_group", GQL_STRING), ENDA},
     &t_assoc_domain, false, gql_m_assoc_domain},
    {"disassociate_scaling_group_with_domain",
     (const gql_arg_def[]){R("domain", GQL_STRING), R("scaling_group", GQL_STRING), ENDA},
     &t_dissoc_domain, false, gql_m_dissoc_domain},
    {"associate_scaling_group_with_user_group",
     (const gql_arg_def[]){R("user_group", GQL_UUID), R("scaling_group", GQL_STRING), ENDA},
     &t_assoc_group, false, gql_m_assoc_group},
    {"disassociate_scaling_group_with_user_group",
     (const gql_arg_def[]){R("user_group", GQL_UUID), R("scaling_group", GQL_STRING), ENDA},
     &t_dissoc_group, false, gql_m_dissoc_group},
    {"associate_scaling_group_with_keypair",
     (const gql_arg_def[]){R("access_key", GQL_STRING), R("scaling_group", GQL_STRING), ENDA},
     &t_assoc_keypair, false, gql_m_assoc_keypair},
    {"disassociate_scaling_group_with_keypair",
     (const gql_arg_def[]){R("access_key", GQL_STRING), R("scaling_group", GQL_STRING), ENDA},
     &t_dissoc_keypair, false, gql_m_dissoc_keypair},
    {"rescan_images", (const gql_arg_def[]){A("registry", GQL_STRING), ENDA}, &t_rescan_images,
     false, gql_m_rescan_images},
    {NULL, NULL, NULL, false, NULL},
};

/* ---- the schema ----------------------------------------------------------- */

static const gql_object *const TYPES[] = {
    &t_kv, &t_resource_limit, &t_page_info, &t_compute_container, &gql_t_compute_session,
    &gql_t_compute_session_list, &t_compute_session_node, &t_compute_session_edge,
    &gql_t_compute_session_connection, &t_user_info, &gql_t_keypair, &gql_t_keypair_list,
    &t_user_group, &gql_t_user, &gql_t_user_list, &t_user_node, &t_user_edge,
    &gql_t_user_connection, &gql_t_group, &gql_t_domain, &gql_t_image, &gql_t_agent,
    &gql_t_agent_list, &gql_t_scaling_group, &gql_t_keypair_policy, &gql_t_user_policy,
    &gql_t_project_policy, &gql_t_resource_preset, &gql_t_storage_volume,
    &gql_t_storage_volume_list, &gql_t_vfolder, &gql_t_vfolder_list, &t_create_keypair,
    &t_modify_keypair, &t_delete_keypair, &t_create_user, &t_modify_user, &t_delete_user,
    &t_create_domain, &t_modify_domain, &t_delete_domain, &t_create_group, &t_modify_group,
    &t_delete_group, &t_create_kp_policy, &t_modify_kp_policy, &t_delete_kp_policy,
    &t_create_user_policy, &t_modify_user_policy, &t_delete_user_policy,
    &t_create_project_policy, &t_modify_project_policy, &t_delete_project_policy,
    &t_create_preset, &t_modify_preset, &t_delete_preset, &t_create_sgroup, &t_modify_sgroup,
    &t_delete_sgroup, &t_assoc_domain, &t_dissoc_domain, &t_assoc_group, &t_dissoc_group,
    &t_assoc_keypair, &t_dissoc_keypair, &t_rescan_images, NULL};

static const char *const INPUT_TYPES[] = {
    "KeyPairInput", "ModifyKeyPairInput", "UserInput", "ModifyUserInput", "DomainInput",
    "ModifyDomainInput", "GroupInput", "ModifyGroupInput", "CreateKeyPairResourcePolicyInput",
    "ModifyKeyPairResourcePolicyInput", "CreateUserResourcePolicyInput",
    "ModifyUserResourcePolicyInput", "CreateProjectResourcePolicyInput",
    "ModifyProjectResourcePolicyInput", "CreateResourcePresetInput",
    "ModifyResourcePresetInput", "CreateScalingGroupInput", "ModifyScalingGroupInput", NULL};

const gql_schema gql_backendai_schema = {
    .query = gql_query_fields,
    .mutation = MUTATIONS,
    .types = TYPES,
    .input_types = INPUT_TYPES,
};
