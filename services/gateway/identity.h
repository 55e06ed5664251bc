/* identity.h: who signed a request (verify.c decides), carried in the
 * request itself (http_req.local) from the verified entry point to the
 * access record written after the response (audit.c). */
#ifndef GATEWAY_IDENTITY_H
#define GATEWAY_IDENTITY_H

#include "credentials.h"

#include "libcommon/http.h"

typedef struct gw_identity {
    char access_key[SIGN_ACCESS_KEY_LEN + 1];
    char user_id[CRED_USER_ID_MAX + 1];
    char role[CRED_ROLE_MAX];
    char domain[CRED_DOMAIN_MAX];
    bool is_admin;
} gw_identity;

/* Keep a copy of id in req (replacing one kept before). */
void identity_attach(http_req *req, const gw_identity *id);
/* The identity kept in req, or NULL (anonymous, or refused before the
 * signature was checked). */
const gw_identity *identity_of(const http_req *req);
/* Free what identity_attach kept: the request's last use of it (the access
 * record; a handler test). */
void identity_release(const http_req *req);

#endif
