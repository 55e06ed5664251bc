/* ssh_keypair.c: the signing keypair's SSH keypair (see ssh_keypair.h). */
#include "ssh_keypair.h"

#include "user_config.h"

#include "admin.h"
#include "libcommon/log.h"
#include "libcommon/ssh_keys.h"

#include <stdlib.h>
#include <string.h>

#define KEY_COMMENT "work@tessera"

static const char store_sql[] =
    "INSERT INTO auth.keypair_configs (access_key, ssh_public_key, ssh_private_key)"
    " VALUES ($1, $2, $3) ON CONFLICT (access_key) DO UPDATE SET"
    " ssh_public_key = EXCLUDED.ssh_public_key, ssh_private_key = EXCLUDED.ssh_private_key,"
    " modified_at = now()";

/* Store pub and priv for the caller's key and answer both. */
static void _store(admin_req *a, const char *pub, const char *priv, const char *what)
{
    const char *p[] = {a->c.access_key, pub, priv};
    PGresult *r = pgjson_query(a->fr.conn, a->fr.resp, "store ssh keypair", store_sql, 3, p);
    if (!r) return;
    PQclear(r);
    user_config_changed(a); /* the public key goes into new sessions */
    TLOG_INFO("ssh keypair stored", "how=%s", what);
    http_reply_json(a->fr.resp, 200,
                    json_pack("{s:s, s:s}", "ssh_public_key", pub, "ssh_private_key", priv));
}

static void h_get(http_req *req, http_resp *resp, void *ctx)
{
    admin_req a;
    if (!user_config_begin(&a, ctx, req, resp)) return;
    char *key = user_config_column(&a, "ssh_public_key", "read ssh public key");
    if (key) http_reply_json(resp, 200, json_pack("{s:s}", "ssh_public_key", key));
    free(key);
    admin_end(&a);
}

static void h_generate(http_req *req, http_resp *resp, void *ctx)
{
    admin_req a;
    if (!user_config_begin(&a, ctx, req, resp)) return;
    char *pub = NULL, *priv = NULL;
    ts_err err = {{0}};
    if (!ssh_keys_generate(KEY_COMMENT, &pub, &priv, &err))
        http_problem(resp, 503, "service-unavailable", NULL, "could not make a keypair: %s",
                     err.msg);
    else
        _store(&a, pub, priv, "generated");
    free(pub);
    if (priv) {
        explicit_bzero(priv, strlen(priv));
        free(priv);
    }
    admin_end(&a);
}

/* s without trailing white space, plus one newline (as Backend.AI stores). */
static char *_one_line_end(const char *s)
{
    size_t n = strlen(s);
    while (n && (s[n - 1] == ' ' || s[n - 1] == '\t' || s[n - 1] == '\r' || s[n - 1] == '\n'))
        n--;
    return ts_asprintf("%.*s\n", (int)n, s);
}

static void h_upload(http_req *req, http_resp *resp, void *ctx)
{
    json_t *body = http_json_body(req, resp);
    if (!body) return;
    static const char *const keys[] = {"pubkey", "privkey", NULL};
    json_t *jpub = json_object_get(body, "pubkey"), *jpriv = json_object_get(body, "privkey");
    if (!pgjson_only_keys(body, keys, resp)) goto out;
    if (!json_is_string(jpub) || !json_is_string(jpriv)) {
        http_problem(resp, 400, "invalid-api-params", NULL,
                     "pubkey and privkey (strings, OpenSSH formats) are required");
        goto out;
    }
    if (json_string_length(jpub) > SSH_KEYS_PUBLIC_MAX ||
        json_string_length(jpriv) > SSH_KEYS_PRIVATE_MAX) {
        http_problem(resp, 400, "invalid-api-params", NULL,
                     "pubkey may have up to %d bytes, privkey up to %d", SSH_KEYS_PUBLIC_MAX,
                     SSH_KEYS_PRIVATE_MAX);
        goto out;
    }
    char *pub = _one_line_end(json_string_value(jpub));
    char *priv = _one_line_end(json_string_value(jpriv));
    ts_err err = {{0}};
    admin_req a;
    if (!ssh_keys_check_pair(pub, priv, &err)) {
        http_problem(resp, 400, "invalid-api-params", NULL, "%s", err.msg);
    } else if (user_config_begin(&a, ctx, req, resp)) {
        _store(&a, pub, priv, "uploaded");
        admin_end(&a);
    }
    free(pub);
    explicit_bzero(priv, strlen(priv));
    free(priv);
out:
    json_decref(body);
}

void ssh_keypair_routes(svc *s)
{
    http_router *r = svc_router(s);
    http_route(r, "GET", "/v1/auth/ssh-keypair", h_get, s);
    http_route(r, "PATCH", "/v1/auth/ssh-keypair", h_generate, s);
    http_route(r, "POST", "/v1/auth/ssh-keypair", h_upload, s);
}
