/* cmd_app.c: `tessera app SESSION APP`: open an app of a running session
 * through tessera-wsproxy (POST /session/{name}/start-service) and print the
 * URL to open; with --bind, serve a local TCP port tunnelled to a tcp app
 * (app_tunnel.h); with --stop, stop it (POST /session/{name}/shutdown-service).
 * docs/cli.md, docs/wsproxy.md. */
#include "services/cli/app_tunnel.h"
#include "services/cli/commands.h"
#include "services/cli/output.h"

#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* A token lives wsproxy.token_ttl (10 min by default): connections after
 * this long get a fresh one. */
#define REFRESH_AFTER_MS (4 * 60 * 1000)

typedef struct app_req {
    cli *c;
    const char *session, *app;
    const char *kernel; /* NULL: the main kernel */
    long port;
} app_req;

/* POST /session/{name}/start-service; the answer in *answer. */
static cli_status _start_service(const app_req *r, json_t **answer)
{
    json_t *body = json_object();
    if (r->app) json_object_set_new(body, "app", json_string(r->app));
    if (r->port) json_object_set_new(body, "port", json_integer(r->port));
    if (r->kernel) json_object_set_new(body, "kernel", json_string(r->kernel));
    char *e = httpc_escape(r->session);
    char *path = ts_asprintf("/session/%s/start-service", e);
    free(e);
    cli_status rc = client_call(r->c, "POST", path, body, true, answer);
    free(path);
    json_decref(body);
    return rc;
}

/* POST /session/{name}/shutdown-service {service_name}. */
static cli_status _stop(const app_req *r)
{
    char *e = httpc_escape(r->session);
    char *path = ts_asprintf("/session/%s/shutdown-service", e);
    free(e);
    if (r->kernel) client_query_add(&path, "kernel", r->kernel);
    json_t *body = json_pack("{s:s}", "service_name", r->app), *answer = NULL;
    cli_status rc = client_call(r->c, "POST", path, body, true, &answer);
    free(path);
    json_decref(body);
    json_decref(answer);
    if (rc == CLI_OK) printf("app '%s' of session %s stopped\n", r->app, r->session);
    return rc;
}

static char *_refresh(void *ctx)
{
    json_t *answer = NULL;
    char *url = NULL;
    if (_start_service(ctx, &answer) == CLI_OK) {
        const char *u = json_string_value(json_object_get(answer, "url"));
        if (u) url = ts_strdup(u);
    }
    json_decref(answer);
    return url;
}

/* --bind: listen first (a port in use fails before any call), then the
 * route, which must be a tcp app's. */
static cli_status _bind(const cli_command *self, const app_req *r, const char *spec)
{
    char bound[300];
    ts_err err = {{0}};
    int lfd;
    if (!app_tunnel_listen(spec, &lfd, bound, sizeof(bound), &err)) {
        fprintf(stderr, "tessera %s: %s\n", self->name, err.msg);
        return CLI_FAIL;
    }
    json_t *answer = NULL;
    cli_status rc = _start_service(r, &answer);
    const char *url = json_string_value(json_object_get(answer, "url"));
    const char *proto = json_string_value(json_object_get(answer, "protocol"));
    const char *name = json_string_value(json_object_get(answer, "app"));
    if (rc == CLI_OK && (!proto || strcmp(proto, "tcp") != 0)) {
        fprintf(stderr,
                "tessera %s: the app '%s' is a%s %s app; --bind tunnels tcp apps only (open "
                "its URL instead: tessera app %s %s)\n",
                self->name, name ? name : "?", proto && strcmp(proto, "http") == 0 ? "n" : "",
                proto ? proto : "unknown", r->session, name ? name : "APP");
        rc = CLI_FAIL;
    } else if (rc == CLI_OK && !url) {
        fprintf(stderr, "tessera: the gateway answered without a url\n");
        rc = CLI_FAIL;
    } else if (rc == CLI_OK && !app_tunnel_url_ok(url, &err)) {
        fprintf(stderr, "tessera %s: %s\n", self->name, err.msg);
        rc = CLI_FAIL;
    }
    if (rc != CLI_OK) {
        close(lfd);
        json_decref(answer);
        return rc;
    }
    printf("listening on %s: connections go to the app '%s' of session %s (Ctrl-C to stop)\n",
           bound, name ? name : "?", r->session);
    fflush(stdout);
    char *u = ts_strdup(url);
    json_decref(answer);
    rc = app_tunnel_serve(lfd, u, REFRESH_AFTER_MS, _refresh, (void *)r) ? CLI_OK : CLI_FAIL;
    free(u);
    return rc;
}

int cmd_app(cli *c, const cli_command *self, int argc, char **argv)
{
    static const struct option longopts[] = {
        {"port", required_argument, NULL, 'p'},
        {"bind", required_argument, NULL, 'b'},
        {"stop", no_argument, NULL, 'S'},
        {"json", no_argument, NULL, 'J'},
        {"kernel", required_argument, NULL, 'k'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    const char *kernel = NULL;
    long port = 0;
    bool stop = false;
    const char *bind_spec = NULL;
    int opt;
    optind = 0;
    opterr = 0;
    while ((opt = getopt_long(argc, argv, ":p:b:k:h", longopts, NULL)) != -1) {
        if (opt == 'k') {
            kernel = optarg;
        } else if (opt == 'h') {
            cli_command_help(self, stdout);
            return CLI_OK;
        } else if (opt == 'J') {
            c->json = true;
        } else if (opt == 'S') {
            stop = true;
        } else if (opt == 'b') {
            if (!*optarg) return cli_usage(self->name, NULL, "--bind takes [HOST:]PORT");
            bind_spec = optarg;
        } else if (opt == 'p') {
            char *end = NULL;
            port = strtol(optarg, &end, 10);
            if (*end || port < 1 || port > 65535)
                return cli_usage(self->name, NULL, "--port takes a number from 1 to 65535");
        } else {
            return cli_usage(self->name, NULL,
                             opt == ':' ? "missing value for '%s'" : "unknown option '%s'",
                             argv[optind - 1]);
        }
    }
    int left = argc - optind;
    if (left < 1) return cli_usage(self->name, NULL, "SESSION is missing");
    if (left < 2 && !port) return cli_usage(self->name, NULL, "APP is missing");
    if (left > 2) return cli_usage(self->name, NULL, "unexpected argument '%s'", argv[optind + 2]);
    if (stop && (left < 2 || port || bind_spec))
        return cli_usage(self->name, NULL,
                         "--stop takes the APP by its name, without --port or --bind");
    if (!client_has_keys(c)) return CLI_FAIL;

    app_req r = {.c = c,
                 .session = argv[optind],
                 .app = left == 2 ? argv[optind + 1] : NULL,
                 .kernel = kernel,
                 .port = port};
    if (stop) return _stop(&r);
    if (bind_spec) return _bind(self, &r, bind_spec);
    json_t *answer = NULL;
    cli_status rc = _start_service(&r, &answer);
    if (rc == CLI_OK) {
        const char *url = json_string_value(json_object_get(answer, "url"));
        if (c->json) {
            out_json(answer);
        } else if (url) {
            printf("%s\n", url);
        } else {
            fprintf(stderr, "tessera: the gateway answered without a url\n");
            rc = CLI_FAIL;
        }
    }
    json_decref(answer);
    return rc;
}
