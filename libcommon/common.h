/* common.h: the conventions every Tessera module shares.
 *
 * Errors: a fallible function returns bool (true = done) and is marked
 * TS_MUST_CHECK. Where the caller needs to know why, it takes a ts_err that the
 * callee fills and each caller up the stack may prefix with its own context
 * ("config /etc/x.conf:12: http.listen: ..."). The edge (HTTP handler, event
 * consumer, main) turns it into a problem response, a DLQ record or an exit. */
#ifndef TESSERA_COMMON_H
#define TESSERA_COMMON_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#define TS_MUST_CHECK __attribute__((warn_unused_result))
/* A TS_MUST_CHECK result deliberately dropped (best effort: say why beside it).
 * A (void) cast does not silence GCC's warn_unused_result. */
#define TS_IGNORE(expr)                                                                            \
    do {                                                                                           \
        if (expr) {                                                                                \
        }                                                                                          \
    } while (0)
#define TS_PRINTF(f, a) __attribute__((format(printf, f, a)))
#define TS_NORETURN __attribute__((noreturn))
#define TS_ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

#ifndef TESSERA_VERSION
#define TESSERA_VERSION "0.0.0"
#endif

typedef struct ts_err {
    char msg[512];
} ts_err;

/* Set the message (err may be NULL: then nothing happens). */
void ts_err_set(ts_err *err, const char *fmt, ...) TS_PRINTF(2, 3);
/* Put context in front of the existing message: "<context>: <old message>". */
void ts_err_prefix(ts_err *err, const char *fmt, ...) TS_PRINTF(2, 3);

/* A broken invariant: log and abort. Never for bad input. */
TS_NORETURN void ts_panic_at(const char *file, int line, const char *fmt, ...) TS_PRINTF(3, 4);
#define ts_panic(...) ts_panic_at(__FILE__, __LINE__, __VA_ARGS__)
#define ts_assert(cond)                                                                            \
    do {                                                                                           \
        if (!(cond)) ts_panic("assertion failed: %s", #cond);                                      \
    } while (0)

/* Allocation that cannot fail (aborts on out-of-memory, which is not bad input). */
void *ts_malloc(size_t n);
void *ts_calloc(size_t n, size_t size);
void *ts_realloc(void *p, size_t n);
char *ts_strdup(const char *s);
char *ts_strndup(const char *s, size_t n);
char *ts_asprintf(const char *fmt, ...) TS_PRINTF(1, 2);

/* Monotonic and wall clocks. */
int64_t ts_now_mono_ms(void);
int64_t ts_now_mono_us(void);
int64_t ts_now_wall_ms(void);
/* The CLOCK_REALTIME instant ms from now (ms <= 0: now): the deadline
 * pthread_cond_timedwait takes on a condition variable with the default clock. */
struct timespec ts_realtime_in_ms(int64_t ms);

/* A random (version 4) UUID in its 36-character text form plus NUL. */
#define TS_UUID_STRLEN 37
void ts_uuid4(char out[TS_UUID_STRLEN]);
/* RFC 9562 version 7: the Unix time in ms first, then random bits, so ids made
 * later sort later (B-tree inserts land at the right edge of an index). */
void ts_uuid7(char out[TS_UUID_STRLEN]);
bool ts_uuid_valid(const char *s) TS_MUST_CHECK;
/* A UUID in its dashed form (36 characters) or as 32 hex digits without
 * dashes (Backend.AI's clients address folders by uuid.hex) into out, in
 * the dashed lower-case form; false (out empty) for anything else. */
bool ts_uuid_normalize(const char *s, char out[TS_UUID_STRLEN]) TS_MUST_CHECK;

/* Copy with truncation, always NUL-terminated; returns strlen(src). */
size_t ts_strlcpy(char *dst, const char *src, size_t size);

/* FNV-1a (64 bits) of n bytes, continuing from h (start with TS_FNV_OFFSET):
 * cheap fingerprints and hash keys, not cryptographic. */
#define TS_FNV_OFFSET 14695981039346656037ull
uint64_t ts_fnv1a(uint64_t h, const void *p, size_t n);

#endif
