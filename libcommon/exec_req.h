/* exec_req.h: the body of an execute request (Backend.AI's POST
 * /session/{name}, relayed by the registry to the agent as POST
 * /v1/kernels/{id}/execute), checked the same way by the registry, which sees
 * it first, and by the agent, which runs it:
 *   {"mode": "query"|"batch", "runId" (or "run_id"), "code",
 *    "options": {"exec", "build"}, "timeout_ms"}
 * mode is required (a missing, null or non-string mode is a 400: a body
 * without one used to run nothing and answer 200); the other fields are
 * optional. A field of the wrong JSON type is refused (400) naming it, as is
 * a mode other than query or batch (Backend.AI's continue, input and complete
 * are not served). code, options.exec and
 * options.build are each at most EXEC_REQ_CODE_MAX bytes (413): each becomes
 * one argument of the program run in the kernel, and Linux refuses a longer
 * one (MAX_ARG_STRLEN, 128 KiB with its NUL). Unknown keys are ignored. */
#ifndef TESSERA_EXEC_REQ_H
#define TESSERA_EXEC_REQ_H

#include "libcommon/common.h"

#include <jansson.h>

#define EXEC_REQ_CODE_MAX (128 * 1024 - 1)
#define EXEC_REQ_RUN_ID_MAX 127

typedef struct exec_req {
    const char *mode;   /* "query" or "batch" */
    const char *code;   /* "" when absent */
    const char *run_id; /* NULL when absent or empty */
    const char *exec;   /* options.exec, NULL when absent */
    const char *build;  /* options.build, NULL when absent */
    int64_t timeout_ms; /* 0 when absent */
} exec_req;

/* The strings point into body. false: *status is 400 or 413 and err says
 * which field and why, in words for the caller. */
bool exec_req_parse(json_t *body, exec_req *out, int *status, ts_err *err) TS_MUST_CHECK;

#endif
