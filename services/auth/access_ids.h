/* access_ids.h: the id of each record of an ApiAccessBatch (event_id in
 * the view auth.access_log). A lone ApiAccess keeps its envelope's event id;
 * record i of a batch gets a UUID derived from the batch envelope's event id
 * and i: the same text with the version digit set to 8 (RFC 9562's custom
 * version, so never equal to a producer's v4 or v7 event id) and i XORed into
 * the last 48 bits. The time prefix of a v7 batch id is kept; a batch's ids
 * differ from each other by construction, and a replayed batch derives the
 * same ids (its block, keyed by the batch's event id, is found and skipped). */
#ifndef AUTH_ACCESS_IDS_H
#define AUTH_ACCESS_IDS_H

#include "libcommon/common.h"

/* Records in one batch that get distinct ids (the last 48 bits). */
#define ACCESS_RECORD_INDEX_MAX ((uint64_t)1 << 48)

/* out = the id of record index of the batch whose event id is batch_id
 * (lower-case text). False when batch_id is not a UUID or index is too large. */
bool access_record_id(const char *batch_id, uint64_t index, char out[TS_UUID_STRLEN]) TS_MUST_CHECK;

#endif
