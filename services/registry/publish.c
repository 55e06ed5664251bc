/* publish.c: the outbox (see publish.h). */
#include "publish.h"

#include "app_routes.h"
#include "context.h"
#include "db_common.h"
#include "libcommon/log.h"
#include "waiters.h"

#include <stdlib.h>
#include <string.h>

void ob_init(outbox *ob, const char *correlation_id)
{
    memset(ob, 0, sizeof(*ob));
    ob->correlation_id = ts_strdup(correlation_id ? correlation_id : "");
}

static outbox_item *push(outbox *ob)
{
    if (ob->n == ob->cap) {
        ob->cap = ob->cap ? ob->cap * 2 : 8;
        ob->items = ts_realloc(ob->items, ob->cap * sizeof(*ob->items));
    }
    outbox_item *it = &ob->items[ob->n++];
    memset(it, 0, sizeof(*it));
    return it;
}

static void add(outbox *ob, char *topic, const char *key, const char *subject,
                const ProtobufCMessage *m)
{
    outbox_item *it = push(ob);
    it->topic = topic;
    it->key = ts_strdup(key);
    it->value =
        envelope_pack(m, svc_producer(reg_service()), ob->correlation_id, subject, &it->len);
}

void ob_session_event(outbox *ob, const char *session_id, const ProtobufCMessage *m)
{
    add(ob, ts_strdup(TOPIC_SESSION), session_id, session_id, m);
}

void ob_agent_cmd(outbox *ob, const char *agent_id, const char *kernel_id,
                  const ProtobufCMessage *m)
{
    add(ob, ts_asprintf("%s%s", TOPIC_AGENT_CMD_PREFIX, agent_id), kernel_id, kernel_id, m);
}

void ob_agent_event(outbox *ob, const char *agent_id, const ProtobufCMessage *m)
{
    add(ob, ts_strdup(TOPIC_AGENT), agent_id, agent_id, m);
}

void ob_notify(outbox *ob, const char *session_id, const char *status)
{
    outbox_item *it = push(ob);
    it->notify_session = ts_strdup(session_id);
    it->notify_status = ts_strdup(status);
}

static void item_free(outbox_item *it)
{
    free(it->topic);
    free(it->key);
    free(it->value);
    free(it->notify_session);
    free(it->notify_status);
}

void ob_flush(outbox *ob)
{
    kbus *bus = svc_bus(reg_service());
    for (size_t i = 0; i < ob->n; i++) {
        outbox_item *it = &ob->items[i];
        if (it->notify_session) {
            waiters_notify(it->notify_session, it->notify_status);
            if (strcmp(it->notify_status, ST_TERMINATING) == 0 ||
                reg_status_final(it->notify_status))
                app_routes_revoke(it->notify_session); /* its apps end with it */
        } else {
            ts_err err = {{0}};
            if (!bus || !kbus_produce_raw(bus, it->topic, it->key, it->value, it->len, &err))
                TLOG_ERROR("event not published", "topic=%s key=%s error=\"%s\"", it->topic,
                           it->key, bus ? err.msg : "no bus");
        }
        item_free(it);
    }
    ob->n = 0;
    free(ob->items);
    free(ob->correlation_id);
    memset(ob, 0, sizeof(*ob));
}

void ob_discard(outbox *ob)
{
    for (size_t i = 0; i < ob->n; i++)
        item_free(&ob->items[i]);
    free(ob->items);
    free(ob->correlation_id);
    memset(ob, 0, sizeof(*ob));
}
