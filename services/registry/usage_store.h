/* usage_store.h: usage accounting's storage (docs/usage.md). The consumer
 * group tessera-registry.usage (kbus batch mode, registry.event_consumers
 * consumers) reads the agents' KernelUsage on tessera.usage.v1 and, in one
 * transaction per batch, for each sample:
 *   - inserts it into registry.usage_samples under its envelope's event id;
 *     a message delivered again finds that row and changes nothing;
 *   - adds it to its session's row in registry.session_usage (usage_calc.h:
 *     CPU-ms, memory byte-seconds and peak, GPU device- and share-seconds
 *     from the kernel's devices in registry.kernels, network bytes, count,
 *     first/last), copying the session's owner, project, domain, resource
 *     group and image;
 *   - adds it, split over the UTC hours its interval covers, to the
 *     session's rows in registry.session_usage_hours (usage_hours.h).
 * Offsets are stored after COMMIT (kbus), so a restart replays and the event
 * ids drop what was already counted. A sample whose session the registry does
 * not know is counted (tessera_registry_usage_samples_total{result=
 * "unknown_session"}), logged and skipped; one that does not decode or
 * carries an impossible interval goes to the DLQ.
 *
 * usage_store_session_end (tr_set, when a session reaches a final status, in
 * its transaction) writes the wall time of each phase of its status history
 * into its row (usage_status_seconds) and into its hours (usage_status_hours),
 * making the row when it had no sample.
 *
 * usage_store_prune (housekeeping, every minute) deletes samples older than
 * registry.usage_sample_retention. */
#ifndef REGISTRY_USAGE_STORE_H
#define REGISTRY_USAGE_STORE_H

#include "libcommon/svc.h"

#include <libpq-fe.h>

#define TOPIC_USAGE "tessera.usage.v1"

bool usage_store_start(svc *s, ts_err *err) TS_MUST_CHECK;
void usage_store_stop(void);

/* The session's wall time per phase from registry.session_status_history,
 * into registry.session_usage (ended_at: now). */
bool usage_store_session_end(PGconn *conn, const char *session_id, ts_err *err) TS_MUST_CHECK;

/* Delete samples past the retention, at most 10,000 a call; the number
 * deleted, or -1 after a database error (logged). */
long usage_store_prune(void);

#endif
