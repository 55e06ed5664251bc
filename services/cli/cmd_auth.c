/* cmd_auth.c: login, logout, whoami, password. Prompts go to stderr; a
 * password is read without echo from a terminal (termios), else as a line of
 * stdin (so scripts can pipe it; --password-stdin says so explicitly). */
#include "services/cli/commands.h"
#include "services/cli/output.h"

#include <getopt.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <termios.h>
#include <unistd.h>

/* ---- reading from the user ------------------------------------------------------- */

static struct termios g_saved_tty;
static volatile sig_atomic_t g_tty_changed;

static void restore_tty_and_exit(int sig)
{
    if (g_tty_changed) tcsetattr(STDIN_FILENO, TCSAFLUSH, &g_saved_tty);
    signal(sig, SIG_DFL);
    raise(sig);
}

/* One line of stdin without its end of line; NULL at end of input. */
static char *read_line(void)
{
    char *line = NULL;
    size_t cap = 0;
    ssize_t n = getline(&line, &cap, stdin);
    if (n < 0) {
        free(line);
        return NULL;
    }
    while (n && (line[n - 1] == '\n' || line[n - 1] == '\r'))
        line[--n] = '\0';
    return line;
}

static char *prompt_line(const char *prompt, bool interactive)
{
    if (interactive) fputs(prompt, stderr);
    return read_line();
}

/* A password: without echo when stdin is a terminal and may prompt. */
static char *prompt_secret(const char *prompt, bool interactive)
{
    if (!interactive) return read_line();
    /* Echo goes off before the prompt shows (as getpass does): whatever the
     * user types after seeing it is never echoed, and nothing typed is
     * flushed away. */
    struct termios quiet;
    bool tty = tcgetattr(STDIN_FILENO, &g_saved_tty) == 0;
    if (tty) {
        quiet = g_saved_tty;
        quiet.c_lflag &= ~(tcflag_t)ECHO;
        quiet.c_lflag |= ECHONL;
        signal(SIGINT, restore_tty_and_exit);
        signal(SIGTERM, restore_tty_and_exit);
        g_tty_changed = tcsetattr(STDIN_FILENO, TCSAFLUSH, &quiet) == 0;
    }
    fputs(prompt, stderr);
    fflush(stderr);
    char *line = read_line();
    if (g_tty_changed) tcsetattr(STDIN_FILENO, TCSAFLUSH, &g_saved_tty);
    g_tty_changed = 0;
    return line;
}

static void wipe_free(char *s)
{
    if (!s) return;
    explicit_bzero(s, strlen(s));
    free(s);
}

/* getopt_long over a command's argv; --help prints its usage. Returns the
 * option, -1 at the end, or -2 after printing a usage error (or the help:
 * then *rc is CLI_OK). */
static int next_opt(const cli_command *self, int argc, char **argv, const char *shortopts,
                    const struct option *longopts, cli_status *rc)
{
    opterr = 0;
    int opt = getopt_long(argc, argv, shortopts, longopts, NULL);
    if (opt == 'h') {
        cli_command_help(self, stdout);
        *rc = CLI_OK;
        return -2;
    }
    if (opt == '?' || opt == ':') {
        *rc = cli_usage(self->name, NULL, "%s '%s'",
                        opt == ':' ? "missing value for" : "unknown option", argv[optind - 1]);
        return -2;
    }
    return opt;
}

static cli_status no_arguments_left(const cli_command *self, int argc, char **argv)
{
    if (optind < argc) return cli_usage(self->name, NULL, "unexpected argument '%s'", argv[optind]);
    return CLI_OK;
}

/* ---- login / logout ------------------------------------------------------------- */

int cmd_login(cli *c, const cli_command *self, int argc, char **argv)
{
    static const struct option longopts[] = {
        {"domain", required_argument, NULL, 'd'},
        {"username", required_argument, NULL, 'u'},
        {"email", required_argument, NULL, 'u'},
        {"password-stdin", no_argument, NULL, 'p'},
        {"json", no_argument, NULL, 'j'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    const char *domain_flag = NULL, *user_flag = NULL;
    bool pw_stdin = false;
    int opt;
    cli_status rc = CLI_OK;
    optind = 0;
    while ((opt = next_opt(self, argc, argv, "+d:u:h", longopts, &rc)) >= 0) {
        switch (opt) {
        case 'd':
            domain_flag = optarg;
            break;
        case 'u':
            user_flag = optarg;
            break;
        case 'p':
            pw_stdin = true;
            break;
        case 'j':
            c->json = true;
            break;
        }
    }
    if (opt == -2) return rc;
    if ((rc = no_arguments_left(self, argc, argv)) != CLI_OK) return rc;
    if (pw_stdin && !user_flag)
        return cli_usage(self->name, NULL,
                         "--password-stdin needs --username (stdin is the password)");

    bool interactive = !pw_stdin && isatty(STDIN_FILENO);
    char *domain = domain_flag   ? ts_strdup(domain_flag)
                   : interactive ? prompt_line("Domain [default]: ", true)
                                 : NULL;
    if (!domain || !*domain) {
        free(domain);
        domain = ts_strdup("default");
    }
    char *user = user_flag ? ts_strdup(user_flag) : prompt_line("Email or username: ", interactive);
    char *password = user && *user ? prompt_secret("Password: ", interactive) : NULL;
    if (!user || !*user || !password || !*password) {
        free(domain);
        free(user);
        wipe_free(password);
        return cli_usage(self->name, NULL, "a user name and a password are needed");
    }

    json_t *body = json_pack("{s:s, s:s, s:s, s:s}", "type", "keypair", "domain", domain,
                             "username", user, "password", password);
    json_t *answer = NULL;
    rc = client_call(c, "POST", "/auth/authorize", body, false, &answer);
    json_t *data = json_object_get(answer, "data");
    const char *ak = json_string_value(json_object_get(data, "access_key"));
    const char *sk = json_string_value(json_object_get(data, "secret_key"));
    if (rc == CLI_OK && (!ak || !sk)) {
        fprintf(stderr, "tessera: the gateway's answer to /auth/authorize has no keypair\n");
        rc = CLI_FAIL;
    }
    ts_err err = {{0}};
    if (rc == CLI_OK && !config_save(c->creds.endpoint, ak, sk, &err)) {
        fprintf(stderr, "tessera: %s\n", err.msg);
        rc = CLI_FAIL;
    }
    if (rc == CLI_OK && c->json) {
        out_json(answer);
    } else if (rc == CLI_OK) {
        char *path = config_credentials_path();
        printf("Logged in to %s as %s (domain %s, role %s).\nAccess key %s saved in %s\n",
               c->creds.endpoint, user, domain,
               json_string_value(json_object_get(data, "role")) ?: "?", ak, path);
        free(path);
    }
    const char *env = getenv("TESSERA_ACCESS_KEY")   ? "TESSERA_ACCESS_KEY"
                      : getenv("BACKEND_ACCESS_KEY") ? "BACKEND_ACCESS_KEY"
                                                     : NULL;
    if (rc == CLI_OK && env)
        fprintf(stderr, "tessera: note: $%s is set and is used instead of the saved keypair\n",
                env);
    json_decref(answer);
    json_decref(body);
    free(domain);
    free(user);
    wipe_free(password);
    return rc;
}

int cmd_logout(cli *c, const cli_command *self, int argc, char **argv)
{
    static const struct option longopts[] = {{"help", no_argument, NULL, 'h'}, {NULL, 0, NULL, 0}};
    int opt;
    cli_status rc = CLI_OK;
    (void)c;
    optind = 0;
    while ((opt = next_opt(self, argc, argv, "+h", longopts, &rc)) >= 0) {
    }
    if (opt == -2) return rc;
    if ((rc = no_arguments_left(self, argc, argv)) != CLI_OK) return rc;
    bool existed = false;
    ts_err err = {{0}};
    if (!config_remove(&existed, &err)) {
        fprintf(stderr, "tessera: %s\n", err.msg);
        return CLI_FAIL;
    }
    char *path = config_credentials_path();
    if (existed)
        printf("Logged out: removed %s\n", path);
    else
        printf("Not logged in (no %s)\n", path ? path : "credentials file");
    free(path);
    return CLI_OK;
}

/* ---- whoami / password ------------------------------------------------------------ */

int cmd_whoami(cli *c, const cli_command *self, int argc, char **argv)
{
    static const struct option longopts[] = {{"project", required_argument, NULL, 'g'},
                                             {"json", no_argument, NULL, 'j'},
                                             {"help", no_argument, NULL, 'h'},
                                             {NULL, 0, NULL, 0}};
    const char *project = NULL;
    int opt;
    cli_status rc = CLI_OK;
    optind = 0;
    while ((opt = next_opt(self, argc, argv, "+h", longopts, &rc)) >= 0) {
        if (opt == 'g') project = optarg;
        if (opt == 'j') c->json = true;
    }
    if (opt == -2) return rc;
    if ((rc = no_arguments_left(self, argc, argv)) != CLI_OK) return rc;
    if (!client_has_keys(c)) return CLI_FAIL;

    char *path = ts_strdup("/auth/role");
    if (project) client_query_add(&path, "group", project);
    json_t *role = NULL, *kp = NULL, *user = NULL;
    rc = client_call(c, "GET", path, NULL, true, &role);
    free(path);
    char *ak = httpc_escape(c->creds.access_key);
    path = ts_asprintf("/admin/keypairs/%s", ak);
    if (rc == CLI_OK) rc = client_call(c, "GET", path, NULL, true, &kp);
    free(path);
    free(ak);
    const char *uid = json_string_value(json_object_get(kp, "user_id"));
    if (rc == CLI_OK && uid) {
        char *eid = httpc_escape(uid);
        path = ts_asprintf("/admin/users/%s", eid);
        rc = client_call(c, "GET", path, NULL, true, &user);
        free(path);
        free(eid);
    }
    if (rc == CLI_OK) {
        json_t *me = json_pack("{s:s, s:s, s:s, s:O?, s:O?}", "endpoint", c->creds.endpoint,
                               "credentials", c->creds.source, "access_key", c->creds.access_key,
                               "role", role, "user", user);
        if (c->json) {
            out_json(me);
        } else {
            json_t *flat =
                json_pack("{s:s, s:s, s:s}", "endpoint", c->creds.endpoint, "credentials",
                          c->creds.source, "access_key", c->creds.access_key);
            static const char *const keys[] = {"id",          "email", "username", "full_name",
                                               "domain_name", "role",  "status",   NULL};
            for (size_t i = 0; keys[i]; i++) {
                json_t *v = json_object_get(user, keys[i]);
                if (v) json_object_set(flat, keys[i], v);
            }
            json_object_update(flat, role);
            out_record(flat, NULL);
            json_decref(flat);
        }
        json_decref(me);
    }
    json_decref(role);
    json_decref(kp);
    json_decref(user);
    return rc;
}

int cmd_password(cli *c, const cli_command *self, int argc, char **argv)
{
    static const struct option longopts[] = {{"password-stdin", no_argument, NULL, 'p'},
                                             {"help", no_argument, NULL, 'h'},
                                             {NULL, 0, NULL, 0}};
    bool pw_stdin = false;
    int opt;
    cli_status rc = CLI_OK;
    optind = 0;
    while ((opt = next_opt(self, argc, argv, "+h", longopts, &rc)) >= 0) {
        if (opt == 'p') pw_stdin = true;
    }
    if (opt == -2) return rc;
    if ((rc = no_arguments_left(self, argc, argv)) != CLI_OK) return rc;
    if (!client_has_keys(c)) return CLI_FAIL;
    bool interactive = !pw_stdin && isatty(STDIN_FILENO);
    char *old = prompt_secret("Current password: ", interactive);
    char *new1 = old ? prompt_secret("New password: ", interactive) : NULL;
    char *new2 = new1 ? prompt_secret("New password again: ", interactive) : NULL;
    if (!old || !new1 || !new2 || !*new1) {
        rc = cli_usage(self->name, NULL, "the current password and the new one twice are needed");
    } else if (strcmp(new1, new2) != 0) {
        fprintf(stderr, "tessera: the two new passwords differ; nothing changed\n");
        rc = CLI_FAIL;
    } else {
        json_t *body = json_pack("{s:s, s:s, s:s}", "old_password", old, "new_password", new1,
                                 "new_password2", new2);
        json_t *answer = NULL;
        rc = client_call(c, "POST", "/auth/update-password", body, true, &answer);
        if (rc == CLI_OK) printf("Password changed.\n");
        json_decref(answer);
        json_decref(body);
    }
    wipe_free(old);
    wipe_free(new1);
    wipe_free(new2);
    return rc;
}
