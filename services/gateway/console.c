/* console.c: the web console's static files (console.h). */
#include "console.h"

#include "libcommon/log.h"
#include "libcommon/proc.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#define CONSOLE_MAX_DEPTH 4

/* Scripts, styles, fonts and images from here only; the API on this origin;
 * uploads, downloads and app WebSockets go to tessera-vfolder and
 * tessera-wsproxy, whose addresses the API hands out (any origin). */
static const char CSP[] =
    "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; "
    "img-src 'self' data: blob:; font-src 'self' data:; "
    "connect-src 'self' http: https: ws: wss:; frame-ancestors 'none'; "
    "base-uri 'none'; form-action 'self'; object-src 'none'";

static int g_dir = -1; /* the console's directory, O_PATH */

static const struct {
    const char *ext, *type;
} TYPES[] = {
    {".html", "text/html; charset=utf-8"},
    {".js", "text/javascript; charset=utf-8"},
    {".mjs", "text/javascript; charset=utf-8"},
    {".css", "text/css; charset=utf-8"},
    {".json", "application/json"},
    {".map", "application/json"},
    {".svg", "image/svg+xml"},
    {".png", "image/png"},
    {".ico", "image/x-icon"},
    {".woff2", "font/woff2"},
    {".woff", "font/woff"},
    {".ttf", "font/ttf"},
    {".txt", "text/plain; charset=utf-8"},
};

static const char *_type_of(const char *name)
{
    const char *dot = strrchr(name, '.');
    if (dot)
        for (size_t i = 0; i < TS_ARRAY_LEN(TYPES); i++)
            if (strcasecmp(dot, TYPES[i].ext) == 0) return TYPES[i].type;
    return "application/octet-stream";
}

static void _headers(http_resp *resp)
{
    http_set_header(resp, "Content-Security-Policy", CSP);
    http_set_header(resp, "X-Content-Type-Options", "nosniff");
    http_set_header(resp, "X-Frame-Options", "DENY");
    http_set_header(resp, "Referrer-Policy", "same-origin");
    http_set_header(resp, "Cache-Control", "no-cache");
}

/* Open rel (segments below the directory) without following a symlink
 * anywhere: -1 when any segment is empty, a dot name, or not there. */
static int _open_confined(const char *rel)
{
    char *copy = ts_strdup(rel);
    int fd = dup(g_dir);
    char *save = NULL;
    for (char *seg = strtok_r(copy, "/", &save); seg && fd >= 0; seg = strtok_r(NULL, "/", &save)) {
        int next = seg[0] == '.' ? -1 : openat(fd, seg, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
        close(fd);
        fd = next;
    }
    free(copy);
    return fd;
}

static void h_file(http_req *req, http_resp *resp, void *ctx)
{
    (void)ctx;
    _headers(resp);
    if (g_dir < 0) {
        http_problem(resp, 404, "not-found", NULL,
                     "the web console is not installed here: `make` builds it into "
                     "build/console; set gateway.console_dir to its directory");
        return;
    }
    const char *rel = req->path + strlen("/console");
    rel += strspn(rel, "/");
    if (!*rel) rel = "index.html";
    int fd = _open_confined(rel);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        if (fd >= 0) close(fd);
        http_problem(resp, 404, "not-found", NULL, "no such console file");
        return;
    }
    http_reply_fd(req, resp, 200, _type_of(rel), fd, 0, (uint64_t)st.st_size);
}

static void _redirect(http_resp *resp)
{
    http_set_header(resp, "Location", "/console/");
    http_reply(resp, 302, NULL, NULL, 0);
}

/* "/console/" is index.html; "/console" (the router's same route) goes there. */
static void h_root(http_req *req, http_resp *resp, void *ctx)
{
    size_t n = strlen(req->path);
    if (n && req->path[n - 1] == '/')
        h_file(req, resp, ctx);
    else
        _redirect(resp);
}

bool console_redirect_browser(const http_req *req, http_resp *resp)
{
    const char *accept = http_header(req, "Accept");
    if (!accept || !strstr(accept, "text/html") || strstr(accept, "application/json")) return false;
    _redirect(resp);
    return true;
}

static void _open_dir(gateway *gw)
{
    char *dir = NULL;
    if (gw->console_dir && *gw->console_dir) {
        dir = ts_strdup(gw->console_dir);
    } else {
        static const char *const near[] = {"../share/tessera/console", "../console"};
        for (size_t i = 0; i < TS_ARRAY_LEN(near) && !dir; i++) {
            ts_err err = {{0}};
            char *p = proc_sibling_path(near[i], &err);
            if (p && access(p, F_OK) == 0)
                dir = p;
            else
                free(p);
        }
    }
    if (dir) g_dir = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (g_dir < 0)
        TLOG_WARN("web console not served: no directory", "console_dir=\"%s\" error=\"%s\"",
                  dir ? dir : "(none beside the binary)", dir ? strerror(errno) : "not found");
    else
        TLOG_INFO("web console served at /console/", "console_dir=\"%s\"", dir);
    free(dir);
}

void console_routes(gateway *gw)
{
    _open_dir(gw);
    http_router *r = svc_router(gw->svc);
    http_route(r, "GET", "/console", h_root, gw);
    static const char *const pats[CONSOLE_MAX_DEPTH] = {
        "/console/{a}", "/console/{a}/{b}", "/console/{a}/{b}/{c}", "/console/{a}/{b}/{c}/{d}"};
    for (size_t i = 0; i < TS_ARRAY_LEN(pats); i++)
        http_route(r, "GET", pats[i], h_file, gw);
}
