/* access_ids.c: the ids of an ApiAccessBatch's records (access_ids.h). */
#include "access_ids.h"

#include <ctype.h>

static int hexval(char c)
{
    return c <= '9' ? c - '0' : (c | 0x20) - 'a' + 10;
}

bool access_record_id(const char *batch_id, uint64_t index, char out[TS_UUID_STRLEN])
{
    if (!ts_uuid_valid(batch_id) || index >= ACCESS_RECORD_INDEX_MAX) return false;
    for (int i = 0; i < 36; i++)
        out[i] = (char)tolower((unsigned char)batch_id[i]);
    out[36] = 0;
    out[14] = '8'; /* the version digit */
    uint64_t tail = 0;
    for (int i = 24; i < 36; i++)
        tail = tail << 4 | (uint64_t)hexval(out[i]);
    tail ^= index;
    static const char digits[] = "0123456789abcdef";
    for (int i = 35; i >= 24; i--, tail >>= 4)
        out[i] = digits[tail & 0xf];
    return true;
}
