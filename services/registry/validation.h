/* validation.h: the body of POST /v1/sessions (Backend.AI's POST /session)
 * parsed into a create_req. Numbers and booleans may arrive as strings ("1",
 * "true"); slot amounts as numbers or strings ("1", "1g", "0.50", slots.h).
 * Unknown fields are ignored (clients send more than we use). Every refusal is
 * a 400 problem that names the field. */
#ifndef REGISTRY_VALIDATION_H
#define REGISTRY_VALIDATION_H

#include "libcommon/svc.h"
#include "libcommon/slots.h"

#define CREATE_MAX_AGENTS 64

typedef struct create_req {
    const char *image;          /* image or legacy lang */
    const char *name;           /* name or clientSessionToken */
    const char *type;           /* interactive | batch | inference */
    const char *group;          /* group_name / group, default "default" */
    const char *domain;         /* NULL: the owner's */
    const char *resource_group; /* config.scaling_group / scaling_group, default "default" */
    const char *startup_command;
    const char *bootstrap_script;
    const char *owner_access_key; /* NULL: the caller */
    const char *cluster_mode;     /* single-node | multi-node */
    const char *starts_at;        /* ISO-8601 or a delay ("30s", "10m"); NULL: none */
    const char *agent;            /* agentList's one agent: designated (superadmin); NULL: none */
    const char *agents[CREATE_MAX_AGENTS]; /* agentList's agent of each kernel (multi-node) */
    int n_agents;                          /* 0: none per kernel */
    slots_t slots;                         /* config.resources, per kernel */
    uint32_t explicit_slots;               /* mask of slots the request named */
    int64_t shmem;                         /* config.resource_opts.shmem, bytes (-1: none) */
    json_t *environ;                       /* {"K": "V"} (owned) */
    json_t *mounts;                        /* config.mounts: distinct vfolder names (owned) */
    json_t *mount_map;     /* config.mount_map: {name: path}, keys in mounts (owned) */
    json_t *preopen_ports; /* config.preopen_ports: distinct ports (owned) */
    int cluster_size;
    int priority;
    bool enqueue_only, reuse;
    int64_t max_wait_ms;
} create_req;

bool create_req_parse(json_t *body, create_req *out, http_resp *resp) TS_MUST_CHECK;
void create_req_free(create_req *r);

/* Session names: 1..64 of letters, digits, '_', '-', '.', starting with a
 * letter or digit, and not a UUID (those address sessions by id). */
bool session_name_valid(const char *name) TS_MUST_CHECK;

/* A session's environment variables (env, an object; field names it in the
 * problem): at most 256, names of letters, digits and '_' not starting with
 * a digit (at most 128), values text of at most 64 KiB (numbers and booleans
 * become text in place). False after a 400. */
bool session_environ_valid(json_t *env, const char *field, http_resp *resp) TS_MUST_CHECK;

#endif
