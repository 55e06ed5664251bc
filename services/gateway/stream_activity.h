/* stream_activity.h: a stream's use of its session, reported to the registry
 * for idle reclamation (docs/sessions.md, "Idle reclamation"; the registry's
 * idle_network.h): POST /v1/sessions/{id}/activity on the caller's behalf
 * (the caller's identity and the gateway's signature, as every forwarded
 * call), from the stream's own thread.
 *
 * A stream reports when it starts, when a message moves (at most once per
 * STREAM_ACTIVITY_MS: a busy terminal costs one small call every few
 * seconds, not one per keystroke) and when it ends after uses not yet
 * reported. A stream that moves nothing reports nothing after its start:
 * an open but silent terminal does not keep the session. A report that
 * fails is logged; the next use tries again. */
#ifndef GATEWAY_STREAM_ACTIVITY_H
#define GATEWAY_STREAM_ACTIVITY_H

#include "gateway.h"
#include "identity.h"

#include <stdint.h>

#define STREAM_ACTIVITY_MS 5000

typedef struct stream_activity {
    gateway *gw;
    gw_identity id;
    char sid[64];
    int64_t reported_ms; /* monotonic; 0: never */
    bool unreported;     /* used since the last report */
} stream_activity;

void stream_activity_init(stream_activity *a, gateway *gw, const gw_identity *id,
                          const char *session_id);
/* The stream moved a message: report unless one went out less than
 * STREAM_ACTIVITY_MS ago. */
void stream_activity_note(stream_activity *a);
/* Report now when used since the last report, or force. */
void stream_activity_flush(stream_activity *a, bool force);

#endif
