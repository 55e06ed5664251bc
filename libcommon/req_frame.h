/* req_frame.h: the frame a handler that acts for a caller begins and ends
 * with, one for the registry, tessera-vfolder and tessera-auth. Contract:
 * req_frame_begin records the route's service, the request and the
 * response; each later step (the caller's role against what the handler
 * needs, the JSON body with only the keys the handler knows, a pooled
 * PostgreSQL connection) answers its own problem in the response and returns
 * false; req_frame_end releases whatever the steps took, whether they all
 * succeeded or not. Who the caller is stays each service's to resolve (the
 * registry and tessera-vfolder ask tessera-auth, libcommon/caller.h;
 * tessera-auth reads its own tables): the frame judges the role it has.
 *
 *     req_frame f;
 *     req_frame_begin(&f, ctx, req, resp);
 *     if (resolve the caller c && req_frame_role(&f, c.role, REQ_ADMIN, "only admins may ...") &&
 *         req_frame_body(&f, keys) && req_frame_conn(&f)) {
 *         ... f.body, f.conn ...
 *     }
 *     req_frame_end(&f);
 */
#ifndef TESSERA_REQ_FRAME_H
#define TESSERA_REQ_FRAME_H

#include "libcommon/pgjson.h"
#include "libcommon/svc.h"

/* Who a handler serves; the others get 403. */
typedef enum req_need {
    REQ_ANY,        /* every resolved caller (the handler scopes what it shows) */
    REQ_ADMIN,      /* superadmins and domain admins ("admin") */
    REQ_SUPERADMIN, /* superadmins */
} req_need;

typedef struct req_frame {
    svc *s;
    http_req *req;
    http_resp *resp;
    json_t *body; /* after req_frame_body (owned) */
    PGconn *conn; /* after req_frame_conn (pooled) */
} req_frame;

/* ctx: the svc the route was registered with. */
void req_frame_begin(req_frame *f, void *ctx, http_req *req, http_resp *resp);
/* Whether a caller of role ("superadmin", "admin", "user") may use a
 * handler that serves need; false after 403 forbidden saying refusal. */
bool req_frame_role(req_frame *f, const char *role, req_need need,
                    const char *refusal) TS_MUST_CHECK;
/* The JSON body (400 when it is not one), with no key outside keys
 * (NULL-terminated; NULL: any). */
bool req_frame_body(req_frame *f, const char *const *keys) TS_MUST_CHECK;
/* A pooled connection (503 when none). */
bool req_frame_conn(req_frame *f) TS_MUST_CHECK;
void req_frame_end(req_frame *f);

#endif
