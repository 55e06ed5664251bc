/* oci_spec.h: building blocks of an OCI runtime config (config.json, as
 * jansson values), shared by the modules that write parts of a kernel's
 * bundle (bundle.c, gpu_mounts.c, term_app.c). */
#ifndef AGENT_OCI_SPEC_H
#define AGENT_OCI_SPEC_H

#include <jansson.h>
#include <stdbool.h>

/* Set KEY=value in an OCI process.env array: replaces an entry of the same key
 * in place (order of first appearance kept), else appends; no '=' or an empty
 * key: ignored. */
void oci_env_put(json_t *env, const char *kv);

/* A mount entry {destination, type, source, options}; opts is a
 * comma-separated list ("rbind,rprivate,nosuid,nodev,ro"). */
json_t *oci_mount(const char *dst, const char *type, const char *src, const char *opts);

/* A bind mount of src at dst: rbind, rprivate, nosuid, nodev, and ro or rw. */
json_t *oci_bind(const char *dst, const char *src, bool read_only);

#endif
