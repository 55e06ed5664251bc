/* check.h: the error convention of the tree (libcommon/common.h), defined
 * here because the shim links no libcommon: a fallible function's bool
 * result must be checked (TS_MUST_CHECK), and one dropped on purpose is
 * written TS_IGNORE(f(...)) with the reason beside it (a (void) cast does
 * not silence GCC's warn_unused_result). */
#ifndef TESSERA_CUDA_SHIM_CHECK_H
#define TESSERA_CUDA_SHIM_CHECK_H

#define TS_MUST_CHECK __attribute__((warn_unused_result))
#define TS_IGNORE(expr)                                                                            \
    do {                                                                                           \
        if (expr) {                                                                                \
        }                                                                                          \
    } while (0)

#endif
