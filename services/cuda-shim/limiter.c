/* limiter.c: the compute-share limiter (see limiter.h and docs/cuda-shim.md). */
#include "services/cuda-shim/limiter.h"

#include "services/cuda-shim/driver.h"
#include "services/cuda-shim/region.h"

#include <pthread.h>
#include <time.h>

bool tshim_limiter_on;

static int64_t _share_ppm; /* share x 1e6 */
static int64_t _burst_ns;  /* bucket capacity */

#define EST_SLOTS 8192 /* direct-mapped estimate cache */
#define MAX_PENDING 16
#define SAMPLE_GAP_NS 5000000LL      /* at most one async sample per 5 ms per process */
#define KEY_SAMPLE_GAP_NS 50000000LL /* and per key at most one per 50 ms */
#define MAX_SLEEP_NS 20000000LL
#define UNKNOWN (-1)

typedef struct {
    _Atomic uint64_t key;
    _Atomic int64_t est_ns; /* UNKNOWN until measured */
    _Atomic int64_t last_sample_ns;
} est_ent;

typedef struct {
    CUevent start, end;
    unsigned slot;
    uint64_t key;
    int dev;
    int64_t charged;
    int64_t host_gap_ns; /* taken off the measurement (limiter.h) */
} pending_t;

static est_ent _est[EST_SLOTS];
static pending_t _pend[MAX_PENDING];
static atomic_int _npend;
static pthread_mutex_t _pend_mu = PTHREAD_MUTEX_INITIALIZER;
static _Atomic int64_t _last_sample_ns;

static inline int64_t _now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
    return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* A precise clock, read only around sampled launches. */
static inline int64_t _now_precise(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* What a pair of events measured, less the host's submission gap. */
static int64_t _kernel_ns(float ms, int64_t host_gap_ns)
{
    int64_t ns = (int64_t)((double)ms * 1e6) - host_gap_ns;
    return ns > 0 ? ns : 0;
}

void tshim_limiter_init(void)
{
    if (tshim_cfg.compute_share >= 1.0 || !tshim_reg) return;
    _share_ppm = (int64_t)(tshim_cfg.compute_share * 1e6 + 0.5);
    if (_share_ppm < 1) _share_ppm = 1;
    /* A burst of up to 50 ms of wall time at the container's share. */
    _burst_ns = 50000000LL * _share_ppm / 1000000;
    for (int i = 0; i < EST_SLOTS; i++)
        atomic_store(&_est[i].est_ns, UNKNOWN);
    tshim_limiter_on = true;
    atomic_store(&tshim_reg->busy_counted, 1); /* busy_ns counts from now on */
}

static void _refill(tshim_bucket *b, int64_t now)
{
    int64_t last = atomic_load_explicit(&b->last_refill_ns, memory_order_relaxed);
    if (now <= last) return;
    if (!atomic_compare_exchange_strong(&b->last_refill_ns, &last, now)) return;
    int64_t add = (now - last) * _share_ppm / 1000000;
    int64_t t = atomic_fetch_add(&b->tokens_ns, add) + add;
    while (t > _burst_ns && !atomic_compare_exchange_weak(&b->tokens_ns, &t, _burst_ns)) {
    }
}

/* Charge ns (may be negative: a credit) and wait while the bucket is in debt.
 * The region's busy_ns (the container's GPU time) counts every charge. */
static void _charge(int dev, int64_t ns, bool wait)
{
    tshim_bucket *b = &tshim_reg->bucket[dev];
    if (ns) atomic_fetch_add_explicit(&tshim_reg->busy_ns[dev], ns, memory_order_relaxed);
    int64_t now = _now();
    _refill(b, now);
    int64_t t = atomic_fetch_sub(&b->tokens_ns, ns) - ns;
    while (wait && t < 0) {
        int64_t need = -t * 1000000 / _share_ppm;
        if (need > MAX_SLEEP_NS) need = MAX_SLEEP_NS;
        if (need < 1000000) need = 1000000; /* the coarse clock ticks in ms */
        struct timespec ts = {need / 1000000000LL, need % 1000000000LL};
        nanosleep(&ts, NULL);
        _refill(b, _now());
        t = atomic_load(&b->tokens_ns);
    }
}

/* Event calls must not invalidate another thread's stream capture. */
static CUstreamCaptureMode _relaxed_enter(void)
{
    CUstreamCaptureMode m = CU_STREAM_CAPTURE_MODE_RELAXED;
    if (REAL(cuThreadExchangeStreamCaptureMode)) REAL(cuThreadExchangeStreamCaptureMode)(&m);
    return m;
}

static void _relaxed_leave(CUstreamCaptureMode m)
{
    if (REAL(cuThreadExchangeStreamCaptureMode)) REAL(cuThreadExchangeStreamCaptureMode)(&m);
}

static bool _events_usable(void)
{
    return REAL(cuEventCreate) && REAL(cuEventRecord) && REAL(cuEventQuery) &&
           REAL(cuEventElapsedTime) && REAL(cuEventDestroy_v2) && REAL(cuEventSynchronize);
}

static bool _capturing(CUstream s)
{
    CUstreamCaptureStatus st = CU_STREAM_CAPTURE_STATUS_NONE;
    if (!REAL(cuStreamIsCapturing)) return false;
    return REAL(cuStreamIsCapturing)(s, &st) != CUDA_SUCCESS || st != CU_STREAM_CAPTURE_STATUS_NONE;
}

static void _learn(unsigned slot, uint64_t key, int64_t measured)
{
    est_ent *e = &_est[slot];
    if (atomic_load(&e->key) != key) return;
    int64_t old = atomic_load(&e->est_ns);
    int64_t nv = old == UNKNOWN ? measured : old + (measured - old) / 4;
    atomic_store(&e->est_ns, nv);
}

/* Collect finished samples; correct the bucket by what they really took. */
static void _poll_pending(void)
{
    if (atomic_load_explicit(&_npend, memory_order_relaxed) == 0) return;
    if (pthread_mutex_trylock(&_pend_mu) != 0) return;
    CUstreamCaptureMode m = _relaxed_enter();
    for (int i = 0; i < MAX_PENDING; i++) {
        pending_t *p = &_pend[i];
        if (!p->end) continue;
        CUresult q = REAL(cuEventQuery)(p->end);
        if (q == CUDA_ERROR_NOT_READY) continue;
        float ms = 0;
        if (q == CUDA_SUCCESS && REAL(cuEventElapsedTime)(&ms, p->start, p->end) == CUDA_SUCCESS) {
            int64_t measured = _kernel_ns(ms, p->host_gap_ns);
            _learn(p->slot, p->key, measured);
            _charge(p->dev, measured - p->charged, false);
        }
        REAL(cuEventDestroy_v2)(p->start);
        REAL(cuEventDestroy_v2)(p->end);
        p->start = p->end = NULL;
        atomic_fetch_sub(&_npend, 1);
    }
    _relaxed_leave(m);
    pthread_mutex_unlock(&_pend_mu);
}

void tshim_limiter_before(tshim_ticket *t, uint64_t key, CUstream stream)
{
    int dev;
    if (!tshim_current_device(&dev) || dev >= TSHIM_MAX_DEVICES) dev = 0;
    unsigned slot = (unsigned)(key >> 51) & (EST_SLOTS - 1);
    est_ent *e = &_est[slot];
    if (atomic_load_explicit(&e->key, memory_order_relaxed) != key) {
        atomic_store(&e->key, key);
        atomic_store(&e->est_ns, UNKNOWN);
        atomic_store(&e->last_sample_ns, 0);
    }
    *t = (tshim_ticket){.dev = dev, .slot = slot, .key = key};
    int64_t est = atomic_load_explicit(&e->est_ns, memory_order_relaxed);
    int64_t now = _now();
    bool want_sample;
    if (est == UNKNOWN) {
        t->mode = 2;
        est = 0;
        want_sample = true;
    } else {
        want_sample =
            now - atomic_load_explicit(&_last_sample_ns, memory_order_relaxed) >= SAMPLE_GAP_NS &&
            now - atomic_load_explicit(&e->last_sample_ns, memory_order_relaxed) >=
                KEY_SAMPLE_GAP_NS &&
            atomic_load_explicit(&_npend, memory_order_relaxed) < MAX_PENDING;
        t->mode = want_sample ? 1 : 0;
    }
    _charge(dev, est, true);
    t->charged = est;
    if (want_sample) {
        t->mode = 0;
        if (_events_usable() && !_capturing(stream)) {
            CUstreamCaptureMode m = _relaxed_enter();
            CUevent ev = NULL;
            if (REAL(cuEventCreate)(&ev, CU_EVENT_DEFAULT) == CUDA_SUCCESS) {
                bool idle = REAL(cuStreamQuery) && REAL(cuStreamQuery)(stream) == CUDA_SUCCESS;
                if (REAL(cuEventRecord)(ev, stream) == CUDA_SUCCESS) {
                    t->start = ev;
                    t->idle_since_ns = idle ? _now_precise() : 0;
                    t->mode = est == 0 && atomic_load(&e->est_ns) == UNKNOWN ? 2 : 1;
                    atomic_store(&_last_sample_ns, now);
                    atomic_store(&e->last_sample_ns, now);
                } else {
                    REAL(cuEventDestroy_v2)(ev);
                }
            }
            _relaxed_leave(m);
        }
    }
}

void tshim_limiter_after(tshim_ticket *t, CUstream stream, CUresult r)
{
    /* A launch the driver refused ran nothing: its estimate is no GPU time
     * (the bucket keeps the charge, as before). */
    if (r != CUDA_SUCCESS && t->charged)
        atomic_fetch_sub_explicit(&tshim_reg->busy_ns[t->dev], t->charged, memory_order_relaxed);
    if (t->mode == 0) {
        static __thread unsigned tick;
        if ((++tick & 31) == 0) _poll_pending();
        return;
    }
    int64_t host_gap = t->idle_since_ns ? _now_precise() - t->idle_since_ns : 0;
    CUstreamCaptureMode m = _relaxed_enter();
    CUevent end = NULL;
    bool ok = r == CUDA_SUCCESS && REAL(cuEventCreate)(&end, CU_EVENT_DEFAULT) == CUDA_SUCCESS;
    if (ok && REAL(cuEventRecord)(end, stream) != CUDA_SUCCESS) ok = false;
    if (ok && t->mode == 2) {
        /* First sight of this kernel: measure now (one sync per distinct key). */
        float ms = 0;
        if (REAL(cuEventSynchronize)(end) == CUDA_SUCCESS &&
            REAL(cuEventElapsedTime)(&ms, t->start, end) == CUDA_SUCCESS) {
            int64_t measured = _kernel_ns(ms, host_gap);
            TSHIM_LOG("estimate", "key=%llx events_ns=%lld host_gap_ns=%lld kernel_ns=%lld",
                      (unsigned long long)t->key, (long long)((double)ms * 1e6),
                      (long long)host_gap, (long long)measured);
            _learn(t->slot, t->key, measured);
            _charge(t->dev, measured - t->charged, false);
        }
        ok = false; /* events done */
    } else if (ok) {
        pthread_mutex_lock(&_pend_mu);
        ok = false;
        for (int i = 0; i < MAX_PENDING; i++) {
            if (_pend[i].end) continue;
            _pend[i] = (pending_t){.start = t->start,
                                   .end = end,
                                   .slot = t->slot,
                                   .key = t->key,
                                   .dev = t->dev,
                                   .charged = t->charged,
                                   .host_gap_ns = host_gap};
            atomic_fetch_add(&_npend, 1);
            ok = true;
            break;
        }
        pthread_mutex_unlock(&_pend_mu);
    }
    if (!ok) {
        REAL(cuEventDestroy_v2)(t->start);
        if (end) REAL(cuEventDestroy_v2)(end);
    }
    _relaxed_leave(m);
    _poll_pending();
}
