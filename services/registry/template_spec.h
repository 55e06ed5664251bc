/* template_spec.h: a session template's text (Backend.AI's task template) and
 * what a launch makes of it. The format:
 *
 *   {"api_version": "6", "kind": "taskTemplate" | "task_template",
 *    "metadata": {"name", "tag"?},
 *    "spec": {"session_type": "interactive" | "batch" | "inference" (also "type",
 *             "sessionType"; default interactive),
 *             "kernel": {"image", "architecture"?, "environ"?: {NAME: "value"},
 *                        "run"?: {"bootstrap"?, "startup_command"? (also "startup",
 *                                 "startupCommand")}, "git"?: null},
 *             "scaling_group"?, "mounts"?: {vfolder: "path" | "" | null},
 *             "resources"?: {slot: amount}, "agent_list"?}}
 *
 * Other members are kept as they are (Backend.AI allows extra keys);
 * "agent_list" is kept but not used (the scheduler places sessions itself).
 * "spec.kernel.git" (Backend.AI clones a repository in the bootstrap script)
 * is refused: Tessera does not clone. Every refusal is a 400 problem naming
 * the field ("spec.kernel.image"). */
#ifndef REGISTRY_TEMPLATE_SPEC_H
#define REGISTRY_TEMPLATE_SPEC_H

#include "libcommon/svc.h"

#include <jansson.h>

/* The largest template, as compact JSON. */
#define TEMPLATE_MAX_BYTES 65536

/* Check a template (where: its place in the request, "payload[0].template")
 * and return its normalized copy (defaults filled in: spec.session_type,
 * spec.kernel.architecture "x86_64", spec.kernel.run.startup_command), or
 * NULL after a 400 problem. */
json_t *template_spec_check(json_t *tpl, const char *where, http_resp *resp);

/* The POST /v1/sessions body a launch starts from: the stored template's
 * image, architecture, type, project (group_name, when the template has
 * one), bootstrap and startup commands, and config {scaling_group, mounts,
 * mount_map, environ, resources}; then the request's members (all but
 * template_id) override it: a top-level member replaces the template's (any
 * of its aliases: "sessionType" replaces "type"), a member of config replaces
 * that member of the template's config. Nulls, empty objects and empty lists
 * in the request do not override (clients send config.resources {} when
 * they mean none). A new object, the caller's. */
json_t *template_spec_merge(const json_t *tpl, const char *group_name, const json_t *request);

#endif
