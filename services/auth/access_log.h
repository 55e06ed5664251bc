/* access_log.h: consumes tessera.audit.v1 (ApiAccess and ApiAccessBatch)
 * into auth.access_blocks, one block per message (read through the view
 * auth.access_log, one row per record). */
#ifndef AUTH_ACCESS_LOG_H
#define AUTH_ACCESS_LOG_H

#include "libcommon/svc.h"

#define ACCESS_LOG_TOPIC "tessera.audit.v1"
#define ACCESS_LOG_GROUP "tessera-auth.access-log"

/* Bus messages handled together at most (access_log.batch_size). */
#define ACCESS_LOG_BATCH_MAX 5000
/* Records per COPY at most (a block is never split): a kbus batch of
 * ApiAccessBatch messages holds many more records than messages; this keeps
 * one statement's data a few MiB. */
#define ACCESS_LOG_ROWS_MAX 5000

typedef struct access_log_opts {
    int batch_size;    /* 1..ACCESS_LOG_BATCH_MAX messages handled together */
    int batch_wait_ms; /* how long a batch gathers after its first message */
} access_log_opts;

bool access_log_start(svc *s, const access_log_opts *o, ts_err *err) TS_MUST_CHECK;
void access_log_stop(void);

#endif
