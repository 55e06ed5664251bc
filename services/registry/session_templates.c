/* session_templates.c: see session_templates.h. */
#include "session_templates.h"

#include "db_common.h"
#include "libcommon/log.h"
#include "libcommon/pgjson.h"
#include "template_spec.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define TEMPLATES_PER_CALL 16
#define TEMPLATES_PER_OWNER 200

/* A UUID in either form Backend.AI answers: canonical, or 32 hex digits. */
static bool _id_ok(const char *id)
{
    if (!id) return false;
    if (ts_uuid_valid(id)) return true;
    size_t n = 0;
    for (; id[n]; n++)
        if (!isxdigit((unsigned char)id[n])) return false;
    return n == 32;
}

/* Whether the caller reaches a template of user_id in domain. */
static bool _may_reach(const ts_caller *c, const char *user_id, const char *domain)
{
    if (caller_is_superadmin(c) || strcmp(c->user_id, user_id) == 0) return true;
    if (strcmp(c->role, "admin") != 0 || strcmp(c->domain_name, domain) != 0) return false;
    return !caller_hides_user(c, user_id);
}

#define SELECT_ONE                                                                                 \
    "SELECT replace(id::text, '-', '') AS id, template, name, user_id::text AS user_uuid,"         \
    " project_id::text AS group_id, domain_name, project_name, access_key"                         \
    " FROM registry.session_templates WHERE id = $1::uuid"

json_t *session_templates_find(PGconn *conn, http_resp *resp, const ts_caller *c, const char *id)
{
    if (!_id_ok(id)) {
        http_problem(resp, 400, "invalid-api-params", NULL,
                     "template_id: not a session template id: %.64s", id ? id : "");
        return NULL;
    }
    tlog_ctx_entity("session_template", id);
    const char *p[] = {id};
    PGresult *r = pgjson_query(conn, resp, "read session template", SELECT_ONE, 1, p);
    if (!r) return NULL;
    json_t *row = PQntuples(r) == 1 ? pgjson_row_json(r, 0) : NULL;
    PQclear(r);
    if (row && !_may_reach(c, pgjson_str(row, "user_uuid"), pgjson_str(row, "domain_name"))) {
        json_decref(row);
        row = NULL;
    }
    if (!row) http_problem(resp, 404, "not-found", NULL, "unknown session template %s", id);
    return row;
}

/* ---- the write's parts ------------------------------------------------------------------- */

/* The owner's context: the caller's, or (administrators) owner_access_key's. */
static bool _owner(http_req *req, http_resp *resp, const ts_caller *c, const char *oak,
                   json_t **owner)
{
    *owner = NULL;
    if (!oak || !*oak || strcmp(oak, c->access_key) == 0) {
        *owner = json_incref(c->ctx);
        return true;
    }
    if (!caller_is_admin(c)) {
        http_problem(resp, 403, "forbidden", NULL,
                     "only administrators may keep templates for another keypair");
        return false;
    }
    if (!context_get(req, resp, oak, NULL, owner)) {
        if (http_resp_status(resp) == 404)
            http_problem(resp, 400, "invalid-api-params", NULL, "unknown owner_access_key %s", oak);
        return false;
    }
    const char *od = pgjson_str(json_object_get(*owner, "user"), "domain_name");
    const char *why = NULL;
    if (!caller_is_superadmin(c) && strcmp(od, c->domain_name) != 0)
        why = "a domain administrator may keep templates only for its domain";
    else if (!caller_is_superadmin(c) && context_is_superadmin(*owner))
        why = "a domain administrator may not keep templates for a superadmin";
    if (why) {
        http_problem(resp, 403, "forbidden", NULL, "%s", why);
        json_decref(*owner);
        *owner = NULL;
        return false;
    }
    return true;
}

/* The project group (a name or an id) of the owner ak: its id and name. */
static bool _project(http_req *req, http_resp *resp, const char *ak, const char *group,
                     char id[TS_UUID_STRLEN], char *name, size_t size)
{
    json_t *ctx = NULL;
    if (!context_get(req, resp, ak, group, &ctx)) return false;
    json_t *p = json_object_get(ctx, "project");
    bool ok = json_is_object(p) && ts_uuid_valid(pgjson_str(p, "id"));
    if (ok) {
        ts_strlcpy(id, pgjson_str(p, "id"), TS_UUID_STRLEN);
        ts_strlcpy(name, pgjson_str(p, "name"), size);
    } else {
        http_problem(resp, 400, "invalid-api-params", NULL, "unknown group %s", group);
    }
    json_decref(ctx);
    return ok;
}

/* The body's group: group_id, else group (or group_name, groupName); NULL if none. */
static const char *_body_group(const json_t *body)
{
    static const char *const keys[] = {"group_id", "groupId", "group", "group_name", "groupName"};
    for (size_t i = 0; i < TS_ARRAY_LEN(keys); i++) {
        const char *v = json_string_value(json_object_get(body, keys[i]));
        if (v && *v) return v;
    }
    return NULL;
}

/* body.payload as a list of items {"template", "name"?, "group_id"?} (owned). */
static json_t *_items(const json_t *body, size_t max, http_resp *resp)
{
    json_t *pl = json_object_get(body, "payload"), *parsed = NULL;
    if (json_is_string(pl)) {
        json_error_t je;
        parsed = json_loadb(json_string_value(pl), json_string_length(pl), 0, &je);
        if (!parsed) {
            http_problem(resp, 400, "invalid-api-params", NULL,
                         "payload is not JSON (line %d: %s); Tessera takes templates as JSON "
                         "only, not YAML",
                         je.line, je.text);
            return NULL;
        }
    } else if (json_is_object(pl) || json_is_array(pl)) {
        parsed = json_incref(pl);
    } else {
        http_problem(resp, 400, "invalid-api-params", NULL,
                     "payload is required: a template, or a list of {\"template\", \"name\"?}, "
                     "as JSON text");
        return NULL;
    }
    json_t *items = json_array();
    if (json_is_object(parsed))
        json_array_append(items, parsed);
    else if (json_is_array(parsed))
        json_array_extend(items, parsed);
    json_decref(parsed);
    size_t n = json_array_size(items), i;
    json_t *it;
    const char *why = NULL;
    if (n == 0)
        why = "payload holds no template";
    else if (n > max)
        why = max == 1 ? "payload must hold one template" : "payload holds too many templates";
    json_array_foreach(items, i, it)
    {
        if (why) break;
        if (!json_is_object(it)) {
            why = "payload: each item must be an object";
        } else if (!json_object_get(it, "template")) { /* a bare template */
            json_t *wrapped = json_pack("{s:O}", "template", it);
            json_array_set_new(items, i, wrapped);
        }
    }
    if (why) {
        http_problem(resp, 400, "invalid-api-params", NULL, "%s (at most %zu)", why, max);
        json_decref(items);
        return NULL;
    }
    return items;
}

/* One checked item, ready to store. */
typedef struct tpl_item {
    json_t *template; /* normalized (owned) */
    const char *name;
    char project_id[TS_UUID_STRLEN];
    char project_name[260];
} tpl_item;

/* Check item i; its project: its group_id, else def_group (resolved for owner_ak). */
static bool _item(http_req *req, http_resp *resp, json_t *it, size_t i, const char *owner_ak,
                  const char *owner_id, const char *def_group, tpl_item *out)
{
    char where[48];
    snprintf(where, sizeof(where), "payload[%zu]", i);
    json_t *uu = json_object_get(it, "user_uuid");
    if (uu && !json_is_null(uu) && strcmp(pgjson_str(it, "user_uuid"), owner_id) != 0) {
        http_problem(resp, 400, "invalid-api-params", NULL,
                     "%s.user_uuid: the owner is the caller (or owner_access_key's keypair)",
                     where);
        return false;
    }
    json_t *nm = json_object_get(it, "name");
    if (nm && !json_is_null(nm) &&
        (!json_is_string(nm) || json_string_length(nm) < 1 || json_string_length(nm) > 128)) {
        http_problem(resp, 400, "invalid-api-params", NULL, "%s.name must be 1 to 128 characters",
                     where);
        return false;
    }
    snprintf(where, sizeof(where), "payload[%zu].template", i);
    if (!(out->template = template_spec_check(json_object_get(it, "template"), where, resp)))
        return false;
    out->name = json_is_string(nm) ? json_string_value(nm)
                                   : pgjson_str(json_object_get(out->template, "metadata"), "name");
    const char *g = json_string_value(json_object_get(it, "group_id"));
    return _project(req, resp, owner_ak, g && *g ? g : def_group, out->project_id,
                    out->project_name, sizeof(out->project_name));
}

/* ---- handlers ------------------------------------------------------------------------------- */

static const char insert_sql[] =
    "INSERT INTO registry.session_templates (id, domain_name, project_id, project_name, user_id,"
    " user_email, access_key, name, template) VALUES ($1::uuid, $2, $3::uuid, $4, $5::uuid, $6,"
    " $7, $8, $9::jsonb)";

static bool _store(PGconn *conn, http_resp *resp, const json_t *owner, tpl_item *items, size_t n,
                   json_t *answer)
{
    json_t *user = json_object_get(owner, "user");
    const char *uid = pgjson_str(user, "id");
    const char *cp[] = {uid};
    PGresult *r = pgjson_query(conn, resp, "count session templates",
                               "SELECT (SELECT count(*) FROM registry.session_templates"
                               " WHERE user_id = $1::uuid) FROM"
                               " pg_advisory_xact_lock(hashtext('session_templates:' || $1))",
                               1, cp);
    if (!r) return false;
    long have = atol(PQgetvalue(r, 0, 0));
    PQclear(r);
    if (have + (long)n > TEMPLATES_PER_OWNER) {
        http_problem(resp, 400, "invalid-api-params", NULL,
                     "an owner keeps at most %d session templates (has %ld)", TEMPLATES_PER_OWNER,
                     have);
        return false;
    }
    for (size_t i = 0; i < n; i++) {
        char id[TS_UUID_STRLEN];
        ts_uuid4(id);
        char *text = json_dumps(items[i].template, JSON_COMPACT);
        const char *p[] = {id,
                           pgjson_str(user, "domain_name"),
                           items[i].project_id,
                           items[i].project_name,
                           uid,
                           pgjson_str(user, "email"),
                           pgjson_str(owner, "access_key"),
                           items[i].name,
                           text};
        r = pgjson_query(conn, resp, "create session template", insert_sql, 9, p);
        free(text);
        if (!r) return false;
        PQclear(r);
        char hex[33];
        size_t k = 0;
        for (const char *q = id; *q && k < 32; q++)
            if (*q != '-') hex[k++] = *q;
        hex[k] = '\0';
        json_array_append_new(answer, json_pack("{s:s, s:s}", "id", hex, "user", uid));
    }
    return true;
}

/* POST /v1/session-templates */
static void h_create(http_req *req, http_resp *resp, void *ctx)
{
    svc *s = ctx;
    ts_caller c;
    if (!caller_get(req, resp, NULL, &c)) return;
    json_t *body = http_json_body(req, resp), *owner = NULL, *items = NULL, *answer = NULL;
    tpl_item parsed[TEMPLATES_PER_CALL] = {{0}};
    size_t n = 0;
    PGconn *conn = NULL;
    if (!body || !(items = _items(body, TEMPLATES_PER_CALL, resp)) ||
        !_owner(req, resp, &c, json_string_value(json_object_get(body, "owner_access_key")),
                &owner))
        goto out;
    json_t *ouser = json_object_get(owner, "user");
    const char *dom = json_string_value(json_object_get(body, "domain"));
    if (dom && *dom && strcmp(dom, pgjson_str(ouser, "domain_name")) != 0) {
        http_problem(resp, 400, "invalid-api-params", NULL,
                     "domain %s is not the owner's domain (%s)", dom,
                     pgjson_str(ouser, "domain_name"));
        goto out;
    }
    const char *group = _body_group(body);
    for (; n < json_array_size(items); n++)
        if (!_item(req, resp, json_array_get(items, n), n, pgjson_str(owner, "access_key"),
                   pgjson_str(ouser, "id"), group ? group : "default", &parsed[n])) {
            n++;
            goto out;
        }
    if (!(conn = pgjson_get(s, resp)) || !pgjson_begin(conn, resp)) goto out;
    answer = json_array();
    if (_store(conn, resp, owner, parsed, n, answer) && pgjson_commit(conn, resp)) {
        TLOG_INFO("session templates created", "count=%zu owner=%s by=%s", n,
                  pgjson_str(owner, "access_key"), c.access_key);
        http_reply_json(resp, 200, json_incref(answer));
    } else {
        pg_rollback(conn);
    }
out:
    for (size_t i = 0; i < n; i++)
        json_decref(parsed[i].template);
    json_decref(answer);
    json_decref(items);
    json_decref(owner);
    json_decref(body);
    pgjson_put(s, conn);
    caller_free(&c);
}

static bool _truthy(const char *v)
{
    return v && (!strcasecmp(v, "true") || !strcmp(v, "1") || !strcasecmp(v, "yes") || !*v);
}

/* GET /v1/session-templates?all=&group_id= */
static void h_list(http_req *req, http_resp *resp, void *ctx)
{
    svc *s = ctx;
    ts_caller c;
    if (!caller_get(req, resp, NULL, &c)) return;
    const char *group = http_query_arg(req, "group_id");
    if (!group) group = http_query_arg(req, "groupId");
    if (group && !*group) group = NULL;
    if (group && !ts_uuid_valid(group)) {
        http_problem(resp, 400, "invalid-api-params", NULL, "group_id: not a project id: %.64s",
                     group);
        caller_free(&c);
        return;
    }
    bool all = _truthy(http_query_arg(req, "all")) && caller_is_admin(&c);
    char *supers = caller_hidden_users(&c);
    const char *p[] = {c.user_id, all ? "true" : "false",
                       caller_is_superadmin(&c) ? NULL : c.domain_name, supers, group};
    PGconn *conn = pgjson_get(s, resp);
    PGresult *r =
        conn
            ? pgjson_query(conn, resp, "list session templates",
                           "SELECT name, replace(id::text, '-', '') AS id, created_at,"
                           " user_id = $1::uuid AS is_owner, user_id::text AS \"user\","
                           " project_id::text AS \"group\", user_email, project_name AS group_name,"
                           " domain_name, type, template FROM registry.session_templates"
                           " WHERE (user_id = $1::uuid OR ($2::bool AND ($3::text IS NULL OR"
                           "   (domain_name = $3 AND NOT (user_id = ANY($4::uuid[]))))))"
                           " AND ($5::uuid IS NULL OR project_id = $5::uuid)"
                           " ORDER BY created_at DESC, id LIMIT 1000",
                           5, p)
            : NULL;
    if (r) {
        http_reply_json(resp, 200, pgjson_rows_json(r));
        PQclear(r);
    }
    free(supers);
    pgjson_put(s, conn);
    caller_free(&c);
}

/* GET /v1/session-templates/{id}?format=json */
static void h_get(http_req *req, http_resp *resp, void *ctx)
{
    svc *s = ctx;
    ts_caller c;
    if (!caller_get(req, resp, NULL, &c)) return;
    const char *fmt = http_query_arg(req, "format");
    PGconn *conn = NULL;
    json_t *row = NULL;
    if (fmt && *fmt && strcmp(fmt, "json") != 0) {
        http_problem(resp, 400, "invalid-api-params", NULL,
                     "format: Tessera answers templates as JSON only (format=json)");
    } else if ((conn = pgjson_get(s, resp)) &&
               (row = session_templates_find(conn, resp, &c, http_param(req, "id")))) {
        json_object_del(row, "project_name");
        json_object_del(row, "access_key");
        http_reply_json(resp, 200, json_incref(row));
    }
    json_decref(row);
    pgjson_put(s, conn);
    caller_free(&c);
}

/* PUT /v1/session-templates/{id}: one template replaces the stored one. */
static void h_update(http_req *req, http_resp *resp, void *ctx)
{
    svc *s = ctx;
    ts_caller c;
    if (!caller_get(req, resp, NULL, &c)) return;
    json_t *body = http_json_body(req, resp), *items = NULL, *row = NULL;
    tpl_item item = {0};
    PGconn *conn = NULL;
    if (!body || !(items = _items(body, 1, resp)) || !(conn = pgjson_get(s, resp)) ||
        !(row = session_templates_find(conn, resp, &c, http_param(req, "id"))))
        goto out;
    /* the project: the one named now, else the template's */
    const char *group = _body_group(body);
    json_t *it = json_array_get(items, 0);
    if (!group && !json_string_value(json_object_get(it, "group_id"))) {
        const char *g = json_string_value(json_object_get(row, "group_id"));
        group = g ? g : "default";
    }
    pgjson_put(s, conn); /* not held while auth is asked */
    conn = NULL;
    if (!_item(req, resp, it, 0, pgjson_str(row, "access_key"), pgjson_str(row, "user_uuid"), group,
               &item) ||
        !(conn = pgjson_get(s, resp)))
        goto out;
    char *text = json_dumps(item.template, JSON_COMPACT);
    const char *p[] = {http_param(req, "id"), item.name, text, item.project_id, item.project_name};
    PGresult *r = pgjson_query(conn, resp, "update session template",
                               "UPDATE registry.session_templates SET name = $2,"
                               " template = $3::jsonb, project_id = $4::uuid, project_name = $5"
                               " WHERE id = $1::uuid",
                               5, p);
    free(text);
    if (r) {
        bool found = atoi(PQcmdTuples(r)) == 1;
        PQclear(r);
        if (found) {
            TLOG_INFO("session template changed", "by=%s", c.access_key);
            http_reply_json(resp, 200, json_pack("{s:b}", "success", true));
        } else {
            http_problem(resp, 404, "not-found", NULL, "unknown session template %s",
                         http_param(req, "id"));
        }
    }
out:
    json_decref(item.template);
    json_decref(row);
    json_decref(items);
    json_decref(body);
    pgjson_put(s, conn);
    caller_free(&c);
}

/* DELETE /v1/session-templates/{id} */
static void h_delete(http_req *req, http_resp *resp, void *ctx)
{
    svc *s = ctx;
    ts_caller c;
    if (!caller_get(req, resp, NULL, &c)) return;
    PGconn *conn = pgjson_get(s, resp);
    json_t *row = conn ? session_templates_find(conn, resp, &c, http_param(req, "id")) : NULL;
    if (row) {
        const char *p[] = {http_param(req, "id")};
        PGresult *r =
            pgjson_query(conn, resp, "delete session template",
                         "DELETE FROM registry.session_templates WHERE id = $1::uuid", 1, p);
        if (r) {
            PQclear(r);
            TLOG_INFO("session template deleted", "owner=%s by=%s", pgjson_str(row, "access_key"),
                      c.access_key);
            http_reply_json(resp, 200, json_pack("{s:b}", "success", true));
        }
    }
    json_decref(row);
    pgjson_put(s, conn);
    caller_free(&c);
}

void session_templates_routes(svc *s)
{
    http_router *r = svc_router(s);
    http_route(r, "POST", "/v1/session-templates", h_create, s);
    http_route(r, "GET", "/v1/session-templates", h_list, s);
    http_route(r, "GET", "/v1/session-templates/{id}", h_get, s);
    http_route(r, "PUT", "/v1/session-templates/{id}", h_update, s);
    http_route(r, "DELETE", "/v1/session-templates/{id}", h_delete, s);
}
