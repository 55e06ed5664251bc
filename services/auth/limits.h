/* limits.h: the resource-limit values that keypair resource policies,
 * domains and projects share, validated and normalized the same way
 * everywhere:
 *   total_resource_slots   {"cpu": "8", "mem": "34359738368", "cuda.shares": "2.5"}
 *   allowed_vfolder_hosts  {"local:volume1": ["mount-in-session", "upload-file"]}
 * and the names that appear in URL paths (domains, policies, resource
 * groups). Every function that takes a resp answers a 400 problem itself
 * when the value is bad and returns false. */
#ifndef AUTH_LIMITS_H
#define AUTH_LIMITS_H

#include "libcommon/svc.h"

#include <jansson.h>

#define LIMITS_MAX_SLOTS 32
#define LIMITS_MAX_HOSTS 64
#define LIMITS_DESCRIPTION_MAX 1000

/* obj[key] as total_resource_slots: an object of slot name ("cpu", "mem",
 * "cuda.device", "<vendor>.<kind>": lower-case, 1..64 characters) -> amount.
 * An amount is a non-negative JSON number or decimal text ("8", "1.5"; at
 * most 18 integer and 6 fraction digits); "mem" (bytes) also takes a binary
 * suffix k, m, g or t ("32g") and must come to whole bytes. Normalized to
 * decimal text without redundant zeros ("08.50" -> "8.5", "32g" ->
 * "34359738368"). Absent or null: *out = NULL and true. Otherwise *out is
 * the normalized object as compact JSON text with sorted keys (heap; a
 * jsonb query parameter). */
bool limits_field_slots(json_t *obj, const char *key, char **out, http_resp *resp) TS_MUST_CHECK;

/* One amount as above into out (at least 32 bytes); false with why in err. */
bool limits_slot_amount(const char *slot, json_t *v, char *out, size_t size,
                        ts_err *err) TS_MUST_CHECK;

/* obj[key] as allowed_vfolder_hosts: an object of host name (1..64 of
 * A-Z a-z 0-9 . _ : -) -> array of distinct permissions from Backend.AI's
 * set (create-vfolder, modify-vfolder, delete-vfolder, mount-in-session,
 * upload-file, download-file, invite-others, set-user-specific-permission).
 * Absent or null: *out = NULL. Otherwise compact JSON text (heap). */
bool limits_field_vfolder_hosts(json_t *obj, const char *key, char **out,
                                http_resp *resp) TS_MUST_CHECK;

/* A name that is part of a URL path: 1..64 characters of UTF-8 (non-ASCII
 * allowed), no control characters, no '/', not "." or "..", no leading or
 * trailing space. */
bool limits_name_ok(const char *name) TS_MUST_CHECK;
/* pgjson_field_str plus limits_name_ok (a 400 problem naming key when not). */
bool limits_field_name(json_t *obj, const char *key, bool required, const char **out,
                       http_resp *resp) TS_MUST_CHECK;

/* The fields a domain and a project share, as SQL text parameters (NULL: not
 * given): description (0..LIMITS_DESCRIPTION_MAX characters), is_active
 * ("true" or "false"), total_resource_slots and allowed_vfolder_hosts (JSON
 * text as above), idle_timeout (seconds, 0..LIMITS_IDLE_TIMEOUT_MAX, 0 = no
 * setting: the cap on the idle timeout of the scope's sessions,
 * docs/sessions.md "Idle reclamation"). Start from {0}; limits_fields_free
 * releases. */
#define LIMITS_IDLE_TIMEOUT_MAX (86400 * 365)
typedef struct limits_fields {
    const char *description; /* points into the body */
    const char *is_active;
    const char *idle_timeout; /* points into idle_buf */
    char *slots, *hosts;
    char idle_buf[16];
} limits_fields;

bool limits_fields_parse(json_t *body, limits_fields *f, http_resp *resp) TS_MUST_CHECK;
void limits_fields_free(limits_fields *f);

#endif
