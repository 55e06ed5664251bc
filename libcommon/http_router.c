/* http_router.c: match a request's path against registered patterns (exact
 * segments and {name} parameters) and call the handler. Routes are registered
 * before the server starts; dispatch only reads them, from any thread. */
#include "libcommon/http.h"
#include "libcommon/log.h"

#include <microhttpd.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define MAX_SEGMENTS 64

typedef struct route {
    char *method;
    char *pattern;
    char **segs; /* literal text, or the parameter name */
    bool *is_param;
    int n_segs;
    int n_params;
    http_handler handler;
    void *ctx;
} route;

struct http_router {
    route *routes;
    size_t n, cap;
    char *mounts[HTTP_MAX_MOUNTS]; /* "func": prefixes' segment */
    int n_mounts;
};

http_router *http_router_new(void)
{
    return ts_calloc(1, sizeof(http_router));
}

void http_router_free(http_router *r)
{
    if (!r) return;
    for (size_t i = 0; i < r->n; i++) {
        route *rt = &r->routes[i];
        for (int s = 0; s < rt->n_segs; s++)
            free(rt->segs[s]);
        free(rt->segs);
        free(rt->is_param);
        free(rt->method);
        free(rt->pattern);
    }
    for (int i = 0; i < r->n_mounts; i++)
        free(r->mounts[i]);
    free(r->routes);
    free(r);
}

/* Split "/a/b/" in place into segments: the leading slash and one trailing
 * slash are dropped, "/" has none. Returns the count, or -1 when too many. */
static int split_path(char *path, char **segs)
{
    if (*path == '/') path++;
    size_t len = strlen(path);
    if (len >= 2 && path[len - 1] == '/') path[len - 1] = '\0';
    if (!*path) return 0;
    int n = 0;
    for (char *p = path;;) {
        if (n == MAX_SEGMENTS) return -1;
        segs[n++] = p;
        char *slash = strchr(p, '/');
        if (!slash) break;
        *slash = '\0';
        p = slash + 1;
    }
    return n;
}

void http_route(http_router *r, const char *method, const char *pattern, http_handler h, void *ctx)
{
    if (!method || !pattern || pattern[0] != '/' || !h)
        ts_panic("http_route: bad route %s %s", method ? method : "(null)",
                 pattern ? pattern : "(null)");
    char *work = ts_strdup(pattern);
    char *parts[MAX_SEGMENTS];
    int n = split_path(work, parts);
    if (n < 0) ts_panic("http_route: too many segments in %s", pattern);

    route rt = {.method = ts_strdup(method),
                .pattern = ts_strdup(pattern),
                .handler = h,
                .ctx = ctx,
                .n_segs = n};
    rt.segs = ts_calloc((size_t)n + 1, sizeof(char *));
    rt.is_param = ts_calloc((size_t)n + 1, sizeof(bool));
    for (int i = 0; i < n; i++) {
        size_t len = strlen(parts[i]);
        if (len >= 3 && parts[i][0] == '{' && parts[i][len - 1] == '}') {
            rt.is_param[i] = true;
            rt.segs[i] = ts_strndup(parts[i] + 1, len - 2);
            if (++rt.n_params > HTTP_MAX_PARAMS)
                ts_panic("http_route: more than %d parameters in %s", HTTP_MAX_PARAMS, pattern);
        } else {
            rt.segs[i] = ts_strdup(parts[i]);
        }
    }
    free(work);

    if (r->n == r->cap) {
        r->cap = r->cap ? r->cap * 2 : 16;
        r->routes = ts_realloc(r->routes, r->cap * sizeof(route));
    }
    r->routes[r->n++] = rt;
}

void http_router_mount(http_router *r, const char *prefix)
{
    if (!prefix || prefix[0] != '/' || !prefix[1] || strchr(prefix + 1, '/') ||
        r->n_mounts == HTTP_MAX_MOUNTS)
        ts_panic("http_router_mount: bad or one too many prefix %s", prefix ? prefix : "(null)");
    r->mounts[r->n_mounts++] = ts_strdup(prefix + 1);
}

const char *http_param(const http_req *req, const char *name)
{
    for (int i = 0; i < req->n_params && i < HTTP_MAX_PARAMS; i++)
        if (req->param_names[i] && strcmp(req->param_names[i], name) == 0)
            return req->param_values[i];
    return NULL;
}

static bool path_matches(const route *rt, char **segs, int n)
{
    if (rt->n_segs != n) return false;
    for (int i = 0; i < n; i++) {
        if (rt->is_param[i]) {
            if (!segs[i][0]) return false;
        } else if (strcmp(rt->segs[i], segs[i]) != 0) {
            return false;
        }
    }
    return true;
}

static bool method_matches(const route *rt, const char *method)
{
    if (strcmp(rt->method, "*") == 0 || strcmp(rt->method, method) == 0) return true;
    /* HEAD is GET without the body (the server drops it). */
    return strcmp(method, "HEAD") == 0 && strcmp(rt->method, "GET") == 0;
}

/* At the first position where they differ, an exact segment beats a parameter. */
static bool better_than(const route *a, const route *b)
{
    for (int i = 0; i < a->n_segs; i++) {
        if (a->is_param[i] != b->is_param[i]) return !a->is_param[i];
    }
    return false;
}

/* The path part of a raw target: origin-form "/p?q" or absolute-form
 * "http://host/p?q". NULL when there is none. */
static char *raw_path_of(const http_req *req)
{
    const char *t = req->target;
    if (!t) return req->path ? ts_strdup(req->path) : NULL;
    const char *scheme = strstr(t, "://");
    if (t[0] != '/' && scheme) {
        t = strchr(scheme + 3, '/');
        if (!t) return ts_strdup("/");
    }
    if (t[0] != '/') return NULL;
    return ts_strndup(t, strcspn(t, "?#"));
}

static void add_allowed(char *allow, size_t size, const char *method)
{
    size_t mlen = strlen(method);
    for (const char *p = allow; (p = strstr(p, method)) != NULL; p += mlen) {
        bool starts = p == allow || p[-1] == ' ';
        if (starts && (p[mlen] == ',' || p[mlen] == '\0')) return;
    }
    if (allow[0]) strncat(allow, ", ", size - strlen(allow) - 1);
    strncat(allow, method, size - strlen(allow) - 1);
}

/* The best route for segs (n) and method; none: *path_seen says whether
 * some route has the path (allow lists their methods). */
static const route *find_route(const http_router *r, char **segs, int n, const char *method,
                               bool *path_seen, char *allow, size_t allow_size)
{
    const route *best = NULL;
    for (size_t i = 0; i < r->n; i++) {
        const route *rt = &r->routes[i];
        if (!path_matches(rt, segs, n)) continue;
        *path_seen = true;
        if (method_matches(rt, method)) {
            if (!best || better_than(rt, best)) best = rt;
        } else {
            add_allowed(allow, allow_size, rt->method);
        }
    }
    return best;
}

/* The mount prefix ("func") segs[0] names, when segs is not a route of its
 * own but the rest is. */
static const char *find_mount(const http_router *r, char **segs, int n, bool path_seen)
{
    if (path_seen || n < 1) return NULL;
    for (int i = 0; i < r->n_mounts; i++)
        if (strcmp(r->mounts[i], segs[0]) == 0) return r->mounts[i];
    return NULL;
}

/* s (a path, or an absolute URL's) without its leading "/<seg>" (s starts
 * with it), or "/" when nothing follows. */
static const char *after_prefix(const char *s, const char *seg)
{
    if (s && s[0] != '/' && strstr(s, "://")) {
        s = strchr(strstr(s, "://") + 3, '/');
        if (!s) return "/";
    }
    size_t len = strlen(seg) + 1;
    if (!s || s[0] != '/' || strncmp(s + 1, seg, len - 1) != 0) return s;
    return s[len] == '/' ? s + len : "/";
}

void http_router_dispatch(http_router *r, http_req *req, http_resp *resp)
{
    const char *method = req->method ? req->method : "";
    char *raw = raw_path_of(req);
    if (!raw) {
        http_problem(resp, 404, "not-found", NULL, "no route for %s (not an origin-form path)",
                     method);
        return;
    }
    char *segs[MAX_SEGMENTS];
    int n = split_path(raw, segs);
    if (n < 0) {
        http_problem(resp, 404, "not-found", NULL, "no route for %s: path has too many segments",
                     method);
        free(raw);
        return;
    }
    if (req->target) {
        for (int i = 0; i < n; i++) {
            if (MHD_http_unescape(segs[i]) != strlen(segs[i])) {
                http_problem(resp, 400, "invalid-api-params", NULL,
                             "path segment %d decodes to a NUL byte", i + 1);
                free(raw);
                return;
            }
        }
    }

    bool path_seen = false;
    char allow[256] = "";
    const route *best = find_route(r, segs, n, method, &path_seen, allow, sizeof(allow));
    const char *mount = best ? NULL : find_mount(r, segs, n, path_seen);
    if (mount) {
        segs[0] = NULL;
        allow[0] = '\0';
        best = find_route(r, segs + 1, n - 1, method, &path_seen, allow, sizeof(allow));
    }

    if (!best) {
        if (path_seen) {
            http_set_header(resp, "Allow", allow);
            http_problem(resp, 405, "method-not-allowed", NULL,
                         "method %s is not allowed here; allowed: %s", method, allow);
        } else {
            http_problem(resp, 404, "not-found", NULL, "no route for %s %s", method,
                         req->path ? req->path : req->target);
        }
        free(raw);
        return;
    }

    int skip = mount ? 1 : 0;
    req->n_params = 0;
    for (int i = 0; i + skip < n; i++) {
        if (!best->is_param[i]) continue;
        req->param_names[req->n_params] = best->segs[i];
        req->param_values[req->n_params] = segs[i + skip];
        req->n_params++;
    }
    const char *path = req->path, *target = req->target;
    char *mounted_target = NULL;
    if (mount) {
        /* The target as the route sees it: origin-form, without the prefix. */
        char *origin = raw_path_of(req);
        const char *q = target ? target + strcspn(target, "?#") : "";
        mounted_target = ts_asprintf("%s%s", after_prefix(origin, mount), q);
        free(origin);
        req->mount = ts_asprintf("/%s", mount);
        req->path = after_prefix(path, mount);
        req->target = mounted_target;
    }
    best->handler(req, resp, best->ctx);
    if (mount) {
        free((char *)req->mount);
        req->mount = NULL;
        req->path = path;
        req->target = target;
        free(mounted_target);
    }
    /* The values point into this call's buffer: do not let them outlive it. */
    for (int i = 0; i < req->n_params; i++)
        req->param_names[i] = req->param_values[i] = NULL;
    req->n_params = 0;
    free(raw);
}
