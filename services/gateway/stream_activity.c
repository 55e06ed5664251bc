/* stream_activity.c: see stream_activity.h. */
#include "stream_activity.h"

#include "libcommon/log.h"
#include "upstream.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void stream_activity_init(stream_activity *a, gateway *gw, const gw_identity *id,
                          const char *session_id)
{
    memset(a, 0, sizeof(*a));
    a->gw = gw;
    a->id = *id;
    ts_strlcpy(a->sid, session_id, sizeof(a->sid));
}

static void _report(stream_activity *a)
{
    upstream *up = &a->gw->up[UPSTREAM_REGISTRY];
    char caller[128], caller_ak[64];
    snprintf(caller, sizeof(caller), "X-Tessera-Caller: %s", a->id.user_id);
    snprintf(caller_ak, sizeof(caller_ak), "X-Tessera-Caller-Access-Key: %s", a->id.access_key);
    const char *headers[] = {caller, caller_ak, NULL};
    char *url = ts_asprintf("%s/v1/sessions/%s/activity", up->url, a->sid);
    httpc_call call = {.timeout_ms = UPSTREAM_TIMEOUT_MS};
    httpc_resp r = {0};
    ts_err err = {{0}};
    if (!httpc_request_ex(upstream_client(), &call, "POST", url, headers, NULL, 0, NULL, &r, &err))
        TLOG_WARN("session use not reported", "session=%s error=\"%s\"", a->sid, err.msg);
    else if (r.status != 204)
        TLOG_WARN("session use not reported", "session=%s status=%ld", a->sid, r.status);
    httpc_resp_free(&r);
    free(url);
    a->reported_ms = ts_now_mono_ms();
    a->unreported = false;
}

void stream_activity_note(stream_activity *a)
{
    a->unreported = true;
    if (a->reported_ms == 0 || ts_now_mono_ms() - a->reported_ms >= STREAM_ACTIVITY_MS) _report(a);
}

void stream_activity_flush(stream_activity *a, bool force)
{
    if (force || a->unreported) _report(a);
}
