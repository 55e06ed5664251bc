/* config.h: where the CLI finds its gateway and its keypair.
 *
 * Endpoint: --endpoint, $TESSERA_GATEWAY_URL, $BACKEND_ENDPOINT, the
 * credentials file, then CONFIG_DEFAULT_ENDPOINT.
 * Keys: $TESSERA_ACCESS_KEY/$TESSERA_SECRET_KEY, then $BACKEND_ACCESS_KEY/
 * $BACKEND_SECRET_KEY (what Backend.AI clients read), then the credentials
 * file `tessera login` writes: $XDG_CONFIG_HOME/tessera/credentials (default
 * ~/.config/tessera/credentials), mode 0600, "name = value" lines. */
#ifndef TESSERA_CLI_CONFIG_H
#define TESSERA_CLI_CONFIG_H

#include "libcommon/common.h"

#define CONFIG_DEFAULT_ENDPOINT "http://127.0.0.1:8090"

typedef struct config_creds {
    char *endpoint;   /* never NULL after config_load */
    char *access_key; /* NULL when none was found */
    char *secret_key;
    char *source; /* where the keys came from, for whoami: "$TESSERA_ACCESS_KEY", a path */
} config_creds;

/* Resolve endpoint and keys; endpoint_flag (--endpoint) may be NULL. False
 * (err set) when a source is half set (an access key without its secret) or the
 * credentials file cannot be read. */
bool config_load(config_creds *out, const char *endpoint_flag, ts_err *err) TS_MUST_CHECK;
void config_creds_free(config_creds *c);

/* The credentials file's path (heap); NULL when neither XDG_CONFIG_HOME nor HOME is set. */
char *config_credentials_path(void);

/* Write the credentials file atomically with mode 0600 (its directory 0700). */
bool config_save(const char *endpoint, const char *access_key, const char *secret_key,
                 ts_err *err) TS_MUST_CHECK;

/* Remove the credentials file; *existed says whether there was one. */
bool config_remove(bool *existed, ts_err *err) TS_MUST_CHECK;

#endif
