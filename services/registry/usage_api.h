/* usage_api.h: usage accounting's reading side (docs/usage.md), from
 * registry.session_usage (usage_store.h):
 *
 *   GET /v1/usage?start=&end=&group_by=user|project|domain|resource_group|image
 *       [&format=json|csv][&bucket=day]
 *     totals over the days start..end (YYYY-MM-DD or YYYYMMDD, UTC, end
 *     included; defaults: the first of this month, today), grouped; each
 *     session counts with its share of the period (usage_calc.h); bucket=day
 *     adds each group's part of every day (usage_split_days; JSON "days",
 *     CSV a leading day column; at most USAGE_MAX_BUCKET_DAYS days). Users see
 *     their own sessions, domain admins their domain's, superadmins all.
 *   GET /v1/resource/usage/month, /period: Backend.AI's shapes (usage_bai.h).
 *
 * usage_live_json gives GET /v1/sessions/{id} its live figures. */
#ifndef REGISTRY_USAGE_API_H
#define REGISTRY_USAGE_API_H

#include "caller.h"
#include "usage_calc.h"

/* Who may read what: *user_id ("" = anyone) and *domain ("" = any) for the
 * caller c: users their own, domain admins their domain, superadmins all. */
void usage_scope(const reg_caller *c, char user_id[TS_UUID_STRLEN], char domain[260]);

/* {"live": {...}, "lastStat": {...}} of the session's latest sample per
 * kernel (summed; empty objects when there is none yet); NULL on a database
 * error (logged: the session view is answered without them). */
json_t *usage_live_json(PGconn *conn, const char *session_id);

void usage_api_routes(svc *s);

/* ---- for usage_bai.c ---- */

/* The columns of session_usage u that usage_row_totals reads, in order. */
#define USAGE_TOTALS_COLS                                                                          \
    "u.cpu_ms, u.mem_byte_s, u.mem_peak_bytes, u.gpu_device_s, u.gpu_share_s,"                     \
    " u.gpu_mem_peak_bytes, u.net_rx_bytes, u.net_tx_bytes, u.samples,"                            \
    " (extract(epoch FROM u.first_sample_at) * 1000)::bigint,"                                     \
    " (extract(epoch FROM u.last_sample_at) * 1000)::bigint, u.io_read_bytes, u.io_write_bytes,"   \
    " u.pending_s, u.preparing_s, u.running_s, u.terminating_s, u.other_s, u.gpu_busy_ms"
/* Row row's USAGE_TOTALS_COLS, starting at column col. */
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
