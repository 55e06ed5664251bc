/* session_cluster.h: what a session of several kernels has beyond its
 * kernels (docs/sessions.md, "Cluster sessions"): made at create, a network
 * id (VNI) unique among the live sessions and an SSH keypair the kernels
 * share (registry.sessions.cluster_vni, cluster_ssh_public,
 * cluster_ssh_private); at each CreateKernel, CreateKernel.cluster: every
 * kernel's name (main1, sub1, ...), address on the session's network
 * (registry.cluster_subnet, the kernel's cluster_idx + 1-th address) and
 * node, and the keypair; and the kernel a request names (?kernel=). */
#ifndef REGISTRY_SESSION_CLUSTER_H
#define REGISTRY_SESSION_CLUSTER_H

#include "libcommon/svc.h"
#include "pbutil.h"
#include "tessera/v1/agent_cmd.pb-c.h"

#include <libpq-fe.h>

/* registry.cluster_subnet: an IPv4 network with room for 64 kernels
 * ("10.254.0.0/24"; prefix 8 to 25). */
bool session_cluster_subnet_valid(const char *cidr, ts_err *err) TS_MUST_CHECK;

/* A new cluster session's network id and keypair (NULL strings for a
 * session of one kernel, nothing made). */
typedef struct cluster_new {
    char vni[16];
    char *ssh_public, *ssh_private;
} cluster_new;
/* false after a problem answer. */
bool session_cluster_new(PGconn *conn, int cluster_size, const char *session_id, cluster_new *out,
                         http_resp *resp) TS_MUST_CHECK;
void session_cluster_new_free(cluster_new *c);

/* A column of the kernels' CreateKernel query (transitions.c), the
 * session's cluster as JSON text, NULL for a session of one kernel; s is
 * registry.sessions. */
#define SESSION_CLUSTER_COLUMN                                                                     \
    "(SELECT json_build_object('vni', s.cluster_vni, 'mode', s.cluster_mode,"                      \
    " 'pub', s.cluster_ssh_public, 'priv', s.cluster_ssh_private, 'peers',"                        \
    " (SELECT json_agg(json_build_object('id', k2.id, 'role', k2.cluster_role,"                    \
    "   'idx', k2.cluster_idx, 'agent', k2.agent_id, 'addr', a2.addr) ORDER BY k2.cluster_idx)"    \
    "  FROM registry.kernels k2 LEFT JOIN registry.agents a2 ON a2.id = k2.agent_id"               \
    "  WHERE k2.session_id = s.id))::text WHERE s.cluster_size > 1)"

/* CreateKernel.cluster of kernel_id from that column's text (NULL: none). */
Tessera__V1__ClusterInfo *session_cluster_info(arena *a, const char *json, const char *kernel_id);

/* The kernel name of a registry.kernels row, in SQL (k is the table):
 * main1, sub1, ... (libcommon/cluster_names.h spells the same rule). */
#define SESSION_KERNEL_NAME_SQL                                                                    \
    "(CASE WHEN k.cluster_role = 'main' THEN 'main' || (k.cluster_idx + 1)"                        \
    " ELSE k.cluster_role || greatest(k.cluster_idx, 1) END)"

#endif
