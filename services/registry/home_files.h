/* home_files.h: the files a session's kernels get in /home/work when they
 * are created (CreateKernel.home_files, docs/sessions.md "Your files in
 * every session"): the owner keypair's dotfiles (Backend.AI's
 * /user-config/dotfiles) and, when the keypair has an SSH keypair
 * (/auth/ssh-keypair), its public key as .ssh/authorized_keys (0600) unless
 * a dotfile has that path. Taken from the owner's session context when the
 * session is created (sessions.home_files: [{"path", "mode", "data"}]); the
 * agent writes each file only where none exists yet. */
#ifndef REGISTRY_HOME_FILES_H
#define REGISTRY_HOME_FILES_H

#include "pbutil.h"
#include "tessera/v1/agent_cmd.pb-c.h"

#include <jansson.h>

#define HOME_FILES_AUTHORIZED_KEYS ".ssh/authorized_keys"
#define HOME_FILES_SSH_CONFIG ".ssh/config"

/* The stored array for a session of the owner whose session context is ctx
 * (its "dotfiles" [{path, perm: "644", data}] and "ssh_public_key"); a new
 * reference. Entries with a path or permission auth would not have stored
 * are left out. */
json_t *home_files_from_context(const json_t *ctx);

/* A cluster session's: its SSH public key added to .ssh/authorized_keys
 * (made when there is none), and .ssh/config naming the other kernels'
 * port 2200 and the session's key (/home/config/ssh/id_cluster) unless a
 * dotfile has that path (docs/sessions.md, "Cluster sessions"). */
void home_files_add_cluster(json_t *files, const char *public_key);

/* The stored array's text -> HomeFile list (in a; *n entries). */
Tessera__V1__HomeFile **home_files_pb(arena *a, const char *text, size_t *n);

#endif
