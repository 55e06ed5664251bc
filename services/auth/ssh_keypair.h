/* ssh_keypair.h: Backend.AI's /auth/ssh-keypair for the signing keypair
 * (auth.keypair_configs): GET /v1/auth/ssh-keypair -> {ssh_public_key}
 * ("" when none); PATCH -> a new ed25519 keypair, {ssh_public_key,
 * ssh_private_key} (the private key is shown only here and to POST); POST
 * {pubkey, privkey} stores an uploaded OpenSSH pair after checking that they
 * belong together (ssh_keys.h). */
#ifndef AUTH_SSH_KEYPAIR_H
#define AUTH_SSH_KEYPAIR_H

#include "libcommon/svc.h"

void ssh_keypair_routes(svc *s);

#endif
