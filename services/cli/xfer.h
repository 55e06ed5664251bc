/* xfer.h: raw transfers between the CLI and tessera-vfolder with libcurl,
 * for `tessera vfolder upload` and `download` (cmd_vfolder_files.c): one
 * request to a transfer URL with its token (tus 1.0 HEAD and PATCH, DELETE,
 * a GET with a Range), the headers and error body it answered, and progress
 * on stderr (a bar on a terminal, a line every 5 s otherwise). */
#ifndef TESSERA_CLI_XFER_H
#define TESSERA_CLI_XFER_H

#include "libcommon/common.h"

#include <curl/curl.h>

#define XFER_TUS_VERSION "1.0.0"

typedef struct xfer_progress {
    const char *label;
    int64_t total; /* -1: unknown */
    int64_t base;  /* bytes done before this request */
    int64_t done;
    int64_t t0_ms, last_ms;
    int64_t start_bytes; /* for the rate */
    bool tty, drawn;
} xfer_progress;

/* A transfer of total bytes (-1: unknown), base of them done already. */
void xfer_progress_init(xfer_progress *p, const char *label, int64_t total, int64_t base);
/* Show it (at most every 200 ms on a terminal, 5 s otherwise; always when
 * final, which ends the line). */
void xfer_progress_draw(xfer_progress *p, bool final);

/* One request's outcome: its status, the headers the transfer needs, and
 * the start of an error body. For a GET, the body goes to out_fd. */
typedef struct xfer {
    long status;
    char offset[32]; /* Upload-Offset */
    char length[32]; /* Upload-Length */
    char content_type[64];
    char content_range[96];
    char content_length[32];
    char *err_body; /* first bytes of a non-2xx body */
    size_t err_len;
    int out_fd;         /* download target */
    int64_t range_from; /* the Range asked for (its bytes are in out_fd already) */
    xfer_progress *prog;
    int64_t written;
    bool write_failed, started;
} xfer;

/* The bytes a PATCH sends: fd from pos to end. */
typedef struct xfer_src {
    int fd;
    int64_t pos, end;
} xfer_src;

/* Cap every later transfer at bytes_per_s (0: none), both ways. */
void xfer_limit_rate(int64_t bytes_per_s);

/* One request to a transfer URL (token in the query). method "HEAD",
 * "PATCH" (body: src from its pos to end), "DELETE" or "GET" (into x->out_fd
 * with a Range from range_from when > 0). prog (may be NULL) shows the
 * progress. errbuf holds CURL_ERROR_SIZE bytes. */
CURLcode xfer_request(const char *method, const char *url, const char *token, xfer_src *src,
                      int64_t range_from, xfer_progress *prog, xfer *x, char *errbuf);
/* Forget a request's outcome (its error body freed) before the next one. */
void xfer_reset(xfer *x, int out_fd);
/* Wait before retry number attempt (1 s, 2 s, ... at most 4 s). */
void xfer_backoff(int attempt);
/* "tessera: <what>: <why>" for a failed request. */
void xfer_print_failure(const char *what, const xfer *x, CURLcode cc, const char *errbuf);

#endif
