/* cmd_vfolder_files.c: `tessera vfolder upload|download|ls|mkdir|mv|rm`.
 *
 * ls, mkdir, mv and rm are signed calls through the gateway. upload and
 * download ask the gateway for a transfer token (request-upload,
 * request-download), then move the bytes directly to or from
 * tessera-vfolder with libcurl:
 *   upload: tus 1.0 (HEAD for the offset, PATCH from there). The token and
 *     URL are kept in ~/.cache/tessera/uploads/<hash>.json (the hash of the
 *     endpoint, folder, remote path and the local file's path, size and
 *     mtime), so running the same upload again after a failure resumes it;
 *     within one run, --retries network failures are retried from the
 *     server's offset.
 *   download: into LOCAL.part with Range: bytes=<have>- on each retry (and
 *     on a later run), renamed to LOCAL when complete. A directory comes as
 *     a zip (LOCAL defaults to <name>.zip; a zip restarts from zero).
 * The requests to tessera-vfolder and the progress on stderr are xfer.c's. */
#include "services/cli/cmd_vfolder_files.h"

#include "services/cli/output.h"
#include "services/cli/xfer.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <sodium.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define DEFAULT_RETRIES 5

static const char USAGE[] =
    "tessera vfolder upload NAME LOCAL [REMOTE] [--retries N]\n"
    "       tessera vfolder download NAME REMOTE [LOCAL] [--retries N]\n"
    "       tessera vfolder ls NAME [PATH] [--json]\n"
    "       tessera vfolder mkdir NAME PATH [-p]\n"
    "       tessera vfolder mv NAME SRC DST\n"
    "       tessera vfolder rm NAME PATH... [-r]\n\n"
    "  upload    send a local file into folder NAME (at REMOTE, default: its file name);\n"
    "            resumable: run it again after a failure and it continues\n"
    "  download  fetch REMOTE (a file, or a directory as a zip) into LOCAL; resumes a\n"
    "            LOCAL.part left by an earlier run\n"
    "  ls        list a directory of the folder (default: its top)\n"
    "  mkdir     create a directory (-p: with its parents, and no error when it exists)\n"
    "  mv        move or rename SRC to DST (into DST when DST is a directory)\n"
    "  rm        delete files; -r: directories with everything in them\n\n"
    "Options:\n"
    "      --retries N    network failures to retry from where the transfer stopped (5)\n"
    "      --limit-rate R upload/download at most R bytes/s (suffixes k, m, g)\n"
    "  -p, --parents      mkdir: create missing parents, accept an existing directory\n"
    "  -r, --recursive    rm: delete directories recursively";

static const char *const SUBS[] = {"upload", "download", "ls", "mkdir", "mv", "rm", NULL};

bool cmd_vfolder_files_owns(const char *sub)
{
    for (const char *const *s = SUBS; sub && *s; s++)
        if (strcmp(*s, sub) == 0) return true;
    return false;
}

/* ---- small helpers ------------------------------------------------------------------ */

static char *_folder_path(const char *name, const char *rest)
{
    char *n = httpc_escape(name);
    char *p = ts_asprintf("/folders/%s/%s", n, rest);
    free(n);
    return p;
}

static const char *_base(const char *path)
{
    const char *s = strrchr(path, '/');
    return s ? s + 1 : path;
}

/* ---- upload ----------------------------------------------------------------------------- */

static char *_cache_file(const cli *c, const char *name, const char *remote, const char *local,
                         const struct stat *st)
{
    char real[PATH_MAX];
    if (!realpath(local, real)) ts_strlcpy(real, local, sizeof(real));
    char *key =
        ts_asprintf("%s\n%s\n%s\n%s\n%lld\n%lld.%09ld", c->creds.endpoint, name, remote, real,
                    (long long)st->st_size, (long long)st->st_mtim.tv_sec, st->st_mtim.tv_nsec);
    unsigned char h[crypto_hash_sha256_BYTES];
    crypto_hash_sha256(h, (const unsigned char *)key, strlen(key));
    free(key);
    char hex[crypto_hash_sha256_BYTES * 2 + 1];
    sodium_bin2hex(hex, sizeof(hex), h, 16);
    const char *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
    char *dir = xdg && *xdg ? ts_asprintf("%s/tessera/uploads", xdg)
                            : ts_asprintf("%s/.cache/tessera/uploads", home ? home : "/tmp");
    char *path = ts_asprintf("%s/%s.json", dir, hex);
    /* mkdir -p, quietly: without a cache an upload still works, it just does
     * not resume across runs. */
    for (char *p = dir + 1; *p; p++) {
        if (*p != '/') continue;
        *p = '\0';
        mkdir(dir, 0700);
        *p = '/';
    }
    mkdir(dir, 0700);
    free(dir);
    return path;
}

/* Long: one resumable upload: an earlier run's upload found, or a new one made, then the chunks
 * from its offset; the offset and the URL are shared state. */
static cli_status _cmd_upload(cli *c, int argc, char **argv, int retries)
{
    if (argc < 3 || argc > 4) {
        fprintf(stderr, "tessera vfolder upload: NAME LOCAL [REMOTE] expected; try --help\n");
        return CLI_USAGE;
    }
    const char *name = argv[1], *local = argv[2];
    const char *remote = argc == 4 ? argv[3] : _base(local);
    int fd = open(local, O_RDONLY | O_CLOEXEC);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        fprintf(stderr, "tessera: %s: %s\n", local,
                fd < 0 ? strerror(errno) : "not a regular file");
        if (fd >= 0) close(fd);
        return CLI_FAIL;
    }
    if (!client_has_keys(c)) {
        close(fd);
        return CLI_FAIL;
    }
    cli_status rc = CLI_FAIL;
    int64_t size = st.st_size;
    char *cache = _cache_file(c, name, remote, local, &st);
    json_t *state = json_load_file(cache, 0, NULL);
    const char *url = json_string_value(json_object_get(state, "url"));
    const char *token = json_string_value(json_object_get(state, "token"));
    char errbuf[CURL_ERROR_SIZE] = "";
    xfer x = {.out_fd = -1};
    int64_t offset = -1;
    if (url && token) { /* an earlier run's upload: where is it? */
        CURLcode cc = xfer_request("HEAD", url, token, NULL, 0, NULL, &x, errbuf);
        if (cc == CURLE_OK && x.status == 200 && atoll(x.length) == size) {
            offset = atoll(x.offset);
            fprintf(stderr, "resuming the upload at %" PRId64 " of %" PRId64 " bytes\n", offset,
                    size);
        }
    }
    if (offset < 0) { /* a new upload */
        json_decref(state);
        char *path = _folder_path(name, "request-upload");
        json_t *body = json_pack("{s:s, s:I}", "path", remote, "size", (json_int_t)size);
        rc = client_call(c, "POST", path, body, true, &state);
        json_decref(body);
        free(path);
        if (rc != CLI_OK) goto out;
        url = json_string_value(json_object_get(state, "url"));
        token = json_string_value(json_object_get(state, "token"));
        if (!url || !token) {
            fprintf(stderr, "tessera: request-upload answered without a token and url\n");
            rc = CLI_FAIL;
            goto out;
        }
        json_object_set_new(state, "size", json_integer(size));
        if (json_dump_file(state, cache, JSON_COMPACT) == 0) chmod(cache, 0600);
        offset = 0;
    }
    char label[300];
    snprintf(label, sizeof(label), "upload %s", _base(local));
    xfer_progress prog;
    xfer_progress_init(&prog, label, size, offset);
    rc = CLI_FAIL;
    for (int attempt = 0; attempt <= retries; attempt++) {
        if (attempt > 0) {
            xfer_backoff(attempt);
            xfer_reset(&x, -1);
            if (xfer_request("HEAD", url, token, NULL, 0, NULL, &x, errbuf) != CURLE_OK ||
                x.status != 200) {
                fprintf(stderr, "tessera: upload: cannot ask where the upload is (attempt %d)\n",
                        attempt);
                continue;
            }
            offset = atoll(x.offset);
            prog.base = prog.done = offset;
        }
        xfer_src src = {.fd = fd, .pos = offset, .end = size};
        xfer_reset(&x, -1);
        errbuf[0] = '\0';
        CURLcode cc = xfer_request("PATCH", url, token, &src, 0, &prog, &x, errbuf);
        if (cc == CURLE_OK && x.status == 204 && atoll(x.offset) == size) {
            rc = CLI_OK;
            break;
        }
        bool retryable = cc != CURLE_OK || x.status >= 500 || x.status == 409;
        if (!retryable || attempt == retries) {
            if (prog.drawn) fputc('\n', stderr);
            xfer_print_failure("upload", &x, cc, errbuf);
            if (x.status == 401 || x.status == 404 || x.status == 410) unlink(cache);
            break;
        }
        if (prog.drawn) fputc('\n', stderr);
        fprintf(stderr, "tessera: upload interrupted (%s); retrying from the server's offset\n",
                cc != CURLE_OK ? (errbuf[0] ? errbuf : curl_easy_strerror(cc)) : "conflict");
    }
    if (rc == CLI_OK) {
        prog.done = size;
        xfer_progress_draw(&prog, true);
        unlink(cache);
        if (c->json)
            out_json(json_pack("{s:s, s:s, s:I}", "vfolder", name, "path", remote, "size",
                               (json_int_t)size));
        else
            printf("uploaded %s to %s:%s (%" PRId64 " bytes)\n", local, name, remote, size);
    }
out:
    free(x.err_body);
    json_decref(state);
    free(cache);
    close(fd);
    return rc;
}

/* ---- download ---------------------------------------------------------------------------- */

static cli_status _request_download(cli *c, const char *name, const char *remote, char **url,
                                    char **token)
{
    char *path = _folder_path(name, "request-download");
    json_t *body = json_pack("{s:s, s:b}", "file", remote, "archive", 1), *out = NULL;
    cli_status rc = client_call(c, "POST", path, body, true, &out);
    json_decref(body);
    free(path);
    if (rc != CLI_OK) return rc;
    const char *u = json_string_value(json_object_get(out, "url"));
    const char *t = json_string_value(json_object_get(out, "token"));
    if (!u || !t) {
        fprintf(stderr, "tessera: request-download answered without a token and url\n");
        json_decref(out);
        return CLI_FAIL;
    }
    free(*url);
    free(*token);
    *url = ts_strdup(u);
    *token = ts_strdup(t);
    json_decref(out);
    return CLI_OK;
}

static cli_status _cmd_download(cli *c, int argc, char **argv, int retries)
{
    if (argc < 3 || argc > 4) {
        fprintf(stderr, "tessera vfolder download: NAME REMOTE [LOCAL] expected; try --help\n");
        return CLI_USAGE;
    }
    const char *name = argv[1], *remote = argv[2];
    if (!client_has_keys(c)) return CLI_FAIL;
    char *url = NULL, *token = NULL;
    cli_status rc = _request_download(c, name, remote, &url, &token);
    if (rc != CLI_OK) return rc;
    const char *b = _base(remote);
    char *local = argc == 4 ? ts_strdup(argv[3]) : ts_strdup(*b ? b : name);
    char *part = ts_asprintf("%s.part", local);
    int fd = open(part, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0) {
        fprintf(stderr, "tessera: %s: %s\n", part, strerror(errno));
        rc = CLI_FAIL;
        goto out;
    }
    char label[300];
    snprintf(label, sizeof(label), "download %s", *b ? b : name);
    xfer x = {.out_fd = -1};
    char errbuf[CURL_ERROR_SIZE] = "";
    bool zip = false;
    xfer_progress prog;
    rc = CLI_FAIL;
    for (int attempt = 0; attempt <= retries; attempt++) {
        if (attempt > 0) xfer_backoff(attempt);
        struct stat st;
        int64_t have = fstat(fd, &st) == 0 ? st.st_size : 0;
        if (lseek(fd, have, SEEK_SET) < 0) break;
        xfer_reset(&x, fd);
        x.range_from = have;
        x.prog = &prog;
        errbuf[0] = '\0';
        xfer_progress_init(&prog, label, -1, have);
        /* The total is learned from the headers; until then the bar shows bytes. */
        CURLcode cc = xfer_request("GET", url, token, NULL, have, &prog, &x, errbuf);
        zip = strncasecmp(x.content_type, "application/zip", 15) == 0;
        if (x.write_failed) {
            fprintf(stderr, "tessera: %s: %s\n", part, strerror(errno));
            break;
        }
        if (cc == CURLE_OK && (x.status == 200 || x.status == 206)) {
            rc = CLI_OK;
            break;
        }
        if (cc == CURLE_OK && x.status == 416 && have > 0) { /* already complete */
            const char *slash = strchr(x.content_range, '/');
            if (slash && atoll(slash + 1) == have) {
                rc = CLI_OK;
                break;
            }
            if (ftruncate(fd, 0) != 0) break; /* the file changed: start over */
            continue;
        }
        if (cc == CURLE_OK && x.status == 401 && attempt < retries) { /* token expired */
            if (_request_download(c, name, remote, &url, &token) != CLI_OK) break;
            continue;
        }
        bool retryable = cc != CURLE_OK || x.status >= 500;
        if (prog.drawn) fputc('\n', stderr);
        if (!retryable || attempt == retries) {
            xfer_print_failure("download", &x, cc, errbuf);
            break;
        }
        fprintf(stderr, "tessera: download interrupted (%s); resuming\n",
                errbuf[0] ? errbuf : curl_easy_strerror(cc));
    }
    free(x.err_body);
    struct stat st;
    if (rc == CLI_OK && fstat(fd, &st) == 0) {
        prog.total = prog.done = st.st_size;
        xfer_progress_draw(&prog, true);
        if (zip && argc != 4) { /* a directory: name.zip */
            char *z = ts_asprintf("%s.zip", local);
            free(local);
            local = z;
        }
        if (fsync(fd) != 0 || rename(part, local) != 0) {
            fprintf(stderr, "tessera: %s: %s\n", local, strerror(errno));
            rc = CLI_FAIL;
        } else if (c->json) {
            out_json(json_pack("{s:s, s:s, s:s, s:I}", "vfolder", name, "path", remote, "local",
                               local, "size", (json_int_t)st.st_size));
        } else {
            printf("downloaded %s:%s to %s (%lld bytes)\n", name, remote, local,
                   (long long)st.st_size);
        }
    }
    close(fd);
    if (rc != CLI_OK && fstat(fd, &st) == 0 && st.st_size == 0) unlink(part);
out:
    free(part);
    free(local);
    free(url);
    free(token);
    return rc;
}

/* ---- ls, mkdir, mv, rm ---------------------------------------------------------------------- */

static cli_status _cmd_ls(cli *c, int argc, char **argv)
{
    if (argc < 2 || argc > 3) {
        fprintf(stderr, "tessera vfolder ls: NAME [PATH] expected; try --help\n");
        return CLI_USAGE;
    }
    if (!client_has_keys(c)) return CLI_FAIL;
    char *path = _folder_path(argv[1], "files");
    client_query_add(&path, "path", argc == 3 ? argv[2] : "");
    json_t *out = NULL;
    cli_status rc = client_call(c, "GET", path, NULL, true, &out);
    free(path);
    if (rc != CLI_OK) return rc;
    if (c->json) {
        out_json(out);
    } else {
        static const out_column cols[] = {
            {"TYPE", "type", OUT_TEXT}, {"SIZE", "size", OUT_TEXT},
            {"MODE", "mode", OUT_TEXT}, {"MODIFIED", "modified", OUT_TIME},
            {"NAME", "name", OUT_TEXT}, {NULL, NULL, OUT_TEXT}};
        out_table(cols, json_object_get(out, "items"));
    }
    json_decref(out);
    return CLI_OK;
}

static cli_status _simple(cli *c, const char *name, const char *method, const char *what,
                          json_t *body, const char *done_fmt, const char *arg)
{
    if (!client_has_keys(c)) {
        json_decref(body);
        return CLI_FAIL;
    }
    char *path = _folder_path(name, what);
    json_t *out = NULL;
    cli_status rc = client_call(c, method, path, body, true, &out);
    json_decref(body);
    free(path);
    if (rc == CLI_OK) {
        if (c->json)
            out_json(out);
        else
            printf(done_fmt, arg);
    }
    json_decref(out);
    return rc;
}

/* ---- dispatch ------------------------------------------------------------------------------ */

/* Long: getopt once, then one branch per subcommand. */
cli_status cmd_vfolder_files(cli *c, int argc, char **argv)
{
    static const struct option longopts[] = {{"retries", required_argument, NULL, 'R'},
                                             {"limit-rate", required_argument, NULL, 'L'},
                                             {"parents", no_argument, NULL, 'p'},
                                             {"recursive", no_argument, NULL, 'r'},
                                             {"json", no_argument, NULL, 'j'},
                                             {"help", no_argument, NULL, 'h'},
                                             {NULL, 0, NULL, 0}};
    const char *sub = argv[0];
    int retries = DEFAULT_RETRIES;
    bool parents = false, recursive = false;
    optind = 0; /* GNU getopt: start afresh (argv[0], the subcommand, is skipped) */
    opterr = 0;
    int opt;
    while ((opt = getopt_long(argc, argv, "prh", longopts, NULL)) != -1) {
        switch (opt) {
        case 'R':
            retries = atoi(optarg);
            if (retries < 0 || retries > 1000) {
                fprintf(stderr, "tessera vfolder %s: --retries wants 0..1000\n", sub);
                return CLI_USAGE;
            }
            break;
        case 'L': {
            char *end;
            double v = strtod(optarg, &end);
            double mul = *end == 'k' || *end == 'K'   ? 1024.0
                         : *end == 'm' || *end == 'M' ? 1048576.0
                         : *end == 'g' || *end == 'G' ? 1073741824.0
                                                      : 1.0;
            if (end == optarg || v <= 0 || (*end && end[1])) {
                fprintf(stderr, "tessera vfolder %s: --limit-rate wants bytes/s (e.g. 10m)\n", sub);
                return CLI_USAGE;
            }
            xfer_limit_rate((int64_t)(v * mul));
            break;
        }
        case 'p':
            parents = true;
            break;
        case 'r':
            recursive = true;
            break;
        case 'j':
            c->json = true;
            break;
        case 'h':
            printf("Usage: %s\n", USAGE);
            return CLI_OK;
        default:
            fprintf(stderr, "tessera vfolder %s: unknown option '%s'; try --help\n", sub,
                    argv[optind - 1]);
            return CLI_USAGE;
        }
    }
    /* The words left, with the subcommand in front again. */
    int n = argc - optind + 1;
    char **words = ts_calloc((size_t)n + 1, sizeof(char *));
    words[0] = argv[0];
    for (int i = optind; i < argc; i++)
        words[i - optind + 1] = argv[i];
    cli_status rc = CLI_FAIL;
    if (strcmp(sub, "upload") == 0) {
        rc = _cmd_upload(c, n, words, retries);
    } else if (strcmp(sub, "download") == 0) {
        rc = _cmd_download(c, n, words, retries);
    } else if (strcmp(sub, "ls") == 0) {
        rc = _cmd_ls(c, n, words);
    } else if (strcmp(sub, "mkdir") == 0) {
        if (n != 3) {
            fprintf(stderr, "tessera vfolder mkdir: NAME PATH expected; try --help\n");
            rc = CLI_USAGE;
        } else {
            rc = _simple(c, words[1], "POST", "mkdir",
                         json_pack("{s:s, s:b, s:b}", "path", words[2], "parents", parents,
                                   "exist_ok", parents),
                         "created %s\n", words[2]);
        }
    } else if (strcmp(sub, "mv") == 0) {
        if (n != 4) {
            fprintf(stderr, "tessera vfolder mv: NAME SRC DST expected; try --help\n");
            rc = CLI_USAGE;
        } else {
            rc = _simple(c, words[1], "POST", "move_file",
                         json_pack("{s:s, s:s}", "src", words[2], "dst", words[3]), "moved %s\n",
                         words[2]);
        }
    } else { /* rm */
        if (n < 3) {
            fprintf(stderr, "tessera vfolder rm: NAME PATH... expected; try --help\n");
            rc = CLI_USAGE;
        } else {
            json_t *files = json_array();
            for (int i = 2; i < n; i++)
                json_array_append_new(files, json_string(words[i]));
            rc = _simple(c, words[1], "DELETE", "delete_files",
                         json_pack("{s:o, s:b}", "files", files, "recursive", recursive),
                         "deleted %s\n", n == 3 ? words[2] : "the files");
        }
    }
    free(words);
    return rc;
}
