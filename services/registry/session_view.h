/* session_view.h: a session as the API shows it, in Backend.AI's camelCase
 * shape: sessionId (the name, as create answers), sessionUuid, sessionName,
 * status, statusInfo, image, architecture, type, creationTime,
 * terminationTime, statusChangedAt, startsAt, age (ms), occupiedSlots (all
 * kernels, while held), requestedSlots (all kernels), servicePorts (main
 * kernel: [{name, protocol, container_ports, host_ports, host}]),
 * domainName, groupId, groupName, userId, accessKey, scalingGroup,
 * resourceGroup, clusterSize, clusterMode, priority, result, exitCode,
 * kernels: [{id, role, idx, agent, status, statusInfo, containerId, exitCode}],
 * idleChecks (Backend.AI's idle_checks, idle_network.h: from the stored
 * deadline; idle_checks_refine adds the last use). */
#ifndef REGISTRY_SESSION_VIEW_H
#define REGISTRY_SESSION_VIEW_H

#include "libcommon/svc.h"

/* SELECT list and FROM for session_view_json (add WHERE / ORDER). */
extern const char session_view_sql[];

json_t *session_view_json(const PGresult *r, int row);

/* The view of the one session the condition where ($1..$n: params) finds;
 * NULL when none does (resp untouched) or after a problem answer (the
 * database failed). */
json_t *session_view_one(PGconn *conn, http_resp *resp, const char *where, int n,
                         const char *const *params);

#endif
