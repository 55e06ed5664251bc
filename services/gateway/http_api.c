/* http_api.c: routes of the public API (docs/api.md). Public endpoints need
 * no signature; every other route verifies one first (verify.c). Identity
 * and admin requests are forwarded to tessera-auth (proxy.c); sessions.c
 * and folders.c add the routes of the registry and tessera-vfolder,
 * server_login.c the console's login (session mode, /func/...) and console.c
 * its files. */
#include "http_api.h"

#include "console.h"
#include "bgtasks.h"
#include "events_session.h"
#include "folders.h"
#include "graphql.h"
#include "proxy.h"
#include "resources.h"
#include "server_login.h"
#include "session_templates.h"
#include "sessions.h"
#include "status.h"
#include "streams.h"
#include "verify.h"
#include "web_payload.h"

#include <sodium.h>
#include <stdlib.h>
#include <string.h>

static const char RESOURCE_SLOTS[] =
    "{\"cpu\":\"count\",\"mem\":\"bytes\",\"cuda.device\":\"count\",\"cuda.shares\":\"count\"}";

/* How clients show each slot (Backend.AI's accelerator metadata): the
 * name, the unit, whether amounts are binary and how many decimals. */
#define SLOT_DETAIL(slot, key, desc, name, unit, binary, round, icon)                              \
    "\"" slot "\":{\"slot_name\":\"" key "\",\"description\":\"" desc                              \
    "\",\"human_readable_name\":\"" name "\",\"display_unit\":\"" unit                             \
    "\",\"number_format\":{\"binary\":" binary ",\"round_length\":" round                          \
    "},\"display_icon\":\"" icon "\"}"
#define DETAIL_CPU SLOT_DETAIL("cpu", "cpu", "CPU", "CPU", "Core", "false", "0", "cpu")
#define DETAIL_MEM SLOT_DETAIL("mem", "ram", "Memory", "RAM", "GiB", "true", "0", "cpu")
#define DETAIL_GPU                                                                                 \
    SLOT_DETAIL("cuda.device", "cuda.device", "CUDA-capable GPU", "GPU", "GPU", "false", "0",      \
                "gpu1")
#define DETAIL_SHARES                                                                              \
    SLOT_DETAIL("cuda.shares", "cuda.shares", "CUDA-capable GPU (fractional)", "fGPU", "fGPU",     \
                "false", "2", "gpu1")
static const char RESOURCE_SLOT_DETAILS[] =
    "{" DETAIL_CPU "," DETAIL_MEM "," DETAIL_GPU "," DETAIL_SHARES "}";

/* The folder types one may create: personal and project folders. */
static const char VFOLDER_TYPES[] = "[\"user\",\"group\"]";

/* Forward req to tessera-auth's target with body (len bytes) on id's behalf
 * (NULL: anonymous), within auth.timeout. */
static void _to_auth(gateway *gw, http_req *req, http_resp *resp, const char *target,
                     const gw_identity *id, const void *body, size_t len)
{
    proxy_forward(&gw->up[UPSTREAM_AUTH], gw->auth_timeout_ms, req, resp, target, id, body, len);
}

/* ---- public ----------------------------------------------------------------------- */

static void h_version(http_req *req, http_resp *resp, void *ctx)
{
    (void)ctx;
    if (console_redirect_browser(req, resp)) return;
    http_reply_json(resp, 200,
                    json_pack("{s:s, s:s, s:s}", "version", GATEWAY_API_VERSION, "manager",
                              GATEWAY_MANAGER_COMPAT "+tessera." TESSERA_VERSION, "tessera",
                              TESSERA_VERSION));
}

/* GET /config/resource-slots, /config/resource-slots/details,
 * /config/vfolder-types: constant JSON (the route's context). */
static void h_constant(http_req *req, http_resp *resp, void *ctx)
{
    (void)req;
    const char *body = ctx;
    http_reply(resp, 200, "application/json", body, strlen(body));
}

/* POST /auth/authorize: the body as sent plus the client's address. */
static void h_authorize(http_req *req, http_resp *resp, void *ctx)
{
    gateway *gw = ctx;
    json_t *body = http_json_body(req, resp);
    if (!body) return;
    json_object_set_new(body, "client_addr", json_string(req->client_addr));
    char *text = json_dumps(body, JSON_COMPACT);
    json_decref(body);
    if (!text) {
        http_problem(resp, 400, "invalid-api-params", NULL, "request body could not be re-encoded");
        return;
    }
    _to_auth(gw, req, resp, "/v1/authorize", NULL, text, strlen(text));
    free(text);
}

/* ---- signed ----------------------------------------------------------------------- */

/* GET|POST /auth, /auth/test: the signature check Backend.AI clients use.
 * The echo comes from the query, or from a JSON body's "echo" (other bodies,
 * e.g. multipart, are accepted and not read). */
static void h_auth_test(http_req *req, http_resp *resp, void *ctx)
{
    gateway *gw = ctx;
    gw_identity id;
    if (!verify_request(gw, req, resp, &id)) return;
    json_t *echo = NULL;
    char media[64];
    sign_media_type(http_header(req, "Content-Type"), media, sizeof(media));
    if (strcmp(req->method, "POST") == 0 && req->body_len > 0 &&
        strcmp(media, "application/json") == 0) {
        json_t *body = http_json_body(req, resp);
        if (!body) return;
        echo = json_incref(json_object_get(body, "echo"));
        json_decref(body);
    } else {
        const char *q = http_query_arg(req, "echo");
        if (q) {
            echo = json_string(q);
            if (!echo) {
                http_problem(resp, 400, "invalid-api-params", NULL, "echo is not valid UTF-8");
                return;
            }
        }
    }
    json_t *out = json_pack("{s:s}", "authorized", "yes");
    if (echo) json_object_set_new(out, "echo", echo);
    http_reply_json(resp, 200, out);
}

/* GET /auth/role -> auth /v1/role?<query>. */
static void h_role(http_req *req, http_resp *resp, void *ctx)
{
    gateway *gw = ctx;
    gw_identity id;
    if (!verify_request(gw, req, resp, &id)) return;
    char *target = ts_asprintf("/v1/role%s%s", req->query[0] ? "?" : "", req->query);
    _to_auth(gw, req, resp, target, &id, NULL, 0);
    free(target);
}

/* POST /auth/update-password: as sent, or Backend.AI's encoded body
 * decoded (web_payload.h) as its web server does. */
static void h_update_password(http_req *req, http_resp *resp, void *ctx)
{
    gateway *gw = ctx;
    gw_identity id;
    if (!verify_request(gw, req, resp, &id)) return;
    if (!web_payload_encoded(req)) {
        _to_auth(gw, req, resp, "/v1/update-password", &id, req->body, req->body_len);
        return;
    }
    json_t *body = web_payload_decode(req, resp);
    char *text = body ? json_dumps(body, JSON_COMPACT) : NULL;
    json_decref(body);
    if (!text) return;
    _to_auth(gw, req, resp, "/v1/update-password", &id, text, strlen(text));
    sodium_memzero(text, strlen(text));
    free(text);
}

/* Anything under /admin -> auth /v1/admin/... with method, query and body;
 * also the caller's own settings (/auth/update-full-name, /auth/signout,
 * /auth/ssh-keypair, /user-config/..., /manager/announcement) -> auth
 * /v1/<the same path>. */
static void h_admin(http_req *req, http_resp *resp, void *ctx)
{
    gateway *gw = ctx;
    gw_identity id;
    if (!verify_request(gw, req, resp, &id)) return;
    char *target = proxy_v1_target(req);
    _to_auth(gw, req, resp, target, &id, req->body, req->body_len);
    free(target);
}

void gateway_routes(gateway *gw)
{
    http_router *r = svc_router(gw->svc);
    http_route(r, "GET", "/", h_version, gw);
    http_route(r, "GET", "/config/resource-slots", h_constant, (void *)RESOURCE_SLOTS);
    http_route(r, "GET", "/config/resource-slots/details", h_constant,
               (void *)RESOURCE_SLOT_DETAILS);
    http_route(r, "GET", "/config/vfolder-types", h_constant, (void *)VFOLDER_TYPES);
    http_route(r, "POST", "/auth/authorize", h_authorize, gw);
    http_route(r, "GET", "/auth/role", h_role, gw);
    http_route(r, "POST", "/auth/update-password", h_update_password, gw);
    static const char *const tests[] = {"/auth", "/auth/test"};
    for (size_t i = 0; i < TS_ARRAY_LEN(tests); i++) {
        http_route(r, "GET", tests[i], h_auth_test, gw);
        http_route(r, "POST", tests[i], h_auth_test, gw);
    }
    status_routes(gw); /* GET /admin/status: the gateway's own */
    /* The router matches whole segments: one route per depth. */
    static const char *const admin[] = {"/admin", "/admin/{a}", "/admin/{a}/{b}",
                                        "/admin/{a}/{b}/{c}", "/admin/{a}/{b}/{c}/{d}"};
    for (size_t i = 0; i < TS_ARRAY_LEN(admin); i++)
        http_route(r, "*", admin[i], h_admin, gw);
    static const char *const own[][2] = {
        {"POST", "/auth/update-full-name"}, {"POST", "/auth/signout"},
        {"GET", "/auth/ssh-keypair"},       {"PATCH", "/auth/ssh-keypair"},
        {"POST", "/auth/ssh-keypair"},      {"*", "/user-config/{a}"},
        {"GET", "/manager/announcement"},   {"POST", "/manager/announcement"},
    };
    for (size_t i = 0; i < TS_ARRAY_LEN(own); i++)
        http_route(r, own[i][0], own[i][1], h_admin, gw);
    sessions_routes(gw);
    streams_routes(gw);
    events_session_routes(gw); /* /events/session */
    bgtasks_routes(gw);        /* /events/background-task */
    session_templates_routes(gw);
    folders_routes(gw);
    resources_routes(gw);
    graphql_routes(gw);
    server_login_routes(gw);
    console_routes(gw);
}
