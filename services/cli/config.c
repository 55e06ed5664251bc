/* config.c: endpoint and keypair from the environment and the credentials file. */
#include "services/cli/config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const char *env_nonempty(const char *name)
{
    const char *v = getenv(name);
    return v && *v ? v : NULL;
}

char *config_credentials_path(void)
{
    const char *xdg = env_nonempty("XDG_CONFIG_HOME");
    if (xdg) return ts_asprintf("%s/tessera/credentials", xdg);
    const char *home = env_nonempty("HOME");
    if (home) return ts_asprintf("%s/.config/tessera/credentials", home);
    return NULL;
}

static char *trim(char *s)
{
    while (*s == ' ' || *s == '\t')
        s++;
    size_t n = strlen(s);
    while (n && (s[n - 1] == ' ' || s[n - 1] == '\t' || s[n - 1] == '\n' || s[n - 1] == '\r'))
        s[--n] = '\0';
    return s;
}

/* Read "name = value" lines; unknown names are ignored (newer clients may add some). */
static bool read_file(const char *path, config_creds *file, ts_err *err)
{
    FILE *f = fopen(path, "r");
    if (!f) {
        if (errno == ENOENT) return true;
        ts_err_set(err, "cannot read %s: %s", path, strerror(errno));
        return false;
    }
    char line[1024];
    while (fgets(line, sizeof(line), f)) {
        char *s = trim(line);
        char *eq = strchr(s, '=');
        if (*s == '#' || !eq) continue;
        *eq = '\0';
        char *name = trim(s), *value = trim(eq + 1);
        char **slot = strcmp(name, "endpoint") == 0     ? &file->endpoint
                      : strcmp(name, "access_key") == 0 ? &file->access_key
                      : strcmp(name, "secret_key") == 0 ? &file->secret_key
                                                        : NULL;
        if (slot && *value) {
            free(*slot);
            *slot = ts_strdup(value);
        }
    }
    fclose(f);
    return true;
}

/* One pair of environment variables: both set, neither, or an error. */
static bool env_pair(const char *ak_name, const char *sk_name, config_creds *out, bool *found,
                     ts_err *err)
{
    const char *ak = env_nonempty(ak_name), *sk = env_nonempty(sk_name);
    *found = false;
    if (!ak && !sk) return true;
    if (!ak || !sk) {
        ts_err_set(err, "$%s is set but $%s is not", ak ? ak_name : sk_name,
                   ak ? sk_name : ak_name);
        return false;
    }
    out->access_key = ts_strdup(ak);
    out->secret_key = ts_strdup(sk);
    out->source = ts_asprintf("$%s", ak_name);
    *found = true;
    return true;
}

bool config_load(config_creds *out, const char *endpoint_flag, ts_err *err)
{
    memset(out, 0, sizeof(*out));
    config_creds file = {0};
    char *path = config_credentials_path();
    bool ok = !path || read_file(path, &file, err);
    bool found = false;
    if (ok) ok = env_pair("TESSERA_ACCESS_KEY", "TESSERA_SECRET_KEY", out, &found, err);
    if (ok && !found) ok = env_pair("BACKEND_ACCESS_KEY", "BACKEND_SECRET_KEY", out, &found, err);
    if (ok && !found && file.access_key && file.secret_key) {
        out->access_key = ts_strdup(file.access_key);
        out->secret_key = ts_strdup(file.secret_key);
        out->source = ts_strdup(path);
    }
    const char *ep = endpoint_flag && *endpoint_flag ? endpoint_flag : NULL;
    if (!ep) ep = env_nonempty("TESSERA_GATEWAY_URL");
    if (!ep) ep = env_nonempty("BACKEND_ENDPOINT");
    if (!ep) ep = file.endpoint;
    if (!ep) ep = CONFIG_DEFAULT_ENDPOINT;
    out->endpoint = ts_strdup(ep);
    config_creds_free(&file);
    free(path);
    if (!ok) config_creds_free(out);
    return ok;
}

void config_creds_free(config_creds *c)
{
    free(c->endpoint);
    free(c->access_key);
    free(c->secret_key);
    free(c->source);
    memset(c, 0, sizeof(*c));
}

static bool mkdir_p(char *dir, ts_err *err)
{
    for (char *p = dir + 1; *p; p++) {
        if (*p != '/') continue;
        *p = '\0';
        int rc = mkdir(dir, 0700);
        *p = '/';
        if (rc != 0 && errno != EEXIST) {
            ts_err_set(err, "cannot create %s: %s", dir, strerror(errno));
            return false;
        }
    }
    if (mkdir(dir, 0700) != 0 && errno != EEXIST) {
        ts_err_set(err, "cannot create %s: %s", dir, strerror(errno));
        return false;
    }
    return true;
}

bool config_save(const char *endpoint, const char *access_key, const char *secret_key, ts_err *err)
{
    char *path = config_credentials_path();
    if (!path) {
        ts_err_set(err, "neither $XDG_CONFIG_HOME nor $HOME is set");
        return false;
    }
    char *dir = ts_strdup(path);
    *strrchr(dir, '/') = '\0';
    char *tmp = ts_asprintf("%s.tmp.%ld", path, (long)getpid());
    bool ok = mkdir_p(dir, err);
    int fd = ok ? open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600) : -1;
    if (ok && fd < 0) {
        ts_err_set(err, "cannot write %s: %s", tmp, strerror(errno));
        ok = false;
    }
    if (ok) {
        char *text = ts_asprintf("# tessera credentials, written by `tessera login`\n"
                                 "endpoint = %s\naccess_key = %s\nsecret_key = %s\n",
                                 endpoint, access_key, secret_key);
        size_t len = strlen(text);
        ok = fchmod(fd, 0600) == 0 && write(fd, text, len) == (ssize_t)len && fsync(fd) == 0;
        if (close(fd) != 0) ok = false;
        if (ok && rename(tmp, path) != 0) ok = false;
        if (!ok) {
            ts_err_set(err, "cannot write %s: %s", path, strerror(errno));
            unlink(tmp);
        }
        free(text);
    }
    free(tmp);
    free(dir);
    free(path);
    return ok;
}

bool config_remove(bool *existed, ts_err *err)
{
    *existed = false;
    char *path = config_credentials_path();
    if (!path) return true;
    bool ok = true;
    if (unlink(path) == 0) {
        *existed = true;
    } else if (errno != ENOENT) {
        ts_err_set(err, "cannot remove %s: %s", path, strerror(errno));
        ok = false;
    }
    free(path);
    return ok;
}
