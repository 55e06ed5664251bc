/* kernel_rec.c: the record of one kernel and its meta file (kernel_rec.h). */
#include "services/agent/kernel_rec.h"

#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "libcommon/log.h"

static char *_hex(const uint8_t *b, size_t n)
{
    static const char d[] = "0123456789abcdef";
    char *s = ts_malloc(n * 2 + 1);
    for (size_t i = 0; i < n; i++) {
        s[2 * i] = d[b[i] >> 4];
        s[2 * i + 1] = d[b[i] & 15];
    }
    s[2 * n] = '\0';
    return s;
}

static uint8_t *_unhex(const char *s, size_t *n)
{
    size_t len = strlen(s);
    if (len % 2) return NULL;
    uint8_t *b = ts_malloc(len / 2 + 1);
    for (size_t i = 0; i < len / 2; i++) {
        unsigned v;
        if (sscanf(s + 2 * i, "%2x", &v) != 1) {
            free(b);
            return NULL;
        }
        b[i] = (uint8_t)v;
    }
    *n = len / 2;
    return b;
}

static void _set_hex(json_t *j, const char *key, const uint8_t *b, size_t n)
{
    char *hex = _hex(b, n);
    json_object_set_new(j, key, json_string(hex));
    free(hex);
}

bool krec_save(const char *meta_dir, const krec *k)
{
    json_t *ports = json_array();
    for (int i = 0; i < k->n_ports; i++)
        json_array_append_new(ports, json_pack("{s:s, s:s, s:i, s:i, s:s}", "name",
                                               k->ports[i].name, "protocol", k->ports[i].protocol,
                                               "container", k->ports[i].container_port, "host",
                                               k->ports[i].host_port, "start", k->ports[i].start));
    json_t *j =
        json_pack("{s:s, s:s, s:s, s:s, s:s, s:s, s:o, s:i, s:s, s:b, s:I, s:I, s:I}", "kernel_id",
                  k->id, "session_id", k->session_id, "access_key", k->access_key, "correlation_id",
                  k->correlation_id, "status", k->status, "runtime_path", k->runtime_path, "ports",
                  ports, "exit_code", k->exit_code, "reason", k->reason, "exit_reported",
                  k->exit_reported, "exited_at_ms", (json_int_t)k->exited_at_ms, "terminated_at_ms",
                  (json_int_t)k->terminated_at_ms, "updated_at_ms", (json_int_t)ts_now_wall_ms());
    json_object_set_new(j, "generation", json_integer(k->generation));
    if (k->restarting) json_object_set_new(j, "restarting", json_true());
    if (k->cmd_bytes) _set_hex(j, "create_kernel", k->cmd_bytes, k->cmd_len);
    if (k->next_cmd) {
        _set_hex(j, "next_create_kernel", k->next_cmd, k->next_len);
        json_object_set_new(j, "next_generation", json_integer(k->next_generation));
    }
    char *path = ts_asprintf("%s/%s.json", meta_dir, k->id);
    char *tmp = ts_asprintf("%s.tmp", path);
    bool ok = json_dump_file(j, tmp, JSON_COMPACT) == 0 && rename(tmp, path) == 0;
    if (!ok) {
        TLOG_ERROR("kernel meta not saved", "path=%s error=\"%s\"", path, strerror(errno));
        unlink(tmp);
    }
    json_decref(j);
    free(tmp);
    free(path);
    return ok;
}

static void _load_ports(krec *k, json_t *arr)
{
    size_t i;
    json_t *v;
    json_array_foreach(arr, i, v)
    {
        if (k->n_ports >= KERNEL_MAX_PORTS) break;
        kernel_service_port *p = &k->ports[k->n_ports++];
        ts_strlcpy(p->name, json_string_value(json_object_get(v, "name")) ?: "", sizeof(p->name));
        ts_strlcpy(p->protocol, json_string_value(json_object_get(v, "protocol")) ?: "",
                   sizeof(p->protocol));
        p->container_port = (int)json_integer_value(json_object_get(v, "container"));
        p->host_port = (int)json_integer_value(json_object_get(v, "host"));
        ts_strlcpy(p->start, json_string_value(json_object_get(v, "start")) ?: "",
                   sizeof(p->start));
    }
}

krec *krec_load(const char *meta_dir, const char *file)
{
    char *path = ts_asprintf("%s/%s", meta_dir, file);
    json_t *j = json_load_file(path, 0, NULL);
    if (!j) {
        TLOG_WARN("unreadable kernel meta file ignored", "path=%s", path);
        free(path);
        return NULL;
    }
    free(path);
    krec *k = ts_calloc(1, sizeof(*k));
#define S(field, key)                                                                              \
    ts_strlcpy(k->field, json_string_value(json_object_get(j, key)) ?: "", sizeof(k->field))
    S(id, "kernel_id");
    S(session_id, "session_id");
    S(access_key, "access_key");
    S(correlation_id, "correlation_id");
    S(status, "status");
    S(runtime_path, "runtime_path");
    S(reason, "reason");
#undef S
    k->exit_code = (int)json_integer_value(json_object_get(j, "exit_code"));
    k->exit_reported = json_is_true(json_object_get(j, "exit_reported"));
    k->restarting = json_is_true(json_object_get(j, "restarting"));
    k->exited_at_ms = json_integer_value(json_object_get(j, "exited_at_ms"));
    k->terminated_at_ms = json_integer_value(json_object_get(j, "terminated_at_ms"));
    _load_ports(k, json_object_get(j, "ports"));
    const char *hex = json_string_value(json_object_get(j, "create_kernel"));
    if (hex) k->cmd_bytes = _unhex(hex, &k->cmd_len);
    k->generation = (int)json_integer_value(json_object_get(j, "generation"));
    hex = json_string_value(json_object_get(j, "next_create_kernel"));
    if (hex) k->next_cmd = _unhex(hex, &k->next_len);
    k->next_generation = (int)json_integer_value(json_object_get(j, "next_generation"));
    json_decref(j);
    if (!k->id[0]) {
        krec_free(k);
        return NULL;
    }
    return k;
}

void krec_unlink_meta(const char *meta_dir, const char *id)
{
    char *path = ts_asprintf("%s/%s.json", meta_dir, id);
    unlink(path);
    free(path);
}

void krec_free(krec *k)
{
    if (!k) return;
    while (k->head) {
        ktask *t = k->head;
        k->head = t->next;
        free(t);
    }
    free(k->cmd_bytes);
    free(k->next_cmd);
    free(k);
}

Tessera__V1__CreateKernel *krec_cmd(const krec *k)
{
    if (!k->cmd_bytes) return NULL;
    return tessera__v1__create_kernel__unpack(NULL, k->cmd_len, k->cmd_bytes);
}

int krec_latest_generation(const krec *k)
{
    return k->next_cmd ? k->next_generation : k->generation;
}

void krec_progress_status(krec *k, const char *status)
{
    if (atomic_load(&k->cancel) && strcmp(k->status, "terminating") == 0) return;
    ts_strlcpy(k->status, status, sizeof(k->status));
}

void krec_terminate(krec *k, int exit_code, const char *reason)
{
    ts_strlcpy(k->status, "terminated", sizeof(k->status));
    ts_strlcpy(k->reason, reason, sizeof(k->reason));
    k->exit_code = exit_code;
    k->terminated_at_ms = ts_now_wall_ms();
}
