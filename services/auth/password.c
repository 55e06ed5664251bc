/* password.c: argon2id hashing with a bound on concurrent computations (see
 * password.h). */
#include "password.h"

#include <pthread.h>
#include <semaphore.h>
#include <sodium.h>
#include <string.h>

static int concurrency = 2;
static sem_t hash_slots;
static pthread_once_t slots_once = PTHREAD_ONCE_INIT;
static pthread_once_t dummy_once = PTHREAD_ONCE_INIT;
static char dummy_hash[PASSWORD_HASH_MAX];

static void make_dummy(void);

static void init_slots(void)
{
    if (sem_init(&hash_slots, 0, (unsigned)concurrency) != 0) ts_panic("sem_init failed");
}

void password_configure(int hash_concurrency)
{
    concurrency = hash_concurrency < 1 ? 1 : hash_concurrency;
    pthread_once(&slots_once, init_slots);
    /* The hash unknown users are verified against, made now rather than on
     * the first unknown login (which would then take twice as long). */
    pthread_once(&dummy_once, make_dummy);
}

static void slot_take(void)
{
    pthread_once(&slots_once, init_slots);
    while (sem_wait(&hash_slots) != 0) {
    }
}

static void slot_give(void)
{
    sem_post(&hash_slots);
}

bool password_hash(const char *password, char out[PASSWORD_HASH_MAX])
{
    _Static_assert(PASSWORD_HASH_MAX >= crypto_pwhash_STRBYTES, "hash buffer too small");
    slot_take();
    int rc = crypto_pwhash_str(out, password, strlen(password), crypto_pwhash_OPSLIMIT_INTERACTIVE,
                               crypto_pwhash_MEMLIMIT_INTERACTIVE);
    slot_give();
    return rc == 0;
}

static void make_dummy(void)
{
    char pw[33];
    randombytes_buf(pw, 16);
    sodium_bin2hex(pw, sizeof(pw), (const unsigned char *)pw, 16);
    if (!password_hash(pw, dummy_hash)) ts_panic("cannot compute the dummy password hash");
}

bool password_verify(const char *hash, const char *password)
{
    if (!hash) {
        pthread_once(&dummy_once, make_dummy);
        hash = dummy_hash;
    }
    slot_take();
    int rc = crypto_pwhash_str_verify(hash, password, strlen(password));
    slot_give();
    return rc == 0 && hash != dummy_hash;
}
