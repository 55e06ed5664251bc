/* session_cluster.c: a cluster session's network id, keypair and
 * CreateKernel.cluster (session_cluster.h). */
#include "session_cluster.h"

#include "context.h"

#include "libcommon/cluster_names.h"
#include "libcommon/log.h"
#include "libcommon/pgjson.h"
#include "libcommon/ssh_keys.h"

#include <arpa/inet.h>
#include <jansson.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define CLUSTER_MAX_KERNELS 64

static bool _parse_cidr(const char *cidr, uint32_t *base, int *prefix)
{
    char addr[INET_ADDRSTRLEN];
    const char *slash = cidr ? strchr(cidr, '/') : NULL;
    if (!slash || (size_t)(slash - cidr) >= sizeof(addr)) return false;
    memcpy(addr, cidr, (size_t)(slash - cidr));
    addr[slash - cidr] = '\0';
    struct in_addr in;
    char *end = NULL;
    long p = strtol(slash + 1, &end, 10);
    if (inet_pton(AF_INET, addr, &in) != 1 || !slash[1] || *end || p < 8 || p > 25) return false;
    uint32_t mask = 0xffffffffu << (32 - p);
    *base = ntohl(in.s_addr) & mask;
    *prefix = (int)p;
    return true;
}

bool session_cluster_subnet_valid(const char *cidr, ts_err *err)
{
    uint32_t base;
    int prefix;
    if (_parse_cidr(cidr, &base, &prefix)) return true;
    ts_err_set(err,
               "registry.cluster_subnet '%s': an IPv4 network a.b.c.d/8 to /25 (room for "
               "%d kernels)",
               cidr ? cidr : "", CLUSTER_MAX_KERNELS);
    return false;
}

/* The address of the kernel of session-wide index idx: the subnet's
 * idx+1-th ("10.254.0.1/24" for main1). */
static void _address(int idx, char *out, size_t size)
{
    uint32_t base = 0;
    int prefix = 24;
    if (!_parse_cidr(reg_settings.cluster_subnet, &base, &prefix)) {
        base = 0x0afe0000u; /* checked at start-up; not reached */
        prefix = 24;
    }
    struct in_addr in = {.s_addr = htonl(base + (uint32_t)idx + 1)};
    char a[INET_ADDRSTRLEN];
    inet_ntop(AF_INET, &in, a, sizeof(a));
    snprintf(out, size, "%s/%d", a, prefix);
}

/* ---- at create ---------------------------------------------------------------------------- */

/* A network id no live session holds: the sequence's next (it cycles after
 * 16777215), skipping one a session still holds from the last cycle. */
static bool _vni(PGconn *conn, char *out, size_t size, http_resp *resp)
{
    for (int tries = 0; tries < 16; tries++) {
        PGresult *r = pgjson_query(
            conn, resp, "cluster network id",
            "SELECT v FROM (SELECT nextval('registry.cluster_vni_seq') AS v) n"
            " WHERE NOT EXISTS (SELECT 1 FROM registry.sessions WHERE cluster_vni = n.v"
            "  AND status NOT IN ('TERMINATED', 'CANCELLED', 'ERROR'))",
            0, NULL);
        if (!r) return false;
        bool got = PQntuples(r) == 1;
        if (got) ts_strlcpy(out, PQgetvalue(r, 0, 0), size);
        PQclear(r);
        if (got) return true;
    }
    http_problem(resp, 503, "service-unavailable", NULL, "no free cluster network id; try again");
    return false;
}

bool session_cluster_new(PGconn *conn, int cluster_size, const char *session_id, cluster_new *out,
                         http_resp *resp)
{
    memset(out, 0, sizeof(*out));
    if (cluster_size <= 1) return true;
    if (!_vni(conn, out->vni, sizeof(out->vni), resp)) return false;
    char comment[80];
    snprintf(comment, sizeof(comment), "tessera-cluster-%.36s", session_id);
    ts_err err = {{0}};
    if (!ssh_keys_generate(comment, &out->ssh_public, &out->ssh_private, &err)) {
        TLOG_ERROR("cluster SSH keypair not made", "error=\"%s\"", err.msg);
        http_problem(resp, 500, "internal-server-error", NULL,
                     "the session's SSH keypair could not be made");
        return false;
    }
    return true;
}

void session_cluster_new_free(cluster_new *c)
{
    if (c->ssh_private) sodium_memzero(c->ssh_private, strlen(c->ssh_private));
    free(c->ssh_public);
    free(c->ssh_private);
    c->ssh_public = c->ssh_private = NULL;
}

/* ---- CreateKernel.cluster ------------------------------------------------------------------ */

/* The host of an agent's addr ("http://10.0.0.5:8094" -> "10.0.0.5", "[::1]:8094"
 * -> "::1"). */
static void _node_host(const char *addr, char *out, size_t size)
{
    out[0] = '\0';
    if (!addr) return;
    const char *p = strstr(addr, "://");
    p = p ? p + 3 : addr;
    size_t n;
    if (*p == '[') {
        p++;
        n = strcspn(p, "]");
    } else {
        n = strcspn(p, ":/");
    }
    if (n >= size) return;
    memcpy(out, p, n);
    out[n] = '\0';
}

Tessera__V1__ClusterInfo *session_cluster_info(arena *a, const char *json, const char *kernel_id)
{
    if (!json || !*json) return NULL;
    json_t *j = json_loads(json, 0, NULL);
    json_t *peers = json_object_get(j, "peers");
    if (!json_is_object(j) || !json_is_array(peers) || json_array_size(peers) < 2 ||
        json_array_size(peers) > CLUSTER_MAX_KERNELS) {
        json_decref(j);
        return NULL;
    }
    Tessera__V1__ClusterInfo *c = ar_alloc(a, sizeof(*c));
    tessera__v1__cluster_info__init(c);
    c->mode = ar_str(a, json_string_value(json_object_get(j, "mode")));
    c->vni = (uint32_t)json_integer_value(json_object_get(j, "vni"));
    c->ssh_public_key = ar_str(a, json_string_value(json_object_get(j, "pub")));
    c->ssh_private_key = ar_str(a, json_string_value(json_object_get(j, "priv")));
    c->n_peers = json_array_size(peers);
    c->peers = ar_alloc(a, c->n_peers * sizeof(*c->peers));
    c->hostname = ar_str(a, "");
    size_t i;
    json_t *p;
    json_array_foreach(peers, i, p)
    {
        Tessera__V1__ClusterInfo__Peer *pe = ar_alloc(a, sizeof(*pe));
        tessera__v1__cluster_info__peer__init(pe);
        int idx = (int)json_integer_value(json_object_get(p, "idx"));
        char name[CLUSTER_NAME_MAX], addr[INET_ADDRSTRLEN + 4], node[256];
        cluster_hostname(json_string_value(json_object_get(p, "role")), idx, name, sizeof(name));
        _address(idx, addr, sizeof(addr));
        _node_host(json_string_value(json_object_get(p, "addr")), node, sizeof(node));
        pe->hostname = ar_str(a, name);
        pe->address = ar_str(a, addr);
        pe->kernel_id = ar_str(a, json_string_value(json_object_get(p, "id")));
        pe->agent_id = ar_str(a, json_string_value(json_object_get(p, "agent")));
        pe->node_addr = ar_str(a, node);
        if (strcasecmp(pe->kernel_id, kernel_id) == 0) c->hostname = pe->hostname;
        c->peers[i] = pe;
    }
    json_decref(j);
    return c;
}
