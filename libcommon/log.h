/* log.h: level-checked logfmt logging to stderr (journald keeps it).
 *
 *   TLOG_INFO("listening", "addr=%s", addr);
 *   -> ts=2026-11-21T23:40:01.123Z level=info service=gateway msg="listening" addr=...
 * request_id=...
 *
 * The level check happens before the arguments are evaluated. Per-thread context
 * (request id, session, kernel, agent) is appended to every line while set.
 *
 * kvfmt is printf's, with one difference: every %s stays one logfmt value,
 * whatever text it holds (an error message above all). key=%s is quoted and
 * escaped when the text has a space, '"', '=', '\' or a control byte
 * (error="no \"x\" here"); key="%s" is escaped; a value tlog_quote made
 * is written as it is. A %s that is only part of a value (key=%s:%d) is the
 * caller's to quote. A line cut at its size limit still closes its quote. */
#ifndef TESSERA_LOG_H
#define TESSERA_LOG_H

#include "libcommon/common.h"

enum tlog_level { TLOG_LEVEL_DEBUG = 0, TLOG_LEVEL_INFO, TLOG_LEVEL_WARN, TLOG_LEVEL_ERROR };

extern int tlog_min_level;

void tlog_init(const char *service, const char *instance);
/* "debug", "info", "warn", "error"; false for anything else. */
bool tlog_set_level(const char *name) TS_MUST_CHECK;
const char *tlog_level_name(int level);

void tlog_write(int level, const char *msg, const char *kvfmt, ...) TS_PRINTF(3, 4);

#define TLOG(level, msg, ...)                                                                      \
    do {                                                                                           \
        if ((level) >= tlog_min_level) tlog_write((level), (msg), "" __VA_ARGS__);                 \
    } while (0)
#define TLOG_DEBUG(msg, ...) TLOG(TLOG_LEVEL_DEBUG, msg, __VA_ARGS__)
#define TLOG_INFO(msg, ...) TLOG(TLOG_LEVEL_INFO, msg, __VA_ARGS__)
#define TLOG_WARN(msg, ...) TLOG(TLOG_LEVEL_WARN, msg, __VA_ARGS__)
#define TLOG_ERROR(msg, ...) TLOG(TLOG_LEVEL_ERROR, msg, __VA_ARGS__)

/* Per-thread context fields, appended to every line while set; NULL or ""
 * clears one. The HTTP server sets the request id (and the caller's access key
 * when the gateway forwarded one) and clears the whole context after each
 * handler; a bus consumer sets the correlation id and clears it after each
 * record. A handler or consumer names the entity it works on at its entry:
 * tlog_ctx_session/kernel/agent for those, tlog_ctx_entity("folder", id),
 * ("domain", name), ("route", id) ... for any other (one at a time; key is
 * lower case letters and '_'). User and entity values are quoted. */
void tlog_ctx_request(const char *request_id);
void tlog_ctx_session(const char *session_id);
void tlog_ctx_kernel(const char *kernel_id);
void tlog_ctx_agent(const char *agent_id);
void tlog_ctx_user(const char *user);
void tlog_ctx_access_key(const char *access_key);
void tlog_ctx_entity(const char *key, const char *value);
void tlog_ctx_clear(void);

/* Quote a value for logfmt into buf ("a b" -> "\"a b\""; '"' and '\'
 * escaped, newline, CR, tab as \n \r \t, other control bytes as '?');
 * returns buf. */
const char *tlog_quote(char *buf, size_t size, const char *value);

/* Redirect output (tests); NULL restores stderr. */
struct _IO_FILE;
void tlog_set_stream(struct _IO_FILE *stream);

#endif
