/* auth_client.c: see auth_client.h. */
#include "auth_client.h"

#include "libcommon/httpc.h"

#include <curl/curl.h>
#include <stdlib.h>
#include <string.h>

static __thread httpc *t_client;

bool authc_session_context(const char *access_key, const char *group, const char *request_id,
                           long *status, json_t **out, ts_err *err)
{
    *out = NULL;
    *status = 0;
    if (!t_client) t_client = httpc_new((int)reg_cfg.auth_timeout_ms);
    char *ak = curl_easy_escape(NULL, access_key, 0);
    char *g = group ? curl_easy_escape(NULL, group, 0) : NULL;
    char *url = ts_asprintf("%s/v1/session-context?access_key=%s%s%s", reg_cfg.auth_url, ak,
                            g ? "&group=" : "", g ? g : "");
    curl_free(ak);
    if (g) curl_free(g);
    bool ok = httpc_json(t_client, "GET", url, NULL, request_id, status, out, err);
    free(url);
    if (!ok) ts_err_prefix(err, "tessera-auth");
    return ok;
}
