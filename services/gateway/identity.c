/* identity.c: the verified caller in http_req.local (identity.h). */
#include "identity.h"

#include <stdlib.h>

void identity_attach(http_req *req, const gw_identity *id)
{
    gw_identity *copy = ts_malloc(sizeof(*copy));
    *copy = *id;
    free(req->local);
    req->local = copy;
}

const gw_identity *identity_of(const http_req *req)
{
    return req->local;
}

void identity_release(const http_req *req)
{
    free(req->local);
}
