/* request.h: the steps a gateway-forwarded handler of tessera-vfolder
 * begins and ends with, in one place: the caller (caller.h), the JSON body
 * with only the keys the handler knows, the folder of the route's {name}
 * with the permission the operation needs (folders.h), what the caller's
 * policies allow on that folder's host, its directory opened for confined
 * file operations (files.h), and the thread's log context (the
 * user, then the folder), so that every line the handler logs names them.
 *
 *     vf_req x;
 *     if (!vf_req_begin(&x, ctx, req, resp)) return;      // 401/503 sent
 *     if (vf_req_folder(&x, VF_PERM_RW)) {                // 404/403 sent
 *         ... x.f, x.c ...
 *     }
 *     vf_req_end(&x);
 *
 * Each step answers the problem itself and returns false; vf_req_end
 * releases whatever the steps took. */
#ifndef VFOLDER_REQUEST_H
#define VFOLDER_REQUEST_H

#include "caller.h"
#include "folders.h"
#include "libcommon/req_frame.h"

typedef struct vf_req {
    req_frame fr; /* the service, request, response; fr.body after vf_req_body */
    ts_caller c;
    vf_folder f;      /* after vf_req_folder */
    int root;         /* after vf_req_root: the folder's directory (files.h); -1 */
    const char *name; /* what vf_req_folder resolves; NULL: the route's {name} */
} vf_req;

/* The caller of the request (ctx: the svc the route was registered with). */
bool vf_req_begin(vf_req *x, void *ctx, http_req *req, http_resp *resp) TS_MUST_CHECK;
/* The JSON body, with no key outside keys (NULL-terminated; NULL: any). */
bool vf_req_body(vf_req *x, const char *const *keys) TS_MUST_CHECK;
/* The folder the route's {name} (or x->name) names, by name or by id
 * (dashed or not), with at least permission need. */
bool vf_req_folder(vf_req *x, vf_perm need) TS_MUST_CHECK;
/* May the caller do host_perm (VF_HOST_*) on the folder's host? Admins of
 * the folder's domain may. project_hosts: a project folder's project policy
 * counts too. False after 403 "your policies do not allow <doing> host
 * <host>". */
bool vf_req_host_allows(vf_req *x, const char *host_perm, bool project_hosts,
                        const char *doing) TS_MUST_CHECK;
/* Run one statement (what: for the problem) on a pooled connection. False
 * after a problem answer (503 no database, the statement's error). */
bool vf_req_exec(vf_req *x, const char *what, const char *sql, int n_params,
                 const char *const *params) TS_MUST_CHECK;
/* Open the folder's directory (x->root) for a confined file operation;
 * what: the operation, for the problem. */
bool vf_req_root(vf_req *x, const char *what) TS_MUST_CHECK;
void vf_req_end(vf_req *x);

#endif
