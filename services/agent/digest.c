/* digest.c: sha256 content digests over libsodium, streamed. */
#include "services/agent/digest.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static pthread_once_t g_sodium_once = PTHREAD_ONCE_INIT;

static void _sodium_init_once(void)
{
    if (sodium_init() < 0) ts_panic("sodium_init failed");
}

void digest_init(digest_ctx *d)
{
    pthread_once(&g_sodium_once, _sodium_init_once);
    crypto_hash_sha256_init(&d->st);
    d->bytes = 0;
}

void digest_update(digest_ctx *d, const void *data, size_t len)
{
    if (len == 0) return;
    crypto_hash_sha256_update(&d->st, data, len);
    d->bytes += (int64_t)len;
}

void digest_final(digest_ctx *d, char out[DIGEST_STRLEN])
{
    unsigned char h[crypto_hash_sha256_BYTES];
    static const char hexd[] = "0123456789abcdef";
    crypto_hash_sha256_final(&d->st, h);
    memcpy(out, "sha256:", 7);
    for (size_t i = 0; i < sizeof(h); i++) {
        out[7 + 2 * i] = hexd[h[i] >> 4];
        out[7 + 2 * i + 1] = hexd[h[i] & 15];
    }
    out[7 + 2 * sizeof(h)] = '\0';
}

void digest_buf(const void *data, size_t len, char out[DIGEST_STRLEN])
{
    digest_ctx d;
    digest_init(&d);
    digest_update(&d, data, len);
    digest_final(&d, out);
}

bool digest_valid(const char *digest, ts_err *err)
{
    if (!digest || strncmp(digest, "sha256:", 7) != 0) {
        const char *colon = digest ? strchr(digest, ':') : NULL;
        if (colon)
            ts_err_set(err, "unsupported digest algorithm '%.*s' (only sha256)",
                       (int)(colon - digest > 32 ? 32 : colon - digest), digest);
        else
            ts_err_set(err, "malformed digest '%.80s'", digest ? digest : "");
        return false;
    }
    const char *h = digest + 7;
    size_t n = 0;
    for (; h[n]; n++)
        if (!((h[n] >= '0' && h[n] <= '9') || (h[n] >= 'a' && h[n] <= 'f'))) break;
    if (n != DIGEST_HEXLEN || h[n] != '\0') {
        ts_err_set(err, "malformed digest '%.80s'", digest);
        return false;
    }
    return true;
}

const char *digest_hex(const char *digest)
{
    return digest + 7;
}

bool digest_file(const char *path, char out[DIGEST_STRLEN], int64_t *size, ts_err *err)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        ts_err_set(err, "%s: %s", path, strerror(errno));
        return false;
    }
    digest_ctx d;
    digest_init(&d);
    char buf[65536];
    for (;;) {
        ssize_t n = read(fd, buf, sizeof(buf));
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) {
            ts_err_set(err, "%s: %s", path, strerror(errno));
            close(fd);
            return false;
        }
        if (n == 0) break;
        digest_update(&d, buf, (size_t)n);
    }
    close(fd);
    if (size) *size = d.bytes;
    digest_final(&d, out);
    return true;
}
