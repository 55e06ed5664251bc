/* policies.c: keypair and user resource policies, and the resource-limit
 * values (slot amounts, vfolder host permissions, path names) that domains
 * and projects validate the same way (see policies.h). */
#include "policies.h"

#include "admin.h"
#include "utf8.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- names --------------------------------------------------------------- */

bool policies_name_ok(const char *name)
{
    if (!name || !*name || !auth_utf8_valid(name)) return false;
    size_t len = strlen(name), n = db_utf8_len(name);
    if (n > 64) return false;
    if (strcmp(name, ".") == 0 || strcmp(name, "..") == 0) return false;
    if (name[0] == ' ' || name[len - 1] == ' ') return false;
    for (const unsigned char *p = (const unsigned char *)name; *p; p++)
        if (*p < 0x20 || *p == 0x7f || *p == '/') return false;
    return true;
}

bool policies_field_name(json_t *obj, const char *key, bool required, const char **out,
                         http_resp *resp)
{
    if (!db_field_str(obj, key, required, 1, 64, out, resp)) return false;
    if (*out && !policies_name_ok(*out)) {
        http_problem(
            resp, 400, "invalid-api-params", NULL,
            "\"%s\" must not contain '/', be \".\" or \"..\", or start or end with a space", key);
        *out = NULL;
        return false;
    }
    return true;
}

/* ---- slot amounts -------------------------------------------------------- */

static bool slot_name_ok(const char *s)
{
    size_t n = strlen(s);
    if (n < 1 || n > 64) return false;
    bool seg_start = true;
    int dots = 0;
    for (const char *p = s; *p; p++) {
        char c = *p;
        if (c == '.') {
            if (seg_start || ++dots > 1) return false;
            seg_start = true;
            continue;
        }
        bool lower = c >= 'a' && c <= 'z';
        bool ok = lower || (c >= '0' && c <= '9') || c == '_' || c == '-';
        if (!ok || (seg_start && !lower)) return false;
        seg_start = false;
    }
    return !seg_start;
}

/* "0012.500" -> "12.5"; ip and fp are the digit runs (fp may be empty). */
static void decimal_text(const char *ip, size_t ni, const char *fp, size_t nf, char *out,
                         size_t size)
{
    while (ni > 1 && *ip == '0')
        ip++, ni--;
    while (nf > 0 && fp[nf - 1] == '0')
        nf--;
    if (nf)
        snprintf(out, size, "%.*s.%.*s", (int)ni, ip, (int)nf, fp);
    else
        snprintf(out, size, "%.*s", (int)ni, ip);
}

/* Decimal text with an optional binary suffix (bytes slots only). */
static bool amount_text(const char *slot, const char *s, char *out, size_t size, ts_err *err)
{
    bool bytes = strcmp(slot, "mem") == 0;
    const char *p = s;
    size_t ni = strspn(p, "0123456789");
    const char *ip = p;
    p += ni;
    const char *fp = "";
    size_t nf = 0;
    if (*p == '.') {
        fp = ++p;
        nf = strspn(p, "0123456789");
        p += nf;
        if (nf == 0) ni = 0; /* "8." is not a number */
    }
    unsigned shift = 0;
    if (bytes && *p && !p[1]) {
        const char *units = "kmgt", *u = strchr(units, *p | 0x20);
        if (u && *u) shift = 10 * (unsigned)(u - units + 1), p++;
    }
    if (ni == 0 || *p) {
        ts_err_set(err, "\"%s\": amount must be a non-negative decimal number%s", slot,
                   bytes ? " (optionally with k, m, g or t)" : "");
        return false;
    }
    if (ni > 18 || nf > 6) {
        ts_err_set(err, "\"%s\": at most 18 integer and 6 fraction digits", slot);
        return false;
    }
    if (!bytes) {
        decimal_text(ip, ni, fp, nf, out, size);
        return true;
    }
    /* Bytes: (integer part and fraction) * 2^shift must be whole and fit int64. */
    unsigned __int128 scaled = 0, pow10 = 1;
    for (size_t i = 0; i < ni; i++)
        scaled = scaled * 10 + (unsigned)(ip[i] - '0');
    for (size_t i = 0; i < nf; i++) {
        scaled = scaled * 10 + (unsigned)(fp[i] - '0');
        pow10 *= 10;
    }
    scaled <<= shift;
    if (scaled % pow10) {
        ts_err_set(err, "\"%s\": must come to a whole number of bytes", slot);
        return false;
    }
    unsigned __int128 v = scaled / pow10;
    if (v > (unsigned __int128)INT64_MAX) {
        ts_err_set(err, "\"%s\": too large", slot);
        return false;
    }
    snprintf(out, size, "%llu", (unsigned long long)v);
    return true;
}

bool policies_slot_amount(const char *slot, json_t *v, char *out, size_t size, ts_err *err)
{
    char buf[64];
    if (json_is_integer(v)) {
        if (json_integer_value(v) < 0) {
            ts_err_set(err, "\"%s\": amount must not be negative", slot);
            return false;
        }
        snprintf(buf, sizeof(buf), "%lld", (long long)json_integer_value(v));
        return amount_text(slot, buf, out, size, err);
    }
    if (json_is_real(v)) {
        double d = json_real_value(v);
        if (!isfinite(d) || d < 0 || d >= 1e18) {
            ts_err_set(err, "\"%s\": amount must be a non-negative number below 1e18", slot);
            return false;
        }
        snprintf(buf, sizeof(buf), "%.6f", d);
        return amount_text(slot, buf, out, size, err);
    }
    if (json_is_string(v)) {
        if (json_string_length(v) >= sizeof(buf)) {
            ts_err_set(err, "\"%s\": amount text too long", slot);
            return false;
        }
        return amount_text(slot, json_string_value(v), out, size, err);
    }
    ts_err_set(err, "\"%s\": amount must be a number or decimal text", slot);
    return false;
}

bool policies_field_slots(json_t *obj, const char *key, json_t **out, http_resp *resp)
{
    *out = NULL;
    json_t *v = json_object_get(obj, key);
    if (!v || json_is_null(v)) return true;
    if (!json_is_object(v) || json_object_size(v) > POLICIES_MAX_SLOTS) {
        http_problem(resp, 400, "invalid-api-params", NULL,
                     "\"%s\" must be an object of at most %d slot amounts", key,
                     POLICIES_MAX_SLOTS);
        return false;
    }
    json_t *norm = json_object();
    const char *slot;
    json_t *amount;
    json_object_foreach(v, slot, amount)
    {
        ts_err err = {{0}};
        char text[64];
        if (!slot_name_ok(slot)) {
            char q[80];
            ts_strlcpy(q, slot, sizeof(q));
            http_problem(resp, 400, "invalid-api-params", NULL,
                         "\"%s\": \"%s\" is not a slot name (like cpu, mem, cuda.device)", key,
                         auth_utf8_valid(q) ? q : "?");
            json_decref(norm);
            return false;
        }
        if (!policies_slot_amount(slot, amount, text, sizeof(text), &err)) {
            http_problem(resp, 400, "invalid-api-params", NULL, "%s: %s", key, err.msg);
            json_decref(norm);
            return false;
        }
        json_object_set_new(norm, slot, json_string(text));
    }
    *out = norm;
    return true;
}

/* ---- vfolder host permissions ------------------------------------------ */

static const char *const vfolder_perms[] = {
    "create-vfolder",
    "modify-vfolder",
    "delete-vfolder",
    "mount-in-session",
    "upload-file",
    "download-file",
    "invite-others",
    "set-user-specific-permission",
    NULL,
};

static bool host_name_ok(const char *s)
{
    size_t n = strlen(s);
    if (n < 1 || n > 64) return false;
    for (const char *p = s; *p; p++)
        if (!strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._:-", *p))
            return false;
    return true;
}

/* An array of distinct known permissions. */
static bool perms_ok(json_t *arr)
{
    if (!json_is_array(arr) || json_array_size(arr) > TS_ARRAY_LEN(vfolder_perms)) return false;
    unsigned seen = 0;
    size_t i;
    json_t *p;
    json_array_foreach(arr, i, p)
    {
        const char *s = json_string_value(p);
        unsigned bit = 0;
        for (unsigned k = 0; s && vfolder_perms[k]; k++)
            if (strcmp(vfolder_perms[k], s) == 0) bit = 1u << k;
        if (!bit || (seen & bit)) return false;
        seen |= bit;
    }
    return true;
}

bool policies_field_vfolder_hosts(json_t *obj, const char *key, json_t **out, http_resp *resp)
{
    *out = NULL;
    json_t *v = json_object_get(obj, key);
    if (!v || json_is_null(v)) return true;
    if (!json_is_object(v) || json_object_size(v) > POLICIES_MAX_HOSTS) {
        http_problem(resp, 400, "invalid-api-params", NULL,
                     "\"%s\" must be an object of at most %d hosts, each with a list of "
                     "permissions",
                     key, POLICIES_MAX_HOSTS);
        return false;
    }
    const char *host;
    json_t *perms;
    json_object_foreach(v, host, perms)
    {
        if (!host_name_ok(host) || !perms_ok(perms)) {
            http_problem(resp, 400, "invalid-api-params", NULL,
                         "\"%s\": each host (1 to 64 of A-Z a-z 0-9 . _ : -) needs an array of "
                         "distinct permissions among create-vfolder, modify-vfolder, "
                         "delete-vfolder, mount-in-session, upload-file, download-file, "
                         "invite-others, set-user-specific-permission",
                         key);
            return false;
        }
    }
    *out = json_incref(v);
    return true;
}

/* ---- the two kinds of policy -------------------------------------------- */

typedef struct policy_kind {
    const char *kind;      /* "keypair" or "user" (PolicyChanged.policy_kind) */
    const char *what;      /* for messages */
    const char *count_sql; /* $1 name filter (NULL: all) */
    const char *page_sql;  /* $1 filter, $2 limit, $3 offset */
    const char *get_sql;   /* $1 name */
    const char *insert_sql;
    const char *in_use_sql; /* $1 name -> count of referencing rows */
    const char *delete_sql; /* $1 name, RETURNING the columns */
} policy_kind;

#define KP_COLS                                                                                    \
    "name, total_resource_slots, max_concurrent_sessions, max_containers_per_session,"             \
    " max_pending_session_count, max_session_lifetime, idle_timeout, allowed_vfolder_hosts,"       \
    " created_at"
#define UP_COLS "name, max_vfolder_count, max_quota_scope_size, created_at"
#define NAME_FILTER " WHERE ($1::text IS NULL OR starts_with(name, $1))"

static const policy_kind keypair_kind = {
    .kind = "keypair",
    .what = "keypair resource policy",
    .count_sql = "SELECT count(*) FROM auth.keypair_resource_policies" NAME_FILTER,
    .page_sql = "SELECT " KP_COLS " FROM auth.keypair_resource_policies" NAME_FILTER
                " ORDER BY name LIMIT $2::bigint OFFSET $3::bigint",
    .get_sql = "SELECT " KP_COLS " FROM auth.keypair_resource_policies WHERE name = $1",
    .insert_sql = "INSERT INTO auth.keypair_resource_policies (name) VALUES ($1)",
    .in_use_sql = "SELECT count(*) FROM auth.keypairs WHERE resource_policy = $1",
    .delete_sql = "DELETE FROM auth.keypair_resource_policies WHERE name = $1 RETURNING " KP_COLS,
};

static const policy_kind user_kind = {
    .kind = "user",
    .what = "user resource policy",
    .count_sql = "SELECT count(*) FROM auth.user_resource_policies" NAME_FILTER,
    .page_sql = "SELECT " UP_COLS " FROM auth.user_resource_policies" NAME_FILTER
                " ORDER BY name LIMIT $2::bigint OFFSET $3::bigint",
    .get_sql = "SELECT " UP_COLS " FROM auth.user_resource_policies WHERE name = $1",
    .insert_sql = "INSERT INTO auth.user_resource_policies (name) VALUES ($1)",
    .in_use_sql = "SELECT count(*) FROM auth.users WHERE resource_policy = $1",
    .delete_sql = "DELETE FROM auth.user_resource_policies WHERE name = $1 RETURNING " UP_COLS,
};

static const policy_kind project_kind = {
    .kind = "project",
    .what = "project resource policy",
    .count_sql = "SELECT count(*) FROM auth.project_resource_policies" NAME_FILTER,
    .page_sql = "SELECT " UP_COLS " FROM auth.project_resource_policies" NAME_FILTER
                " ORDER BY name LIMIT $2::bigint OFFSET $3::bigint",
    .get_sql = "SELECT " UP_COLS " FROM auth.project_resource_policies WHERE name = $1",
    .insert_sql = "INSERT INTO auth.project_resource_policies (name) VALUES ($1)",
    .in_use_sql = "SELECT count(*) FROM auth.projects WHERE resource_policy = $1",
    .delete_sql = "DELETE FROM auth.project_resource_policies WHERE name = $1 RETURNING " UP_COLS,
};

/* NULL parameters leave a column as it is; $5 says whether $6 (which may be
 * NULL: no limit) replaces max_pending_session_count. */
static const char keypair_update_sql[] =
    "UPDATE auth.keypair_resource_policies SET"
    " total_resource_slots = COALESCE($2::jsonb, total_resource_slots),"
    " max_concurrent_sessions = COALESCE($3::int, max_concurrent_sessions),"
    " max_containers_per_session = COALESCE($4::int, max_containers_per_session),"
    " max_pending_session_count = CASE WHEN $5::bool THEN $6::int"
    "   ELSE max_pending_session_count END,"
    " max_session_lifetime = COALESCE($7::int, max_session_lifetime),"
    " idle_timeout = COALESCE($8::int, idle_timeout),"
    " allowed_vfolder_hosts = COALESCE($9::jsonb, allowed_vfolder_hosts)"
    " WHERE name = $1 RETURNING " KP_COLS;

static const char user_update_sql[] =
    "UPDATE auth.user_resource_policies SET"
    " max_vfolder_count = COALESCE($2::int, max_vfolder_count),"
    " max_quota_scope_size = COALESCE($3::bigint, max_quota_scope_size)"
    " WHERE name = $1 RETURNING " UP_COLS;

static const char project_update_sql[] =
    "UPDATE auth.project_resource_policies SET"
    " max_vfolder_count = COALESCE($2::int, max_vfolder_count),"
    " max_quota_scope_size = COALESCE($3::bigint, max_quota_scope_size)"
    " WHERE name = $1 RETURNING " UP_COLS;

/* The validated fields of a create or patch body, as query parameters. */
typedef struct policy_params {
    const char *v[9];
    char ints[6][24];
    json_t *slots, *hosts;
    char *slots_s, *hosts_s;
} policy_params;

static void params_free(policy_params *p)
{
    json_decref(p->slots);
    json_decref(p->hosts);
    free(p->slots_s);
    free(p->hosts_s);
}

static bool int_param(json_t *body, const char *key, long long min, long long max, char *buf,
                      const char **slot, http_resp *resp)
{
    long long v;
    bool present;
    if (!db_field_int(body, key, false, min, max, &v, &present, resp)) return false;
    if (present) {
        snprintf(buf, 24, "%lld", v);
        *slot = buf;
    }
    return true;
}

static bool keypair_params(json_t *body, bool create, policy_params *p, http_resp *resp)
{
    static const char *const create_keys[] = {"name",
                                              "total_resource_slots",
                                              "max_concurrent_sessions",
                                              "max_containers_per_session",
                                              "max_pending_session_count",
                                              "max_session_lifetime",
                                              "idle_timeout",
                                              "allowed_vfolder_hosts",
                                              NULL};
    if (!db_only_keys(body, create ? create_keys : create_keys + 1, resp)) return false;
    if (!policies_field_slots(body, "total_resource_slots", &p->slots, resp) ||
        !policies_field_vfolder_hosts(body, "allowed_vfolder_hosts", &p->hosts, resp) ||
        !int_param(body, "max_concurrent_sessions", 0, 1000000, p->ints[0], &p->v[2], resp) ||
        !int_param(body, "max_containers_per_session", 1, 1000000, p->ints[1], &p->v[3], resp) ||
        !int_param(body, "max_pending_session_count", 0, 1000000, p->ints[2], &p->v[5], resp) ||
        !int_param(body, "max_session_lifetime", 0, INT32_MAX, p->ints[3], &p->v[6], resp) ||
        !int_param(body, "idle_timeout", 0, INT32_MAX, p->ints[4], &p->v[7], resp))
        return false;
    /* max_pending_session_count: present (even as null = no limit) replaces. */
    p->v[4] = json_object_get(body, "max_pending_session_count") ? "true" : "false";
    if (p->slots) p->v[1] = p->slots_s = json_dumps(p->slots, JSON_COMPACT | JSON_SORT_KEYS);
    if (p->hosts) p->v[8] = p->hosts_s = json_dumps(p->hosts, JSON_COMPACT | JSON_SORT_KEYS);
    return true;
}

static bool user_params(json_t *body, bool create, policy_params *p, http_resp *resp)
{
    static const char *const create_keys[] = {"name", "max_vfolder_count", "max_quota_scope_size",
                                              NULL};
    if (!db_only_keys(body, create ? create_keys : create_keys + 1, resp)) return false;
    return int_param(body, "max_vfolder_count", 0, INT32_MAX, p->ints[0], &p->v[1], resp) &&
           int_param(body, "max_quota_scope_size", 0, INT64_MAX, p->ints[1], &p->v[2], resp);
}

static void publish(svc *s, http_req *req, const policy_kind *k, auth_change change, json_t *row)
{
    const char *name = json_string_value(json_object_get(row, "name"));
    if (k == &keypair_kind)
        events_policy_changed(
            s, req->request_id, name, k->kind, change,
            change == AUTH_CHANGE_DELETED ? NULL : json_object_get(row, "total_resource_slots"),
            (int)json_integer_value(json_object_get(row, "max_concurrent_sessions")),
            (int)json_integer_value(json_object_get(row, "max_session_lifetime")));
    else
        events_policy_changed(s, req->request_id, name, k->kind, change, NULL, 0, 0);
}

/* ---- handlers ------------------------------------------------------------ */

/* Connection and caller; admins only (superadmin when write). NULL after the
 * problem was sent. */
static PGconn *open_as_admin(svc *s, http_req *req, http_resp *resp, bool write,
                             const policy_kind *k)
{
    PGconn *conn = db_get(s, resp);
    if (!conn) return NULL;
    auth_caller c;
    if (!caller_resolve(conn, req, resp, &c)) {
        db_put(s, conn);
        return NULL;
    }
    if (write ? !caller_is_superadmin(&c) : !caller_is_admin(&c)) {
        http_problem(resp, 403, "forbidden", NULL, "only %s may %s %s policies",
                     write ? "superadmins" : "admins", write ? "change" : "read", k->kind);
        db_put(s, conn);
        return NULL;
    }
    return conn;
}

static void do_list(svc *s, http_req *req, http_resp *resp, const policy_kind *k)
{
    db_page pg;
    if (!db_page_parse(req, resp, &pg)) return;
    const char *prefix = http_query_arg(req, "name");
    if (prefix && !*prefix) prefix = NULL;
    if (prefix && !policies_name_ok(prefix)) {
        http_problem(resp, 400, "invalid-api-params", NULL, "name must be a valid policy name");
        return;
    }
    PGconn *conn = open_as_admin(s, req, resp, false, k);
    if (!conn) return;
    const char *params[] = {prefix, pg.limit_s, pg.offset_s};
    PGresult *c = db_query(conn, resp, k->what, k->count_sql, 1, params);
    PGresult *r = c ? db_query(conn, resp, k->what, k->page_sql, 3, params) : NULL;
    if (r)
        http_reply_json(resp, 200, db_page_json(db_rows_json(r), atoll(PQgetvalue(c, 0, 0)), &pg));
    PQclear(c);
    PQclear(r);
    db_put(s, conn);
}

static void not_found(http_resp *resp, const policy_kind *k)
{
    http_problem(resp, 404, "not-found", NULL, "no such %s", k->what);
}

static void do_get(svc *s, http_req *req, http_resp *resp, const policy_kind *k)
{
    const char *name = http_param(req, "name");
    PGconn *conn = open_as_admin(s, req, resp, false, k);
    if (!conn) return;
    if (!policies_name_ok(name)) {
        not_found(resp, k);
        db_put(s, conn);
        return;
    }
    const char *params[] = {name};
    PGresult *r = db_query(conn, resp, k->what, k->get_sql, 1, params);
    if (r && PQntuples(r) == 1)
        http_reply_json(resp, 200, db_row_json(r, 0));
    else if (r)
        not_found(resp, k);
    PQclear(r);
    db_put(s, conn);
}

/* Create (name from the body) or patch (name from the path): one
 * transaction; a create inserts the name with the schema's defaults and then
 * applies the given fields like a patch. */
static void do_write(svc *s, http_req *req, http_resp *resp, const policy_kind *k, bool create)
{
    PGconn *conn = open_as_admin(s, req, resp, true, k);
    if (!conn) return;
    json_t *body = http_json_body(req, resp);
    policy_params p = {{0}};
    const char *name = create ? NULL : http_param(req, "name");
    bool ok = body != NULL;
    if (ok)
        ok = k == &keypair_kind ? keypair_params(body, create, &p, resp)
                                : user_params(body, create, &p, resp);
    if (ok && create) ok = policies_field_name(body, "name", true, &name, resp);
    if (ok && !create && !policies_name_ok(name)) {
        not_found(resp, k);
        ok = false;
    }
    if (ok && db_begin(conn, resp)) {
        p.v[0] = name;
        const char *update = k == &keypair_kind ? keypair_update_sql
                             : k == &user_kind  ? user_update_sql
                                                : project_update_sql;
        int n = k == &keypair_kind ? 9 : 3;
        PGresult *ins = create ? db_query(conn, resp, k->what, k->insert_sql, 1, p.v) : NULL;
        PGresult *r = (!create || ins) ? db_query(conn, resp, k->what, update, n, p.v) : NULL;
        if (r && PQntuples(r) == 1 && db_commit(conn, resp)) {
            json_t *row = db_row_json(r, 0);
            publish(s, req, k, create ? AUTH_CHANGE_CREATED : AUTH_CHANGE_UPDATED, row);
            http_reply_json(resp, create ? 201 : 200, row);
        } else {
            if (r && PQntuples(r) != 1) not_found(resp, k);
            pg_rollback(conn);
        }
        PQclear(ins);
        PQclear(r);
    }
    params_free(&p);
    json_decref(body);
    db_put(s, conn);
}

/* Delete: refused (409) while keypairs, users or projects use it, and for "default",
 * which bootstrap and new users rely on. */
static void do_delete(svc *s, http_req *req, http_resp *resp, const policy_kind *k)
{
    const char *name = http_param(req, "name");
    PGconn *conn = open_as_admin(s, req, resp, true, k);
    if (!conn) return;
    const char *params[] = {name};
    if (!policies_name_ok(name)) {
        not_found(resp, k);
    } else if (strcmp(name, "default") == 0) {
        http_problem(resp, 409, "conflict", NULL, "the default %s cannot be deleted", k->what);
    } else if (db_begin(conn, resp)) {
        PGresult *u = db_query(conn, resp, k->what, k->in_use_sql, 1, params);
        long long users = u ? atoll(PQgetvalue(u, 0, 0)) : 0;
        PGresult *r =
            u && users == 0 ? db_query(conn, resp, k->what, k->delete_sql, 1, params) : NULL;
        if (u && users > 0) {
            http_problem(resp, 409, "conflict", NULL, "the %s is used by %lld %s", k->what, users,
                         k == &keypair_kind ? "keypairs"
                         : k == &user_kind  ? "users"
                                            : "projects");
        } else if (r && PQntuples(r) == 0) {
            not_found(resp, k);
        }
        if (r && PQntuples(r) == 1 && db_commit(conn, resp)) {
            json_t *row = db_row_json(r, 0);
            publish(s, req, k, AUTH_CHANGE_DELETED, row);
            http_reply_json(resp, 200, row);
        } else {
            pg_rollback(conn);
        }
        PQclear(u);
        PQclear(r);
    }
    db_put(s, conn);
}

#define KIND_HANDLERS(prefix, kind)                                                                \
    static void prefix##_list(http_req *req, http_resp *resp, void *ctx)                           \
    {                                                                                              \
        do_list(ctx, req, resp, &kind);                                                            \
    }                                                                                              \
    static void prefix##_create(http_req *req, http_resp *resp, void *ctx)                         \
    {                                                                                              \
        do_write(ctx, req, resp, &kind, true);                                                     \
    }                                                                                              \
    static void prefix##_get(http_req *req, http_resp *resp, void *ctx)                            \
    {                                                                                              \
        do_get(ctx, req, resp, &kind);                                                             \
    }                                                                                              \
    static void prefix##_patch(http_req *req, http_resp *resp, void *ctx)                          \
    {                                                                                              \
        do_write(ctx, req, resp, &kind, false);                                                    \
    }                                                                                              \
    static void prefix##_delete(http_req *req, http_resp *resp, void *ctx)                         \
    {                                                                                              \
        do_delete(ctx, req, resp, &kind);                                                          \
    }

KIND_HANDLERS(kp, keypair_kind)
KIND_HANDLERS(up, user_kind)
KIND_HANDLERS(pp, project_kind)

void policies_routes(svc *s)
{
    http_router *r = svc_router(s);
    http_route(r, "GET", "/v1/admin/keypair-resource-policies", kp_list, s);
    http_route(r, "POST", "/v1/admin/keypair-resource-policies", kp_create, s);
    http_route(r, "GET", "/v1/admin/keypair-resource-policies/{name}", kp_get, s);
    http_route(r, "PATCH", "/v1/admin/keypair-resource-policies/{name}", kp_patch, s);
    http_route(r, "DELETE", "/v1/admin/keypair-resource-policies/{name}", kp_delete, s);
    http_route(r, "GET", "/v1/admin/user-resource-policies", up_list, s);
    http_route(r, "POST", "/v1/admin/user-resource-policies", up_create, s);
    http_route(r, "GET", "/v1/admin/user-resource-policies/{name}", up_get, s);
    http_route(r, "PATCH", "/v1/admin/user-resource-policies/{name}", up_patch, s);
    http_route(r, "DELETE", "/v1/admin/user-resource-policies/{name}", up_delete, s);
    http_route(r, "GET", "/v1/admin/project-resource-policies", pp_list, s);
    http_route(r, "POST", "/v1/admin/project-resource-policies", pp_create, s);
    http_route(r, "GET", "/v1/admin/project-resource-policies/{name}", pp_get, s);
    http_route(r, "PATCH", "/v1/admin/project-resource-policies/{name}", pp_patch, s);
    http_route(r, "DELETE", "/v1/admin/project-resource-policies/{name}", pp_delete, s);
}
