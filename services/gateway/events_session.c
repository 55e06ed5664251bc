/* events_session.c: GET /events/session and the events it streams
 * (events_session.h). Each session's owner, name, project and domain (its
 * "meta") are kept in a small cache filled by SessionEnqueued and by the
 * registry's answers; whether a stream may see a session is decided from
 * the meta for users (their own sessions) and superadmins (all), and asked
 * of the registry as the stream's caller for domain admins (whose scope
 * leaves out the domain's superadmins' sessions), remembered per stream. */
#include "events_session.h"

#include "proxy.h"
#include "verify.h"

#include "libcommon/envelope.h"
#include "libcommon/kbus.h"
#include "libcommon/log.h"
#include "tessera/v1/kernel.pb-c.h"
#include "tessera/v1/session.pb-c.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define NAME_MAX_LEN 128
#define LOOKUP_TIMEOUT_MS 3000

typedef struct meta {
    char id[TS_UUID_STRLEN];
    char name[NAME_MAX_LEN + 1];
    char access_key[24];
    char user_id[TS_UUID_STRLEN];
    char project_id[TS_UUID_STRLEN];
    char group_name[NAME_MAX_LEN + 1]; /* "" when not known (SessionEnqueued lacks it) */
    char domain[CRED_DOMAIN_MAX];
    bool batch;
} meta;

/* The meta cache: a slot per hash of the id, the newest wins. */
#define META_SLOTS 4096
static meta g_meta[META_SLOTS];
static pthread_mutex_t g_meta_mu = PTHREAD_MUTEX_INITIALIZER;

static size_t _slot(const char *id)
{
    size_t h = 5381;
    for (; *id; id++)
        h = h * 33 + (unsigned char)*id;
    return h % META_SLOTS;
}

static bool _meta_get(const char *id, meta *out)
{
    pthread_mutex_lock(&g_meta_mu);
    const meta *m = &g_meta[_slot(id)];
    bool hit = strcmp(m->id, id) == 0;
    if (hit) *out = *m;
    pthread_mutex_unlock(&g_meta_mu);
    return hit;
}

static void _meta_put(const meta *m)
{
    pthread_mutex_lock(&g_meta_mu);
    g_meta[_slot(m->id)] = *m;
    pthread_mutex_unlock(&g_meta_mu);
}

static void _copy(char *dst, size_t size, const char *src)
{
    snprintf(dst, size, "%s", src ? src : "");
}

/* ---- the stream's filters ---- */

#define SEEN_SLOTS 32
typedef struct sess_filter {
    char *name;       /* NULL: any */
    char *session_id; /* NULL: any */
    char *owner;      /* NULL: any (a user: its own key) */
    char *group;      /* NULL: any; a project id or name */
    bool sessions, kernels;
    /* admins: the registry's verdict per session (a ring) */
    struct {
        char id[TS_UUID_STRLEN];
        bool visible;
    } seen[SEEN_SLOTS];
    int next_seen;
} sess_filter;

static void _filter_free(void *p)
{
    sess_filter *f = p;
    if (!f) return;
    free(f->name);
    free(f->session_id);
    free(f->owner);
    free(f->group);
    free(f);
}

static const char *_arg(http_req *req, const char *a, const char *b)
{
    const char *v = http_query_arg(req, a);
    if (!v && b) v = http_query_arg(req, b);
    return v;
}

/* A filter value: NULL for absent, "" or "*". */
static char *_wild(const char *v)
{
    return v && *v && strcmp(v, "*") != 0 ? ts_strdup(v) : NULL;
}

static bool _parse(http_req *req, http_resp *resp, const gw_identity *id, sess_filter *f)
{
    const char *name = _arg(req, "sessionName", "name");
    const char *sid = _arg(req, "sessionId", "session_id");
    const char *owner = _arg(req, "ownerAccessKey", "owner_access_key");
    const char *group = _arg(req, "group", "groupName");
    const char *scope = http_query_arg(req, "scope");
    if ((name && strlen(name) > NAME_MAX_LEN) || (group && strlen(group) > NAME_MAX_LEN)) {
        http_problem(resp, 400, "invalid-api-params", NULL,
                     "sessionName and group are at most %d characters", NAME_MAX_LEN);
        return false;
    }
    if (sid && *sid && strcmp(sid, "*") != 0 && !ts_uuid_valid(sid)) {
        http_problem(resp, 400, "invalid-api-params", NULL,
                     "sessionId must be a session id (a UUID) or \"*\"");
        return false;
    }
    if (owner && *owner && strlen(owner) != 20) {
        http_problem(resp, 400, "invalid-api-params", NULL,
                     "ownerAccessKey must be an access key (20 characters)");
        return false;
    }
    bool admin = strcmp(id->role, "superadmin") == 0 || strcmp(id->role, "admin") == 0;
    if (owner && *owner && !admin && strcmp(owner, id->access_key) != 0) {
        http_problem(resp, 403, "forbidden", NULL,
                     "only administrators may follow another keypair's sessions");
        return false;
    }
    if (!scope || !*scope || strcmp(scope, "*") == 0) {
        f->sessions = f->kernels = true;
    } else {
        const char *p = scope;
        while (*p) {
            size_t n = strcspn(p, ",");
            if (n == 7 && strncmp(p, "session", 7) == 0) {
                f->sessions = true;
            } else if (n == 6 && strncmp(p, "kernel", 6) == 0) {
                f->kernels = true;
            } else {
                http_problem(resp, 400, "invalid-api-params", NULL,
                             "scope: \"*\", \"session\", \"kernel\" or both comma-separated, not "
                             "%.64s",
                             scope);
                return false;
            }
            p += n;
            if (*p == ',') p++;
        }
    }
    f->name = _wild(name);
    f->session_id = _wild(sid);
    f->owner = _wild(owner);
    f->group = _wild(group);
    return true;
}

static void _route(http_req *req, http_resp *resp, void *ctx)
{
    gateway *gw = ctx;
    gw_identity id;
    if (!verify_request(gw, req, resp, &id)) return;
    sess_filter *f = ts_calloc(1, sizeof(*f));
    if (!_parse(req, resp, &id, f)) {
        _filter_free(f);
        return;
    }
    TLOG_INFO("session event stream opened", "name=%s session=%s owner=%s group=%s",
              f->name ? f->name : "*", f->session_id ? f->session_id : "*",
              f->owner ? f->owner : "*", f->group ? f->group : "*");
    (void)events_open(gw, req, resp, EV_SESSION, &id, f, _filter_free, NULL);
}

/* ---- the registry's view of a session, as a stream's caller ---- */

/* 1: visible (m filled), 0: not visible to id, -1: the registry did not say. */
static int _lookup(gateway *gw, const gw_identity *id, const char *session_id, meta *m)
{
    char target[96];
    snprintf(target, sizeof(target), "/v1/sessions/%s", session_id);
    http_req *req = http_req_new_local("GET", target, NULL, NULL, 0);
    long status = 0;
    json_t *o = NULL;
    ts_err err = {{0}};
    bool got = proxy_fetch_json(&gw->up[UPSTREAM_REGISTRY], LOOKUP_TIMEOUT_MS, "GET", req, target,
                                id, NULL, &status, &o, &err);
    http_req_free_local(req);
    int verdict = -1;
    if (got && status == 200 && json_is_object(o)) {
        memset(m, 0, sizeof(*m));
        _copy(m->id, sizeof(m->id), session_id);
        _copy(m->name, sizeof(m->name), json_string_value(json_object_get(o, "sessionName")));
        _copy(m->access_key, sizeof(m->access_key),
              json_string_value(json_object_get(o, "accessKey")));
        _copy(m->user_id, sizeof(m->user_id), json_string_value(json_object_get(o, "userId")));
        _copy(m->project_id, sizeof(m->project_id),
              json_string_value(json_object_get(o, "groupId")));
        _copy(m->group_name, sizeof(m->group_name),
              json_string_value(json_object_get(o, "groupName")));
        _copy(m->domain, sizeof(m->domain), json_string_value(json_object_get(o, "domainName")));
        const char *type = json_string_value(json_object_get(o, "type"));
        m->batch = type && strcasecmp(type, "batch") == 0;
        _meta_put(m);
        verdict = 1;
    } else if (got && (status == 404 || status == 403)) {
        verdict = 0;
    } else {
        TLOG_WARN("session event: the registry did not answer a lookup",
                  "session=%s status=%ld error=%s", session_id, status, got ? "" : err.msg);
    }
    json_decref(o);
    return verdict;
}

/* ---- an event on the streams ---- */

typedef struct ev_out {
    const char *session_id;
    const char *names[2]; /* Backend.AI's event names (a second: session_success/failure) */
    bool kernel;          /* scope "kernel" */
    const char *reason;
    const char *kernel_id;
    bool has_exit;
    int exit_code;
    meta m;
    bool have_meta;
} ev_out;

static bool _visible(gateway *gw, ev_stream *st, sess_filter *f, ev_out *e)
{
    const gw_identity *id = events_caller(st);
    bool super = strcmp(id->role, "superadmin") == 0;
    bool admin = strcmp(id->role, "admin") == 0;
    if (e->have_meta && !admin) {
        return super || strcmp(e->m.user_id, id->user_id) == 0;
    }
    if (e->have_meta && admin && strcmp(e->m.domain, id->domain) != 0 &&
        strcmp(e->m.user_id, id->user_id) != 0)
        return false;
    for (int i = 0; i < SEEN_SLOTS; i++)
        if (strcmp(f->seen[i].id, e->session_id) == 0) return f->seen[i].visible;
    meta m;
    int v = _lookup(gw, id, e->session_id, &m);
    if (v < 0) return false;
    if (v == 1 && !e->have_meta) {
        e->m = m;
        e->have_meta = true;
    }
    _copy(f->seen[f->next_seen].id, TS_UUID_STRLEN, e->session_id);
    f->seen[f->next_seen].visible = v == 1;
    f->next_seen = (f->next_seen + 1) % SEEN_SLOTS;
    return v == 1;
}

static bool _matches(gateway *gw, ev_stream *st, sess_filter *f, ev_out *e)
{
    if (e->kernel ? !f->kernels : !f->sessions) return false;
    if (f->session_id && strcmp(f->session_id, e->session_id) != 0) return false;
    if (!_visible(gw, st, f, e)) return false;
    if (f->name && strcmp(f->name, e->m.name) != 0) return false;
    const gw_identity *id = events_caller(st);
    bool admin = strcmp(id->role, "superadmin") == 0 || strcmp(id->role, "admin") == 0;
    const char *owner = f->owner ? f->owner : admin ? NULL : id->access_key;
    if (owner && strcmp(owner, e->m.access_key) != 0) return false;
    if (f->group) {
        if (ts_uuid_valid(f->group)) return strcmp(f->group, e->m.project_id) == 0;
        if (!e->m.group_name[0]) {
            meta m;
            if (_lookup(gw, id, e->session_id, &m) == 1) e->m = m;
        }
        return strcmp(f->group, e->m.group_name) == 0;
    }
    return true;
}

static void _deliver(gateway *gw, ev_stream *st, void *ctx)
{
    ev_out e = *(ev_out *)ctx; /* a copy: the meta may be filled per stream */
    sess_filter *f = events_state(st);
    if (!_matches(gw, st, f, &e)) return;
    json_t *d =
        json_pack("{s:s, s:s, s:s, s:s}", "sessionId", e.session_id, "sessionName", e.m.name,
                  "ownerAccessKey", e.m.access_key, "reason", e.reason ? e.reason : "");
    json_object_set_new(d, "exitCode", e.has_exit ? json_integer(e.exit_code) : json_null());
    if (e.kernel_id && *e.kernel_id) json_object_set_new(d, "kernelId", json_string(e.kernel_id));
    for (int i = 0; i < 2 && e.names[i]; i++)
        if (!events_send(st, e.names[i], d)) break;
    json_decref(d);
}

/* The message types and Backend.AI's names for them. */
static const struct {
    const ProtobufCMessageDescriptor *desc;
    const char *name;
    bool kernel;
} EVENTS[] = {
    {&tessera__v1__session_enqueued__descriptor, "session_enqueued", false},
    {&tessera__v1__session_scheduled__descriptor, "session_scheduled", false},
    {&tessera__v1__session_preparing__descriptor, "session_preparing", false},
    {&tessera__v1__session_pulling__descriptor, "session_pulling", false},
    {&tessera__v1__session_running__descriptor, "session_started", false},
    {&tessera__v1__session_terminating__descriptor, "session_terminating", false},
    {&tessera__v1__session_terminated__descriptor, "session_terminated", false},
    {&tessera__v1__session_cancelled__descriptor, "session_cancelled", false},
    {&tessera__v1__session_failed__descriptor, "session_failure", false},
    {&tessera__v1__kernel_pulling__descriptor, "kernel_pulling", true},
    {&tessera__v1__kernel_creating__descriptor, "kernel_creating", true},
    {&tessera__v1__kernel_started__descriptor, "kernel_started", true},
    {&tessera__v1__kernel_terminated__descriptor, "kernel_terminated", true},
};

/* A string or int32 field of msg by name (every message here starts with
 * session_id; the others vary). */
static const char *_str(const ProtobufCMessage *msg, const char *name)
{
    const ProtobufCFieldDescriptor *fd =
        protobuf_c_message_descriptor_get_field_by_name(msg->descriptor, name);
    if (!fd || fd->type != PROTOBUF_C_TYPE_STRING || fd->label == PROTOBUF_C_LABEL_REPEATED)
        return NULL;
    return *(const char *const *)((const char *)msg + fd->offset);
}

static bool _int(const ProtobufCMessage *msg, const char *name, int *out)
{
    const ProtobufCFieldDescriptor *fd =
        protobuf_c_message_descriptor_get_field_by_name(msg->descriptor, name);
    if (!fd || fd->type != PROTOBUF_C_TYPE_INT32) return false;
    *out = *(const int32_t *)((const char *)msg + fd->offset);
    return true;
}

static void _meta_of_enqueued(const Tessera__V1__SessionEnqueued *q)
{
    meta m = {0};
    _copy(m.id, sizeof(m.id), q->session_id);
    _copy(m.name, sizeof(m.name), q->session_name);
    _copy(m.access_key, sizeof(m.access_key), q->access_key);
    _copy(m.user_id, sizeof(m.user_id), q->user_id);
    _copy(m.project_id, sizeof(m.project_id), q->project_id);
    _copy(m.domain, sizeof(m.domain), q->domain_name);
    m.batch = q->session_type == TESSERA__V1__SESSION_TYPE__SESSION_TYPE_BATCH;
    _meta_put(&m);
}

static kbus_result _on_event(const kbus_msg *msg, void *ctx, ts_err *reason)
{
    (void)ctx;
    (void)reason;
    const Tessera__V1__Envelope *env = msg->env;
    size_t k = 0;
    while (k < TS_ARRAY_LEN(EVENTS) &&
           strcmp(env->type + (strncmp(env->type, "tessera.v1.", 11) == 0 ? 11 : 0),
                  EVENTS[k].desc->short_name) != 0)
        k++;
    if (k == TS_ARRAY_LEN(EVENTS)) return KBUS_DONE; /* not one a stream shows */
    ts_err err = {{0}};
    ProtobufCMessage *m = envelope_payload(env, EVENTS[k].desc, &err);
    if (!m) {
        TLOG_WARN("session event not decoded", "type=%s error=%s", env->type, err.msg);
        return KBUS_DONE;
    }
    if (EVENTS[k].desc == &tessera__v1__session_enqueued__descriptor)
        _meta_of_enqueued((const Tessera__V1__SessionEnqueued *)m);
    ev_out e = {.session_id = _str(m, "session_id"),
                .names = {EVENTS[k].name, NULL},
                .kernel = EVENTS[k].kernel,
                .reason = _str(m, "reason"),
                .kernel_id = _str(m, "kernel_id")};
    if (e.session_id && ts_uuid_valid(e.session_id)) {
        e.have_meta = _meta_get(e.session_id, &e.m);
        bool terminated = EVENTS[k].desc == &tessera__v1__session_terminated__descriptor;
        if (terminated || EVENTS[k].desc == &tessera__v1__kernel_terminated__descriptor)
            e.has_exit = _int(m, "exit_code", &e.exit_code);
        /* a batch session that ended: its result as well */
        if (terminated && e.have_meta && e.m.batch)
            e.names[1] = e.exit_code == 0 ? "session_success" : "session_failure";
        events_each_session(_deliver, &e);
    }
    protobuf_c_message_free_unpacked(m, NULL);
    return KBUS_DONE;
}

static kbus_consumer *g_consumer;

void events_session_routes(gateway *gw)
{
    http_route(svc_router(gw->svc), "GET", "/events/session", _route, gw);
}

bool events_session_start(gateway *gw, ts_err *err)
{
    static const char *const topics[] = {"tessera.session.v1", "tessera.kernel.v1", NULL};
    g_consumer = kbus_consume_broadcast(svc_bus(gw->svc), topics, _on_event, gw, err);
    return g_consumer != NULL;
}

void events_session_stop(void)
{
    if (g_consumer) kbus_consumer_stop(g_consumer);
    g_consumer = NULL;
}
