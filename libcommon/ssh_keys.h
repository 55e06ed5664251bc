/* ssh_keys.h: SSH keypairs in OpenSSH's formats for Backend.AI's
 * /auth/ssh-keypair: ed25519 keys made with libsodium, and the check that an
 * uploaded public key is the one its private key holds. No network, no
 * database: pure functions. */
#ifndef TESSERA_SSH_KEYS_H
#define TESSERA_SSH_KEYS_H

#include "libcommon/common.h"

/* Largest key texts we store (an RSA-4096 private key is about 3.4 KB). */
#define SSH_KEYS_PUBLIC_MAX 8192
#define SSH_KEYS_PRIVATE_MAX 16384

/* A new ed25519 keypair: *pub the authorized_keys line
 * "ssh-ed25519 AAAA... comment\n", *priv an unencrypted
 * "-----BEGIN OPENSSH PRIVATE KEY-----" block (both heap strings). comment:
 * printable ASCII, up to 128 bytes. False (err set) only when randomness or
 * encoding fails. */
bool ssh_keys_generate(const char *comment, char **pub, char **priv, ts_err *err) TS_MUST_CHECK;

/* Is priv an unencrypted OpenSSH private key ("openssh-key-v1", one key,
 * cipher none) whose public key is the one in pub ("<type> <base64>
 * [comment]")? For ed25519 the secret key must also derive that public key.
 * False with the reason in err. */
bool ssh_keys_check_pair(const char *pub, const char *priv, ts_err *err) TS_MUST_CHECK;

#endif
