/* config_store.h: Backend.AI's configuration store (its etcd keys), for
 * superadmins:
 *
 *   POST /v1/config/get    {"key", "prefix"?: bool}  -> {"result": value}
 *   POST /v1/config/set    {"key", "value"}          -> {"result": "ok"}
 *   POST /v1/config/delete {"key", "prefix"?: bool}  -> {"result": "ok"}
 *
 * A value is a string (numbers and booleans are kept as their text) or a
 * nested object, which sets every leaf under the key ({"": v} sets the key
 * itself). get with prefix answers the nested object of everything under the
 * key; without, the key's own value (null when none). Each key family goes
 * where its meaning is:
 *
 *   config/docker/registry/<name>  container registries (container_registries.h)
 *   images/...                     image limits and labels (image_config.h)
 *   config/<other>                 registry.settings: a store that clients
 *                                  (the Web-UI, the CLI) share; Tessera itself
 *                                  reads none of these keys
 *
 * Keys: printable ASCII without spaces, "/"-separated segments, none empty
 * (one trailing "/" is ignored), at most CONFIG_KEY_MAX bytes; values at most
 * CONFIG_VALUE_MAX bytes; at most CONFIG_SETTINGS_MAX settings of at most
 * CONFIG_SETTINGS_BYTES_MAX together (a get of everything stays small). Anything else
 * is a 400 problem. */
#ifndef REGISTRY_CONFIG_STORE_H
#define REGISTRY_CONFIG_STORE_H

#include "registry.h"

#define CONFIG_KEY_MAX 255
#define CONFIG_VALUE_MAX 65536
#define CONFIG_SETTINGS_MAX 4096
#define CONFIG_SETTINGS_BYTES_MAX (8 << 20) /* all values together */
#define CONFIG_SEGMENTS_MAX 64

/* Split and check a key; segs point into buf (a copy). n: the count. False
 * with err saying what is wrong. */
bool config_key_split(const char *key, char *buf, size_t size, char **segs, int *n,
                      ts_err *err) TS_MUST_CHECK;

void config_store_routes(svc *s);

#endif
