/* context.h: what every module of tessera-vfolder shares and nothing owns:
 * the service's settings (filled by main.c's option table before start-up,
 * read everywhere after) and the sizes of the names it stores. A leaf: it
 * includes no module of the service and calls none. */
#ifndef VFOLDER_CONTEXT_H
#define VFOLDER_CONTEXT_H

#include "libcommon/common.h"

#include <stdint.h>

/* Sizes including the NUL. Folder names: 1..64 code points of UTF-8. */
#define VF_NAME_MAX (64 * 4 + 1)
#define VF_EMAIL_MAX (254 + 1)
#define VF_HOST_MAX 65
#define VF_PATH_MAX 4096

typedef struct vf_config {
    char *volumes;      /* "name:path[,name:path]" */
    char *default_host; /* "local" */
    bool open_hosts;    /* no policy names a host: every volume is allowed */
    char *auth_url;     /* tessera-auth base URL */
    int64_t auth_timeout_ms;
    int64_t trash_retention_ms; /* trashed folders older than this are purged */
    int64_t sweep_interval_ms;
    char *registry_url; /* tessera-registry base URL (who mounts a folder) */
    int64_t registry_timeout_ms;
} vf_config;

/* The settings (main.c's option table points into it). */
extern vf_config vf_cfg;

#endif
