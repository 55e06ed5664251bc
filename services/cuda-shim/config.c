/* config.c: the shim's configuration, read once, and its rate-limited log.
 *
 * Source, first found wins (the agent writes the file and mounts it read-only, so
 * a process cannot lift its own cap by changing its environment):
 *   1. /etc/tessera/cuda-shim.conf
 *   2. the file named by TESSERA_CUDA_CONFIG
 *   3. the environment: TESSERA_CUDA_MEM_LIMIT, TESSERA_CUDA_COMPUTE_SHARE,
 *      TESSERA_CUDA_SHARED_DIR, TESSERA_CUDA_DEBUG, TESSERA_CUDA_VISIBLE_UUIDS,
 *      TESSERA_CUDA_TEST_HOLD_LOCK_MS
 * The file has "key = value" lines with the same names in lower case without the
 * prefix (mem_limit, compute_share, shared_dir, debug, visible_uuids); '#' starts
 * a comment. A malformed value is ignored (the default stays). */
#include "services/cuda-shim/shim.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#define TSHIM_CONFIG_PATH "/etc/tessera/cuda-shim.conf"

tshim_config tshim_cfg = {.compute_share = 1.0};

bool tshim_parse_size(const char *s, uint64_t *out)
{
    while (*s == ' ')
        s++;
    if (*s < '0' || *s > '9') return false;
    errno = 0;
    char *end;
    double v = strtod(s, &end);
    if (errno || end == s || v < 0) return false;
    uint64_t mult = 1;
    switch (*end) {
    case 'k':
    case 'K':
        mult = 1ull << 10;
        end++;
        break;
    case 'm':
    case 'M':
        mult = 1ull << 20;
        end++;
        break;
    case 'g':
    case 'G':
        mult = 1ull << 30;
        end++;
        break;
    case 't':
    case 'T':
        mult = 1ull << 40;
        end++;
        break;
    default:
        break;
    }
    if (*end == 'i' || *end == 'I') end++;
    if (*end == 'b' || *end == 'B') end++;
    while (*end == ' ')
        end++;
    if (*end != '\0') return false;
    double bytes = v * (double)mult;
    if (bytes >= 18446744073709551615.0) return false;
    *out = (uint64_t)bytes;
    return true;
}

bool tshim_parse_mem_limit(const char *s, uint64_t limit[TSHIM_MAX_DEVICES])
{
    uint64_t out[TSHIM_MAX_DEVICES] = {0};
    char buf[512];
    if (strlen(s) >= sizeof(buf)) return false;
    strcpy(buf, s);
    if (!strchr(buf, ':')) { /* one value for every device */
        uint64_t v;
        if (!tshim_parse_size(buf, &v)) return false;
        for (int d = 0; d < TSHIM_MAX_DEVICES; d++)
            out[d] = v;
    } else {
        char *save = NULL;
        for (char *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
            char *colon = strchr(tok, ':');
            if (!colon) return false;
            *colon = '\0';
            char *end;
            long dev = strtol(tok, &end, 10);
            if (end == tok || *end != '\0' || dev < 0 || dev >= TSHIM_MAX_DEVICES) return false;
            if (!tshim_parse_size(colon + 1, &out[dev])) return false;
        }
    }
    memcpy(limit, out, sizeof(out));
    return true;
}

bool tshim_parse_uuid_list(const char *s, char out[TSHIM_MAX_DEVICES][TSHIM_UUID_LEN], int *count)
{
    char list[TSHIM_MAX_DEVICES][TSHIM_UUID_LEN];
    int n = 0;
    const char *p = s;
    for (;;) {
        while (*p == ' ')
            p++;
        const char *end = strchr(p, ',');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        while (len > 0 && p[len - 1] == ' ')
            len--;
        if (n == TSHIM_MAX_DEVICES || len <= 4 || len >= TSHIM_UUID_LEN || strncmp(p, "GPU-", 4))
            return false;
        for (size_t i = 4; i < len; i++)
            if (!strchr("0123456789abcdefABCDEF-", p[i])) return false;
        memcpy(list[n], p, len);
        list[n++][len] = '\0';
        if (!end) break;
        p = end + 1;
    }
    memcpy(out, list, sizeof(list[0]) * (size_t)n);
    *count = n;
    return true;
}

static void _set(const char *key, const char *val)
{
    if (!strcasecmp(key, "mem_limit")) {
        uint64_t lim[TSHIM_MAX_DEVICES];
        if (tshim_parse_mem_limit(val, lim)) memcpy(tshim_cfg.mem_limit, lim, sizeof(lim));
    } else if (!strcasecmp(key, "compute_share")) {
        char *end;
        double v = strtod(val, &end);
        if (end != val && v >= 0.01 && v <= 1.0) tshim_cfg.compute_share = v;
    } else if (!strcasecmp(key, "shared_dir")) {
        if (strlen(val) < sizeof(tshim_cfg.shared_dir)) strcpy(tshim_cfg.shared_dir, val);
    } else if (!strcasecmp(key, "debug")) {
        tshim_cfg.debug = val[0] && strcmp(val, "0") != 0;
    } else if (!strcasecmp(key, "visible_uuids")) {
        int n = 0;
        if (tshim_parse_uuid_list(val, tshim_cfg.visible_uuids, &n))
            tshim_cfg.n_visible_uuids = n;
        else
            tshim_cfg.n_visible_uuids = 0; /* malformed: no filtering, as without the key */
    } else if (!strcasecmp(key, "test_hold_lock_ms")) {
        tshim_cfg.test_hold_lock_ms = (unsigned)strtoul(val, NULL, 10);
    }
}

static char *_trim(char *s)
{
    while (*s == ' ' || *s == '\t')
        s++;
    char *e = s + strlen(s);
    while (e > s && (e[-1] == ' ' || e[-1] == '\t' || e[-1] == '\n' || e[-1] == '\r'))
        *--e = 0;
    return s;
}

static bool _load_file(const char *path)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return false;
    char buf[4096];
    ssize_t n = read(fd, buf, sizeof(buf) - 1);
    close(fd);
    if (n < 0) return false;
    buf[n] = '\0';
    char *save = NULL;
    for (char *line = strtok_r(buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        char *hash = strchr(line, '#');
        if (hash) *hash = '\0';
        char *eq = strchr(line, '=');
        if (!eq) continue;
        *eq = '\0';
        _set(_trim(line), _trim(eq + 1));
    }
    return true;
}

void tshim_config_load(void)
{
    /* The one place the shim reads the environment. */
    const char *alt = getenv("TESSERA_CUDA_CONFIG");
    if (!_load_file(TSHIM_CONFIG_PATH) && !(alt && *alt && _load_file(alt))) {
        static const struct {
            const char *env, *key;
        } map[] = {{"TESSERA_CUDA_MEM_LIMIT", "mem_limit"},
                   {"TESSERA_CUDA_COMPUTE_SHARE", "compute_share"},
                   {"TESSERA_CUDA_SHARED_DIR", "shared_dir"},
                   {"TESSERA_CUDA_DEBUG", "debug"},
                   {"TESSERA_CUDA_VISIBLE_UUIDS", "visible_uuids"},
                   {"TESSERA_CUDA_TEST_HOLD_LOCK_MS", "test_hold_lock_ms"}};
        for (size_t i = 0; i < sizeof(map) / sizeof(map[0]); i++) {
            const char *v = getenv(map[i].env);
            if (v) _set(map[i].key, v);
        }
    }
    for (int d = 0; d < TSHIM_MAX_DEVICES; d++)
        if (tshim_cfg.mem_limit[d]) tshim_cfg.any_mem_limit = true;
    TSHIM_LOG("config", "mem_limit0=%llu compute_share=%.2f shared_dir=%s visible_uuids=%d",
              (unsigned long long)tshim_cfg.mem_limit[0], tshim_cfg.compute_share,
              tshim_cfg.shared_dir[0] ? tshim_cfg.shared_dir : "(private)",
              tshim_cfg.n_visible_uuids);
}

void tshim_log(const char *msg, const char *kvfmt, ...)
{
    static _Atomic int64_t window_s;
    static atomic_int lines;
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
    if (atomic_exchange(&window_s, ts.tv_sec) != ts.tv_sec) atomic_store(&lines, 0);
    if (atomic_fetch_add(&lines, 1) >= 20) return;
    char line[512];
    int n = snprintf(line, sizeof(line), "level=debug component=cuda-shim pid=%d msg=\"%s\" ",
                     (int)getpid(), msg);
    if (n < 0 || n >= (int)sizeof(line)) return;
    va_list ap;
    va_start(ap, kvfmt);
    int m = vsnprintf(line + n, sizeof(line) - (size_t)n - 1, kvfmt, ap);
    va_end(ap);
    if (m < 0) return;
    n += m < (int)sizeof(line) - n - 1 ? m : (int)sizeof(line) - n - 2;
    line[n++] = '\n';
    ssize_t w = write(2, line, (size_t)n);
    (void)w;
}
