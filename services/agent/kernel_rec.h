/* kernel_rec.h: the agent's record of one kernel (kernels.h) and its meta
 * file.
 *
 * A record holds what the agent must remember of a kernel: the packed
 * CreateKernel it came from (and a pending one of a higher generation), its
 * status, published ports, exit code and reason, and the queue of tasks
 * (create, destroy, report-lost) that kernel_table.c runs one at a time.
 *
 * What survives a restart is written to <state>/meta/<kernel-id>.json (tmp +
 * rename) before a command is acknowledged: krec_save writes it, krec_load
 * reads it back (kernel_adopt.c). The scheduling fields are never saved. */
#ifndef AGENT_KERNEL_REC_H
#define AGENT_KERNEL_REC_H

#include <stdatomic.h>
#include <stdint.h>

#include "libcommon/common.h"
#include "services/agent/service_ports.h"
#include "tessera/v1/agent_cmd.pb-c.h"

typedef enum ktask_kind { KTASK_CREATE, KTASK_DESTROY, KTASK_REPORT_LOST } ktask_kind;

typedef struct ktask {
    ktask_kind kind;
    char reason[256];
    int grace_ms;
    struct ktask *next;
} ktask;

typedef struct krec {
    char id[80], session_id[80], access_key[64], correlation_id[80];
    char status[16];
    uint8_t *cmd_bytes; /* the packed CreateKernel (NULL when adopted without meta) */
    size_t cmd_len;
    int generation; /* CreateKernel.generation of cmd_bytes */
    /* A CreateKernel of a higher generation (a restart), waiting for what is
     * left of the current one to be destroyed: it replaces cmd_bytes when its
     * create task runs (kernel_destroy_promote). */
    uint8_t *next_cmd;
    size_t next_len;
    int next_generation;
    char runtime_path[256];
    kernel_service_port ports[KERNEL_MAX_PORTS];
    int n_ports;
    int exit_code;
    char reason[256];
    bool exit_reported;
    bool resume; /* creation interrupted by an agent restart: clean up first */
    /* DestroyKernel.restart: the destroy keeps the kernel's disk (its
     * /home/work) for the next generation (runtime_destroy.h). Saved. */
    bool restarting;
    bool destroy_queued;
    int64_t exited_at_ms, terminated_at_ms;
    atomic_bool cancel; /* a destroy is queued: creation stops at the next step */
    /* scheduling (kernel_table.c), under the table's lock */
    ktask *head, *tail;
    bool busy, in_ready;
    struct krec *next_ready;
    struct krec *next;
} krec;

/* Write <meta_dir>/<id>.json (tmp + rename). False (logged) when it could not
 * be written. */
bool krec_save(const char *meta_dir, const krec *k) TS_MUST_CHECK;
/* Read <meta_dir>/<file> into a new record, or NULL (an unreadable file is
 * logged and ignored). */
krec *krec_load(const char *meta_dir, const char *file);
void krec_unlink_meta(const char *meta_dir, const char *id);
/* Free the record, its commands and its queued tasks. */
void krec_free(krec *k);

/* The CreateKernel of the record, unpacked (free with
 * tessera__v1__create_kernel__free_unpacked), or NULL. */
Tessera__V1__CreateKernel *krec_cmd(const krec *k);
/* The generation a command is compared with: the pending one when there is one. */
int krec_latest_generation(const krec *k);
/* Set the status a creation reaches, unless a queued destroy made it
 * "terminating": that is what a restarted agent must find. */
void krec_progress_status(krec *k, const char *status);
/* Mark the record terminated with exit_code and reason (now). */
void krec_terminate(krec *k, int exit_code, const char *reason);

#endif
