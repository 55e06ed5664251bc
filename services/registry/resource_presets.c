/* resource_presets.c: see resource_presets.h. */
#include "resource_presets.h"

#include "caller.h"
#include "libcommon/log.h"
#include "libcommon/pgjson.h"
#include "libcommon/slots.h"
#include "listing.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SELECT_PRESETS                                                                             \
    "SELECT name, resource_slots, shared_memory::text AS shared_memory, created_at"

static const listing_one preset_row = {
    "read resource preset", SELECT_PRESETS " FROM registry.resource_presets WHERE name = $1",
    "unknown resource preset", "resource_preset"};

json_t *resource_presets_all(PGconn *conn, http_resp *resp)
{
    PGresult *r = pgjson_query(conn, resp, "list resource presets",
                               "SELECT name, resource_slots, shared_memory::text AS shared_memory"
                               " FROM registry.resource_presets ORDER BY name",
                               0, NULL);
    if (!r) return NULL;
    json_t *rows = pgjson_rows_json(r);
    PQclear(r);
    return rows;
}

/* GET /v1/resource/presets: everyone authenticated. */
static void h_public_list(http_req *req, http_resp *resp, void *ctx)
{
    svc *s = ctx;
    ts_caller c;
    if (!caller_get(req, resp, NULL, &c)) return;
    PGconn *conn = pgjson_get(s, resp);
    json_t *rows = conn ? resource_presets_all(conn, resp) : NULL;
    if (rows)
        http_reply_json(resp, 200,
                        json_pack("{s:O, s:o}", "presets", rows, "resource_presets", rows));
    pgjson_put(s, conn);
    caller_free(&c);
}

/* GET /v1/admin/resource-presets: everyone authenticated reads. */
static void h_list(http_req *req, http_resp *resp, void *ctx)
{
    ts_caller c;
    if (!caller_get(req, resp, NULL, &c)) return;
    listing l = {.what = "list resource presets",
                 .sql = SELECT_PRESETS ", count(*) OVER () AS total"
                                       " FROM registry.resource_presets"
                                       " ORDER BY name LIMIT $1::bigint OFFSET $2::bigint",
                 .n_params = 0};
    listing_reply(ctx, req, resp, &l);
    caller_free(&c);
}

static void h_get(http_req *req, http_resp *resp, void *ctx)
{
    svc *s = ctx;
    ts_caller c;
    if (!caller_get(req, resp, NULL, &c)) return;
    const char *name = http_param(req, "name");
    tlog_ctx_entity("resource_preset", name);
    PGconn *conn = pgjson_get(s, resp);
    if (conn) listing_reply_one(resp, conn, &preset_row, name, 200);
    pgjson_put(s, conn);
    caller_free(&c);
}

/* The fields of a write, as text parameters. */
typedef struct preset_fields {
    const char *name;
    char *slots;    /* normalized JSON text, or NULL (absent) */
    bool has_shmem; /* shared_memory present (null included) */
    char shmem[24]; /* "" when null */
} preset_fields;

static bool _name_ok(const char *n, http_resp *resp)
{
    for (const char *p = n; *p; p++)
        if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
              ((*p == '-' || *p == '_' || *p == '.') && p != n))) {
            http_problem(resp, 400, "invalid-api-params", NULL,
                         "\"name\" may hold letters, digits, '-', '_' and '.' (not first)");
            return false;
        }
    return true;
}

static bool _parse_slots(json_t *v, preset_fields *f, http_resp *resp)
{
    if (!json_is_object(v) || json_object_size(v) == 0) {
        http_problem(resp, 400, "invalid-api-params", NULL,
                     "\"resource_slots\" must be a non-empty object {slot: amount}");
        return false;
    }
    const char *k;
    json_t *a;
    json_object_foreach(v, k, a) if (!json_is_string(a) && !json_is_number(a))
    {
        http_problem(resp, 400, "invalid-api-params", NULL,
                     "\"resource_slots\".%.64s must be a number or a string", k);
        return false;
    }
    slots_t s;
    ts_err err = {{0}};
    if (!slots_from_json(&s, v, &err)) {
        http_problem(resp, 400, "invalid-api-params", NULL, "\"resource_slots\": %s", err.msg);
        return false;
    }
    json_t *norm = slots_to_json(&s);
    f->slots = json_dumps(norm, JSON_COMPACT | JSON_SORT_KEYS);
    json_decref(norm);
    return true;
}

static bool _parse_shmem(json_t *v, preset_fields *f, http_resp *resp)
{
    f->has_shmem = true;
    if (json_is_null(v)) return true;
    int64_t bytes;
    ts_err err = {{0}};
    if ((!json_is_string(v) && !json_is_integer(v)) ||
        !slot_parse_json(SLOT_MEM, v, &bytes, &err)) {
        http_problem(
            resp, 400, "invalid-api-params", NULL,
            "\"shared_memory\" must be bytes (an integer, or text like \"64m\") or null%s%s",
            err.msg[0] ? ": " : "", err.msg);
        return false;
    }
    snprintf(f->shmem, sizeof(f->shmem), "%lld", (long long)bytes);
    return true;
}

static bool parse_fields(json_t *body, bool create, preset_fields *f, http_resp *resp)
{
    static const char *const keys[] = {"name", "resource_slots", "shared_memory", NULL};
    memset(f, 0, sizeof(*f));
    if (!pgjson_only_keys(body, keys, resp) ||
        !pgjson_field_str(body, "name", create, 1, 64, &f->name, resp) ||
        (f->name && !_name_ok(f->name, resp)))
        return false;
    json_t *slots = json_object_get(body, "resource_slots");
    if (create && (!slots || json_is_null(slots))) {
        http_problem(resp, 400, "invalid-api-params", NULL, "\"resource_slots\" is required");
        return false;
    }
    if (slots && !_parse_slots(slots, f, resp)) return false;
    json_t *shmem = json_object_get(body, "shared_memory");
    return !shmem || _parse_shmem(shmem, f, resp);
}

static PGresult *_insert(PGconn *conn, http_resp *resp, const preset_fields *f)
{
    const char *p[] = {f->name, f->slots, f->shmem[0] ? f->shmem : NULL};
    return pgjson_query(
        conn, resp, "create resource preset",
        "INSERT INTO registry.resource_presets (name, resource_slots, shared_memory)"
        " VALUES ($1, $2::jsonb, $3::bigint)",
        3, p);
}

static PGresult *_update(PGconn *conn, http_resp *resp, const char *name, const preset_fields *f)
{
    const char *p[] = {name, f->slots, f->has_shmem ? "true" : "false",
                       f->shmem[0] ? f->shmem : NULL};
    return pgjson_query(conn, resp, "update resource preset",
                        "UPDATE registry.resource_presets"
                        " SET resource_slots = coalesce($2::jsonb, resource_slots),"
                        " shared_memory = CASE WHEN $3::bool THEN $4::bigint ELSE shared_memory END"
                        " WHERE name = $1",
                        4, p);
}

/* POST /v1/admin/resource-presets and PATCH /v1/admin/resource-presets/{name}. */
static void h_write(http_req *req, http_resp *resp, void *ctx)
{
    svc *s = ctx;
    const char *name = http_param(req, "name");
    ts_caller c;
    if (!caller_get_admin(req, resp, true, "resource presets", &c)) return;
    if (name) tlog_ctx_entity("resource_preset", name);
    json_t *body = http_json_body(req, resp);
    preset_fields f = {0};
    PGconn *conn = NULL;
    if (!body || !parse_fields(body, !name, &f, resp) || !(conn = pgjson_get(s, resp))) goto out;
    if (name && f.name && strcmp(f.name, name) != 0) {
        http_problem(resp, 400, "invalid-api-params", NULL, "a resource preset cannot be renamed");
        goto out;
    }
    if (!name) tlog_ctx_entity("resource_preset", f.name);
    PGresult *r = name ? _update(conn, resp, name, &f) : _insert(conn, resp, &f);
    if (r) {
        bool found = atoi(PQcmdTuples(r)) == 1;
        PQclear(r);
        if (found) {
            TLOG_INFO(name ? "resource preset changed" : "resource preset created", "by=%s",
                      c.access_key);
            listing_reply_one(resp, conn, &preset_row, name ? name : f.name, name ? 200 : 201);
        } else {
            http_problem(resp, 404, "not-found", NULL, "unknown resource preset %s", name);
        }
    }
out:
    free(f.slots);
    json_decref(body);
    pgjson_put(s, conn);
    caller_free(&c);
}

static const listing_one preset_delete = {"delete resource preset",
                                          "DELETE FROM registry.resource_presets WHERE name = $1",
                                          "unknown resource preset", "resource_preset"};

static void h_delete(http_req *req, http_resp *resp, void *ctx)
{
    listing_admin_delete(ctx, req, resp, "resource presets", &preset_delete, "name");
}

void resource_presets_routes(svc *s)
{
    http_router *r = svc_router(s);
    http_route(r, "GET", "/v1/resource/presets", h_public_list, s);
    http_route(r, "GET", "/v1/admin/resource-presets", h_list, s);
    http_route(r, "POST", "/v1/admin/resource-presets", h_write, s);
    http_route(r, "GET", "/v1/admin/resource-presets/{name}", h_get, s);
    http_route(r, "PATCH", "/v1/admin/resource-presets/{name}", h_write, s);
    http_route(r, "DELETE", "/v1/admin/resource-presets/{name}", h_delete, s);
}
