/* admin.h: `tessera admin` is driven by a declarative table (admin_table.c):
 * one admin_resource row per REST resource names its path, its verbs, the
 * flags that become JSON fields or query parameters, and its table columns.
 * cmd_admin.c is the one engine that parses (admin_args.c), looks names up
 * (admin_lookup.c), sends and prints for every row; adding a resource is
 * adding a row. */
#ifndef TESSERA_CLI_ADMIN_H
#define TESSERA_CLI_ADMIN_H

#include "services/cli/client.h"
#include "services/cli/output.h"

typedef enum admin_type {
    AT_STR,   /* as given */
    AT_INT,   /* a whole number */
    AT_SIZE,  /* bytes: 1073741824, 512m, 10g (k/m/g/t/p, powers of 1024) */
    AT_BOOL,  /* --flag, --flag=true|false, --no-flag */
    AT_SLOTS, /* cpu=8,mem=32g,cuda.shares=2 -> {"cpu": "8", ...} (or a JSON object) */
    AT_HOSTS, /* local=upload-file+mount-in-session,nfs -> {"local": [...], "nfs": []} (or JSON) */
    AT_LIST,  /* a,b,c -> ["a", "b", "c"] */
} admin_type;

/* Where a flag applies. */
enum {
    AF_CREATE = 1 << 0,     /* a body field of create (and of add/remove for body verbs) */
    AF_UPDATE = 1 << 1,     /* a body field of update */
    AF_REQUIRED = 1 << 2,   /* create (add, remove) fails without it */
    AF_POSITIONAL = 1 << 3, /* create's positional NAME, not a flag */
    AF_FILTER = 1 << 4,     /* a query parameter of list */
};

typedef struct admin_field {
    const char *flag; /* "slots": --slots */
    const char *key;  /* JSON member or query parameter: "total_resource_slots" */
    admin_type type;
    unsigned where;      /* AF_* */
    const char *metavar; /* "SLOTS" */
    const char *help;
    const char *ref; /* a resource whose lookup turns a name into its id ("user"), or NULL */
} admin_field;

typedef enum admin_verb_kind {
    AV_LIST,        /* GET path?filters&limit&offset -> table */
    AV_GET,         /* GET path/ID -> record */
    AV_CREATE,      /* POST path {fields} -> record */
    AV_UPDATE,      /* PATCH path/ID {fields} -> record */
    AV_DELETE,      /* DELETE path/ID */
    AV_MEMBERS,     /* GET path/ID/members -> table of member_columns */
    AV_ADD_MEMBERS, /* POST path/ID/members {"user_ids"|"emails": [...]} */
    AV_DEL_MEMBERS, /* DELETE path/ID/members (same body) */
    AV_BODY_POST,   /* POST path {fields}: no id (rg-access add) */
    AV_BODY_DELETE, /* DELETE path {fields} (rg-access remove) */
    AV_ID_POST,     /* POST path/ID<suffix>, no body -> record (agent drain) */
} admin_verb_kind;

typedef struct admin_verb {
    const char *name; /* "issue" */
    admin_verb_kind kind;
    const char *summary;
    const char *done;   /* past tense for the confirmation line: "revoked" */
    const char *suffix; /* appended to the path ("/scan"; AV_ID_POST: after the ID), or NULL */
} admin_verb;

typedef struct admin_resource {
    const char *name; /* "user"; a group member is "policy keypair" */
    const char *summary;
    const char *path;          /* "/admin/users" */
    const char *id_meta;       /* the ID argument in usage lines: "USER" */
    const char *id_key;        /* the id member of a record: "id" */
    const char *const *lookup; /* members an ID argument may name instead of a UUID id, or NULL */
    const char *lookup_query;  /* list query parameter that narrows a lookup ("q"), or NULL */
    const char *default_verb;  /* verb when none is given (access-log: "list"), or NULL */
    const admin_verb *verbs;   /* ends with {NULL} */
    const admin_field *fields; /* ends with {NULL} */
    const out_column *columns; /* ends with {NULL} */
    const out_column *member_columns; /* AV_MEMBERS, or NULL */
} admin_resource;

extern const admin_resource admin_resources[];
extern const size_t admin_resource_count;

/* The row named name ("user", "policy keypair"), or NULL. */
const admin_resource *admin_find_resource(const char *name);

#endif
