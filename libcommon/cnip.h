/* cnip.h: what the agent's own CNI plugins (tessera-portmap, tessera-bridge)
 * share: the CNI error object and codes, the command from CNI_COMMAND, the
 * checks on CNI_CONTAINERID and network names, stdin, and the VERSION and
 * error answers on stdout (CNI spec 1.0.0, "Result" and "Error"). */
#ifndef CNIP_H
#define CNIP_H

#include <stdbool.h>
#include <stddef.h>

#include "libcommon/common.h"

/* CNI error codes (spec, "Error"); a plugin's own start at 100. */
enum {
    CNIP_E_VERSION = 1, /* incompatible CNI version */
    CNIP_E_ENV = 4,     /* invalid necessary environment variables */
    CNIP_E_IO = 5,      /* I/O failure */
    CNIP_E_DECODE = 6,  /* failed to decode content */
    CNIP_E_CONFIG = 7,  /* invalid network config */
};

typedef struct cnip_error {
    int code;
    char msg[256];
    char details[768];
} cnip_error;

void cnip_error_set(cnip_error *e, int code, const char *msg, const char *details_fmt, ...)
    TS_PRINTF(4, 5);

typedef enum cnip_cmd { CNIP_ADD, CNIP_DEL, CNIP_CHECK, CNIP_VERSION } cnip_cmd;

#define CNIP_MAX_NAME 64 /* network name */
#define CNIP_MAX_ID 160  /* container id */
#define CNIP_STDIN_MAX (4u << 20)

/* The versions these plugins speak, newest last, NULL-terminated. */
extern const char *const cnip_supported_versions[];
bool cnip_version_supported(const char *v) TS_MUST_CHECK;

/* CNI_CONTAINERID and the network name: non-empty, an alphanumeric first,
 * then alphanumerics, '_', '.', '-' (the CNI spec's rule), at most max. */
bool cnip_valid_name(const char *s, size_t max) TS_MUST_CHECK;

/* CNI_COMMAND; false with e set when it is missing or unknown. */
bool cnip_command(cnip_cmd *cmd, cnip_error *e) TS_MUST_CHECK;
/* CNI_CONTAINERID (checked), CNI_IFNAME, and CNI_NETNS unless cmd is DEL
 * (where the namespace may already be gone); false with e set. */
bool cnip_env(cnip_cmd cmd, const char **cid, const char **netns, const char **ifname,
              cnip_error *e) TS_MUST_CHECK;
/* All of stdin (at most CNIP_STDIN_MAX bytes), NUL-terminated; NULL with e set. */
char *cnip_read_stdin(size_t *len, cnip_error *e);

/* One request, from the environment (cnip_env). */
typedef struct cnip_request {
    cnip_cmd cmd;       /* ADD, DEL or CHECK */
    const char *cid;    /* CNI_CONTAINERID (checked) */
    const char *netns;  /* CNI_NETNS (may be NULL for DEL) */
    const char *ifname; /* CNI_IFNAME */
} cnip_request;

/* A plugin: what differs between tessera-bridge and tessera-portmap. Every
 * function gets self, the plugin's own state; the ones that can fail set e. */
typedef struct cnip_plugin {
    void *self;
    /* Check the request and parse the network configuration (text, len). */
    bool (*parse)(void *self, const cnip_request *r, const char *text, size_t len, cnip_error *e);
    bool (*add)(void *self, const cnip_request *r, cnip_error *e);
    bool (*del)(void *self, const cnip_request *r, cnip_error *e);
    bool (*check)(void *self, const cnip_request *r, cnip_error *e);
    /* ADD's result on stdout. */
    void (*print_result)(void *self, const cnip_request *r);
    /* The parsed configuration's cniVersion (for the error answer). */
    const char *(*version)(void *self);
    /* Release what parse kept (may be NULL). */
    void (*release)(void *self);
} cnip_plugin;

/* A plugin's main: CNI_COMMAND (VERSION is answered here), the environment,
 * stdin, the configuration (p->parse), the command, and the answer on
 * stdout (the result of ADD, or the error object). Returns the process's
 * exit status. */
int cnip_main(const cnip_plugin *p);

/* The network configuration's JSON with what every plugin checks alike: an
 * object without duplicate keys, cniVersion (a string this plugin speaks;
 * CHECK needs 0.4.0 or later), name (cnip_valid_name). Copied into version
 * and name; the root to read the rest from (the caller's to json_decref),
 * or NULL with e set. */
struct json_t;
struct json_t *cnip_conf_open(const char *text, size_t len, cnip_cmd cmd, char *version,
                              size_t version_size, char *name, size_t name_size, cnip_error *e);

/* Print the error object; returns 1, the plugin's exit status. */
int cnip_fail(const char *version, const cnip_error *e);
/* Print VERSION's answer; returns 0. */
int cnip_version(void);

#endif
