/* fuzz_exec_req.c: arbitrary bytes as an execute request body (the registry
 * and the agent check it with exec_req_parse). Checks: a refusal is a 400 or
 * a 413 with a message; an accepted body has a served mode, code within the
 * limit and a batch command. */
#include "libcommon/exec_req.h"

#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    json_t *body = json_loadb((const char *)data, size, JSON_ALLOW_NUL | JSON_DECODE_ANY, NULL);
    if (!body) return 0;
    exec_req er;
    int status = 0;
    ts_err err = {{0}};
    if (exec_req_parse(body, &er, &status, &err)) {
        if (strcmp(er.mode, "query") != 0 && strcmp(er.mode, "batch") != 0) abort();
        if (!er.code || strlen(er.code) > EXEC_REQ_CODE_MAX) abort();
        if (er.run_id && (!*er.run_id || strlen(er.run_id) > EXEC_REQ_RUN_ID_MAX)) abort();
        if (strcmp(er.mode, "batch") == 0 && !*er.code && !(er.exec && *er.exec)) abort();
        if (er.timeout_ms < 0) abort();
    } else if ((status != 400 && status != 413) || !err.msg[0]) {
        abort();
    }
    json_decref(body);
    return 0;
}
