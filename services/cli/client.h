/* client.h: signed JSON requests to the gateway, and the one place where API
 * errors become messages.
 *
 * Every request with a keypair is signed as Backend.AI clients sign
 * (libcommon/sign.h): Date and X-BackendAI-Date carry the same ISO-8601 value,
 * X-BackendAI-Version CLIENT_API_VERSION, Content-Type application/json, and a
 * Host header that the client sets itself (host[:port] exactly as the endpoint
 * URL writes it), so the signed host is the one sent. */
#ifndef TESSERA_CLI_CLIENT_H
#define TESSERA_CLI_CLIENT_H

#include "libcommon/httpc.h"
#include "services/cli/config.h"

#include <jansson.h>

#define CLIENT_API_VERSION "v8.20240915"

/* How a command ends: its process exit status (main returns it). A call
 * that is not CLI_OK has printed why; a command passes it on as its own
 * status. */
typedef enum cli_status {
    CLI_OK = 0,    /* done */
    CLI_FAIL = 1,  /* the API or the system refused */
    CLI_USAGE = 2, /* the command line (or the endpoint URL) is unusable */
} cli_status;

typedef struct cli {
    config_creds creds;
    bool json;          /* --json: print the API's JSON instead of tables */
    const char *kernel; /* --kernel: a cluster session's kernel (main1, sub1, ...) */
    httpc *http;
} cli;

/* method path (with its query) and body (NULL: none). Signed when c has keys
 * and sign is true. On a 2xx answer *out is its JSON (NULL when the body was
 * empty) and the result is CLI_OK. Otherwise the error has been printed
 * ("tessera: <title>: <msg> (HTTP <status>)", or that the endpoint cannot be
 * reached) and the result is CLI_FAIL (CLI_USAGE for an unusable endpoint URL). */
cli_status client_call(cli *c, const char *method, const char *path, json_t *body, bool sign,
                       json_t **out);

/* client_call with any body (len bytes of content_type): CLI_OK with the
 * 2xx answer in *out (free it with httpc_resp_free); otherwise the error
 * has been printed and *out holds nothing to free. */
cli_status client_call_raw(cli *c, const char *method, const char *path, const char *content_type,
                           const void *body, size_t len, bool sign, httpc_resp *out) TS_MUST_CHECK;

/* The request headers client_call_raw sends (Content-Type, Accept, the
 * version, Host, the dates, User-Agent, and the signature when sign and c
 * has keys) as "Name: value" lines, NULL-terminated (free with
 * client_headers_free), and the full URL of path (*url, heap), for commands
 * that make the request themselves (`tessera events` reads a stream). */
#define CLIENT_MAX_HEADERS 8
cli_status client_headers(cli *c, const char *method, const char *path, const char *content_type,
                          const char *accept, const void *body, size_t len, bool sign,
                          char *lines[CLIENT_MAX_HEADERS + 1], char **url);
void client_headers_free(char *lines[CLIENT_MAX_HEADERS + 1]);

/* Whether c has a keypair; when not, says how to get one (the command then
 * ends with CLI_FAIL). */
bool client_has_keys(const cli *c) TS_MUST_CHECK;

/* The Host header for a URL: host[:port] as written in it (no userinfo). False
 * when url is not scheme://authority[/path]. base_path (may be NULL) receives
 * the URL's path without a trailing slash (heap, "" when none). */
bool client_host_of(const char *url, char *host, size_t size, char **base_path) TS_MUST_CHECK;

/* Append "?name=value" or "&name=value" (value escaped) to *path (heap, replaced). */
void client_query_add(char **path, const char *name, const char *value);

#endif
