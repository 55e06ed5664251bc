/* template_launch.c: see template_launch.h. */
#include "template_launch.h"

#include "caller.h"
#include "libcommon/log.h"
#include "libcommon/pgjson.h"
#include "session_create.h"
#include "session_templates.h"
#include "template_spec.h"

#include <string.h>

static void h_create_from_template(http_req *req, http_resp *resp, void *ctx)
{
    svc *s = ctx;
    json_t *body = http_json_body(req, resp);
    if (!body) return;
    ts_caller c;
    if (!caller_get(req, resp, NULL, &c)) {
        json_decref(body);
        return;
    }
    json_t *id = json_object_get(body, "template_id");
    if (!id) id = json_object_get(body, "templateId");
    json_t *row = NULL;
    PGconn *conn = NULL;
    if (!json_is_string(id) || json_string_length(id) == 0) {
        http_problem(resp, 400, "invalid-api-params", NULL,
                     "\"template_id\" is required (a session template id)");
    } else if ((conn = pgjson_get(s, resp))) {
        row = session_templates_find(conn, resp, &c, json_string_value(id));
    }
    /* the create takes its own connection and asks auth: give this one back first */
    pgjson_put(s, conn);
    if (row) {
        json_t *merged =
            template_spec_merge(json_object_get(row, "template"),
                                json_string_value(json_object_get(row, "project_name")), body);
        TLOG_INFO("session from template", "template=%s by=%s", json_string_value(id),
                  c.access_key);
        session_create_reply(s, req, resp, merged);
        json_decref(merged);
    }
    json_decref(row);
    caller_free(&c);
    json_decref(body);
}

void template_launch_routes(svc *s)
{
    http_route(svc_router(s), "POST", "/v1/sessions/_/create-from-template", h_create_from_template,
               s);
}
