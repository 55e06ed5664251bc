/* heartbeat.h: AgentHeartbeat on tessera.agent.v1 every interval (capacity,
 * devices, one allocation per kernel holding slots, the kernel list, node
 * usage, a sequence number), and per-kernel usage on tessera.usage.v1 in the
 * same beat. Also the protobuf form of the node's capacity, shared with
 * AgentStarted. */
#ifndef AGENT_HEARTBEAT_H
#define AGENT_HEARTBEAT_H

#include "libcommon/kbus.h"
#include "services/agent/kernels.h"
#include "services/agent/node.h"
#include "tessera/v1/agent.pb-c.h"

#define AGENT_TOPIC "tessera.agent.v1"

/* Slots and devices of a node as protobuf messages (no heap: all inside). */
typedef struct node_proto {
    Tessera__V1__SlotAmount slots[SLOTS_MAX];
    Tessera__V1__SlotAmount *slotp[SLOTS_MAX];
    char amounts[SLOTS_MAX][SLOT_FMT_MAX];
    size_t n_slots;
    Tessera__V1__DeviceInfo devices[NODE_MAX_DEVICES];
    Tessera__V1__DeviceInfo *devicep[NODE_MAX_DEVICES];
    char shares[NODE_MAX_DEVICES][SLOT_FMT_MAX];
    size_t n_devices;
} node_proto;
void node_proto_fill(const node_info *n, node_proto *p);

typedef struct heartbeat_opts {
    kbus *bus;
    const char *agent_id;
    const char *resource_group;
    const char *state_dir; /* disk_free_bytes of its file system */
    int interval_ms;
    const node_info *node;
    kernels *ks;
    runtime *rt;
    struct usage_tracker *usage; /* shared with the kernels' destroys (usage.h) */
} heartbeat_opts;

typedef struct heartbeat heartbeat;

/* Beats once at once, then every interval on a thread of its own. */
heartbeat *heartbeat_start(const heartbeat_opts *opts, ts_err *err);
void heartbeat_stop(heartbeat *hb);

#endif
