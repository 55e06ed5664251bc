/* strmap.h: a small open-addressing hash map from strings to pointers, for the
 * scheduler's in-memory tables (agents, sessions, accounts, allocations).
 * Keys are copied; values are the caller's. Not thread-safe. */
#ifndef TESSERA_SCHED_STRMAP_H
#define TESSERA_SCHED_STRMAP_H

#include "libcommon/common.h"

typedef struct strmap strmap;

strmap *strmap_new(void);
/* Frees the map and its keys; free_value (may be NULL) is called on each value. */
void strmap_free(strmap *m, void (*free_value)(void *));
void *strmap_get(const strmap *m, const char *key);
/* Insert or replace; returns the previous value (or NULL). */
void *strmap_put(strmap *m, const char *key, void *value);
/* Remove; returns the value that was there (or NULL). */
void *strmap_del(strmap *m, const char *key);
size_t strmap_len(const strmap *m);
/* Iterate: start with *pos = 0; false at the end. */
bool strmap_next(const strmap *m, size_t *pos, const char **key, void **value) TS_MUST_CHECK;

#endif
