/* fuzz_config_file.c: arbitrary bytes as a config file, through the public
 * API (cfg_load, cfg_reload, cfg_print_effective, cfg_free) with a schema that
 * has one option of every cfg_type, bounds and an enum; and the same bytes as
 * one value for cfg_set and the value parsers. Nothing may crash or leak. */
#include "libcommon/config.h"
#include "libcommon/log.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char *v_name, *v_listen, *v_mode, *v_token;
static int64_t v_pool, v_max_body, v_idle;
static bool v_debug;
static double v_ratio;

static const cfg_option common_opts[] = {
    {"name", CFG_STRING, &v_name, "tessera", 0, 0, NULL, false, NULL, "string with default"},
    {"http.listen", CFG_STRING, &v_listen, ":8080", 0, 0, NULL, true, NULL, "string"},
    {"auth.secret", CFG_STRING, &v_token, NULL, 0, 0, NULL, true, NULL, "no default"},
    {"log.level", CFG_ENUM, &v_mode, "info", 0, 0, "debug|info|warn|error", true, NULL, "enum"},
    {NULL},
};
static const cfg_option svc_opts[] = {
    {"pg.pool-size", CFG_INT, &v_pool, "4", 1, 64, NULL, false, NULL, "int 1..64"},
    {"debug", CFG_BOOL, &v_debug, "false", 0, 0, NULL, true, NULL, "bool"},
    {"sched.ratio", CFG_DOUBLE, &v_ratio, "0.5", -1, 1, NULL, true, NULL, "double -1..1"},
    {"http.max_body", CFG_BYTES, &v_max_body, "1m", 1, 1099511627776.0, NULL, false, NULL,
     "bytes 1..1t"},
    {"http.idle", CFG_DURATION, &v_idle, "30s", 1, 86400000, NULL, true, NULL, "duration 1ms..1d"},
    {NULL},
};
static const cfg_option *const tables[] = {common_opts, svc_opts, NULL};
static const cfg_schema schema = {"fuzz", tables};

static int conf_fd = -1;
static char conf_path[64];
static FILE *devnull;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    devnull = fopen("/dev/null", "w");
    if (!devnull) abort();
    tlog_set_stream(devnull); /* keep the log code running, not its output */
    conf_fd = memfd_create("fuzz.conf", MFD_CLOEXEC);
    if (conf_fd >= 0) {
        snprintf(conf_path, sizeof(conf_path), "/proc/self/fd/%d", conf_fd);
    } else {
        snprintf(conf_path, sizeof(conf_path), "/tmp/fuzz-config-XXXXXX");
        conf_fd = mkstemp(conf_path);
        if (conf_fd < 0) abort();
    }
    return 0;
}

static void write_conf(const uint8_t *data, size_t size)
{
    if (ftruncate(conf_fd, 0) != 0) abort();
    size_t off = 0;
    while (off < size) {
        ssize_t n = pwrite(conf_fd, data + off, size - off, (off_t)off);
        if (n <= 0) abort();
        off += (size_t)n;
    }
}

static void fuzz_values(const char *s)
{
    int64_t i = -1;
    bool b;
    if (cfg_parse_bytes(s, &i) && i < 0) abort();
    if (cfg_parse_duration_ms(s, &i) && i < 0) abort();
    if (cfg_parse_bool(s, &b) && b != true && b != false) abort();
    for (const cfg_option *const *t = tables; *t; t++) {
        for (const cfg_option *o = *t; o->name; o++) {
            ts_err err = {{0}};
            if (!cfg_set(o, s, &err) && !err.msg[0]) abort(); /* a failure says why */
        }
    }
    /* Within bounds whenever accepted (the last cfg_set calls won or kept the old). */
    if (v_pool < 1 || v_pool > 64) abort();
    if (v_idle < 1 || v_idle > 86400000) abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    write_conf(data, size);

    ts_err err = {{0}};
    if (cfg_load(&schema, conf_path, &err)) {
        cfg_print_effective(&schema, devnull);
        char *restart = NULL;
        if (!cfg_reload(&schema, conf_path, &restart, &err)) abort(); /* same file: must load */
        if (restart) abort();                                         /* nothing changed */
    } else if (!err.msg[0]) {
        abort(); /* a failure says why */
    }
    cfg_free(&schema);

    /* The input as one value. */
    char *s = malloc(size + 1);
    if (!s) abort();
    memcpy(s, data, size);
    s[size] = '\0';
    ts_err e2 = {{0}};
    if (!cfg_load(&schema, NULL, &e2)) abort(); /* defaults only */
    fuzz_values(s);
    cfg_free(&schema);
    free(s);
    return 0;
}
