/* access_log.h: consumes tessera.audit.v1 into auth.access_log. */
#ifndef AUTH_ACCESS_LOG_H
#define AUTH_ACCESS_LOG_H

#include "libcommon/svc.h"

#define ACCESS_LOG_TOPIC "tessera.audit.v1"
#define ACCESS_LOG_GROUP "tessera-auth.access-log"

bool access_log_start(svc *s, ts_err *err) TS_MUST_CHECK;
void access_log_stop(void);

#endif
