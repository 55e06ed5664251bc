/* graphql.c: POST /admin/gql and /admin/graphql (graphql.h). */
#include "graphql.h"

#include "gql_exec.h"
#include "gql_fetch.h"
#include "gql_mutation_root.h"
#include "gql_query.h"
#include "gql_schema.h"
#include "verify.h"

#include "libcommon/log.h"

#include <string.h>

/* Backend.AI's schema (docs/api.md "GraphQL"). */
static const gql_schema backendai = {
    .query = gql_query_fields,
    .mutation = gql_mutation_fields,
    .input_types = gql_input_types,
};

/* The request's members; false after a 400. */
static bool _request(http_resp *resp, const json_t *body, gql_request *r)
{
    const json_t *q = json_object_get(body, "query");
    const json_t *vars = json_object_get(body, "variables");
    const json_t *op = json_object_get(body, "operation_name");
    if (!op || json_is_null(op)) op = json_object_get(body, "operationName");
    if (!json_is_string(q)) {
        http_problem(resp, 400, "invalid-api-params", NULL,
                     "query: a GraphQL document (string) is required");
        return false;
    }
    if (vars && !json_is_null(vars) && !json_is_object(vars)) {
        http_problem(resp, 400, "invalid-api-params", NULL, "variables: must be an object");
        return false;
    }
    if (op && !json_is_null(op) && !json_is_string(op)) {
        http_problem(resp, 400, "invalid-api-params", NULL, "operation_name: must be a string");
        return false;
    }
    *r = (gql_request){.query = json_string_value(q),
                       .query_len = json_string_length(q),
                       .variables = json_is_object(vars) ? vars : NULL,
                       .operation_name = json_is_string(op) ? json_string_value(op) : NULL};
    return true;
}

static void _serve(http_req *req, http_resp *resp, gateway *gw, bool legacy)
{
    gw_identity id;
    if (!verify_request(gw, req, resp, &id)) return;
    json_t *body = http_json_body(req, resp);
    if (!body) return;
    gql_request r;
    if (!_request(resp, body, &r)) {
        json_decref(body);
        return;
    }
    gql_ctx c = {
        .gw = gw, .req = req, .id = &id, .deadline_ms = ts_now_mono_ms() + GQL_REQUEST_TIME_MS};
    bool valid;
    json_t *answer = gql_execute(&backendai, &r, &c, &valid);
    json_decref(c.users);
    json_t *errors = json_object_get(answer, "errors");
    if (errors) {
        char q[200];
        TLOG_INFO(
            "graphql request answered with errors", "access_key=%s valid=%d errors=%zu first=%s",
            id.access_key, valid, json_array_size(errors),
            tlog_quote(q, sizeof(q),
                       json_string_value(json_object_get(json_array_get(errors, 0), "message"))));
    }
    if (!legacy) {
        http_reply_json(resp, 200, answer);
    } else if (errors) {
        const char *first =
            json_string_value(json_object_get(json_array_get(errors, 0), "message"));
        json_t *p = http_problem_json("graphql-error", "GraphQL-generated error.", first);
        json_object_set(p, "data", errors);
        char *text = json_dumps(p, JSON_COMPACT);
        http_reply(resp, 400, "application/problem+json", text, strlen(text));
        free(text);
        json_decref(p);
        json_decref(answer);
    } else {
        json_t *data = json_incref(json_object_get(answer, "data"));
        json_decref(answer);
        http_reply_json(resp, 200, data);
    }
    json_decref(body);
}

static void h_gql(http_req *req, http_resp *resp, void *ctx)
{
    _serve(req, resp, ctx, false);
}

static void h_graphql(http_req *req, http_resp *resp, void *ctx)
{
    _serve(req, resp, ctx, true);
}

void graphql_routes(gateway *gw)
{
    http_router *r = svc_router(gw->svc);
    http_route(r, "POST", "/admin/gql", h_gql, gw);
    http_route(r, "POST", "/admin/graphql", h_graphql, gw);
}
