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
    {.name = "name",
     .type = CFG_STRING,
     .dst = &v_name,
     .def = "tessera",
     .help = "string with default"},
    {.name = "http.listen",
     .type = CFG_STRING,
     .dst = &v_listen,
     .def = ":8080",
     .reloadable = true,
     .help = "string"},
    {.name = "auth.secret",
     .type = CFG_STRING,
     .dst = &v_token,
     .reloadable = true,
     .help = "no default"},
    {.name = "log.level",
     .type = CFG_ENUM,
     .dst = &v_mode,
     .def = "info",
     .choices = "debug|info|warn|error",
     .reloadable = true,
     .help = "enum"},
    {0},
};
static const cfg_option svc_opts[] = {
    {.name = "pg.pool-size",
     .type = CFG_INT,
     .dst = &v_pool,
     .def = "4",
     .min = 1,
     .max = 64,
     .help = "int 1..64"},
    {.name = "debug",
     .type = CFG_BOOL,
     .dst = &v_debug,
     .def = "false",
     .reloadable = true,
     .help = "bool"},
    {.name = "sched.ratio",
     .type = CFG_DOUBLE,
     .dst = &v_ratio,
     .def = "0.5",
     .min = -1,
     .max = 1,
     .reloadable = true,
     .help = "double -1..1"},
    {.name = "http.max_body",
     .type = CFG_BYTES,
     .dst = &v_max_body,
     .def = "1m",
     .min = 1,
     .max = 1099511627776.0,
     .help = "bytes 1..1t"},
    {.name = "http.idle",
     .type = CFG_DURATION,
     .dst = &v_idle,
     .def = "30s",
     .min = 1,
     .max = 86400000,
     .reloadable = true,
     .help = "duration 1ms..1d"},
    {0},
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
