/* runtime_state.h: what the parts of the runtime (container.h) share: the
 * runtime itself, the layout of a kernel's dir and its state.json, and small
 * helpers over files, cgroup names, processes and runc.
 *
 * Per kernel, under <state>/kernels/<kernel-id>/ (container.h has the list):
 * state.json says what was set up (phase, ip, ports, CNI result and the
 * plugins that made it, the pids of init and of the supervisor), exit says
 * how the kernel ended (written by tessera-sup). A restarted agent reads both
 * again. runtime.c (set-up, status, exec, logs, usage), runtime_start.c,
 * runtime_destroy.c and sup_spawn.c build on this. */
#ifndef AGENT_RUNTIME_STATE_H
#define AGENT_RUNTIME_STATE_H

#include <sys/types.h>

#include "services/agent/cni.h"
#include "services/agent/container.h"
#include "services/agent/ports.h"

#define RTS_MAX_PORTS ((int)TS_ARRAY_LEN(((kernel_status *)0)->ports))

struct runtime {
    char *state_dir, *kernels_dir, *runc, *cni_bin, *cni_net, *cni_subnet, *cni_data, *cni_portmap,
        *cni_portmap_legacy, *cni_bridge, *cni_bridge_legacy, *sup_path, *cni_cluster;
    int64_t log_cap;
    port_pool *ports;
    cni_conf cni;
    userns_map userns_copy;
    const userns_map *userns; /* &userns_copy, or NULL: no user namespace */
    /* size-limited disks (runtime_disk.h): mkfs.ext4 found and loop devices
     * usable; otherwise disk_why says why not */
    char *mkfs;
    bool disk_images;
    char disk_why[256];
};

/* ---- files ---- */

/* Write path whole (tmp + rename). */
bool rts_write_file(const char *path, const char *data, size_t len) TS_MUST_CHECK;
/* Up to max bytes of path as a heap string, or NULL. */
char *rts_read_file(const char *path, size_t max);
/* Whether any mount point lies below dir (true when it cannot tell). */
bool rts_mounted_below(const char *dir) TS_MUST_CHECK;
/* rm -rf that never crosses into a mount point (a rootfs still mounted). */
void rts_rm_tree(const char *path);

/* ---- kernels ---- */

/* A kernel id this runtime accepts: letters, digits, '-', '_', '.', not
 * starting with '.', at most 64 characters. */
bool rts_valid_id(const char *id) TS_MUST_CHECK;
/* rts_valid_id, or false with err "kernel id '<id>' is not valid here". */
bool rts_check_id(const char *id, ts_err *err) TS_MUST_CHECK;
/* <kernels_dir>/<id> and <kernels_dir>/<id>/<name> (heap strings). */
char *rts_kdir(runtime *rt, const char *id);
char *rts_kpath(runtime *rt, const char *id, const char *name);
/* The kernel's cgroup: as /proc/<pid>/cgroup shows it (":/tessera/<id>"),
 * and relative to a hierarchy's root ("tessera/<id>"). */
void rts_cg_hint(const char *id, char *buf, size_t size);
void rts_cg_rel(const char *id, char *buf, size_t size);
/* /proc/<pid>/stat field 22: start time in clock ticks since boot; 0 if gone. */
unsigned long long rts_proc_starttime(pid_t pid);

/* ---- state.json ---- */

typedef struct kstate {
    char phase[16]; /* "creating", "running" */
    char ip[64];
    kernel_ports ports[16];
    int n_ports;
    char *cni_result;     /* heap or NULL */
    char portmap[512];    /* the port plugin the kernel's CNI ADD ran */
    char bridge[512];     /* the bridge plugin the kernel's CNI ADD ran */
    char *cluster_conf;   /* heap or NULL: its cluster network's configuration (cni_cluster.h) */
    char *cluster_result; /* heap or NULL: that network's ADD result */
    pid_t init_pid, sup_pid;
    unsigned long long sup_start;
    bool batch;
    bool keepalive; /* init is the runtime's keep-alive, not the user's program */
} kstate;

/* Write the kernel's state.json (spec may be NULL: no session, cluster size). */
bool rts_state_save(runtime *rt, const char *id, const kernel_spec *spec,
                    const kstate *s) TS_MUST_CHECK;
/* Read it back; false when there is none (rts_state_free after a true). */
bool rts_state_load(runtime *rt, const char *id, kstate *s) TS_MUST_CHECK;
/* The heap parts of s. */
void rts_state_free(kstate *s);

/* ---- runc ---- */

/* runc <args...> (NULL-terminated), time-limited, output captured. */
bool rts_runc(runtime *rt, const char *const *args, exec_result *r, ts_err *err) TS_MUST_CHECK;
/* The last error runc logged (--log-format json) in log_path, or "". */
void rts_runc_log_error(const char *log_path, char *buf, size_t size);

#endif
