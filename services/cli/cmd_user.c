/* cmd_user.c: the caller's own settings (docs/sessions.md "Your bootstrap
 * script and dotfiles"): `tessera user-config bootstrap-script|dotfile ...`,
 * `tessera ssh-keypair show|refresh`, and `tessera admin announcement
 * get|set` (setting: superadmins), against the gateway's /user-config,
 * /auth/ssh-keypair and /manager/announcement. */
#include "services/cli/commands.h"
#include "services/cli/output.h"

#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define TEXT_MAX 65536

/* The text of FILE ("-": stdin), up to TEXT_MAX bytes; NULL after a message. */
static char *_read_text(const char *file)
{
    FILE *f = strcmp(file, "-") == 0 ? stdin : fopen(file, "rb");
    if (!f) {
        fprintf(stderr, "tessera: cannot read %s: %m\n", file);
        return NULL;
    }
    char *buf = ts_malloc(TEXT_MAX + 2);
    size_t n = fread(buf, 1, TEXT_MAX + 1, f);
    bool err = ferror(f);
    if (f != stdin) fclose(f);
    if (err || n > TEXT_MAX || memchr(buf, 0, n)) {
        fprintf(stderr, "tessera: %s: %s\n", file,
                err            ? "read error"
                : n > TEXT_MAX ? "larger than 64 KiB"
                               : "holds NUL bytes");
        free(buf);
        return NULL;
    }
    buf[n] = '\0';
    return buf;
}

/* Call, then print the answer as JSON (--json) or with print(answer). */
static int _call(cli *c, const char *method, const char *path, json_t *body,
                 void (*print)(json_t *answer))
{
    json_t *v = NULL;
    int rc = client_call(c, method, path, body, true, &v);
    json_decref(body);
    if (rc == CLI_OK) {
        if (c->json)
            out_json(v ? v : json_null());
        else
            print(v);
    }
    json_decref(v);
    return rc;
}

static void _print_string(json_t *v)
{
    fputs(json_is_string(v) ? json_string_value(v) : "", stdout);
}

static void _print_done(json_t *v)
{
    (void)v;
    printf("Done.\n");
}

/* Strip "--json" anywhere in argv (setting c->json); returns the new argc. */
static int _json_flag(cli *c, int argc, char **argv)
{
    int n = 0;
    for (int i = 0; i < argc; i++) {
        if (strcmp(argv[i], "--json") == 0)
            c->json = true;
        else
            argv[n++] = argv[i];
    }
    return n;
}

/* ---- tessera user-config ----------------------------------------------------------- */

static const char user_config_help[] =
    "Usage: tessera user-config bootstrap-script get\n"
    "       tessera user-config bootstrap-script set FILE      (FILE \"-\": stdin; \"\" clears)\n"
    "       tessera user-config dotfile list\n"
    "       tessera user-config dotfile get PATH\n"
    "       tessera user-config dotfile add|update PATH FILE [--mode 644]\n"
    "       tessera user-config dotfile delete PATH\n\n"
    "Your keypair's bootstrap script (run by /bin/sh in each new session that brings\n"
    "no script of its own, once it is RUNNING) and dotfiles (PATH relative to the home\n"
    "directory; stored and served, not yet written into sessions). Up to 64 KiB each;\n"
    "at most 100 dotfiles and 64 KiB of them in all. --json prints the API's JSON.\n";

static void _print_dotfiles(json_t *v)
{
    static const out_column cols[] = {
        {"PATH", "path", OUT_TEXT}, {"MODE", "permission", OUT_TEXT}, {NULL, NULL, OUT_TEXT}};
    out_table(cols, v);
}

static void _print_dotfile(json_t *v)
{
    _print_string(json_object_get(v, "data"));
}

static int _dotfile(cli *c, int argc, char **argv)
{
    const char *verb = argc > 1 ? argv[1] : "";
    if (strcmp(verb, "list") == 0 && argc == 2)
        return _call(c, "GET", "/user-config/dotfiles", NULL, _print_dotfiles);
    if ((strcmp(verb, "get") == 0 || strcmp(verb, "delete") == 0) && argc == 3) {
        char *path = ts_strdup("/user-config/dotfiles");
        client_query_add(&path, "path", argv[2]);
        int rc = _call(c, verb[0] == 'g' ? "GET" : "DELETE", path, NULL,
                       verb[0] == 'g' ? _print_dotfile : _print_done);
        free(path);
        return rc;
    }
    if (strcmp(verb, "add") == 0 || strcmp(verb, "update") == 0) {
        const char *mode = "644";
        if (argc == 6 && strcmp(argv[4], "--mode") == 0)
            mode = argv[5];
        else if (argc != 4)
            return cli_usage("user-config", "dotfile", "%s needs PATH FILE [--mode MODE]", verb);
        char *data = _read_text(argv[3]);
        if (!data) return CLI_FAIL;
        json_t *body =
            json_pack("{s:s, s:s, s:s}", "path", argv[2], "data", data, "permission", mode);
        free(data);
        if (!body) {
            fprintf(stderr, "tessera: %s is not UTF-8 text\n", argv[3]);
            return CLI_FAIL;
        }
        return _call(c, verb[0] == 'a' ? "POST" : "PATCH", "/user-config/dotfiles", body,
                     _print_done);
    }
    return cli_usage("user-config", "dotfile",
                     "expected list, get PATH, add|update PATH FILE or "
                     "delete PATH");
}

int cmd_user_config(cli *c, const cli_command *self, int argc, char **argv)
{
    (void)self;
    argc = _json_flag(c, argc, argv);
    if (argc < 2 || cli_is_help(argv[1]) || (argc > 2 && cli_is_help(argv[argc - 1]))) {
        fputs(user_config_help, argc < 2 ? stderr : stdout);
        return argc < 2 ? CLI_USAGE : CLI_OK;
    }
    if (!client_has_keys(c)) return CLI_FAIL;
    if (strcmp(argv[1], "dotfile") == 0 || strcmp(argv[1], "dotfiles") == 0)
        return _dotfile(c, argc - 1, argv + 1);
    if (strcmp(argv[1], "bootstrap-script") != 0)
        return cli_usage("user-config", NULL, "unknown subcommand '%s'", argv[1]);
    if (argc == 3 && strcmp(argv[2], "get") == 0)
        return _call(c, "GET", "/user-config/bootstrap-script", NULL, _print_string);
    if (argc == 4 && strcmp(argv[2], "set") == 0) {
        char *script = *argv[3] ? _read_text(argv[3]) : ts_strdup("");
        if (!script) return CLI_FAIL;
        json_t *body = json_pack("{s:s}", "script", script);
        free(script);
        if (!body) {
            fprintf(stderr, "tessera: %s is not UTF-8 text\n", argv[3]);
            return CLI_FAIL;
        }
        return _call(c, "POST", "/user-config/bootstrap-script", body, _print_done);
    }
    return cli_usage("user-config", "bootstrap-script", "expected get, or set FILE");
}

/* ---- tessera ssh-keypair ----------------------------------------------------------- */

static const char ssh_help[] =
    "Usage: tessera ssh-keypair show\n"
    "       tessera ssh-keypair refresh [--private-key-file FILE]\n\n"
    "Your keypair's SSH keypair: show prints the public key; refresh makes a new\n"
    "ed25519 keypair and prints the public key and, once only, the private key (or\n"
    "writes it to FILE, mode 0600). --json prints the API's JSON.\n";

static void _print_public(json_t *v)
{
    const char *k = json_string_value(json_object_get(v, "ssh_public_key"));
    fputs(k && *k ? k : "(no SSH keypair yet: tessera ssh-keypair refresh)\n", stdout);
}

static void _print_both(json_t *v)
{
    _print_public(v);
    _print_string(json_object_get(v, "ssh_private_key"));
}

static int _refresh_to_file(cli *c, const char *file)
{
    json_t *v = NULL;
    int rc = client_call(c, "PATCH", "/auth/ssh-keypair", NULL, true, &v);
    if (rc != CLI_OK) return rc;
    const char *priv = json_string_value(json_object_get(v, "ssh_private_key"));
    int fd = open(file, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    size_t n = priv ? strlen(priv) : 0;
    if (fd < 0 || write(fd, priv ? priv : "", n) != (ssize_t)n || close(fd) != 0) {
        fprintf(stderr,
                "tessera: cannot write %s: %m (the new key is stored on the server; "
                "refresh again)\n",
                file);
        if (fd >= 0) close(fd);
        rc = CLI_FAIL;
    } else {
        _print_public(v);
        fprintf(stderr, "The private key is in %s.\n", file);
    }
    json_decref(v);
    return rc;
}

int cmd_ssh_keypair(cli *c, const cli_command *self, int argc, char **argv)
{
    (void)self;
    argc = _json_flag(c, argc, argv);
    if (argc < 2 || cli_is_help(argv[1]) || (argc > 2 && cli_is_help(argv[argc - 1]))) {
        fputs(ssh_help, argc < 2 ? stderr : stdout);
        return argc < 2 ? CLI_USAGE : CLI_OK;
    }
    if (!client_has_keys(c)) return CLI_FAIL;
    if (argc == 2 && strcmp(argv[1], "show") == 0)
        return _call(c, "GET", "/auth/ssh-keypair", NULL, _print_public);
    if (argc == 2 && strcmp(argv[1], "refresh") == 0)
        return _call(c, "PATCH", "/auth/ssh-keypair", NULL, _print_both);
    if (argc == 4 && strcmp(argv[1], "refresh") == 0 && strcmp(argv[2], "--private-key-file") == 0)
        return _refresh_to_file(c, argv[3]);
    return cli_usage("ssh-keypair", NULL, "expected show, or refresh [--private-key-file FILE]");
}

/* ---- tessera admin announcement ---------------------------------------------------- */

static const char announcement_help[] =
    "Usage: tessera admin announcement get\n"
    "       tessera admin announcement set MESSAGE\n"
    "       tessera admin announcement disable\n\n"
    "The announcement the web console shows every user as a banner. Anyone may get\n"
    "it; set and disable are for superadmins. --json prints the API's JSON.\n";

static void _print_announcement(json_t *v)
{
    const char *m = json_string_value(json_object_get(v, "message"));
    printf("%s%s%s\n", json_is_true(json_object_get(v, "enabled")) ? "enabled" : "disabled",
           m && *m ? ": " : "", m ? m : "");
}

int cli_admin_announcement(cli *c, int argc, char **argv)
{
    argc = _json_flag(c, argc, argv);
    if (argc < 2 || cli_is_help(argv[1]) || (argc > 2 && cli_is_help(argv[argc - 1]))) {
        fputs(announcement_help, argc < 2 ? stderr : stdout);
        return argc < 2 ? CLI_USAGE : CLI_OK;
    }
    if (!client_has_keys(c)) return CLI_FAIL;
    if (argc == 2 && strcmp(argv[1], "get") == 0)
        return _call(c, "GET", "/manager/announcement", NULL, _print_announcement);
    if (argc == 3 && strcmp(argv[1], "set") == 0)
        return _call(c, "POST", "/manager/announcement",
                     json_pack("{s:b, s:s}", "enabled", 1, "message", argv[2]), _print_done);
    if (argc == 2 && strcmp(argv[1], "disable") == 0)
        return _call(c, "POST", "/manager/announcement",
                     json_pack("{s:b, s:s}", "enabled", 0, "message", ""), _print_done);
    return cli_usage("admin", "announcement", "expected get, set MESSAGE or disable");
}
