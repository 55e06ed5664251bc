/* exec_req.c: see exec_req.h. */
#include "libcommon/exec_req.h"

#include <string.h>

static bool refuse(int *status, int code)
{
    *status = code;
    return false;
}

/* A string field (absent or null: *out untouched). */
static bool str_field(json_t *o, const char *name, const char *path, size_t max, const char **out,
                      int *status, ts_err *err)
{
    json_t *v = json_object_get(o, name);
    if (!v || json_is_null(v)) return true;
    if (!json_is_string(v)) {
        ts_err_set(err, "\"%s\" must be a string", path);
        return refuse(status, 400);
    }
    size_t n = json_string_length(v);
    if (strlen(json_string_value(v)) != n) {
        ts_err_set(err, "\"%s\" must not contain NUL", path);
        return refuse(status, 400);
    }
    if (n > max) {
        ts_err_set(err, "\"%s\" is %zu bytes, more than the limit of %zu", path, n, max);
        return refuse(status, max == EXEC_REQ_CODE_MAX ? 413 : 400);
    }
    *out = json_string_value(v);
    return true;
}

bool exec_req_parse(json_t *body, exec_req *out, int *status, ts_err *err)
{
    memset(out, 0, sizeof(*out));
    out->mode = "";
    out->code = "";
    *status = 0;
    if (!json_is_object(body)) {
        ts_err_set(err, "the body must be a JSON object {mode, runId, code, options}");
        return refuse(status, 400);
    }
    /* mode is required: a body without one would run nothing and answer 200 */
    json_t *mode = json_object_get(body, "mode");
    if (!json_is_string(mode)) {
        ts_err_set(err, "\"mode\" is required: a string, \"query\" or \"batch\"%s",
                   mode && !json_is_null(mode) ? " (got another JSON type)" : "");
        return refuse(status, 400);
    }
    if (!str_field(body, "mode", "mode", 16, &out->mode, status, err)) goto bad_mode;
    if (strcmp(out->mode, "query") != 0 && strcmp(out->mode, "batch") != 0) goto bad_mode;
    if (!str_field(body, "code", "code", EXEC_REQ_CODE_MAX, &out->code, status, err) ||
        !str_field(body, "runId", "runId", EXEC_REQ_RUN_ID_MAX, &out->run_id, status, err))
        return false;
    if (!out->run_id &&
        !str_field(body, "run_id", "run_id", EXEC_REQ_RUN_ID_MAX, &out->run_id, status, err))
        return false;
    if (out->run_id && !*out->run_id) out->run_id = NULL;
    json_t *opts = json_object_get(body, "options");
    if (opts && !json_is_null(opts)) {
        if (!json_is_object(opts)) {
            ts_err_set(err, "\"options\" must be an object");
            return refuse(status, 400);
        }
        if (!str_field(opts, "exec", "options.exec", EXEC_REQ_CODE_MAX, &out->exec, status, err) ||
            !str_field(opts, "build", "options.build", EXEC_REQ_CODE_MAX, &out->build, status, err))
            return false;
    }
    json_t *t = json_object_get(body, "timeout_ms");
    if (t && !json_is_null(t)) {
        if (!json_is_integer(t) || json_integer_value(t) <= 0) {
            ts_err_set(err, "\"timeout_ms\" must be a positive integer");
            return refuse(status, 400);
        }
        out->timeout_ms = json_integer_value(t);
    }
    if (strcmp(out->mode, "batch") == 0 && !(out->exec && *out->exec) && !*out->code) {
        ts_err_set(err, "batch mode needs options.exec (a command)");
        return refuse(status, 400);
    }
    return true;
bad_mode:
    ts_err_set(err, "\"mode\" must be \"query\" or \"batch\" (continue, input and complete are not "
                    "served)");
    return refuse(status, 400);
}
