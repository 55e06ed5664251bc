/* region.c: the container's shared accounting region (see region.h). */
#include "services/cuda-shim/region.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

tshim_region *tshim_reg;

static pthread_mutex_t _attach_mu = PTHREAD_MUTEX_INITIALIZER;
static int _my_slot = -1; /* index into slots[], -1 until registered */

/* Reap at most once a second on ordinary lock acquisitions. */
#define REAP_INTERVAL_NS 1000000000LL

static int64_t _now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
    return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static inline void _sub_clamped(uint64_t *v, uint64_t n)
{
    uint64_t cur = __atomic_load_n(v, __ATOMIC_RELAXED);
    while (!__atomic_compare_exchange_n(v, &cur, cur - (n < cur ? n : cur), true, __ATOMIC_ACQ_REL,
                                        __ATOMIC_RELAXED)) {
    }
}

/* Fields 3 (state) and 22 (starttime) of /proc/<pid>/stat; false if unreadable. */
static bool _proc_stat(int pid, char *state, uint64_t *start)
{
    char path[64], buf[1024];
    snprintf(path, sizeof(path), "/proc/%d/stat", pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return false;
    ssize_t n = read(fd, buf, sizeof(buf) - 1);
    close(fd);
    if (n <= 0) return false;
    buf[n] = '\0';
    /* comm (field 2) may hold spaces and parentheses: count from the last ')'. */
    char *p = strrchr(buf, ')');
    if (!p || p[1] != ' ') return false;
    *state = p[2];
    p++;
    for (int field = 3; field < 22; field++) {
        p = strchr(p + 1, ' ');
        if (!p) return false;
    }
    *start = strtoull(p + 1, NULL, 10);
    return true;
}

uint64_t tshim_proc_start_time(int pid)
{
    char st;
    uint64_t start;
    return _proc_stat(pid, &st, &start) ? start : 0;
}

static bool _proc_alive(const tshim_proc_slot *s)
{
    if (kill(s->pid, 0) != 0 && errno == ESRCH) return false;
    char state;
    uint64_t start;
    /* Unreadable /proc (hidepid): trust kill(). A zombie holds no GPU memory. */
    if (!_proc_stat(s->pid, &state, &start)) return true;
    return start == s->start_time && state != 'Z' && state != 'X';
}

/* A holder died with the lock (EOWNERDEAD). The counters are atomics and every
 * update order leaves the total too high rather than too low if interrupted, so
 * nothing needs rebuilding; the dead holder's slot is reaped by the caller. */
static void _repair(tshim_region *r)
{
    r->repairs++;
}

/* Under the lock. */
static int _reap_locked(tshim_region *r)
{
    int n = 0;
    int self = getpid();
    for (int i = 0; i < TSHIM_REGION_SLOTS; i++) {
        tshim_proc_slot *s = &r->slots[i];
        if (s->pid == 0 || s->pid == self || _proc_alive(s)) continue;
        for (int d = 0; d < TSHIM_MAX_DEVICES; d++) {
            uint64_t u = __atomic_exchange_n(&s->used[d], 0, __ATOMIC_ACQ_REL);
            if (u) _sub_clamped(&r->used[d], u);
        }
        s->start_time = 0;
        s->pid = 0;
        n++;
    }
    r->reaped += (uint64_t)n;
    r->last_reap_ns = _now_ns();
    return n;
}

/* After pthread_mutex_lock/trylock answered rc: true when the lock is held. */
static bool _acquired(tshim_region *r, int rc)
{
    if (rc == EOWNERDEAD) {
        _repair(r);
        _reap_locked(r);
        pthread_mutex_consistent(&r->lock);
        TSHIM_LOG("region lock recovered", "event=eownerdead");
    } else if (rc != 0) {
        TSHIM_LOG("region lock failed", "errno=%d", rc);
        return false;
    }
    r->acquisitions++;
    if ((r->acquisitions & 63) == 0 && _now_ns() - r->last_reap_ns > REAP_INTERVAL_NS)
        _reap_locked(r);
    return true;
}

bool tshim_region_lock(tshim_region *r)
{
    if (!_acquired(r, pthread_mutex_lock(&r->lock))) return false;
    if (TSHIM_UNLIKELY(tshim_cfg.test_hold_lock_ms)) usleep(tshim_cfg.test_hold_lock_ms * 1000u);
    return true;
}

int tshim_region_reap_if_free(void)
{
    tshim_region *r = tshim_reg;
    if (!r) return 0;
    int rc = pthread_mutex_trylock(&r->lock);
    if (rc == EBUSY || !_acquired(r, rc)) return 0;
    int n = _reap_locked(r);
    tshim_region_unlock(r);
    return n;
}

void tshim_region_unlock(tshim_region *r)
{
    pthread_mutex_unlock(&r->lock);
}

int tshim_region_reap(void)
{
    tshim_region *r = tshim_reg;
    if (!r || !tshim_region_lock(r)) return 0;
    int n = _reap_locked(r);
    tshim_region_unlock(r);
    return n;
}

static bool _init_mutex(pthread_mutex_t *m)
{
    pthread_mutexattr_t a;
    if (pthread_mutexattr_init(&a) != 0) return false;
    bool ok = pthread_mutexattr_setpshared(&a, PTHREAD_PROCESS_SHARED) == 0 &&
              pthread_mutexattr_setrobust(&a, PTHREAD_MUTEX_ROBUST) == 0 &&
              pthread_mutex_init(m, &a) == 0;
    pthread_mutexattr_destroy(&a);
    return ok;
}

static void _init_layout(tshim_region *r)
{
    memset(r, 0, sizeof(*r));
    r->version = TSHIM_REGION_VERSION;
    r->size = sizeof(*r);
    memcpy(r->limit, tshim_cfg.mem_limit, sizeof(r->limit));
    r->last_reap_ns = _now_ns();
    int64_t now = _now_ns();
    for (int d = 0; d < TSHIM_MAX_DEVICES; d++) {
        atomic_store(&r->bucket[d].tokens_ns, 0);
        atomic_store(&r->bucket[d].last_refill_ns, now);
    }
}

static bool _layout_ok(const tshim_region *r)
{
    return r->magic == TSHIM_REGION_MAGIC && r->version == TSHIM_REGION_VERSION &&
           r->size == sizeof(*r);
}

/* Open or create the file. The creator holds flock() while it sizes and
 * initialises the region; the magic is written last. */
static tshim_region *_map_shared(const char *dir)
{
    char path[320];
    if (snprintf(path, sizeof(path), "%s/%s", dir, TSHIM_REGION_FILE) >= (int)sizeof(path))
        return NULL;
    int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0660);
    if (fd < 0) {
        TSHIM_LOG("region open failed", "path=%s errno=%d", path, errno);
        return NULL;
    }
    tshim_region *r = NULL;
    if (flock(fd, LOCK_EX) != 0) goto out;
    struct stat st;
    if (fstat(fd, &st) != 0) goto unlock;
    bool fresh = st.st_size == 0;
    if (fresh && ftruncate(fd, (off_t)sizeof(tshim_region)) != 0) goto unlock;
    if (!fresh && (size_t)st.st_size != sizeof(tshim_region)) {
        TSHIM_LOG("region layout mismatch", "path=%s size=%lld", path, (long long)st.st_size);
        goto unlock;
    }
    void *m = mmap(NULL, sizeof(tshim_region), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (m == MAP_FAILED) goto unlock;
    r = m;
    if (fresh || r->magic == 0) {
        _init_layout(r);
        if (!_init_mutex(&r->lock)) {
            munmap(m, sizeof(tshim_region));
            r = NULL;
            goto unlock;
        }
        atomic_thread_fence(memory_order_release);
        r->magic = TSHIM_REGION_MAGIC;
    } else if (!_layout_ok(r)) {
        TSHIM_LOG("region version mismatch", "path=%s version=%u", path, r->version);
        munmap(m, sizeof(tshim_region));
        r = NULL;
    }
unlock:
    flock(fd, LOCK_UN);
out:
    close(fd);
    return r;
}

tshim_region *tshim_region_map_file(const char *path)
{
    int fd = open(path, O_RDWR | O_CLOEXEC);
    if (fd < 0) return NULL;
    void *m = mmap(NULL, sizeof(tshim_region), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    if (m == MAP_FAILED) return NULL;
    if (!_layout_ok(m)) {
        munmap(m, sizeof(tshim_region));
        return NULL;
    }
    return m;
}

static tshim_region *_map_anonymous(void)
{
    void *m =
        mmap(NULL, sizeof(tshim_region), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED) return NULL;
    tshim_region *r = m;
    _init_layout(r);
    if (!_init_mutex(&r->lock)) {
        munmap(m, sizeof(tshim_region));
        return NULL;
    }
    r->magic = TSHIM_REGION_MAGIC;
    return r;
}

static void _after_fork_child(void)
{
    /* The child has no CUDA state of its parent's: it starts with no slot. */
    _my_slot = -1;
}

bool tshim_region_attach(void)
{
    if (atomic_load_explicit((_Atomic(tshim_region *) *)&tshim_reg, memory_order_acquire))
        return true;
    pthread_mutex_lock(&_attach_mu);
    if (!tshim_reg) {
        tshim_region *r = NULL;
        if (tshim_cfg.shared_dir[0]) r = _map_shared(tshim_cfg.shared_dir);
        if (!r) r = _map_anonymous();
        if (r) {
            pthread_atfork(NULL, NULL, _after_fork_child);
            atomic_store_explicit((_Atomic(tshim_region *) *)&tshim_reg, r, memory_order_release);
        }
    }
    pthread_mutex_unlock(&_attach_mu);
    return tshim_reg != NULL;
}

/* Under the lock: this process's slot, registering it on first use. */
static tshim_proc_slot *_my_slot_locked(tshim_region *r)
{
    /* fork() resets _my_slot in the child (pthread_atfork), so no getpid() here */
    if (_my_slot >= 0) return &r->slots[_my_slot];
    int pid = getpid();
    uint64_t st = tshim_proc_start_time(pid);
    for (int pass = 0; pass < 2; pass++) {
        for (int i = 0; i < TSHIM_REGION_SLOTS; i++) {
            tshim_proc_slot *s = &r->slots[i];
            if (s->pid != 0) continue;
            memset(s->used, 0, sizeof(s->used));
            s->start_time = st;
            s->pid = pid;
            _my_slot = i;
            return s;
        }
        _reap_locked(r);
    }
    return NULL; /* table full of live processes: usage counts in the total only */
}

/* The counters are updated with atomics so that the common case takes no lock:
 *   reserve: add to the total first (one atomic read-modify-write: that add is
 *            the check-and-add; if the new total is over the limit the add is
 *            undone and the caller fails), then add to this process's slot;
 *   release: subtract from the slot first, then from the total.
 * Two processes can never both keep an add that takes the total past the limit:
 * each sees the other's add in the value its own add returns. A process killed
 * between the two steps leaves the total too high (never too low): the error is
 * on the safe side, and the slow path's repair after EOWNERDEAD recomputes it.
 * The lock serialises slot registration, reaping and repair. */
static inline void _note_peak(tshim_region *r, int dev, uint64_t v)
{
    uint64_t p = __atomic_load_n(&r->peak[dev], __ATOMIC_RELAXED);
    while (v > p && !__atomic_compare_exchange_n(&r->peak[dev], &p, v, true, __ATOMIC_RELAXED,
                                                 __ATOMIC_RELAXED)) {
    }
}

/* One attempt; s may be NULL (slot table full). */
static bool _try_add(tshim_region *r, tshim_proc_slot *s, int dev, uint64_t bytes, uint64_t limit)
{
    uint64_t t = __atomic_add_fetch(&r->used[dev], bytes, __ATOMIC_ACQ_REL);
    if (limit && (t > limit || t < bytes)) {
        _sub_clamped(&r->used[dev], bytes);
        return false;
    }
    if (s) __atomic_add_fetch(&s->used[dev], bytes, __ATOMIC_RELAXED);
    _note_peak(r, dev, t);
    return true;
}

bool tshim_region_reserve(int dev, uint64_t bytes, uint64_t limit)
{
    tshim_region *r = tshim_reg;
    if (!r || dev < 0 || dev >= TSHIM_MAX_DEVICES) return r != NULL;
    if (limit && bytes > limit) return false;
    tshim_proc_slot *s = _my_slot >= 0 ? &r->slots[_my_slot] : NULL;
    /* Fast path: registered, and not the test hook that holds the lock. */
    if (TSHIM_LIKELY(s && !tshim_cfg.test_hold_lock_ms) && _try_add(r, s, dev, bytes, limit))
        return true;
    /* Slow path: register, and before refusing return the usage of dead processes. */
    if (!tshim_region_lock(r)) return false; /* fail closed */
    s = _my_slot_locked(r);
    bool ok = _try_add(r, s, dev, bytes, limit);
    if (!ok && _reap_locked(r) > 0) ok = _try_add(r, s, dev, bytes, limit);
    tshim_region_unlock(r);
    return ok;
}

void tshim_region_force(int dev, uint64_t bytes)
{
    if (!tshim_region_reserve(dev, bytes, 0))
        TSHIM_LOG("force failed", "bytes=%llu", (unsigned long long)bytes);
}

void tshim_region_release(int dev, uint64_t bytes)
{
    tshim_region *r = tshim_reg;
    if (!r || dev < 0 || dev >= TSHIM_MAX_DEVICES || !bytes) return;
    if (_my_slot >= 0) {
        /* Never return more than this process holds: no underflow anywhere. */
        uint64_t *mine = &r->slots[_my_slot].used[dev];
        uint64_t cur = __atomic_load_n(mine, __ATOMIC_RELAXED), take;
        do {
            take = bytes < cur ? bytes : cur;
        } while (!__atomic_compare_exchange_n(mine, &cur, cur - take, true, __ATOMIC_ACQ_REL,
                                              __ATOMIC_RELAXED));
        bytes = take;
    }
    _sub_clamped(&r->used[dev], bytes);
}

uint64_t tshim_region_used(int dev)
{
    tshim_region *r = tshim_reg;
    if (!r || dev < 0 || dev >= TSHIM_MAX_DEVICES) return 0;
    return __atomic_load_n(&r->used[dev], __ATOMIC_RELAXED);
}

/* A process's usage is not returned at its exit: destructors run before the
 * driver frees the process's memory (when its files close), and another
 * process reserving in between would take the container past its cap. The
 * slot is reaped once the process is gone (_proc_alive: a zombie holds no GPU
 * memory): by a reserve that would otherwise be refused, by the periodic reap
 * under the lock, and by cuMemGetInfo (tshim_region_reap_if_free). */
