/* access_block.h: the access log's blocks (migrations/0005_access_blocks.sql)
 * in PostgreSQL's binary COPY format. A block is one message's records: an
 * ApiAccessBatch's (under the batch's event id) or a lone ApiAccess (under its
 * own). Binary COPY skips the text parsing of every array element, which was
 * most of PostgreSQL's cost per record.
 *
 *   copy_bin b = {0};
 *   access_copy_begin(&b);
 *   access_copy_block(&b, block_id, producer, recs, ids, n);   (per block)
 *   access_copy_end(&b);   then b.p, b.len are the COPY data; free(b.p).
 *
 * Records must pass access_record_invalid() first: PostgreSQL would refuse
 * the whole COPY for one bad value. */
#ifndef AUTH_ACCESS_BLOCK_H
#define AUTH_ACCESS_BLOCK_H

#include "libcommon/common.h"
#include "tessera/v1/audit.pb-c.h"

#include <stdint.h>

/* The COPY statement the data is for. */
#define ACCESS_BLOCKS_COPY_SQL                                                                     \
    "COPY auth.access_blocks (block_id, first_at, last_at, records, producer, keys_seen,"          \
    " key_counts, users_seen, user_counts, rec_event_id, rec_occurred_at, rec_access_key,"         \
    " rec_user_id, rec_client_addr,"                                                               \
    " rec_method, rec_path, rec_status, rec_latency_us, rec_request_id)"                           \
    " FROM STDIN (FORMAT binary)"

/* occurred_at_ms that are stored: years 1 to 9999 (UTC). */
#define ACCESS_TIME_MIN_MS INT64_C(-62135596800000) /* 0001-01-01T00:00:00Z */
#define ACCESS_TIME_END_MS INT64_C(253402300800000) /* 10000-01-01T00:00:00Z */

typedef struct copy_bin {
    uint8_t *p;
    size_t len, cap;
} copy_bin;

/* Why record a cannot be stored (no method, a time out of range, text that
 * is not UTF-8), or NULL when it can. */
const char *access_record_invalid(const Tessera__V1__ApiAccess *a);

void access_copy_begin(copy_bin *b);
/* One block of n >= 1 records: recs[i] stored under ids[i] (UUID text).
 * block_id is a UUID in text form (either case). */
void access_copy_block(copy_bin *b, const char *block_id, const char *producer,
                       const Tessera__V1__ApiAccess *const *recs, const char *const *ids, size_t n);
void access_copy_end(copy_bin *b);

#endif
