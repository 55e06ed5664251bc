/* images.c: see images.h. */
#include "images.h"

#include "bgtasks.h"

#include "caller.h"
#include "container_registries.h"
#include "context.h"
#include "db_common.h"
#include "libcommon/image_ref.h"
#include "libcommon/log.h"
#include "libcommon/pgjson.h"
#include "listing.h"
#include "oci.h"
#include "pbutil.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#define LABEL_MIN_PREFIX "ai.backend.resource.min."

static const char upsert_sql[] =
    "INSERT INTO registry.images AS i (reference, digest, architecture, labels, service_ports,"
    " min_slots, runtime_type, runtime_path, command, source)"
    " VALUES ($1, $2, $3, $4::jsonb, $5::jsonb, $6::jsonb, $7, $8, $9::jsonb, $10)"
    " ON CONFLICT (reference) DO UPDATE SET digest = EXCLUDED.digest,"
    " architecture = EXCLUDED.architecture, labels = EXCLUDED.labels,"
    " service_ports = EXCLUDED.service_ports, min_slots = EXCLUDED.min_slots,"
    " runtime_type = EXCLUDED.runtime_type, runtime_path = EXCLUDED.runtime_path,"
    " command = EXCLUDED.command, source = EXCLUDED.source, registered_at = now()";

#define SELECT_IMAGES                                                                              \
    "SELECT reference, digest, architecture, labels || label_overrides AS labels, service_ports,"  \
    " min_slots, max_slots, label_overrides, runtime_type, runtime_path, command, source,"         \
    " registered_at FROM registry.images"

static const listing_one image_row = {"read image", SELECT_IMAGES " WHERE reference = $1",
                                      "unknown image", "image"};

static bool store_effective(PGconn *conn, const char *ref, const char *digest, const char *arch,
                            json_t *scanned, json_t *labels, json_t *command, const char *source,
                            bool *db, ts_err *err);

/* Store an image from its labels (and the overrides it has); false with err
 * (a bad label) or on a database error (*db true). */
static bool store(PGconn *conn, const char *ref, const char *digest, const char *arch,
                  json_t *labels, json_t *command, const char *source, bool *db, ts_err *err)
{
    *db = false;
    /* the labels as sessions see them: the image's, then the overrides */
    json_t *eff = json_deep_copy(labels);
    const char *q[] = {ref};
    PGresult *ov = reg_exec(
        conn, "SELECT label_overrides::text FROM registry.images WHERE reference = $1", 1, q, err);
    if (!ov) {
        *db = true;
        json_decref(eff);
        return false;
    }
    if (PQntuples(ov) == 1) {
        json_t *o = json_loads(PQgetvalue(ov, 0, 0), 0, NULL);
        if (json_is_object(o)) json_object_update(eff, o);
        json_decref(o);
    }
    PQclear(ov);
    bool ok = store_effective(conn, ref, digest, arch, labels, eff, command, source, db, err);
    json_decref(eff);
    return ok;
}

static bool store_effective(PGconn *conn, const char *ref, const char *digest, const char *arch,
                            json_t *scanned, json_t *labels, json_t *command, const char *source,
                            bool *db, ts_err *err)
{
    const char *sp = json_string_value(json_object_get(labels, "ai.backend.service-ports"));
    json_t *ports = pb_parse_service_ports(sp, err);
    if (!ports) return false;
    slots_t min;
    slots_clear(&min);
    const char *k;
    json_t *v;
    json_object_foreach(labels, k, v)
    {
        if (strncmp(k, LABEL_MIN_PREFIX, strlen(LABEL_MIN_PREFIX)) != 0) continue;
        const char *slot = k + strlen(LABEL_MIN_PREFIX);
        if (!json_is_string(v) || !slots_set(&min, slot, json_string_value(v), err)) {
            if (!json_is_string(v)) ts_err_set(err, "label %s is not a string", k);
            ts_err_prefix(err, "label %s", k);
            json_decref(ports);
            return false;
        }
    }
    json_t *mj = slots_to_json(&min);
    char *lt = json_dumps(scanned, JSON_COMPACT), *pt = json_dumps(ports, JSON_COMPACT),
         *mt = json_dumps(mj, JSON_COMPACT), *ct = json_dumps(command, JSON_COMPACT);
    const char *rt = json_string_value(json_object_get(labels, "ai.backend.runtime-type"));
    const char *rp = json_string_value(json_object_get(labels, "ai.backend.runtime-path"));
    const char *p[] = {ref,
                       digest ? digest : "",
                       arch && *arch ? arch : "x86_64",
                       lt,
                       pt,
                       mt,
                       rt ? rt : "",
                       rp ? rp : "",
                       ct,
                       source};
    bool ok = reg_run(conn, upsert_sql, 10, p, err);
    *db = !ok;
    free(lt);
    free(pt);
    free(mt);
    free(ct);
    json_decref(mj);
    json_decref(ports);
    if (ok) TLOG_INFO("image registered", "digest=%s source=%s", digest, source);
    return ok;
}

bool images_restore(PGconn *conn, const char *ref, bool *found, bool *bad, ts_err *err)
{
    *found = false;
    *bad = false;
    const char *p[] = {ref};
    PGresult *r = reg_exec(conn,
                           "SELECT digest, architecture, labels::text, command::text, source"
                           " FROM registry.images WHERE reference = $1",
                           1, p, err);
    if (!r) return false;
    if (PQntuples(r) != 1) {
        PQclear(r);
        return true;
    }
    *found = true;
    json_t *labels = json_loads(PQgetvalue(r, 0, 2), 0, NULL);
    json_t *cmd = json_loads(PQgetvalue(r, 0, 3), 0, NULL);
    bool db = false;
    bool ok = store(conn, ref, PQgetvalue(r, 0, 0), PQgetvalue(r, 0, 1), labels, cmd,
                    PQgetvalue(r, 0, 4), &db, err);
    *bad = !ok && !db;
    json_decref(labels);
    json_decref(cmd);
    PQclear(r);
    return ok;
}

/* Resolve from the OCI registry and store. *not_found when the registry says so. */
static bool register_from_oci(PGconn *conn, const char *ref, bool *not_found, bool *bad,
                              ts_err *err)
{
    oci_image im;
    *bad = false;
    if (!oci_resolve(conn, ref, &im, not_found, err)) return false;
    bool db = false;
    bool ok = store(conn, ref, im.digest, im.architecture, im.labels, im.command, "oci", &db, err);
    *bad = !ok && !db;
    oci_image_free(&im);
    return ok;
}

bool images_find(PGconn *conn, const char *reference, image_info *out, bool *found, ts_err *err)
{
    memset(out, 0, sizeof(*out));
    *found = false;
    const char *p[] = {reference};
    for (int attempt = 0; attempt < 2; attempt++) {
        PGresult *r = reg_exec(conn,
                               "SELECT architecture, digest, min_slots::text, service_ports::text,"
                               " max_slots::text"
                               " FROM registry.images WHERE reference = $1",
                               1, p, err);
        if (!r) return false;
        if (PQntuples(r) == 1) {
            *found = true;
            ts_strlcpy(out->architecture, PQgetvalue(r, 0, 0), sizeof(out->architecture));
            ts_strlcpy(out->digest, PQgetvalue(r, 0, 1), sizeof(out->digest));
            out->min_slots = json_loads(PQgetvalue(r, 0, 2), 0, NULL);
            out->service_ports = json_loads(PQgetvalue(r, 0, 3), 0, NULL);
            out->max_slots = json_loads(PQgetvalue(r, 0, 4), 0, NULL);
            PQclear(r);
            return true;
        }
        PQclear(r);
        if (attempt > 0 || !reg_settings.auto_register_images) return true;
        bool not_found = false, bad = false;
        ts_err e = {{0}};
        tlog_ctx_entity("image", reference); /* for the lines of the registration */
        bool registered = register_from_oci(conn, reference, &not_found, &bad, &e);
        if (!registered) TLOG_INFO("image auto-registration failed", "error=\"%s\"", e.msg);
        tlog_ctx_entity(NULL, NULL);
        if (!registered) return true; /* not found: the caller names the image */
    }
    return true;
}

void image_info_free(image_info *im)
{
    json_decref(im->min_slots);
    json_decref(im->service_ports);
    json_decref(im->max_slots);
    memset(im, 0, sizeof(*im));
}

/* ---- admin API --------------------------------------------------------------------------------
 */

/* Every user reads the images (the console's launcher lists them); only
 * superadmins change them. */
static void h_list(http_req *req, http_resp *resp, void *ctx)
{
    ts_caller c;
    if (!caller_get(req, resp, NULL, &c)) return;
    listing l = {.what = "list images",
                 .sql = "SELECT *, count(*) OVER () AS total FROM (" SELECT_IMAGES ") i"
                        " ORDER BY reference LIMIT $1::bigint OFFSET $2::bigint"};
    listing_reply(ctx, req, resp, &l);
    caller_free(&c);
}

static void h_get(http_req *req, http_resp *resp, void *ctx)
{
    listing_admin_get(ctx, req, resp, "images", &image_row, "ref", true);
}

static void h_register(http_req *req, http_resp *resp, void *ctx)
{
    svc *s = ctx;
    ts_caller c;
    if (!caller_get_admin(req, resp, true, "images", &c)) return;
    static const char *const keys[] = {"reference", "architecture", "labels",
                                       "digest",    "command",      NULL};
    json_t *body = http_json_body(req, resp);
    const char *ref = NULL, *arch = NULL, *digest = NULL;
    PGconn *conn = NULL;
    if (!body || !pgjson_only_keys(body, keys, resp) ||
        !pgjson_field_str(body, "reference", true, 1, 500, &ref, resp) ||
        !pgjson_field_str(body, "architecture", false, 1, 32, &arch, resp) ||
        !pgjson_field_str(body, "digest", false, 0, 80, &digest, resp))
        goto out;
    tlog_ctx_entity("image", ref);
    json_t *labels = json_object_get(body, "labels");
    json_t *command = json_object_get(body, "command");
    if ((labels && !json_is_object(labels)) || (command && !json_is_array(command))) {
        http_problem(resp, 400, "invalid-api-params", NULL,
                     "\"labels\" must be an object and \"command\" a list");
        goto out;
    }
    ts_err err = {{0}};
    bool manual = labels || arch || digest || command;
    /* The reference's grammar before anything else (a manual one is only
     * stored; one to resolve also needs a registry: given, or oci.registry). */
    image_ref ir;
    bool ref_ok = manual ? image_ref_valid(ref, &err)
                         : image_ref_parse(ref, reg_settings.oci_registry, &ir, &err);
    if (!ref_ok) {
        http_problem(resp, 400, "invalid-api-params", NULL, "%s", err.msg);
        goto out;
    }
    if (!manual) image_ref_free(&ir);
    if (!(conn = pgjson_get(s, resp))) goto out;
    if (manual) {
        bool db = false;
        json_t *l = labels ? labels : json_object(), *cmd = command ? command : json_array();
        bool ok = store(conn, ref, digest, arch, l, cmd, "manual", &db, &err);
        if (!labels) json_decref(l);
        if (!command) json_decref(cmd);
        if (!ok) {
            if (db)
                http_problem(resp, 500, "internal-server-error", NULL, "register image: %s",
                             err.msg);
            else
                http_problem(resp, 400, "invalid-api-params", NULL, "%s", err.msg);
            goto out;
        }
    } else {
        bool not_found = false, bad = false;
        if (!register_from_oci(conn, ref, &not_found, &bad, &err)) {
            if (not_found)
                http_problem(resp, 404, "not-found", NULL, "%s: not found in its registry", ref);
            else if (bad)
                http_problem(resp, 400, "invalid-api-params", NULL, "%s", err.msg);
            else
                http_problem(resp, 502, "bad-gateway", NULL, "%s", err.msg);
            goto out;
        }
    }
    listing_reply_one(resp, conn, &image_row, ref, 201);
out:
    json_decref(body);
    pgjson_put(s, conn);
    caller_free(&c);
}

static const listing_one image_delete = {
    "delete image", "DELETE FROM registry.images WHERE reference = $1", "unknown image", "image"};

static void h_delete(http_req *req, http_resp *resp, void *ctx)
{
    listing_admin_delete(ctx, req, resp, "images", &image_delete, "ref");
}

/* ---- what a scan covers ---- */

/* Every reference a scan of host covers (NULL: the built-in registry and every
 * registered one, container_registries.h; a registered registry's project
 * limits it to that project's repositories; an unregistered host is scanned
 * as asked). NULL with *status (400 nothing to scan, 500 database, 502 a
 * registry) and err. */
static json_t *scan_refs(PGconn *conn, const char *host, int *status, ts_err *err)
{
    bool known = false;
    json_t *targets = creg_scan_targets(conn, host, &known, err);
    if (!targets) {
        *status = 500;
        return NULL;
    }
    if (host && !known)
        json_array_append_new(targets, json_pack("{s:s, s:s}", "host", host, "project", ""));
    if (json_array_size(targets) == 0) {
        ts_err_set(err, "no registry given, oci.registry is not set and none is registered");
        *status = 400;
        json_decref(targets);
        return NULL;
    }
    json_t *refs = json_array();
    size_t ti;
    json_t *t;
    json_array_foreach(targets, ti, t)
    {
        const char *th = json_string_value(json_object_get(t, "host"));
        const char *proj = json_string_value(json_object_get(t, "project"));
        json_t *some = NULL;
        if (!oci_catalog(conn, th, &some, err)) {
            *status = 502;
            json_decref(targets);
            json_decref(refs);
            return NULL;
        }
        char *pre = ts_asprintf("%s/%s/", th, proj);
        size_t i;
        json_t *r;
        json_array_foreach(some, i, r)
        {
            if (!*proj || strncmp(json_string_value(r), pre, strlen(pre)) == 0)
                json_array_append(refs, r);
        }
        free(pre);
        json_decref(some);
    }
    json_decref(targets);
    return refs;
}

/* ---- the scan as a background task (bgtasks.h) ---- */

typedef struct scan_job {
    char task[TS_UUID_STRLEN];
    char *host; /* NULL: every registry (scan_refs) */
} scan_job;

static void *_scan_main(void *arg)
{
    scan_job *j = arg;
    tlog_ctx_entity("task", j->task);
    json_t *refs = NULL;
    ts_err err = {{0}};
    int status = 0;
    PGconn *sc = reg_pg_get(&err);
    if (sc) {
        refs = scan_refs(sc, j->host, &status, &err);
        reg_pg_put(sc);
    }
    if (!refs) {
        bgtask_finish(j->task, "failed", err.msg);
        goto out;
    }
    size_t n = json_array_size(refs), failed = 0;
    bgtask_progress(j->task, 0, (int64_t)n, "reading the registry's images");
    size_t i;
    json_t *r;
    json_array_foreach(refs, i, r)
    {
        PGconn *conn = reg_pg_get(&err);
        if (!conn) {
            bgtask_finish(j->task, "failed", err.msg);
            goto out;
        }
        bool nf = false, bad = false;
        ts_err e = {{0}};
        if (!register_from_oci(conn, json_string_value(r), &nf, &bad, &e)) {
            failed++;
            TLOG_WARN("image scan: not registered", "image=%s error=%s", json_string_value(r),
                      e.msg);
        }
        reg_pg_put(conn);
        bgtask_progress(j->task, (int64_t)i + 1, (int64_t)n, json_string_value(r));
    }
    char msg[128];
    snprintf(msg, sizeof(msg), "registered %zu image(s), %zu failed", n - failed, failed);
    bgtask_finish(j->task, "done", msg);
out:
    json_decref(refs);
    free(j->host);
    free(j);
    tlog_ctx_entity(NULL, NULL);
    return NULL;
}

/* POST /v1/admin/images/scan?background=true: 202 {"task_id"} at once. */
static void _scan_background(http_req *req, http_resp *resp, const ts_caller *c, const char *host)
{
    scan_job *j = ts_calloc(1, sizeof(*j));
    j->host = host ? ts_strdup(host) : NULL;
    ts_err err = {{0}};
    if (!bgtask_create("image_scan", c->user_id, c->access_key, j->task, &err)) {
        http_problem(resp, 503, "service-unavailable", NULL, "background task: %s", err.msg);
        free(j->host);
        free(j);
        return;
    }
    char task[TS_UUID_STRLEN];
    memcpy(task, j->task, sizeof(task)); /* j is the thread's from now on */
    pthread_t t;
    if (pthread_create(&t, NULL, _scan_main, j) != 0) {
        bgtask_finish(j->task, "failed", "could not start a thread");
        http_problem(resp, 503, "service-unavailable", NULL, "could not start the scan");
        free(j->host);
        free(j);
        return;
    }
    pthread_detach(t);
    (void)req;
    http_reply_json(resp, 202, json_pack("{s:s}", "task_id", task));
}

static void h_scan(http_req *req, http_resp *resp, void *ctx)
{
    svc *s = ctx;
    ts_caller c;
    if (!caller_get_admin(req, resp, true, "images", &c)) return;
    json_t *body = req->body_len ? http_json_body(req, resp) : json_object();
    const char *host = NULL;
    static const char *const keys[] = {"registry", NULL};
    PGconn *conn = NULL;
    json_t *refs = NULL;
    if (!body || !pgjson_only_keys(body, keys, resp) ||
        !pgjson_field_str(body, "registry", false, 1, 255, &host, resp))
        goto out;
    if (host && !image_ref_host_valid(host)) {
        http_problem(
            resp, 400, "invalid-api-params", NULL,
            "\"registry\" must be a registry host[:port] (e.g. registry.example.com:5000)");
        goto out;
    }
    const char *bg = http_query_arg(req, "background");
    if (bg && (strcmp(bg, "true") == 0 || strcmp(bg, "1") == 0)) {
        _scan_background(req, resp, &c, host);
        goto out;
    }
    ts_err err = {{0}};
    if (!(conn = pgjson_get(s, resp))) goto out;
    int status = 0;
    if (!(refs = scan_refs(conn, host, &status, &err))) {
        http_problem(resp, status,
                     status == 400   ? "invalid-api-params"
                     : status == 502 ? "bad-gateway"
                                     : "internal-server-error",
                     NULL, "scan: %s", err.msg);
        goto out;
    }
    json_t *ok = json_array(), *failed = json_array();
    size_t i;
    json_t *r;
    json_array_foreach(refs, i, r)
    {
        bool nf = false, bad = false;
        ts_err e = {{0}};
        tlog_ctx_entity("image", json_string_value(r));
        if (register_from_oci(conn, json_string_value(r), &nf, &bad, &e))
            json_array_append(ok, r);
        else
            json_array_append_new(failed, json_pack("{s:O, s:s}", "reference", r, "error", e.msg));
    }
    tlog_ctx_entity(NULL, NULL);
    http_reply_json(resp, 200, json_pack("{s:o, s:o}", "registered", ok, "failed", failed));
out:
    json_decref(refs);
    json_decref(body);
    pgjson_put(s, conn);
    caller_free(&c);
}

void images_routes(svc *s)
{
    http_router *r = svc_router(s);
    http_route(r, "GET", "/v1/admin/images", h_list, s);
    http_route(r, "POST", "/v1/admin/images", h_register, s);
    http_route(r, "POST", "/v1/admin/images/scan", h_scan, s);
    http_route(r, "GET", "/v1/admin/images/{ref}", h_get, s);
    http_route(r, "DELETE", "/v1/admin/images/{ref}", h_delete, s);
}
