/* user_config.h: Backend.AI's /user-config for the signing keypair
 * (auth.keypair_configs):
 *   GET  /v1/user-config/bootstrap-script -> the script (a JSON string)
 *   POST /v1/user-config/bootstrap-script {script} -> {}
 *   GET  /v1/user-config/dotfiles[?path=] -> [{path, permission, data}] or
 *        {path, perm, data}
 *   POST | PATCH /v1/user-config/dotfiles {path, data, permission} -> {}
 *   DELETE /v1/user-config/dotfiles?path= (or {path}) -> {success: true}
 * Limits: a script or a dotfile up to 64 KiB, at most 100 dotfiles and
 * 64 KiB of them in all; a dotfile path is relative to the home directory,
 * without "." or ".." segments. The session context (session_context.c)
 * carries the bootstrap script to tessera-registry, which runs it in new
 * sessions that bring none of their own. */
#ifndef AUTH_USER_CONFIG_H
#define AUTH_USER_CONFIG_H

#include "admin.h"

#include "libcommon/svc.h"

#define USER_CONFIG_TEXT_MAX 65536
#define USER_CONFIG_DOTFILES_MAX 100
/* A dotfile's path: libcommon/home_path.h. */

void user_config_routes(svc *s);

/* admin_begin for the caller's own settings, which are per keypair: any
 * signed caller (a login without a keypair gets the problem). */
bool user_config_begin(admin_req *a, svc *s, http_req *req, http_resp *resp) TS_MUST_CHECK;
/* A column of the caller keypair's settings (a constant name) as text, ""
 * when unset (heap); NULL after a problem in a->fr.resp. */
char *user_config_column(admin_req *a, const char *column, const char *what);
/* After a committed change of the caller keypair's settings that its session
 * context shows (bootstrap script, dotfiles, SSH public key): the contexts
 * cached by tessera-registry and others are dropped (KeypairChanged). */
void user_config_changed(admin_req *a);

#endif
