/* gql_schema.c: Backend.AI's GraphQL object types, field by field, with the
 * reference's names (gql_schema.h). gql_query.c shapes each REST answer
 * into an object keyed by these names, so most fields read their own key;
 * JSONString fields are serialized JSON text, as the reference sends them.
 * A field the reference has but Tessera does not keep answers null. */
#include "gql_schema.h"

#include "gql_fetch.h"

static const gql_object t_kv = {
    "KVPair", (const gql_field_def[]){GQL_F("key"), GQL_F("value"), GQL_FIELDS_END}};
static const gql_object t_resource_limit = {
    "ResourceLimit",
    (const gql_field_def[]){GQL_F("key"), GQL_F("min"), GQL_F("max"), GQL_FIELDS_END}};
static const gql_object t_page_info = {
    "PageInfo", (const gql_field_def[]){GQL_F("hasNextPage"), GQL_F("hasPreviousPage"),
                                        GQL_F("startCursor"), GQL_F("endCursor"), GQL_FIELDS_END}};

/* ---- sessions ------------------------------------------------------------- */

static const gql_object t_compute_container = {"ComputeContainer",
                                               (const gql_field_def[]){GQL_F("id"),
                                                                       GQL_F("idx"),
                                                                       GQL_F("role"),
                                                                       GQL_F("hostname"),
                                                                       GQL_F("kernel_id"),
                                                                       GQL_F("cluster_idx"),
                                                                       GQL_F("local_rank"),
                                                                       GQL_F("cluster_role"),
                                                                       GQL_F("cluster_hostname"),
                                                                       GQL_F("session_id"),
                                                                       GQL_F("image"),
                                                                       GQL_F("architecture"),
                                                                       GQL_F("registry"),
                                                                       GQL_F("status"),
                                                                       GQL_F("status_info"),
                                                                       GQL_J("status_data"),
                                                                       GQL_F("status_changed"),
                                                                       GQL_F("created_at"),
                                                                       GQL_F("terminated_at"),
                                                                       GQL_F("starts_at"),
                                                                       GQL_F("scheduled_at"),
                                                                       GQL_J("abusing_report"),
                                                                       GQL_F("agent"),
                                                                       GQL_F("agent_addr"),
                                                                       GQL_F("container_id"),
                                                                       GQL_J("resource_opts"),
                                                                       GQL_J("occupied_slots"),
                                                                       GQL_J("live_stat"),
                                                                       GQL_J("last_stat"),
                                                                       GQL_F("preopen_ports"),
                                                                       GQL_FIELDS_END}};

const gql_object gql_t_compute_session = {
    "ComputeSession",
    (const gql_field_def[]){
        GQL_F("id"), GQL_F("session_id"), GQL_F("main_kernel_id"), GQL_F("tag"), GQL_F("name"),
        GQL_F("type"), GQL_F("main_kernel_role"), GQL_F("priority"), GQL_F("image"),
        GQL_F("architecture"), GQL_F("registry"), GQL_F("cluster_template"), GQL_F("cluster_mode"),
        GQL_F("cluster_size"), GQL_F("domain_name"), GQL_F("group_name"), GQL_F("group_id"),
        GQL_GET("user_email", gql_get_user_email), GQL_GET("full_name", gql_get_full_name),
        GQL_F("user_id"), GQL_F("access_key"), GQL_GET("created_user_email", gql_get_user_email),
        GQL_F("created_user_id"), GQL_F("status"), GQL_F("status_info"), GQL_J("status_data"),
        GQL_J("status_history"), GQL_F("created_at"), GQL_F("terminated_at"), GQL_F("starts_at"),
        GQL_F("scheduled_at"), GQL_F("status_changed"), GQL_F("startup_command"), GQL_F("result"),
        GQL_F("commit_status"), GQL_F("abusing_reports"), GQL_J("idle_checks"), GQL_F("agent_ids"),
        GQL_F("agents"), GQL_J("resource_opts"), GQL_F("scaling_group"), GQL_J("service_ports"),
        GQL_F("mounts"), GQL_F("vfolder_mounts"), GQL_J("occupying_slots"), GQL_J("occupied_slots"),
        GQL_J("requested_slots"), GQL_F("num_queries"), GQL_LIST("containers", t_compute_container),
        GQL_LIST("dependencies", gql_t_compute_session), GQL_J("inference_metrics"),
        /* the legacy names older clients still ask for */
        GQL_F("session_name"), GQL_F("sess_id"), GQL_F("lang"), GQL_F("cpu_used"),
        GQL_F("mem_max_bytes"), GQL_F("io_read_bytes"), GQL_F("io_write_bytes"), GQL_FIELDS_END}};

const gql_object gql_t_compute_session_list = {
    "ComputeSessionList", (const gql_field_def[]){GQL_LIST("items", gql_t_compute_session),
                                                  GQL_F("total_count"), GQL_FIELDS_END}};

static const gql_object t_compute_session_node = {
    "ComputeSessionNode", (const gql_field_def[]){GQL_F("id"),
                                                  GQL_F("row_id"),
                                                  GQL_F("tag"),
                                                  GQL_F("name"),
                                                  GQL_F("type"),
                                                  GQL_F("priority"),
                                                  GQL_F("cluster_template"),
                                                  GQL_F("cluster_mode"),
                                                  GQL_F("cluster_size"),
                                                  GQL_F("domain_name"),
                                                  GQL_F("project_id"),
                                                  GQL_F("user_id"),
                                                  GQL_F("access_key"),
                                                  GQL_F("status"),
                                                  GQL_F("status_info"),
                                                  GQL_J("status_data"),
                                                  GQL_J("status_history"),
                                                  GQL_F("created_at"),
                                                  GQL_F("terminated_at"),
                                                  GQL_F("starts_at"),
                                                  GQL_F("scheduled_at"),
                                                  GQL_F("startup_command"),
                                                  GQL_F("result"),
                                                  GQL_F("commit_status"),
                                                  GQL_F("abusing_reports"),
                                                  GQL_J("idle_checks"),
                                                  GQL_F("agent_ids"),
                                                  GQL_J("resource_opts"),
                                                  GQL_F("scaling_group"),
                                                  GQL_J("service_ports"),
                                                  GQL_F("vfolder_mounts"),
                                                  GQL_J("occupied_slots"),
                                                  GQL_J("requested_slots"),
                                                  GQL_F("image_references"),
                                                  GQL_F("num_queries"),
                                                  GQL_J("inference_metrics"),
                                                  GQL_FIELDS_END}};

static const gql_object t_compute_session_edge = {
    "ComputeSessionEdge", (const gql_field_def[]){GQL_OBJ("node", t_compute_session_node),
                                                  GQL_F("cursor"), GQL_FIELDS_END}};

const gql_object gql_t_compute_session_connection = {
    "ComputeSessionConnection",
    (const gql_field_def[]){GQL_LIST("edges", t_compute_session_edge),
                            GQL_OBJ("pageInfo", t_page_info), GQL_F("count"), GQL_FIELDS_END}};

/* ---- identity ------------------------------------------------------------- */

static const gql_object t_user_info = {
    "UserInfo", (const gql_field_def[]){GQL_GET("email", gql_get_user_email),
                                        GQL_GET("full_name", gql_get_full_name), GQL_FIELDS_END}};

const gql_object gql_t_keypair = {"KeyPair",
                                  (const gql_field_def[]){GQL_F("id"),
                                                          GQL_GET("user_id", gql_get_user_email),
                                                          GQL_GET("full_name", gql_get_full_name),
                                                          GQL_F("access_key"),
                                                          GQL_F("secret_key"),
                                                          GQL_F("is_active"),
                                                          GQL_F("is_admin"),
                                                          GQL_F("is_default"),
                                                          GQL_F("resource_policy"),
                                                          GQL_F("created_at"),
                                                          GQL_F("last_used"),
                                                          GQL_F("rate_limit"),
                                                          GQL_F("num_queries"),
                                                          GQL_F("rolling_count"),
                                                          GQL_F("user"),
                                                          GQL_F("projects"),
                                                          GQL_F("ssh_public_key"),
                                                          GQL_F("concurrency_used"),
                                                          GQL_F("concurrency_limit"),
                                                          GQL_OBJ("user_info", t_user_info),
                                                          GQL_FIELDS_END}};

const gql_object gql_t_keypair_list = {
    "KeyPairList", (const gql_field_def[]){GQL_LIST("items", gql_t_keypair), GQL_F("total_count"),
                                           GQL_FIELDS_END}};

static const gql_object t_user_group = {
    "UserGroup", (const gql_field_def[]){GQL_F("id"), GQL_F("name"), GQL_FIELDS_END}};

#define USER_FIELDS                                                                                \
    GQL_F("username"), GQL_F("email"), GQL_F("password"), GQL_F("need_password_change"),           \
        GQL_F("full_name"), GQL_F("description"), GQL_F("is_active"), GQL_F("status"),             \
        GQL_F("status_info"), GQL_F("created_at"), GQL_F("modified_at"), GQL_F("domain_name"),     \
        GQL_F("role"), GQL_F("resource_policy"), GQL_F("allowed_client_ip"),                       \
        GQL_F("totp_activated"), GQL_F("sudo_session_enabled"), GQL_F("main_access_key"),          \
        GQL_F("container_uid"), GQL_F("container_main_gid"), GQL_F("container_gids")

const gql_object gql_t_user = {
    "User", (const gql_field_def[]){GQL_F("id"), GQL_F("uuid"), USER_FIELDS,
                                    GQL_LIST("groups", t_user_group), GQL_FIELDS_END}};

const gql_object gql_t_user_list = {
    "UserList",
    (const gql_field_def[]){GQL_LIST("items", gql_t_user), GQL_F("total_count"), GQL_FIELDS_END}};

static const gql_object t_user_node = {
    "UserNode", (const gql_field_def[]){GQL_F("id"), GQL_F("row_id"), USER_FIELDS, GQL_FIELDS_END}};

static const gql_object t_user_edge = {
    "UserEdge",
    (const gql_field_def[]){GQL_OBJ("node", t_user_node), GQL_F("cursor"), GQL_FIELDS_END}};

const gql_object gql_t_user_connection = {"UserConnection",
                                          (const gql_field_def[]){GQL_LIST("edges", t_user_edge),
                                                                  GQL_OBJ("pageInfo", t_page_info),
                                                                  GQL_F("count"), GQL_FIELDS_END}};

#define GROUPING_FIELDS                                                                            \
    GQL_F("name"), GQL_F("description"), GQL_F("is_active"), GQL_F("created_at"),                  \
        GQL_F("modified_at"), GQL_J("total_resource_slots"), GQL_J("allowed_vfolder_hosts"),       \
        GQL_F("integration_id"), GQL_F("scaling_groups"), GQL_F("idle_timeout")

const gql_object gql_t_group = {
    "Group", (const gql_field_def[]){GQL_F("id"), GROUPING_FIELDS, GQL_F("domain_name"),
                                     GQL_F("resource_policy"), GQL_F("type"),
                                     GQL_J("container_registry"), GQL_FIELDS_END}};

const gql_object gql_t_domain = {
    "Domain",
    (const gql_field_def[]){GROUPING_FIELDS, GQL_F("allowed_docker_registries"), GQL_FIELDS_END}};

/* ---- resources ------------------------------------------------------------ */

const gql_object gql_t_image = {
    "Image", (const gql_field_def[]){GQL_F("id"),
                                     GQL_F("name"),
                                     GQL_F("namespace"),
                                     GQL_F("base_image_name"),
                                     GQL_F("project"),
                                     GQL_F("humanized_name"),
                                     GQL_F("tag"),
                                     GQL_LIST("tags", t_kv),
                                     GQL_F("version"),
                                     GQL_F("registry"),
                                     GQL_F("architecture"),
                                     GQL_F("is_local"),
                                     GQL_F("digest"),
                                     GQL_LIST("labels", t_kv),
                                     GQL_F("aliases"),
                                     GQL_F("size_bytes"),
                                     GQL_F("status"),
                                     GQL_LIST("resource_limits", t_resource_limit),
                                     GQL_F("supported_accelerators"),
                                     GQL_F("installed"),
                                     GQL_F("installed_agents"),
                                     GQL_F("hash"),
                                     GQL_FIELDS_END}};

const gql_object gql_t_agent = {"Agent",
                                (const gql_field_def[]){GQL_F("id"),
                                                        GQL_F("status"),
                                                        GQL_F("status_changed"),
                                                        GQL_F("region"),
                                                        GQL_F("scaling_group"),
                                                        GQL_F("schedulable"),
                                                        GQL_J("available_slots"),
                                                        GQL_J("occupied_slots"),
                                                        GQL_F("addr"),
                                                        GQL_F("architecture"),
                                                        GQL_F("first_contact"),
                                                        GQL_F("lost_at"),
                                                        GQL_J("live_stat"),
                                                        GQL_F("version"),
                                                        GQL_J("compute_plugins"),
                                                        GQL_J("hardware_metadata"),
                                                        GQL_F("auto_terminate_abusing_kernel"),
                                                        GQL_J("local_config"),
                                                        GQL_F("container_count"),
                                                        GQL_F("mem_slots"),
                                                        GQL_F("cpu_slots"),
                                                        GQL_F("gpu_slots"),
                                                        GQL_F("tpu_slots"),
                                                        GQL_F("used_mem_slots"),
                                                        GQL_F("used_cpu_slots"),
                                                        GQL_F("used_gpu_slots"),
                                                        GQL_F("used_tpu_slots"),
                                                        GQL_F("cpu_cur_pct"),
                                                        GQL_F("mem_cur_bytes"),
                                                        GQL_FIELDS_END}};

const gql_object gql_t_agent_list = {
    "AgentList",
    (const gql_field_def[]){GQL_LIST("items", gql_t_agent), GQL_F("total_count"), GQL_FIELDS_END}};

const gql_object gql_t_scaling_group = {
    "ScalingGroup", (const gql_field_def[]){
                        GQL_F("name"), GQL_F("description"), GQL_F("is_active"), GQL_F("is_public"),
                        GQL_F("created_at"), GQL_F("wsproxy_addr"), GQL_F("wsproxy_api_token"),
                        GQL_F("driver"), GQL_J("driver_opts"), GQL_F("scheduler"),
                        GQL_J("scheduler_opts"), GQL_F("use_host_network"), GQL_FIELDS_END}};

const gql_object gql_t_keypair_policy = {
    "KeyPairResourcePolicy",
    (const gql_field_def[]){
        GQL_F("name"), GQL_F("created_at"), GQL_F("default_for_unspecified"),
        GQL_J("total_resource_slots"), GQL_F("max_session_lifetime"),
        GQL_F("max_concurrent_sessions"), GQL_F("max_containers_per_session"),
        GQL_F("idle_timeout"), GQL_J("allowed_vfolder_hosts"), GQL_F("max_vfolder_count"),
        GQL_F("max_vfolder_size"), GQL_F("max_quota_scope_size"),
        GQL_F("max_concurrent_sftp_sessions"), GQL_F("max_pending_session_count"),
        GQL_J("max_pending_session_resource_slots"), GQL_F("max_rootfs_size"), GQL_FIELDS_END}};

const gql_object gql_t_user_policy = {
    "UserResourcePolicy",
    (const gql_field_def[]){GQL_F("id"), GQL_F("name"), GQL_F("created_at"),
                            GQL_F("max_vfolder_count"), GQL_F("max_quota_scope_size"),
                            GQL_F("max_session_count_per_model_session"),
                            GQL_F("max_customized_image_count"), GQL_FIELDS_END}};

const gql_object gql_t_project_policy = {
    "ProjectResourcePolicy",
    (const gql_field_def[]){GQL_F("id"), GQL_F("name"), GQL_F("created_at"),
                            GQL_F("max_vfolder_count"), GQL_F("max_quota_scope_size"),
                            GQL_F("max_network_count"), GQL_FIELDS_END}};

const gql_object gql_t_resource_preset = {
    "ResourcePreset",
    (const gql_field_def[]){GQL_F("id"), GQL_F("name"), GQL_J("resource_slots"),
                            GQL_F("shared_memory"), GQL_F("scaling_group_name"), GQL_FIELDS_END}};

/* ---- storage -------------------------------------------------------------- */

const gql_object gql_t_storage_volume = {
    "StorageVolume",
    (const gql_field_def[]){GQL_F("id"), GQL_F("backend"), GQL_F("fsprefix"), GQL_F("path"),
                            GQL_F("capabilities"), GQL_J("hardware_metadata"),
                            GQL_J("performance_metric"), GQL_J("usage"), GQL_F("proxy"),
                            GQL_F("name"), GQL_FIELDS_END}};

const gql_object gql_t_storage_volume_list = {
    "StorageVolumeList", (const gql_field_def[]){GQL_LIST("items", gql_t_storage_volume),
                                                 GQL_F("total_count"), GQL_FIELDS_END}};

const gql_object gql_t_atomic_permissions = {
    "PredefinedAtomicPermission",
    (const gql_field_def[]){GQL_F("vfolder_host_permission_list"), GQL_FIELDS_END}};

const gql_object gql_t_vfolder = {
    "VirtualFolder",
    (const gql_field_def[]){
        GQL_F("id"),         GQL_F("host"),           GQL_F("quota_scope_id"), GQL_F("name"),
        GQL_F("user"),       GQL_F("user_email"),     GQL_F("group"),          GQL_F("group_name"),
        GQL_F("creator"),    GQL_F("domain_name"),    GQL_F("unmanaged_path"), GQL_F("usage_mode"),
        GQL_F("permission"), GQL_F("ownership_type"), GQL_F("max_files"),      GQL_F("max_size"),
        GQL_F("created_at"), GQL_F("last_used"),      GQL_F("num_files"),      GQL_F("cur_size"),
        GQL_F("cloneable"),  GQL_F("status"),         GQL_FIELDS_END}};

const gql_object gql_t_vfolder_list = {
    "VirtualFolderList", (const gql_field_def[]){GQL_LIST("items", gql_t_vfolder),
                                                 GQL_F("total_count"), GQL_FIELDS_END}};

/* ---- inputs ----------------------------------------------------------------- */

const char *const gql_input_types[] = {"KeyPairInput",
                                       "ModifyKeyPairInput",
                                       "UserInput",
                                       "ModifyUserInput",
                                       "PurgeUserInput",
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
