/* bootstrap.h: the first start of tessera-auth creates the default domain,
 * project, keypair and user policies, one superadmin and its admin keypair;
 * later starts change nothing. */
#ifndef AUTH_BOOTSTRAP_H
#define AUTH_BOOTSTRAP_H

#include "libcommon/svc.h"

typedef struct bootstrap_opts {
    const char *admin_email;      /* default admin@tessera.local */
    const char *admin_username;   /* default admin */
    const char *admin_password;   /* NULL or "": 20 random characters */
    const char *credentials_file; /* NULL or "": write none */
} bootstrap_opts;

/* Runs in one transaction under an advisory lock, so concurrent first starts
 * create one superadmin. When it creates the superadmin and credentials_file
 * is set, writes the file (mode 0600, atomically: temp file and rename) with
 * shell lines TESSERA_ADMIN_ACCESS_KEY='...', _SECRET_KEY, _EMAIL, _PASSWORD.
 * When a superadmin exists already, nothing changes (the file neither). */
bool bootstrap_run(svc *s, const bootstrap_opts *o, ts_err *err) TS_MUST_CHECK;

#endif
