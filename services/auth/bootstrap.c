/* bootstrap.c: create the defaults and the first superadmin (see
 * bootstrap.h). */
#include "bootstrap.h"

#include "libcommon/log.h"
#include "libcommon/sign.h"
#include "password.h"

#include <errno.h>
#include <fcntl.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Any constant distinct from pg_migrate's lock key. */
static const char lock_sql[] = "SELECT pg_advisory_xact_lock(hashtext('tessera-auth.bootstrap'))";

typedef struct creds {
    char access_key[SIGN_ACCESS_KEY_LEN + 1];
    char secret_key[SIGN_SECRET_KEY_LEN + 1];
    const char *email;
    const char *password;
} creds;

static bool exec_params(PGconn *conn, const char *what, const char *sql, int n,
                        const char *const *params, PGresult **out, ts_err *err)
{
    PGresult *r = PQexecParams(conn, sql, n, NULL, params, NULL, NULL, 0);
    ExecStatusType st = PQresultStatus(r);
    if (st != PGRES_COMMAND_OK && st != PGRES_TUPLES_OK) {
        ts_err_set(err, "%s: %s", what, PQresultErrorMessage(r));
        PQclear(r);
        return false;
    }
    if (out)
        *out = r;
    else
        PQclear(r);
    return true;
}

static void random_password(char *out, size_t len)
{
    static const char alphabet[] = "ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz23456789";
    for (size_t i = 0; i < len; i++)
        out[i] = alphabet[randombytes_uniform(sizeof(alphabet) - 1)];
    out[len] = '\0';
}

/* 'value' with single quotes escaped for a POSIX shell. */
static void put_quoted(FILE *f, const char *name, const char *value)
{
    fprintf(f, "%s='", name);
    for (const char *p = value; *p; p++) {
        if (*p == '\'')
            fputs("'\\''", f);
        else
            fputc(*p, f);
    }
    fputs("'\n", f);
}

/* Write path atomically with mode 0600: a temp file beside it, fsync, rename. */
static bool write_credentials(const char *path, const creds *c, ts_err *err)
{
    char *tmp = ts_asprintf("%s.tmp.%ld", path, (long)getpid());
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0) {
        ts_err_set(err, "credentials file %s: %s", tmp, strerror(errno));
        free(tmp);
        return false;
    }
    FILE *f = fdopen(fd, "w");
    if (!f) {
        ts_err_set(err, "credentials file %s: %s", tmp, strerror(errno));
        close(fd);
        unlink(tmp);
        free(tmp);
        return false;
    }
    fputs("# tessera-auth: the superadmin created on the first start (keep secret)\n", f);
    put_quoted(f, "TESSERA_ADMIN_ACCESS_KEY", c->access_key);
    put_quoted(f, "TESSERA_ADMIN_SECRET_KEY", c->secret_key);
    put_quoted(f, "TESSERA_ADMIN_EMAIL", c->email);
    put_quoted(f, "TESSERA_ADMIN_PASSWORD", c->password);
    bool ok = fflush(f) == 0 && fsync(fileno(f)) == 0;
    ok = (fclose(f) == 0) && ok;
    if (!ok || rename(tmp, path) != 0) {
        ts_err_set(err, "credentials file %s: %s", path, strerror(errno));
        unlink(tmp);
        free(tmp);
        return false;
    }
    free(tmp);
    return true;
}

/* Inside the transaction: everything the first start creates. */
static bool create_all(PGconn *conn, const bootstrap_opts *o, creds *c, const char *hash,
                       ts_err *err)
{
    static const char *const defaults[] = {
        "INSERT INTO auth.domains (name, description) VALUES ('default', 'the default domain')"
        " ON CONFLICT DO NOTHING",
        "INSERT INTO auth.keypair_resource_policies (name) VALUES ('default') ON CONFLICT DO "
        "NOTHING",
        "INSERT INTO auth.user_resource_policies (name) VALUES ('default') ON CONFLICT DO NOTHING",
    };
    for (size_t i = 0; i < TS_ARRAY_LEN(defaults); i++)
        if (!exec_params(conn, "defaults", defaults[i], 0, NULL, NULL, err)) return false;

    char project_id[TS_UUID_STRLEN], user_id[TS_UUID_STRLEN];
    ts_uuid4(project_id);
    ts_uuid4(user_id);
    const char *pp[] = {project_id};
    if (!exec_params(conn, "default project",
                     "INSERT INTO auth.projects (id, name, domain_name, description)"
                     " VALUES ($1::uuid, 'default', 'default', 'the default project')"
                     " ON CONFLICT (domain_name, name) DO NOTHING",
                     1, pp, NULL, err))
        return false;

    const char *up[] = {user_id, o->admin_email, o->admin_username, hash};
    if (!exec_params(conn, "superadmin",
                     "INSERT INTO auth.users (id, email, username, full_name, password_hash, role,"
                     " status, domain_name, resource_policy) VALUES ($1::uuid, $2, $3,"
                     " 'Administrator', $4, 'superadmin', 'active', 'default', 'default')",
                     4, up, NULL, err))
        return false;

    sign_new_keypair(c->access_key, c->secret_key);
    const char *kp[] = {c->access_key, c->secret_key, user_id};
    if (!exec_params(conn, "admin keypair",
                     "INSERT INTO auth.keypairs (access_key, secret_key, user_id, is_active,"
                     " is_admin, resource_policy, rate_limit)"
                     " VALUES ($1, $2, $3::uuid, true, true, 'default', 0)",
                     3, kp, NULL, err))
        return false;

    const char *mp[] = {user_id};
    return exec_params(conn, "membership",
                       "INSERT INTO auth.project_members (project_id, user_id)"
                       " SELECT id, $1::uuid FROM auth.projects"
                       " WHERE domain_name = 'default' AND name = 'default'",
                       1, mp, NULL, err);
}

bool bootstrap_run(svc *s, const bootstrap_opts *o, ts_err *err)
{
    char generated[21];
    const char *password = o->admin_password;
    if (!password || !*password) {
        random_password(generated, 20);
        password = generated;
    }
    if (strlen(password) < PASSWORD_MIN || strlen(password) > PASSWORD_MAX) {
        ts_err_set(err, "bootstrap.admin_password must be %d to %d characters", PASSWORD_MIN,
                   PASSWORD_MAX);
        return false;
    }
    const char *file = o->credentials_file && *o->credentials_file ? o->credentials_file : NULL;

    PGconn *conn = pg_pool_get(svc_pg(s), 30000, err);
    if (!conn) return false;
    bool ok = false, wrote = false;
    PGresult *r = NULL;
    creds c = {.email = o->admin_email, .password = password};
    if (!pg_begin(conn, err)) goto out;
    if (!exec_params(conn, "advisory lock", lock_sql, 0, NULL, NULL, err)) goto fail;
    if (!exec_params(conn, "look for a superadmin",
                     "SELECT count(*) FROM auth.users WHERE role = 'superadmin'", 0, NULL, &r, err))
        goto fail;
    long existing = atol(PQgetvalue(r, 0, 0));
    PQclear(r);
    if (existing > 0) {
        pg_rollback(conn);
        TLOG_INFO("bootstrap: a superadmin exists; nothing to do", "superadmins=%ld", existing);
        ok = true;
        goto out;
    }

    char hash[PASSWORD_HASH_MAX];
    if (!password_hash(password, hash)) {
        ts_err_set(err, "could not hash the admin password (out of memory)");
        goto fail;
    }
    if (!create_all(conn, o, &c, hash, err)) goto fail;
    /* The file first: if it cannot be written, nothing is created (otherwise
     * nobody would ever learn the keys). */
    if (file) {
        if (!write_credentials(file, &c, err)) goto fail;
        wrote = true;
    }
    if (!pg_commit(conn, err)) {
        if (wrote) unlink(file);
        goto out;
    }
    TLOG_INFO("bootstrap: created the default domain, project, policies and superadmin",
              "email=%s access_key=%s credentials_file=%s", o->admin_email, c.access_key,
              file ? file : "(none)");
    if (!file)
        TLOG_WARN(
            "bootstrap: no bootstrap.credentials_file: the admin keys are only in the database",
            "access_key=%s", c.access_key);
    ok = true;
    goto out;
fail:
    pg_rollback(conn);
out:
    sodium_memzero(generated, sizeof(generated));
    pg_pool_put(svc_pg(s), conn);
    return ok;
}
