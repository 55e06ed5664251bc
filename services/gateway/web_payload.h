/* web_payload.h: Backend.AI's encoded request bodies.
 *
 * Over plain HTTP, Backend.AI's clients (the Python client's login and
 * update-password, the Web-UI's since 23.09) send a body their web server
 * decodes: `X-BackendAI-Encoded: true`, and the body
 *
 *     <iv: 16 characters> ":" base64(AES-256-CBC(key, iv, PKCS#7(json)))
 *     key = (base64(<the endpoint: scheme "://" host>) + iv + iv)[:32]
 *
 * The key comes from the public address, so this only keeps a password out
 * of casual sight in logs; it protects nothing (docs/security.md). The
 * gateway decodes it where Backend.AI's web server does: /server/login and
 * /auth/update-password (also under /func). */
#ifndef GATEWAY_WEB_PAYLOAD_H
#define GATEWAY_WEB_PAYLOAD_H

#include "libcommon/http.h"

/* Whether req says its body is encoded (X-BackendAI-Encoded: true). */
bool web_payload_encoded(const http_req *req) TS_MUST_CHECK;
/* The JSON object an encoded body holds, decoded with the key of the
 * endpoint the client named: http:// or https:// and the Host header,
 * with or without a trailing slash (the candidates a client may have
 * used). NULL after a 400 problem in resp (not that form, no key fits, not
 * a JSON object). */
json_t *web_payload_decode(const http_req *req, http_resp *resp);
/* The body's JSON object: decoded when encoded, else as sent (a 400 when
 * it is not a JSON object). NULL after the problem. */
json_t *web_payload_json(http_req *req, http_resp *resp);

#endif
