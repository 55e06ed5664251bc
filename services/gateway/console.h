/* console.h: the web console's static files (services/console, built by
 * `make` into build/console), served at /console/ from gateway.console_dir:
 * "/console" redirects to "/console/", "/console/" is index.html, other
 * paths are files of the directory (no dot files, no "..", no symlinks out;
 * else 404). Every answer carries a Content-Security-Policy that allows
 * scripts, styles and fonts from the gateway only, and no framing.
 *
 * GET / from a browser (Accept names text/html, not application/json) is
 * redirected to /console/; API clients keep getting the version object. */
#ifndef GATEWAY_CONSOLE_H
#define GATEWAY_CONSOLE_H

#include "gateway.h"

/* Find the directory (gateway.console_dir, else beside the binary) and add
 * the routes. A missing directory is logged; /console/ then answers 404. */
void console_routes(gateway *gw);

/* For GET /: true when req is a browser's and resp holds the redirect. */
bool console_redirect_browser(const http_req *req, http_resp *resp) TS_MUST_CHECK;

#endif
