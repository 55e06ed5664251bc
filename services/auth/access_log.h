/* access_log.h: consumes tessera.audit.v1 into auth.access_log. */
#ifndef AUTH_ACCESS_LOG_H
#define AUTH_ACCESS_LOG_H

#include "libcommon/svc.h"

#define ACCESS_LOG_TOPIC "tessera.audit.v1"
#define ACCESS_LOG_GROUP "tessera-auth.access-log"

/* Records per INSERT (a bound, so that one batch's arrays stay a few MiB). */
#define ACCESS_LOG_BATCH_MAX 5000

typedef struct access_log_opts {
    int batch_size;    /* 1..ACCESS_LOG_BATCH_MAX records per INSERT */
    int batch_wait_ms; /* how long a batch gathers after its first record */
} access_log_opts;

bool access_log_start(svc *s, const access_log_opts *o, ts_err *err) TS_MUST_CHECK;
void access_log_stop(void);

#endif
