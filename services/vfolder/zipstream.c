/* zipstream.c: a streamed zip writer over a directory (zipstream.h). */
#include "zipstream.h"

#include "files.h"
#include "libcommon/log.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>

#define MAX_DEPTH 128
#define U32_MAX_ 0xFFFFFFFFULL
#define FLAG_DESCRIPTOR 0x0008
#define FLAG_UTF8 0x0800

typedef struct entry {
    char *name; /* relative, "dir/" for directories */
    bool dir;
    bool zip64; /* sizes may pass 4 GiB: zip64 local extra and descriptor */
    uint64_t stat_size;
    uint32_t mode;
    uint16_t dos_time, dos_date;
    uint32_t crc;
    uint64_t size; /* bytes actually sent */
    uint64_t offset;
} entry;

enum phase { P_HEADER, P_DATA, P_DESC, P_CENTRAL, P_END, P_DONE };

struct vf_zip {
    int dirfd;
    entry *e;
    size_t n, cap, max;
    uint64_t file_bytes;
    /* producing */
    enum phase phase;
    size_t cur;   /* entry (P_HEADER..P_DESC) or central record index */
    int fd;       /* the current file */
    uint64_t pos; /* bytes of the archive produced */
    uint64_t cd_start;
    unsigned char pend[1024 + 4096]; /* one header (name up to 4096) */
    char qname[2 * 4096 + 3];        /* a name quoted for the log */
    size_t pend_len, pend_off;
};

static void _advance(vf_zip *z);

/* ---- the walk -------------------------------------------------------------------- */

static void _dos_time(time_t t, uint16_t *tm_out, uint16_t *date_out)
{
    struct tm tm;
    gmtime_r(&t, &tm);
    if (tm.tm_year < 80) {
        *tm_out = 0;
        *date_out = (1 << 5) | 1; /* 1980-01-01 */
        return;
    }
    *tm_out = (uint16_t)((tm.tm_hour << 11) | (tm.tm_min << 5) | (tm.tm_sec / 2));
    *date_out = (uint16_t)(((tm.tm_year - 80) << 9) | ((tm.tm_mon + 1) << 5) | tm.tm_mday);
}

static int _add(vf_zip *z, const char *name, const struct stat *st, bool dir)
{
    if (z->n >= z->max) return -E2BIG;
    if (strlen(name) > 4000) return 0; /* cannot be a zip name here: left out */
    if (z->n == z->cap)
        z->e = ts_realloc(z->e, (z->cap = z->cap ? z->cap * 2 : 256) * sizeof(entry));
    entry *e = &z->e[z->n++];
    memset(e, 0, sizeof(*e));
    e->name = dir ? ts_asprintf("%s/", name) : ts_strdup(name);
    e->dir = dir;
    e->stat_size = dir ? 0 : (uint64_t)st->st_size;
    e->zip64 = e->stat_size >= U32_MAX_;
    e->mode = st->st_mode & 07777;
    _dos_time(st->st_mtime, &e->dos_time, &e->dos_date);
    z->file_bytes += e->stat_size;
    return 0;
}

static int _entry_cmp(const void *a, const void *b)
{
    return strcmp(((const entry *)a)->name, ((const entry *)b)->name);
}

/* The walk of one directory: where it is in the archive, and the first
 * error (-errno), which stops it. */
typedef struct walk {
    vf_zip *z;
    const char *prefix;
    int depth;
    int rc;
} walk;

static int _walk(vf_zip *z, int fd, const char *prefix, int depth);

static bool _walk_one(int dirfd, const char *name, const struct stat *st, void *arg)
{
    walk *w = arg;
    char *path = *w->prefix ? ts_asprintf("%s/%s", w->prefix, name) : ts_strdup(name);
    if (S_ISREG(st->st_mode)) {
        w->rc = _add(w->z, path, st, false);
    } else if (S_ISDIR(st->st_mode)) {
        w->rc = _add(w->z, path, st, true);
        int c = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (w->rc == 0 && c >= 0)
            w->rc = _walk(w->z, c, path, w->depth + 1);
        else if (c >= 0)
            close(c);
    }
    free(path);
    return w->rc == 0;
}

/* fd: an open directory (consumed); prefix: its name in the archive. 0 or
 * -errno. */
static int _walk(vf_zip *z, int fd, const char *prefix, int depth)
{
    if (depth > MAX_DEPTH) {
        close(fd);
        return -ELOOP;
    }
    walk w = {z, prefix, depth, 0};
    int err = 0;
    if (!vf_fs_each(fd, _walk_one, &w, &err)) return -err;
    return w.rc;
}

vf_zip *vf_zip_new(int dirfd, size_t max_entries, int *errnum)
{
    vf_zip *z = ts_calloc(1, sizeof(*z));
    z->dirfd = dirfd;
    z->fd = -1;
    z->max = max_entries ? max_entries : 1000000;
    int fd = openat(dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    int rc = fd < 0 ? -errno : _walk(z, fd, "", 0);
    if (rc != 0) {
        *errnum = -rc;
        vf_zip_free(z);
        return NULL;
    }
    if (z->n) qsort(z->e, z->n, sizeof(entry), _entry_cmp);
    /* Start as if after an entry numbered -1: the first header is pending. */
    z->phase = P_DESC;
    z->cur = (size_t)-1;
    _advance(z);
    *errnum = 0;
    return z;
}

size_t vf_zip_entries(const vf_zip *z)
{
    return z->n;
}

uint64_t vf_zip_file_bytes(const vf_zip *z)
{
    return z->file_bytes;
}

void vf_zip_free(vf_zip *z)
{
    if (!z) return;
    for (size_t i = 0; i < z->n; i++)
        free(z->e[i].name);
    free(z->e);
    if (z->fd >= 0) close(z->fd);
    if (z->dirfd >= 0) close(z->dirfd);
    free(z);
}

/* ---- records ------------------------------------------------------------------------ */

static void _u16(vf_zip *z, uint32_t v)
{
    z->pend[z->pend_len++] = (unsigned char)(v & 0xff);
    z->pend[z->pend_len++] = (unsigned char)((v >> 8) & 0xff);
}

static void _u32(vf_zip *z, uint64_t v)
{
    for (int i = 0; i < 4; i++)
        z->pend[z->pend_len++] = (unsigned char)((v >> (8 * i)) & 0xff);
}

static void _u64(vf_zip *z, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        z->pend[z->pend_len++] = (unsigned char)((v >> (8 * i)) & 0xff);
}

static void _bytes(vf_zip *z, const char *s, size_t n)
{
    memcpy(z->pend + z->pend_len, s, n);
    z->pend_len += n;
}

static void _local_header(vf_zip *z, entry *e)
{
    z->pend_len = z->pend_off = 0;
    e->offset = z->pos;
    size_t nlen = strlen(e->name);
    _u32(z, 0x04034b50);
    _u16(z, e->zip64 ? 45 : 20);
    _u16(z, FLAG_UTF8 | (e->dir ? 0 : FLAG_DESCRIPTOR));
    _u16(z, 0); /* stored */
    _u16(z, e->dos_time);
    _u16(z, e->dos_date);
    _u32(z, 0);                       /* crc: in the descriptor */
    _u32(z, e->zip64 ? U32_MAX_ : 0); /* sizes: in the descriptor */
    _u32(z, e->zip64 ? U32_MAX_ : 0);
    _u16(z, (uint32_t)nlen);
    _u16(z, e->zip64 ? 20 : 0);
    _bytes(z, e->name, nlen);
    if (e->zip64) {
        _u16(z, 0x0001);
        _u16(z, 16);
        _u64(z, 0);
        _u64(z, 0);
    }
}

static void _descriptor(vf_zip *z, const entry *e)
{
    z->pend_len = z->pend_off = 0;
    _u32(z, 0x08074b50);
    _u32(z, e->crc);
    if (e->zip64) {
        _u64(z, e->size);
        _u64(z, e->size);
    } else {
        _u32(z, e->size);
        _u32(z, e->size);
    }
}

static void _central(vf_zip *z, const entry *e)
{
    z->pend_len = z->pend_off = 0;
    size_t nlen = strlen(e->name);
    bool big_size = e->size >= U32_MAX_, big_off = e->offset >= U32_MAX_;
    uint16_t extra = (uint16_t)((big_size ? 16 : 0) + (big_off ? 8 : 0));
    bool z64 = e->zip64 || extra;
    _u32(z, 0x02014b50);
    _u16(z, (3 << 8) | 45); /* made by: unix, 4.5 */
    _u16(z, z64 ? 45 : 20);
    _u16(z, FLAG_UTF8 | (e->dir ? 0 : FLAG_DESCRIPTOR));
    _u16(z, 0);
    _u16(z, e->dos_time);
    _u16(z, e->dos_date);
    _u32(z, e->crc);
    _u32(z, big_size ? U32_MAX_ : e->size);
    _u32(z, big_size ? U32_MAX_ : e->size);
    _u16(z, (uint32_t)nlen);
    _u16(z, extra ? (uint32_t)extra + 4 : 0);
    _u16(z, 0); /* comment */
    _u16(z, 0); /* disk */
    _u16(z, 0); /* internal attributes */
    _u32(z, ((uint64_t)((e->dir ? 0040000 : 0100000) | e->mode) << 16) | (e->dir ? 0x10 : 0));
    _u32(z, big_off ? U32_MAX_ : e->offset);
    _bytes(z, e->name, nlen);
    if (extra) {
        _u16(z, 0x0001);
        _u16(z, extra);
        if (big_size) {
            _u64(z, e->size);
            _u64(z, e->size);
        }
        if (big_off) _u64(z, e->offset);
    }
}

static void _end(vf_zip *z)
{
    z->pend_len = z->pend_off = 0;
    uint64_t cd_size = z->pos - z->cd_start;
    bool z64 = z->n >= 0xFFFF || cd_size >= U32_MAX_ || z->cd_start >= U32_MAX_;
    if (z64) {
        uint64_t at = z->pos;
        _u32(z, 0x06064b50);
        _u64(z, 44);
        _u16(z, (3 << 8) | 45);
        _u16(z, 45);
        _u32(z, 0);
        _u32(z, 0);
        _u64(z, z->n);
        _u64(z, z->n);
        _u64(z, cd_size);
        _u64(z, z->cd_start);
        _u32(z, 0x07064b50);
        _u32(z, 0);
        _u64(z, at);
        _u32(z, 1);
    }
    _u32(z, 0x06054b50);
    _u16(z, 0);
    _u16(z, 0);
    _u16(z, z64 ? 0xFFFF : (uint32_t)z->n);
    _u16(z, z64 ? 0xFFFF : (uint32_t)z->n);
    _u32(z, z64 ? U32_MAX_ : cd_size);
    _u32(z, z64 ? U32_MAX_ : z->cd_start);
    _u16(z, 0);
}

/* ---- producing ------------------------------------------------------------------------ */

/* Open the current entry's file, confined and without following or blocking;
 * -1 when it is gone or no longer a regular file (then it is sent empty). */
static int _open_entry(vf_zip *z, const entry *e)
{
    int fd, err;
    if (!vf_fs_open(z->dirfd, e->name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK, 0, &fd, &err)) return -1;
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        close(fd);
        return -1;
    }
    return fd;
}

/* Move to the next phase after the pending bytes of the current one went out. */
static void _advance(vf_zip *z)
{
    switch (z->phase) {
    case P_HEADER: {
        entry *e = &z->e[z->cur];
        if (e->dir) {
            z->cur++;
            break; /* next header (or the central directory) */
        }
        e->crc = (uint32_t)crc32(0L, Z_NULL, 0);
        z->fd = _open_entry(z, e);
        if (z->fd < 0)
            TLOG_INFO("zip: entry left empty (gone or not a regular file now)", "name=%s",
                      tlog_quote(z->qname, sizeof(z->qname), e->name));
        z->phase = P_DATA;
        return;
    }
    case P_DATA:
        if (z->fd >= 0) close(z->fd);
        z->fd = -1;
        _descriptor(z, &z->e[z->cur]);
        z->phase = P_DESC;
        return;
    case P_DESC:
        z->cur++;
        break;
    case P_CENTRAL:
        z->cur++;
        if (z->cur < z->n) {
            _central(z, &z->e[z->cur]);
        } else {
            _end(z);
            z->phase = P_END;
        }
        return;
    case P_END:
        z->phase = P_DONE;
        return;
    case P_DONE:
        return;
    }
    /* After an entry: the next one, or the central directory. */
    if (z->cur < z->n) {
        _local_header(z, &z->e[z->cur]);
        z->phase = P_HEADER;
    } else {
        z->cd_start = z->pos;
        z->cur = 0;
        if (z->n) {
            _central(z, &z->e[0]);
            z->phase = P_CENTRAL;
        } else {
            _end(z);
            z->phase = P_END;
        }
    }
}

bool vf_zip_read(vf_zip *z, char *buf, size_t max, size_t *n_out)
{
    size_t out = 0;
    *n_out = 0;
    while (out < max && z->phase != P_DONE) {
        if (z->phase == P_DATA) {
            entry *e = &z->e[z->cur];
            uint64_t left = e->stat_size - e->size;
            if (z->fd < 0 || left == 0) {
                _advance(z);
                continue;
            }
            size_t want = max - out < left ? max - out : (size_t)left;
            ssize_t n = read(z->fd, buf + out, want);
            if (n < 0 && errno == EINTR) continue;
            if (n < 0) {
                char q[2 * 4096];
                TLOG_WARN("zip: read failed", "name=%s error=\"%s\"",
                          tlog_quote(q, sizeof(q), e->name), strerror(errno));
                return false;
            }
            if (n == 0) { /* shrank */
                _advance(z);
                continue;
            }
            e->crc = (uint32_t)crc32(e->crc, (const Bytef *)buf + out, (uInt)n);
            e->size += (uint64_t)n;
            out += (size_t)n;
            z->pos += (uint64_t)n;
            continue;
        }
        if (z->pend_off < z->pend_len) {
            size_t n = z->pend_len - z->pend_off;
            if (n > max - out) n = max - out;
            memcpy(buf + out, z->pend + z->pend_off, n);
            z->pend_off += n;
            out += n;
            z->pos += n;
            continue;
        }
        _advance(z);
    }
    *n_out = out;
    return true;
}
