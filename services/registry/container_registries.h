/* container_registries.h: the OCI registries Tessera scans and pulls from,
 * besides the built-in one (oci.registry). Backend.AI keeps them in its
 * config store as config/docker/registry/<hostname> = {"": "<url>", "type",
 * "project"}; Tessera keeps them in registry.container_registries and shows
 * them through the same keys (config_store.h).
 *
 * A registry's name is the host[:port] its images are named by (image
 * references carry it), so the URL's authority must be that name; the URL's
 * scheme says http or https (http only with oci.plain_http on). "project"
 * (harbor, harbor2) limits a scan to that project's repositories. No
 * credentials: the OCI client has no authentication yet, so "username" and
 * "password" are refused rather than stored unused. The built-in registry is
 * listed too, read-only. */
#ifndef REGISTRY_CONTAINER_REGISTRIES_H
#define REGISTRY_CONTAINER_REGISTRIES_H

#include "registry.h"

/* Whether host is reached over plain http: a registered registry by its URL's
 * scheme, any other (the built-in one, an unregistered host) by
 * oci.plain_http. False with err on a database error (on conn, the caller's). */
bool creg_plain_http(PGconn *conn, const char *host, bool *plain, ts_err *err) TS_MUST_CHECK;

/* {"<name>": {"": url, "type", "project"}, ...}: the built-in registry and the
 * registered ones. NULL on a database error (answered). */
json_t *creg_list(PGconn *conn, http_resp *resp);

/* The registries a scan without a name covers: [{"host", "project"}, ...].
 * NULL with err on a database error. */
json_t *creg_scan_targets(PGconn *conn, const char *only, bool *known, ts_err *err);

/* Create or change a registry from its fields ({"": url, "type", "project"};
 * absent fields keep their values). False after a problem answer (400 for a
 * bad name, URL, type or a credential; 400 for the built-in registry). */
bool creg_set(PGconn *conn, const char *name, json_t *fields, http_resp *resp) TS_MUST_CHECK;

/* GET /v1/config/docker-registries (superadmins): {"<name>": "<url>"}. */
void creg_routes(svc *s);

/* Forget a registry (its images stay registered). False after a problem
 * answer (404 unknown, 400 built-in). */
bool creg_delete(PGconn *conn, const char *name, http_resp *resp) TS_MUST_CHECK;

#endif
