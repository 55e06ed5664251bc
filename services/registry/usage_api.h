/* usage_api.h: usage accounting's reading side (docs/usage.md), from
 * registry.session_usage and its hours (usage_store.h, usage_hours.h):
 *
 *   GET /v1/usage?start=&end=&group_by=user|project|domain|resource_group|image
 *       [&format=json|csv][&bucket=day|hour]
 *     totals over the days start..end (YYYY-MM-DD or YYYYMMDD, UTC, end
 *     included; defaults: the first of this month, today), grouped: the sums
 *     of the hours of the period in which each session used something;
 *     bucket=day or hour adds each group's figures per day or hour (JSON
 *     "days"/"hours", CSV a leading day/hour column; at most
 *     USAGE_MAX_BUCKET_DAYS days, USAGE_MAX_BUCKET_HOURS hours). Users see
 *     their own sessions, domain admins their domain's but its superadmins',
 *     superadmins all (usage_scope_of).
 *   GET /v1/resource/usage/month, /period: Backend.AI's shapes (usage_bai.h).
 *
 * usage_live_json gives GET /v1/sessions/{id} its live figures. */
#ifndef REGISTRY_USAGE_API_H
#define REGISTRY_USAGE_API_H

#include "caller.h"
#include "usage_calc.h"

/* Whose usage a caller may read, as sessions are listed: user_id ("" =
 * anyone's) and domain ("" = any), but never the users in hidden (a uuid[]
 * literal, caller_hidden_users): users their own, domain admins their
 * domain's but its superadmins', superadmins all. */
typedef struct usage_scope {
    char user_id[TS_UUID_STRLEN];
    char domain[260];
    char *hidden;
} usage_scope;
void usage_scope_of(const ts_caller *c, usage_scope *out);
void usage_scope_free(usage_scope *sc);

/* {"live": {...}, "lastStat": {...}} of the session's latest sample per
 * kernel (summed; empty objects when there is none yet); NULL on a database
 * error (logged: the session view is answered without them). */
json_t *usage_live_json(PGconn *conn, const char *session_id);

void usage_api_routes(svc *s);

/* ---- for usage_bai.c ---- */

/* Row row's USAGE_HOURS_SUMS (usage_hours.h), starting at column col. */
void usage_row_totals(const PGresult *r, int row, int col, usage_totals *t);
/* Tessera's figures of t: cpu_seconds, mem_byte_seconds, mem_peak_bytes,
 * gpu_device_seconds, gpu_share_seconds, gpu_hours, gpu_mem_peak_bytes,
 * gpu_busy_seconds, net_rx_bytes, net_tx_bytes, io_read_bytes, io_write_bytes,
 * <phase>_seconds (pending, preparing, running, terminating, other),
 * wall_seconds (their sum), samples. */
json_t *usage_totals_json(const usage_totals *t);
/* The days ?<start_name>=&<end_name>= (usage_parse_day; end included) as
 * [from, to) Unix ms; defaults: the first of the end's month, today. False
 * after a 400. */
bool usage_period_arg(http_req *req, http_resp *resp, const char *start_name, const char *end_name,
                      int64_t *from, int64_t *to) TS_MUST_CHECK;

#endif
