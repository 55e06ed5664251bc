/* gql_schema.c: Backend.AI's GraphQL object types, field by field, with the
 * reference's names (gql_schema.h). gql_query.c shapes each REST answer
 * into an object keyed by these names, so most fields read their own key;
 * JSONString fields are serialized JSON text, as the reference sends them.
 * A field the reference has but Tessera does not keep answers null. */
#include "gql_schema.h"

#include "gql_fetch.h"

#define S(n)                                                                                       \
    {                                                                                              \
        .name = n                                                                                  \
    }
#define J(n)                                                                                       \
    {                                                                                              \
        .name = n, .leaf = GQL_AS_JSONSTR                                                          \
    }
#define OBJ(n, t)                                                                                  \
    {                                                                                              \
        .name = n, .type = &(t)                                                                    \
    }
#define LIST(n, t)                                                                                 \
    {                                                                                              \
        .name = n, .type = &(t), .list = true                                                      \
    }
#define GET(n, g)                                                                                  \
    {                                                                                              \
        .name = n, .get = (g)                                                                      \
    }
#define END                                                                                        \
    {                                                                                              \
        .name = NULL                                                                               \
    }

static const gql_object t_kv = {"KVPair", (const gql_field_def[]){S("key"), S("value"), END}};
static const gql_object t_resource_limit = {
    "ResourceLimit", (const gql_field_def[]){S("key"), S("min"), S("max"), END}};
static const gql_object t_page_info = {
    "PageInfo", (const gql_field_def[]){S("hasNextPage"), S("hasPreviousPage"), S("startCursor"),
                                        S("endCursor"), END}};

/* ---- sessions ------------------------------------------------------------- */

static const gql_object t_compute_container = {"ComputeContainer",
                                               (const gql_field_def[]){S("id"),
                                                                       S("idx"),
                                                                       S("role"),
                                                                       S("hostname"),
                                                                       S("kernel_id"),
                                                                       S("cluster_idx"),
                                                                       S("local_rank"),
                                                                       S("cluster_role"),
                                                                       S("cluster_hostname"),
                                                                       S("session_id"),
                                                                       S("image"),
                                                                       S("architecture"),
                                                                       S("registry"),
                                                                       S("status"),
                                                                       S("status_info"),
                                                                       J("status_data"),
                                                                       S("created_at"),
                                                                       S("terminated_at"),
                                                                       S("starts_at"),
                                                                       S("scheduled_at"),
                                                                       J("abusing_report"),
                                                                       S("agent"),
                                                                       S("agent_addr"),
                                                                       S("container_id"),
                                                                       J("resource_opts"),
                                                                       J("occupied_slots"),
                                                                       J("live_stat"),
                                                                       J("last_stat"),
                                                                       S("preopen_ports"),
                                                                       END}};

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

static const gql_object t_compute_session_node = {"ComputeSessionNode",
                                                  (const gql_field_def[]){S("id"),
                                                                          S("row_id"),
                                                                          S("tag"),
                                                                          S("name"),
                                                                          S("type"),
                                                                          S("priority"),
                                                                          S("cluster_template"),
                                                                          S("cluster_mode"),
                                                                          S("cluster_size"),
                                                                          S("domain_name"),
                                                                          S("project_id"),
                                                                          S("user_id"),
                                                                          S("access_key"),
                                                                          S("status"),
                                                                          S("status_info"),
                                                                          J("status_data"),
                                                                          J("status_history"),
                                                                          S("created_at"),
                                                                          S("terminated_at"),
                                                                          S("starts_at"),
                                                                          S("scheduled_at"),
                                                                          S("startup_command"),
                                                                          S("result"),
                                                                          S("commit_status"),
                                                                          S("abusing_reports"),
                                                                          J("idle_checks"),
                                                                          S("agent_ids"),
                                                                          J("resource_opts"),
                                                                          S("scaling_group"),
                                                                          J("service_ports"),
                                                                          S("vfolder_mounts"),
                                                                          J("occupied_slots"),
                                                                          J("requested_slots"),
                                                                          S("image_references"),
                                                                          S("num_queries"),
                                                                          J("inference_metrics"),
                                                                          END}};

static const gql_object t_compute_session_edge = {
    "ComputeSessionEdge",
    (const gql_field_def[]){OBJ("node", t_compute_session_node), S("cursor"), END}};

const gql_object gql_t_compute_session_connection = {
    "ComputeSessionConnection",
    (const gql_field_def[]){LIST("edges", t_compute_session_edge), OBJ("pageInfo", t_page_info),
                            S("count"), END}};

/* ---- identity ------------------------------------------------------------- */

static const gql_object t_user_info = {
    "UserInfo", (const gql_field_def[]){GET("email", gql_get_user_email),
                                        GET("full_name", gql_get_full_name), END}};

const gql_object gql_t_keypair = {"KeyPair",
                                  (const gql_field_def[]){S("id"),
                                                          GET("user_id", gql_get_user_email),
                                                          GET("full_name", gql_get_full_name),
                                                          S("access_key"),
                                                          S("secret_key"),
                                                          S("is_active"),
                                                          S("is_admin"),
                                                          S("is_default"),
                                                          S("resource_policy"),
                                                          S("created_at"),
                                                          S("last_used"),
                                                          S("rate_limit"),
                                                          S("num_queries"),
                                                          S("rolling_count"),
                                                          S("user"),
                                                          S("projects"),
                                                          S("ssh_public_key"),
                                                          S("concurrency_used"),
                                                          S("concurrency_limit"),
                                                          OBJ("user_info", t_user_info),
                                                          END}};

const gql_object gql_t_keypair_list = {
    "KeyPairList", (const gql_field_def[]){LIST("items", gql_t_keypair), S("total_count"), END}};

static const gql_object t_user_group = {"UserGroup",
                                        (const gql_field_def[]){S("id"), S("name"), END}};

#define USER_FIELDS                                                                                \
    S("username"), S("email"), S("password"), S("need_password_change"), S("full_name"),           \
        S("description"), S("is_active"), S("status"), S("status_info"), S("created_at"),          \
        S("modified_at"), S("domain_name"), S("role"), S("resource_policy"),                       \
        S("allowed_client_ip"), S("totp_activated"), S("sudo_session_enabled"),                    \
        S("main_access_key"), S("container_uid"), S("container_main_gid"), S("container_gids")

const gql_object gql_t_user = {"User", (const gql_field_def[]){S("id"), S("uuid"), USER_FIELDS,
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
    S("name"), S("description"), S("is_active"), S("created_at"), S("modified_at"),                \
        J("total_resource_slots"), J("allowed_vfolder_hosts"), S("integration_id"),                \
        S("scaling_groups")

const gql_object gql_t_group = {"Group",
                                (const gql_field_def[]){S("id"), GROUPING_FIELDS, S("domain_name"),
                                                        S("resource_policy"), S("type"),
                                                        J("container_registry"), END}};

const gql_object gql_t_domain = {
    "Domain", (const gql_field_def[]){GROUPING_FIELDS, S("allowed_docker_registries"), END}};

/* ---- resources ------------------------------------------------------------ */

const gql_object gql_t_image = {"Image",
                                (const gql_field_def[]){S("id"),
                                                        S("name"),
                                                        S("namespace"),
                                                        S("base_image_name"),
                                                        S("project"),
                                                        S("humanized_name"),
                                                        S("tag"),
                                                        LIST("tags", t_kv),
                                                        S("version"),
                                                        S("registry"),
                                                        S("architecture"),
                                                        S("is_local"),
                                                        S("digest"),
                                                        LIST("labels", t_kv),
                                                        S("aliases"),
                                                        S("size_bytes"),
                                                        S("status"),
                                                        LIST("resource_limits", t_resource_limit),
                                                        S("supported_accelerators"),
                                                        S("installed"),
                                                        S("installed_agents"),
                                                        S("hash"),
                                                        END}};

const gql_object gql_t_agent = {"Agent", (const gql_field_def[]){S("id"),
                                                                 S("status"),
                                                                 S("status_changed"),
                                                                 S("region"),
                                                                 S("scaling_group"),
                                                                 S("schedulable"),
                                                                 J("available_slots"),
                                                                 J("occupied_slots"),
                                                                 S("addr"),
                                                                 S("architecture"),
                                                                 S("first_contact"),
                                                                 S("lost_at"),
                                                                 J("live_stat"),
                                                                 S("version"),
                                                                 J("compute_plugins"),
                                                                 J("hardware_metadata"),
                                                                 S("auto_terminate_abusing_kernel"),
                                                                 J("local_config"),
                                                                 S("container_count"),
                                                                 S("mem_slots"),
                                                                 S("cpu_slots"),
                                                                 S("gpu_slots"),
                                                                 S("tpu_slots"),
                                                                 S("used_mem_slots"),
                                                                 S("used_cpu_slots"),
                                                                 S("used_gpu_slots"),
                                                                 S("used_tpu_slots"),
                                                                 S("cpu_cur_pct"),
                                                                 S("mem_cur_bytes"),
                                                                 END}};

const gql_object gql_t_agent_list = {
    "AgentList", (const gql_field_def[]){LIST("items", gql_t_agent), S("total_count"), END}};

const gql_object gql_t_scaling_group = {
    "ScalingGroup",
    (const gql_field_def[]){S("name"), S("description"), S("is_active"), S("is_public"),
                            S("created_at"), S("wsproxy_addr"), S("wsproxy_api_token"), S("driver"),
                            J("driver_opts"), S("scheduler"), J("scheduler_opts"),
                            S("use_host_network"), END}};

const gql_object gql_t_keypair_policy = {
    "KeyPairResourcePolicy",
    (const gql_field_def[]){
        S("name"), S("created_at"), S("default_for_unspecified"), J("total_resource_slots"),
        S("max_session_lifetime"), S("max_concurrent_sessions"), S("max_containers_per_session"),
        S("idle_timeout"), J("allowed_vfolder_hosts"), S("max_vfolder_count"),
        S("max_vfolder_size"), S("max_quota_scope_size"), S("max_concurrent_sftp_sessions"),
        S("max_pending_session_count"), J("max_pending_session_resource_slots"), END}};

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
                            J("hardware_metadata"), J("performance_metric"), J("usage"), S("proxy"),
                            S("name"), END}};

const gql_object gql_t_storage_volume_list = {
    "StorageVolumeList",
    (const gql_field_def[]){LIST("items", gql_t_storage_volume), S("total_count"), END}};

const gql_object gql_t_vfolder = {"VirtualFolder", (const gql_field_def[]){S("id"),
                                                                           S("host"),
                                                                           S("quota_scope_id"),
                                                                           S("name"),
                                                                           S("user"),
                                                                           S("user_email"),
                                                                           S("group"),
                                                                           S("group_name"),
                                                                           S("creator"),
                                                                           S("domain_name"),
                                                                           S("unmanaged_path"),
                                                                           S("usage_mode"),
                                                                           S("permission"),
                                                                           S("ownership_type"),
                                                                           S("max_files"),
                                                                           S("max_size"),
                                                                           S("created_at"),
                                                                           S("last_used"),
                                                                           S("num_files"),
                                                                           S("cur_size"),
                                                                           S("cloneable"),
                                                                           S("status"),
                                                                           END}};

const gql_object gql_t_vfolder_list = {
    "VirtualFolderList",
    (const gql_field_def[]){LIST("items", gql_t_vfolder), S("total_count"), END}};

/* ---- inputs ----------------------------------------------------------------- */

const char *const gql_input_types[] = {"KeyPairInput",
                                       "ModifyKeyPairInput",
                                       "UserInput",
                                       "ModifyUserInput",
                                       "DomainInput",
                                       "ModifyDomainInput",
                                       "GroupInput",
                                       "ModifyGroupInput",
                                       "CreateKeyPairResourcePolicyInput",
                                       "ModifyKeyPairResourcePolicyInput",
                                       "CreateUserResourcePolicyInput",
                                       "ModifyUserResourcePolicyInput",
                                       "CreateProjectResourcePolicyInput",
                                       "ModifyProjectResourcePolicyInput",
                                       "CreateResourcePresetInput",
                                       "ModifyResourcePresetInput",
                                       "CreateScalingGroupInput",
                                       "ModifyScalingGroupInput",
                                       NULL};
