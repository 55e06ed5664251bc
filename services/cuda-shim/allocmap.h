/* allocmap.h: this process's live allocations, by pointer or handle.
 *
 * Each entry remembers what the shim charged for it (bytes, device, and the pool
 * for stream-ordered allocations), so a free returns exactly that; a free of
 * something not in the map passes through without touching the accounting, which
 * is why usage can never underflow. Open addressing with linear probing and
 * backward-shift deletion, guarded by one process-local mutex. */
#ifndef TESSERA_CUDA_SHIM_ALLOCMAP_H
#define TESSERA_CUDA_SHIM_ALLOCMAP_H

#include <stdbool.h>
#include <stdint.h>

#include "services/cuda-shim/check.h"

enum tshim_kind {
    TSHIM_KIND_MEM = 1, /* CUdeviceptr: cuMemAlloc*, managed, async */
    TSHIM_KIND_VMM,     /* CUmemGenericAllocationHandle */
    TSHIM_KIND_ARRAY,   /* CUarray */
    TSHIM_KIND_MIPMAP,  /* CUmipmappedArray */
};

typedef struct tshim_alloc {
    uint64_t key;
    uint64_t bytes;
    void *pool; /* stream-ordered allocations: the pool it came from */
    int16_t dev;
    uint8_t kind;
    uint8_t from_pool;
} tshim_alloc;

/* False when the table could not grow (the allocation stays charged: usage is
 * over-counted, never under-counted). */
bool tshim_map_put(const tshim_alloc *a) __attribute__((warn_unused_result)) TS_MUST_CHECK;
/* Remove and return the entry; false if unknown. */
bool tshim_map_take(uint8_t kind, uint64_t key, tshim_alloc *out)
    __attribute__((warn_unused_result)) TS_MUST_CHECK;
/* Live entries (tests). */
uint64_t tshim_map_count(void);
/* Drop every entry (the child after fork owns none of its parent's memory). */
void tshim_map_reset(void);

#endif
