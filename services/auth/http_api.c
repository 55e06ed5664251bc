/* http_api.c: tessera-auth's routes, one module per concern. Every handler
 * gets the svc as its context. */
#include "http_api.h"

#include "account.h"
#include "admin_routes.h"
#include "announcement.h"
#include "credentials.h"
#include "keypairs.h"
#include "login.h"
#include "session_context.h"
#include "ssh_keypair.h"
#include "user_config.h"
#include "users.h"

void auth_routes(svc *s)
{
    credentials_routes(s); /* GET /v1/credentials/{access_key} */
    login_routes(s);       /* /v1/authorize, /v1/role, /v1/update-password */
    users_routes(s);       /* /v1/admin/users... */
    keypairs_routes(s);    /* /v1/admin/keypairs... */
    admin_resources_routes(s);
    session_context_routes(s); /* GET /v1/session-context (for tessera-registry) */
    account_routes(s);         /* /v1/auth/update-full-name, /v1/auth/signout */
    ssh_keypair_routes(s);     /* /v1/auth/ssh-keypair */
    user_config_routes(s);     /* /v1/user-config/... */
    announcement_routes(s);    /* /v1/manager/announcement */
}
