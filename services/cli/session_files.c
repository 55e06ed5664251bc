/* session_files.c: upload, download and files of a session (session_files.h). */
#include "services/cli/session_files.h"

#include "libcommon/buf.h"
#include "services/cli/output.h"

#include <errno.h>
#include <getopt.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static const char *_base(const char *path)
{
    const char *s = strrchr(path, '/');
    return s && s[1] ? s + 1 : path;
}

/* A local file's bytes appended to b; false (printed) when unreadable. */
static bool _slurp(const char *path, ts_buf *b)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "tessera: %s: %s\n", path, strerror(errno));
        return false;
    }
    char chunk[65536];
    size_t n;
    while ((n = fread(chunk, 1, sizeof(chunk), f)) > 0)
        ts_buf_append(b, chunk, n);
    bool ok = !ferror(f);
    if (!ok) fprintf(stderr, "tessera: %s: read error\n", path);
    fclose(f);
    return ok;
}

int session_upload(cli *c, const session_sub *self, int argc, char **argv)
{
    cli_status rc;
    if (!session_words(c, self, argc, argv, "k:h", -2, "NAME FILE...", &rc)) return rc;
    if (!client_has_keys(c)) return CLI_FAIL;
    const char *name = argv[optind];
    unsigned char rnd[12];
    randombytes_buf(rnd, sizeof(rnd));
    char boundary[64] = "tessera-";
    sodium_bin2hex(boundary + 8, sizeof(boundary) - 8, rnd, sizeof(rnd));
    ts_buf body = {0};
    for (int i = optind + 1; i < argc; i++) {
        const char *base = _base(argv[i]);
        char *head =
            ts_asprintf("--%s\r\nContent-Disposition: form-data; name=\"src\"; "
                        "filename=\"%s\"\r\nContent-Type: application/octet-stream\r\n\r\n",
                        boundary, base);
        ts_buf_append_str(&body, head);
        free(head);
        if (strchr(base, '"') || !_slurp(argv[i], &body)) {
            if (strchr(base, '"')) fprintf(stderr, "tessera: %s: a name with '\"'\n", argv[i]);
            ts_buf_free(&body);
            return CLI_FAIL;
        }
        ts_buf_append_str(&body, "\r\n");
    }
    char *tail = ts_asprintf("--%s--\r\n", boundary);
    ts_buf_append_str(&body, tail);
    free(tail);
    char *ct = ts_asprintf("multipart/form-data; boundary=%s", boundary);
    char *path = session_path(name, "/upload");
    session_kernel_query(c, &path);
    httpc_resp r;
    rc = client_call_raw(c, "POST", path, ct, body.data, body.len, true, &r);
    if (rc == CLI_OK) {
        httpc_resp_free(&r);
        printf("uploaded %d file(s) to %s:/home/work\n", argc - optind - 1, name);
    }
    free(path);
    free(ct);
    ts_buf_free(&body);
    return rc;
}

/* tar -xf - -C dir, fed the archive. */
static cli_status _untar(const char *dir, const char *data, size_t len)
{
    int fds[2];
    if (pipe(fds) != 0) return CLI_FAIL;
    pid_t pid = fork();
    if (pid < 0) return CLI_FAIL;
    if (pid == 0) {
        dup2(fds[0], 0);
        close(fds[0]);
        close(fds[1]);
        execlp("tar", "tar", "-xf", "-", "-C", dir, (char *)NULL);
        _exit(127);
    }
    close(fds[0]);
    size_t off = 0;
    while (off < len) {
        ssize_t w = write(fds[1], data + off, len - off);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) break;
        off += (size_t)w;
    }
    close(fds[1]);
    int st = 0;
    while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {
    }
    if (off < len || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
        fprintf(stderr, "tessera: unpacking into %s failed (tar)\n", dir);
        return CLI_FAIL;
    }
    return CLI_OK;
}

int session_download(cli *c, const session_sub *self, int argc, char **argv)
{
    static const struct option longopts[] = {{"output", required_argument, NULL, 'o'},
                                             {"kernel", required_argument, NULL, 'k'},
                                             {"help", no_argument, NULL, 'h'},
                                             {NULL, 0, NULL, 0}};
    session_opts o;
    session_opts_init(&o, c, self, argc, argv, "o:k:h", longopts);
    const char *dir = ".";
    int opt;
    while (session_next_opt(&o, &opt))
        if (opt == 'o') dir = optarg;
    if (session_opts_stop(&o)) return o.status;
    cli_status rc = session_positionals(&o, -2, "NAME PATH...");
    if (rc != CLI_OK) return rc;
    if (!client_has_keys(c)) return CLI_FAIL;
    char *path = session_path(argv[optind], "/download");
    session_kernel_query(c, &path);
    for (int i = optind + 1; i < argc; i++)
        client_query_add(&path, "files", argv[i]);
    httpc_resp r;
    rc = client_call_raw(c, "GET", path, "application/json", NULL, 0, true, &r);
    if (rc == CLI_OK) {
        rc = _untar(dir, r.body, r.body_len);
        httpc_resp_free(&r);
        if (rc == CLI_OK) printf("downloaded into %s\n", dir);
    }
    free(path);
    return rc;
}

static const out_column file_cols[] = {
    {"MODE", "mode", OUT_TEXT},     {"SIZE", "size", OUT_TEXT}, {"TYPE", "type", OUT_TEXT},
    {"NAME", "filename", OUT_TEXT}, {NULL, NULL, OUT_TEXT},
};

int session_files(cli *c, const session_sub *self, int argc, char **argv)
{
    cli_status rc;
    if (!session_words(c, self, argc, argv, "Jk:h", -1, "NAME [PATH]", &rc)) return rc;
    if (argc - optind > 2) return cli_usage("session", self->name, "too many arguments");
    char *path = session_path(argv[optind], "/files");
    if (argc - optind == 2) client_query_add(&path, "path", argv[optind + 1]);
    session_kernel_query(c, &path);
    json_t *answer = NULL;
    rc = client_call(c, "GET", path, NULL, true, &answer);
    free(path);
    if (rc == CLI_OK) {
        const char *text = json_string_value(json_object_get(answer, "files"));
        json_t *files = text ? json_loads(text, 0, NULL) : NULL;
        if (c->json)
            out_json(files ? files : answer);
        else
            out_table(file_cols, files);
        json_decref(files);
    }
    json_decref(answer);
    return rc;
}
