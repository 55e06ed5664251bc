/* batch_tx.c: see batch_tx.h. */
#include "batch_tx.h"

#include "db_common.h"
#include "libcommon/log.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

static int by_session(const void *a, const void *b)
{
    const tx_item *x = a, *y = b;
    int c = strcasecmp(x->session_id, y->session_id); /* a UUID in either case */
    if (c) return c;
    return x->order < y->order ? -1 : x->order > y->order;
}

/* Apply the item on its session, locked by the caller (found false: none). */
static kbus_result apply_item(PGconn *conn, outbox *ob, const tx_item *it, sess *s, bool found,
                              ts_err *reason)
{
    if (found) return it->apply(conn, ob, s, it->m, reason);
    if (!it->not_found) {
        TLOG_WARN("event for an unknown session ignored", "type=%s", it->msg->env->type);
        return KBUS_DONE;
    }
    sess none;
    memset(&none, 0, sizeof(none));
    ts_strlcpy(none.id, it->session_id, sizeof(none.id));
    return it->not_found(conn, ob, &none, it->m, reason);
}

/* Lock the sessions, run the pass, apply the rest one by one: KBUS_DONE when
 * everything applied (the caller then commits). */
static kbus_result apply_all(PGconn *conn, tx_batch *b, const char **ids, size_t ng,
                             tx_pass_fn pass, ts_err *reason)
{
    if (!tr_lock_many(conn, ids, ng, b->ss, b->found, reason)) return KBUS_RETRY;
    kbus_result res = pass ? pass(conn, b, reason) : KBUS_DONE;
    for (size_t i = 0; i < b->n && res == KBUS_DONE; i++) {
        if (b->done[i]) continue;
        size_t g = b->group[i];
        tlog_ctx_session(b->items[i].session_id);
        tlog_ctx_kernel(b->items[i].kernel_id);
        res = apply_item(conn, &b->obs[i], &b->items[i], &b->ss[g], b->found[g], reason);
    }
    tlog_ctx_session(NULL);
    tlog_ctx_kernel(NULL);
    return res;
}

kbus_result batch_tx_apply(tx_item *items, size_t n, tx_pass_fn pass, ts_err *reason)
{
    if (n == 0) return KBUS_DONE;
    for (size_t i = 0; i < n; i++)
        if (!ts_uuid_valid(items[i].session_id)) {
            ts_err_set(reason, "%s: session id '%.60s' is not a UUID", items[i].msg->env->type,
                       items[i].session_id);
            return KBUS_REJECT;
        }
    qsort(items, n, sizeof(*items), by_session);
    /* the distinct sessions: group[i] is item i's */
    const char **ids = ts_calloc(n, sizeof(*ids));
    size_t *group = ts_calloc(n, sizeof(*group)), ng = 0;
    for (size_t i = 0; i < n; i++) {
        if (ng == 0 || strcasecmp(ids[ng - 1], items[i].session_id) != 0)
            ids[ng++] = items[i].session_id;
        group[i] = ng - 1;
    }
    tx_batch b = {.items = items,
                  .n = n,
                  .ss = ts_calloc(ng, sizeof(*b.ss)),
                  .found = ts_calloc(ng, sizeof(*b.found)),
                  .group = group,
                  .obs = ts_calloc(n, sizeof(*b.obs)),
                  .done = ts_calloc(n, sizeof(*b.done))};
    for (size_t i = 0; i < n; i++)
        ob_init(&b.obs[i], items[i].msg->env->correlation_id);
    kbus_result res = KBUS_RETRY;
    PGconn *conn = reg_pg_get(reason);
    if (conn) {
        if (pg_begin(conn, reason)) res = apply_all(conn, &b, ids, ng, pass, reason);
        if (res == KBUS_DONE && !pg_commit(conn, reason)) res = KBUS_RETRY;
        if (res != KBUS_DONE) pg_rollback(conn);
        reg_pg_put(conn);
    }
    for (size_t i = 0; i < n; i++) {
        if (res == KBUS_DONE)
            ob_flush(&b.obs[i]);
        else
            ob_discard(&b.obs[i]);
    }
    free(b.obs);
    free(b.done);
    free(b.found);
    free(b.ss);
    free(group);
    free(ids);
    return res;
}

/* A string field of m by name (NULL when it has none). */
static const char *string_field(const ProtobufCMessage *m, const char *name)
{
    const ProtobufCFieldDescriptor *f =
        protobuf_c_message_descriptor_get_field_by_name(m->descriptor, name);
    if (!f || f->type != PROTOBUF_C_TYPE_STRING || f->label == PROTOBUF_C_LABEL_REPEATED)
        return NULL;
    return *(const char *const *)((const char *)m + f->offset);
}

static const tx_type *type_of(const tx_type *types, size_t n_types, const char *type)
{
    for (size_t i = 0; i < n_types; i++)
        if (strcmp(types[i].type, type) == 0) return &types[i];
    return NULL;
}

static tx_item item_of(const kbus_msg *msg, const tx_type *t, ProtobufCMessage *m, size_t order)
{
    const char *sid = string_field(m, "session_id");
    return (tx_item){.msg = msg,
                     .session_id = sid ? sid : "",
                     .kernel_id = string_field(m, "kernel_id"),
                     .apply = t->apply,
                     .not_found = t->not_found,
                     .m = m,
                     .order = order};
}

kbus_result batch_tx_consume(const kbus_msg *msgs, size_t n, const tx_type *types, size_t n_types,
                             tx_pass_fn pass, ts_err *reason)
{
    tx_item *items = ts_calloc(n ? n : 1, sizeof(*items));
    size_t k = 0;
    kbus_result res = KBUS_DONE;
    for (size_t i = 0; i < n && res == KBUS_DONE; i++) {
        const tx_type *t = type_of(types, n_types, msgs[i].env->type);
        if (!t) continue; /* not for this consumer */
        ProtobufCMessage *m = envelope_payload(msgs[i].env, t->desc, reason);
        if (!m) {
            res = KBUS_REJECT;
        } else if (t->alone) {
            res = t->alone(m, reason);
            protobuf_c_message_free_unpacked(m, NULL);
        } else {
            items[k] = item_of(&msgs[i], t, m, k);
            k++;
        }
    }
    if (res == KBUS_DONE) res = batch_tx_apply(items, k, pass, reason);
    for (size_t i = 0; i < k; i++)
        protobuf_c_message_free_unpacked(items[i].m, NULL);
    free(items);
    return res;
}

kbus_result batch_tx_apply_message(const tx_type *types, size_t n_types, const char *type,
                                   ProtobufCMessage *m, ts_err *reason)
{
    const tx_type *t = type_of(types, n_types, type);
    if (!t || t->alone) {
        ts_err_set(reason, "not an event applied in a batch: %s", type);
        return KBUS_REJECT;
    }
    Tessera__V1__Envelope env = TESSERA__V1__ENVELOPE__INIT;
    env.type = (char *)type;
    env.correlation_id = "";
    kbus_msg msg = {.env = &env};
    tx_item item = item_of(&msg, t, m, 0);
    return batch_tx_apply(&item, 1, NULL, reason);
}
