/* admin_table.c: the resources of `tessera admin`, as data (see admin.h and
 * docs/api.md "Admin REST"). The fields' keys are the API's JSON members.
 * agent, resource-group, image and resource-preset are served by
 * tessera-registry (the gateway
 * routes those paths there); the others by tessera-auth. */
#include "services/cli/admin.h"

#include <string.h>

#define CU (AF_CREATE | AF_UPDATE)
#define REQ (AF_CREATE | AF_REQUIRED)
#define POS (AF_POSITIONAL | AF_REQUIRED)
#define END                                                                                        \
    {                                                                                              \
        NULL                                                                                       \
    }

/* ---- verbs ------------------------------------------------------------------- */
static const admin_verb crud[] = {
    {"list", AV_LIST, "list them (a page: --limit, --offset)", NULL},
    {"get", AV_GET, "show one", NULL},
    {"create", AV_CREATE, "create one", NULL},
    {"update", AV_UPDATE, "change the given fields", "updated"},
    {"delete", AV_DELETE, "delete one", "deleted"},
    END,
};

static const admin_verb user_verbs[] = {
    {"list", AV_LIST, "list users (a page: --limit, --offset)", NULL},
    {"get", AV_GET, "show one user", NULL},
    {"create", AV_CREATE, "create a user", NULL},
    {"update", AV_UPDATE, "change the given fields", "updated"},
    {"delete", AV_DELETE, "mark a user deleted and deactivate its keypairs", "deleted"},
    END,
};

static const admin_verb domain_verbs[] = {
    {"list", AV_LIST, "list domains", NULL},
    {"get", AV_GET, "show one domain", NULL},
    {"create", AV_CREATE, "create a domain", NULL},
    {"update", AV_UPDATE, "change the given fields", "updated"},
    {"delete", AV_DELETE, "deactivate a domain", "deactivated"},
    END,
};

static const admin_verb project_verbs[] = {
    {"list", AV_LIST, "list projects", NULL},
    {"get", AV_GET, "show one project", NULL},
    {"create", AV_CREATE, "create a project", NULL},
    {"update", AV_UPDATE, "change the given fields", "updated"},
    {"delete", AV_DELETE, "delete a project", "deleted"},
    {"members", AV_MEMBERS, "list the project's members", NULL},
    {"add-member", AV_ADD_MEMBERS, "add users (ids or emails) to the project", "added to"},
    {"remove-member", AV_DEL_MEMBERS, "remove users (ids or emails) from the project",
     "removed from"},
    END,
};

static const admin_verb keypair_verbs[] = {
    {"list", AV_LIST, "list keypairs", NULL},
    {"get", AV_GET, "show one keypair (never its secret key)", NULL},
    {"issue", AV_CREATE, "issue a keypair to a user; prints its secret key once", NULL},
    {"update", AV_UPDATE, "change the given fields", "updated"},
    {"revoke", AV_DELETE, "revoke a keypair (refused everywhere within a second)", "revoked"},
    END,
};

static const admin_verb rg_verbs[] = {
    {"list", AV_LIST, "list who may use which resource group", NULL},
    {"add", AV_BODY_POST, "let a domain, project or keypair use a resource group", "added"},
    {"remove", AV_BODY_DELETE, "take that permission away", "removed"},
    END,
};

static const admin_verb agent_verbs[] = {
    {"list", AV_LIST, "list agents with their capacity and occupancy", NULL},
    {"get", AV_GET, "show one agent (slots, devices, occupancy, heartbeat)", NULL},
    {"drain", AV_ID_POST,
     "drain an agent: no new sessions are placed there, running ones go on (superadmins)",
     "drained", "/drain"},
    {"undrain", AV_ID_POST, "let the scheduler place sessions on a drained agent again",
     "undrained", "/undrain"},
    END,
};

static const admin_verb rgroup_verbs[] = {
    {"list", AV_LIST, "list resource groups (scaling groups)", NULL},
    {"get", AV_GET, "show one resource group", NULL},
    {"create", AV_CREATE, "create a resource group (superadmins)", NULL},
    {"update", AV_UPDATE, "change the given fields (superadmins)", "updated"},
    {"delete", AV_DELETE, "delete one no agent serves and no live session uses (superadmins)",
     "deleted"},
    END,
};

static const admin_verb image_verbs[] = {
    {"list", AV_LIST, "list registered images", NULL},
    {"get", AV_GET, "show one image (labels, service ports, minimum slots, runtime)", NULL},
    {"register", AV_CREATE, "register an image by reference (read from the OCI registry)", NULL},
    {"delete", AV_DELETE, "forget an image", "deleted"},
    {"scan", AV_BODY_POST,
     "register every image in the OCI registry's catalog (--json: which, and failures)",
     "scan done", "/scan"},
    END,
};

static const admin_verb log_verbs[] = {
    {"list", AV_LIST, "API requests, newest first (the default verb)", NULL},
    END,
};

/* ---- fields ------------------------------------------------------------------ */
#define SLOTS_HELP "resource slots, e.g. cpu=8,mem=32g,cuda.shares=2"
#define HOSTS_HELP "vfolder hosts and permissions, e.g. local=upload-file+mount-in-session,nfs"

static const admin_field user_fields[] = {
    {"email", "email", AT_STR, REQ | AF_UPDATE, "EMAIL", "e-mail address (unique)", NULL},
    {"password", "password", AT_STR, REQ | AF_UPDATE, "PASSWORD", "password (write-only)", NULL},
    {"username", "username", AT_STR, REQ | AF_UPDATE, "NAME", "user name (unique)", NULL},
    {"full-name", "full_name", AT_STR, CU, "TEXT", "full name", NULL},
    {"description", "description", AT_STR, CU, "TEXT", "description", NULL},
    {"role", "role", AT_STR, CU, "ROLE", "superadmin, admin (of its domain) or user", NULL},
    {"status", "status", AT_STR, CU, "STATUS", "active, inactive or deleted", NULL},
    {"domain", "domain_name", AT_STR, CU, "DOMAIN", "the user's domain", NULL},
    {"resource-policy", "resource_policy", AT_STR, CU, "POLICY", "user resource policy", NULL},
    {"domain", "domain", AT_STR, AF_FILTER, "DOMAIN", "only users of this domain", NULL},
    {"role", "role", AT_STR, AF_FILTER, "ROLE", "only users with this role", NULL},
    {"status", "status", AT_STR, AF_FILTER, "STATUS", "only users with this status", NULL},
    {"search", "q", AT_STR, AF_FILTER, "TEXT", "e-mail or user name starts with TEXT", NULL},
    END,
};

static const admin_field keypair_fields[] = {
    {"user", "user_id", AT_STR, REQ, "USER", "owner: user id or e-mail", "user"},
    {"resource-policy", "resource_policy", AT_STR, CU, "POLICY", "keypair resource policy", NULL},
    {"rate-limit", "rate_limit", AT_INT, CU, "N", "requests per minute (0: none)", NULL},
    {"admin", "is_admin", AT_BOOL, CU, NULL, "an admin keypair (--no-admin: not)", NULL},
    {"active", "is_active", AT_BOOL, AF_UPDATE, NULL, "active (--no-active: inactive)", NULL},
    {"user", "user", AT_STR, AF_FILTER, "USER", "only this user's keypairs (id or e-mail)", "user"},
    END,
};

static const admin_field domain_fields[] = {
    {"name", "name", AT_STR, POS, "NAME", "domain name", NULL},
    {"description", "description", AT_STR, CU, "TEXT", "description", NULL},
    {"active", "is_active", AT_BOOL, CU, NULL, "active (--no-active: inactive)", NULL},
    {"slots", "total_resource_slots", AT_SLOTS, CU, "SLOTS", SLOTS_HELP, NULL},
    {"vfolder-hosts", "allowed_vfolder_hosts", AT_HOSTS, CU, "HOSTS", HOSTS_HELP, NULL},
    {"idle-timeout", "idle_timeout", AT_INT, CU, "SECONDS",
     "cap on the idle timeout of the domain's sessions (0: none)", NULL},
    {"active", "is_active", AT_BOOL, AF_FILTER, NULL, "only active (--no-active: inactive) ones",
     NULL},
    END,
};

static const admin_field project_fields[] = {
    {"name", "name", AT_STR, POS, "NAME", "project name (unique in its domain)", NULL},
    {"name", "name", AT_STR, AF_UPDATE, "NAME", "new name", NULL},
    {"domain", "domain_name", AT_STR, AF_CREATE, "DOMAIN", "the project's domain", NULL},
    {"description", "description", AT_STR, CU, "TEXT", "description", NULL},
    {"active", "is_active", AT_BOOL, CU, NULL, "active (--no-active: inactive)", NULL},
    {"slots", "total_resource_slots", AT_SLOTS, CU, "SLOTS", SLOTS_HELP, NULL},
    {"vfolder-hosts", "allowed_vfolder_hosts", AT_HOSTS, CU, "HOSTS", HOSTS_HELP, NULL},
    {"resource-policy", "resource_policy", AT_STR, CU, "POLICY", "project resource policy", NULL},
    {"idle-timeout", "idle_timeout", AT_INT, CU, "SECONDS",
     "cap on the idle timeout of the project's sessions (0: none)", NULL},
    {"domain", "domain", AT_STR, AF_FILTER, "DOMAIN", "only projects of this domain", NULL},
    {"active", "is_active", AT_BOOL, AF_FILTER, NULL, "only active (--no-active: inactive) ones",
     NULL},
    END,
};

static const admin_field kp_policy_fields[] = {
    {"name", "name", AT_STR, POS, "NAME", "policy name", NULL},
    {"name", "name", AT_STR, AF_FILTER, "PREFIX", "only names that start so", NULL},
    {"slots", "total_resource_slots", AT_SLOTS, CU, "SLOTS", SLOTS_HELP, NULL},
    {"max-concurrent-sessions", "max_concurrent_sessions", AT_INT, CU, "N", "sessions at once",
     NULL},
    {"max-containers-per-session", "max_containers_per_session", AT_INT, CU, "N",
     "containers in one session", NULL},
    {"max-pending-session-count", "max_pending_session_count", AT_INT, CU, "N",
     "sessions waiting at once", NULL},
    {"max-session-lifetime", "max_session_lifetime", AT_INT, CU, "SECONDS", "0: no limit", NULL},
    {"max-rootfs-size", "max_rootfs_size", AT_SIZE, CU, "SIZE",
     "what each container may write on its node (root file system and /home/work); 0: the "
     "agent's agent.rootfs_size",
     NULL},
    {"idle-timeout", "idle_timeout", AT_INT, CU, "SECONDS",
     "0: never; -1: undefined, the resource group's default", NULL},
    {"vfolder-hosts", "allowed_vfolder_hosts", AT_HOSTS, CU, "HOSTS", HOSTS_HELP, NULL},
    END,
};

static const admin_field user_policy_fields[] = {
    {"name", "name", AT_STR, POS, "NAME", "policy name", NULL},
    {"name", "name", AT_STR, AF_FILTER, "PREFIX", "only names that start so", NULL},
    {"max-vfolder-count", "max_vfolder_count", AT_INT, CU, "N", "0: no limit", NULL},
    {"max-quota-scope-size", "max_quota_scope_size", AT_SIZE, CU, "SIZE",
     "bytes (or 10g, 512m); 0: no limit", NULL},
    END,
};

static const admin_field rg_fields[] = {
    {"resource-group", "resource_group", AT_STR, REQ | AF_FILTER, "GROUP", "resource group", NULL},
    {"scope-type", "scope_type", AT_STR, REQ | AF_FILTER, "TYPE", "domain, project or keypair",
     NULL},
    {"scope-id", "scope_id", AT_STR, REQ | AF_FILTER, "ID", "domain name, project id or access key",
     NULL},
    END,
};

static const admin_field agent_fields[] = {
    {"status", "status", AT_STR, AF_FILTER, "STATUS", "only agents with this status (ALIVE, LOST)",
     NULL},
    {"resource-group", "resource_group", AT_STR, AF_FILTER, "GROUP",
     "only agents of this resource group", NULL},
    END,
};

static const admin_field rgroup_fields[] = {
    {"name", "name", AT_STR, POS, "NAME", "resource group name", NULL},
    {"description", "description", AT_STR, CU, "TEXT", "description", NULL},
    {"active", "is_active", AT_BOOL, CU, NULL, "active (--no-active: inactive)", NULL},
    {"scheduler", "scheduler", AT_STR, CU, "POLICY", "queue order: fifo, lifo or drf", NULL},
    {"agent-selector", "agent_selector", AT_STR, CU, "SELECTOR",
     "placement: concentrated, dispersed or roundrobin", NULL},
    {"session-types", "allowed_session_types", AT_LIST, CU, "TYPES",
     "allowed session types, e.g. interactive,batch,inference", NULL},
    {"pending-timeout", "pending_timeout", AT_INT, CU, "SECONDS",
     "cancel sessions pending longer (0: never)", NULL},
    {"idle-timeout", "idle_timeout", AT_INT, CU, "SECONDS",
     "default idle timeout for keypair policies that leave it undefined (0: none)", NULL},
    {"idle-inference", "idle_inference", AT_BOOL, CU, NULL,
     "check its inference sessions for idleness too (--no-idle-inference: exempt)", NULL},
    {"active", "is_active", AT_BOOL, AF_FILTER, NULL, "only active (--no-active: inactive) ones",
     NULL},
    END,
};

static const admin_field image_fields[] = {
    {"reference", "reference", AT_STR, POS, "REFERENCE",
     "image reference, e.g. registry:5000/tessera/busybox:latest", NULL},
    END,
};

static const admin_field preset_fields[] = {
    {"name", "name", AT_STR, POS, "NAME", "preset name", NULL},
    {"slots", "resource_slots", AT_SLOTS, REQ | AF_UPDATE, "SLOTS",
     "slot amounts, e.g. cpu=2,mem=4g,cuda.shares=0.5 (update: replaces them all)", NULL},
    {"shared-memory", "shared_memory", AT_SIZE, CU, "BYTES",
     "shared memory (/dev/shm), e.g. 64m; at most the preset's mem", NULL},
    END,
};

static const admin_field log_fields[] = {
    {"access-key", "access_key", AT_STR, AF_FILTER, "KEY", "requests signed with this key", NULL},
    {"user", "user_id", AT_STR, AF_FILTER, "USER", "requests of this user (id or e-mail)", "user"},
    {"method", "method", AT_STR, AF_FILTER, "METHOD", "GET, POST, ...", NULL},
    {"path-prefix", "path_prefix", AT_STR, AF_FILTER, "PATH", "paths that start so", NULL},
    {"status", "status", AT_INT, AF_FILTER, "CODE", "HTTP status", NULL},
    {"since", "since", AT_STR, AF_FILTER, "TIME", "ISO-8601, inclusive", NULL},
    {"until", "until", AT_STR, AF_FILTER, "TIME", "ISO-8601, exclusive", NULL},
    END,
};

/* ---- columns ------------------------------------------------------------------ */
static const out_column user_cols[] = {
    {"ID", "id", OUT_TEXT},
    {"EMAIL", "email", OUT_TEXT},
    {"USERNAME", "username", OUT_TEXT},
    {"ROLE", "role", OUT_TEXT},
    {"STATUS", "status", OUT_TEXT},
    {"DOMAIN", "domain_name", OUT_TEXT},
    {"POLICY", "resource_policy", OUT_TEXT},
    END,
};

static const out_column keypair_cols[] = {
    {"ACCESS KEY", "access_key", OUT_TEXT},
    {"USER ID", "user_id", OUT_TEXT},
    {"ACTIVE", "is_active", OUT_TEXT},
    {"ADMIN", "is_admin", OUT_TEXT},
    {"POLICY", "resource_policy", OUT_TEXT},
    {"RATE LIMIT", "rate_limit", OUT_TEXT},
    {"CREATED", "created_at", OUT_TIME},
    {"LAST USED", "last_used", OUT_TIME},
    END,
};

static const out_column domain_cols[] = {
    {"NAME", "name", OUT_TEXT},
    {"ACTIVE", "is_active", OUT_TEXT},
    {"SLOTS", "total_resource_slots", OUT_TEXT},
    {"IDLE TIMEOUT", "idle_timeout", OUT_TEXT},
    {"CREATED", "created_at", OUT_TIME},
    {"DESCRIPTION", "description", OUT_TEXT},
    END,
};

static const out_column project_cols[] = {
    {"ID", "id", OUT_TEXT},
    {"NAME", "name", OUT_TEXT},
    {"DOMAIN", "domain_name", OUT_TEXT},
    {"ACTIVE", "is_active", OUT_TEXT},
    {"SLOTS", "total_resource_slots", OUT_TEXT},
    {"POLICY", "resource_policy", OUT_TEXT},
    {"IDLE TIMEOUT", "idle_timeout", OUT_TEXT},
    {"DESCRIPTION", "description", OUT_TEXT},
    END,
};

static const out_column member_cols[] = {
    {"ID", "id", OUT_TEXT},     {"EMAIL", "email", OUT_TEXT},   {"USERNAME", "username", OUT_TEXT},
    {"ROLE", "role", OUT_TEXT}, {"STATUS", "status", OUT_TEXT}, END,
};

static const out_column kp_policy_cols[] = {
    {"NAME", "name", OUT_TEXT},
    {"SLOTS", "total_resource_slots", OUT_TEXT},
    {"SESSIONS", "max_concurrent_sessions", OUT_TEXT},
    {"CONTAINERS", "max_containers_per_session", OUT_TEXT},
    {"PENDING", "max_pending_session_count", OUT_TEXT},
    {"LIFETIME", "max_session_lifetime", OUT_TEXT},
    {"ROOTFS SIZE", "max_rootfs_size", OUT_TEXT},
    {"IDLE TIMEOUT", "idle_timeout", OUT_TEXT},
    END,
};

static const out_column user_policy_cols[] = {
    {"NAME", "name", OUT_TEXT},
    {"MAX VFOLDERS", "max_vfolder_count", OUT_TEXT},
    {"MAX QUOTA SCOPE SIZE", "max_quota_scope_size", OUT_TEXT},
    END,
};

static const out_column rg_cols[] = {
    {"RESOURCE GROUP", "resource_group", OUT_TEXT},
    {"SCOPE TYPE", "scope_type", OUT_TEXT},
    {"SCOPE ID", "scope_id", OUT_TEXT},
    {"CREATED", "created_at", OUT_TIME},
    END,
};

static const out_column agent_cols[] = {
    {"ID", "id", OUT_TEXT},
    {"STATUS", "status", OUT_TEXT},
    {"SCHEDULABLE", "schedulable", OUT_TEXT},
    {"RESOURCE GROUP", "resource_group", OUT_TEXT},
    {"ARCH", "architecture", OUT_TEXT},
    {"KERNELS", "kernels", OUT_TEXT},
    {"LAST HEARTBEAT", "last_heartbeat", OUT_TIME},
    {"SLOTS", "slots", OUT_TEXT},
    {"OCCUPIED", "occupied_slots", OUT_TEXT},
    END,
};

static const out_column rgroup_cols[] = {
    {"NAME", "name", OUT_TEXT},
    {"ACTIVE", "is_active", OUT_TEXT},
    {"SCHEDULER", "scheduler", OUT_TEXT},
    {"SELECTOR", "agent_selector", OUT_TEXT},
    {"SESSION TYPES", "allowed_session_types", OUT_TEXT},
    {"PENDING TIMEOUT", "pending_timeout", OUT_TEXT},
    {"IDLE TIMEOUT", "idle_timeout", OUT_TEXT},
    {"AGENTS", "agents", OUT_TEXT},
    {"DESCRIPTION", "description", OUT_TEXT},
    END,
};

static const out_column image_cols[] = {
    {"REFERENCE", "reference", OUT_TEXT},  {"ARCH", "architecture", OUT_TEXT},
    {"RUNTIME", "runtime_type", OUT_TEXT}, {"REGISTERED", "registered_at", OUT_TIME},
    {"MIN SLOTS", "min_slots", OUT_TEXT},  END,
};

static const out_column preset_cols[] = {
    {"NAME", "name", OUT_TEXT},
    {"SLOTS", "resource_slots", OUT_TEXT},
    {"SHARED MEMORY", "shared_memory", OUT_TEXT},
    {"CREATED", "created_at", OUT_TIME},
    END,
};

static const out_column log_cols[] = {
    {"TIME", "occurred_at", OUT_TIME},
    {"ACCESS KEY", "access_key", OUT_TEXT},
    {"METHOD", "method", OUT_TEXT},
    {"STATUS", "status", OUT_TEXT},
    {"LATENCY US", "latency_us", OUT_TEXT},
    {"CLIENT", "client_addr", OUT_TEXT},
    {"PATH", "path", OUT_TEXT},
    END,
};

/* ---- the resources -------------------------------------------------------------- */
static const char *const user_lookup[] = {"email", "username", NULL};
static const char *const project_lookup[] = {"name", NULL};

const admin_resource admin_resources[] = {
    {"user", "users (e-mail, role, status, domain, policy)", "/admin/users", "USER", "id",
     user_lookup, "q", NULL, user_verbs, user_fields, user_cols, NULL},
    {"keypair", "keypairs (access keys) of users", "/admin/keypairs", "ACCESS_KEY", "access_key",
     NULL, NULL, NULL, keypair_verbs, keypair_fields, keypair_cols, NULL},
    {"domain", "domains", "/admin/domains", "DOMAIN", "name", NULL, NULL, NULL, domain_verbs,
     domain_fields, domain_cols, NULL},
    {"project", "projects (groups) and their members", "/admin/projects", "PROJECT", "id",
     project_lookup, NULL, NULL, project_verbs, project_fields, project_cols, member_cols},
    {"policy keypair", "keypair resource policies", "/admin/keypair-resource-policies", "POLICY",
     "name", NULL, NULL, NULL, crud, kp_policy_fields, kp_policy_cols, NULL},
    {"policy user", "user resource policies", "/admin/user-resource-policies", "POLICY", "name",
     NULL, NULL, NULL, crud, user_policy_fields, user_policy_cols, NULL},
    {"policy project", "project resource policies (project vfolder limits)",
     "/admin/project-resource-policies", "POLICY", "name", NULL, NULL, NULL, crud,
     user_policy_fields, user_policy_cols, NULL},
    {"rg-access", "which domains, projects and keypairs may use which resource group",
     "/admin/resource-group-access", NULL, NULL, NULL, NULL, NULL, rg_verbs, rg_fields, rg_cols,
     NULL},
    {"access-log", "the API access log (filters, newest first)", "/admin/access-log", NULL, NULL,
     NULL, NULL, "list", log_verbs, log_fields, log_cols, NULL},
    {"agent", "agents (nodes): capacity, occupancy, heartbeats", "/admin/agents", "AGENT_ID", "id",
     NULL, NULL, NULL, agent_verbs, agent_fields, agent_cols, NULL},
    {"resource-group", "resource groups (scaling groups): scheduler, placement, session types",
     "/admin/resource-groups", "NAME", "name", NULL, NULL, NULL, rgroup_verbs, rgroup_fields,
     rgroup_cols, NULL},
    {"image", "images sessions may use (from the OCI registry)", "/admin/images", "REFERENCE",
     "reference", NULL, NULL, NULL, image_verbs, image_fields, image_cols, NULL},
    {"resource-preset", "resource presets the launcher offers (superadmins write, all read)",
     "/admin/resource-presets", "NAME", "name", NULL, NULL, NULL, crud, preset_fields, preset_cols,
     NULL},
};

const size_t admin_resource_count = sizeof(admin_resources) / sizeof(admin_resources[0]);

const admin_resource *admin_find_resource(const char *name)
{
    for (size_t i = 0; i < admin_resource_count; i++)
        if (strcmp(admin_resources[i].name, name) == 0) return &admin_resources[i];
    return NULL;
}
