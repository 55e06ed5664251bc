/* policies.h: keypair and user resource policies (docs/api.md "Admin REST"):
 *   /v1/admin/keypair-resource-policies[/{name}]
 *   /v1/admin/user-resource-policies[/{name}]
 * Superadmins create, change and delete; domain admins read; users get 403.
 * Every change publishes PolicyChanged on tessera.auth.v1 after it commits.
 *
 * Also the resource-limit values that domains and projects share with the
 * policies, validated and normalized the same way everywhere:
 *   total_resource_slots   {"cpu": "8", "mem": "34359738368", "cuda.shares": "2.5"}
 *   allowed_vfolder_hosts  {"local:volume1": ["mount-in-session", "upload-file"]}
 * and the names that appear in URL paths (domains, policies, resource groups). */
#ifndef AUTH_POLICIES_H
#define AUTH_POLICIES_H

#include "libcommon/svc.h"

#include <jansson.h>

#define POLICIES_MAX_SLOTS 32
#define POLICIES_MAX_HOSTS 64

void policies_routes(svc *s);

/* obj[key] as total_resource_slots: an object of slot name ("cpu", "mem",
 * "cuda.device", "<vendor>.<kind>": lower-case, 1..64 characters) -> amount.
 * An amount is a non-negative JSON number or decimal text ("8", "1.5"; at
 * most 18 integer and 6 fraction digits); "mem" (bytes) also takes a binary
 * suffix k, m, g or t ("32g") and must come to whole bytes. Normalized to
 * decimal text without redundant zeros ("08.50" -> "8.5", "32g" ->
 * "34359738368"). Absent or null: *out = NULL and true. Otherwise *out is a
 * new object (json_decref it). False after a 400 problem. */
bool policies_field_slots(json_t *obj, const char *key, json_t **out,
                          http_resp *resp) TS_MUST_CHECK;

/* One amount as above into out (at least 32 bytes); false with why in err. */
bool policies_slot_amount(const char *slot, json_t *v, char *out, size_t size,
                          ts_err *err) TS_MUST_CHECK;

/* obj[key] as allowed_vfolder_hosts: an object of host name (1..64 of
 * A-Z a-z 0-9 . _ : -) -> array of distinct permissions from Backend.AI's
 * set (create-vfolder, modify-vfolder, delete-vfolder, mount-in-session,
 * upload-file, download-file, invite-others, set-user-specific-permission).
 * Absent or null: *out = NULL. Otherwise a new reference in *out. */
bool policies_field_vfolder_hosts(json_t *obj, const char *key, json_t **out,
                                  http_resp *resp) TS_MUST_CHECK;

/* A name that is part of a URL path: 1..64 characters of UTF-8 (non-ASCII
 * allowed), no control characters, no '/', not "." or "..", no leading or
 * trailing space. */
bool policies_name_ok(const char *name);
/* db_field_str plus policies_name_ok (a 400 problem naming key when not). */
bool policies_field_name(json_t *obj, const char *key, bool required, const char **out,
                         http_resp *resp) TS_MUST_CHECK;

#endif
