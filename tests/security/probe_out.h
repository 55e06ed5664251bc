/* probe_out.h: how the probe prints what it found: one JSON object on
 * stdout, written as it goes (probe_out_begin, then a key and a value per
 * check, probe_out_end). */
#ifndef TESSERA_PROBE_OUT_H
#define TESSERA_PROBE_OUT_H

/* The banner the probe's listener answers with (probe_net_serve). */
#define BANNER "tessera-probe"

/* A JSON string (non-ASCII and control bytes as \u00XX). */
void probe_out_str(const char *s);
/* "{" and "}\n" around the members. */
void probe_out_begin(void);
void probe_out_end(void);
/* A member's key (and the comma before it when it is not the first). */
void probe_out_key(const char *k);
/* errno's name ("EPERM"), "" for 0. */
const char *probe_out_errname(int e);
/* A member k: {"result": result, "ret": ret, "errno": e, "err": its name
 * ("EPERM"), "detail": detail}. */
void probe_out_entry(const char *k, const char *result, long ret, int e, const char *detail);

#endif
