/* test_config.c: the config table: defaults, file, environment, errors with
 * key and line, value parsers, reload, and the generated listings. */
#include "libcommon/config.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static char *s_name, *s_level, *s_listen, *s_dsn, *s_password;
static int64_t s_workers, s_max_body, s_timeout;
static bool s_debug;
static double s_ratio;

static const cfg_option common_opts[] = {
    {.name = "name", .type = CFG_STRING, .dst = &s_name, .def = "tessera", .help = "instance name"},
    {.name = "log.level",
     .type = CFG_ENUM,
     .dst = &s_level,
     .def = "info",
     .choices = "debug|info|warn|error",
     .reloadable = true,
     .env = "LOG_LEVEL",
     .help = "log level"},
    {0},
};
static const cfg_option svc_opts[] = {
    {.name = "http.listen",
     .type = CFG_STRING,
     .dst = &s_listen,
     .def = "0.0.0.0:8080",
     .help = "listen address"},
    {.name = "http.workers",
     .type = CFG_INT,
     .dst = &s_workers,
     .def = "4",
     .min = 1,
     .max = 64,
     .reloadable = true,
     .help = "worker threads"},
    {.name = "http.max-body",
     .type = CFG_BYTES,
     .dst = &s_max_body,
     .def = "1m",
     .min = 1024,
     .max = 1024.0 * 1024 * 1024,
     .reloadable = true,
     .help = "largest request body"},
    {.name = "http.timeout",
     .type = CFG_DURATION,
     .dst = &s_timeout,
     .def = "30s",
     .min = 100,
     .max = 3600000,
     .reloadable = true,
     .help = "request timeout"},
    {.name = "http.debug",
     .type = CFG_BOOL,
     .dst = &s_debug,
     .def = "false",
     .reloadable = true,
     .help = "debug endpoints"},
    {.name = "sched.ratio",
     .type = CFG_DOUBLE,
     .dst = &s_ratio,
     .def = "0.5",
     .max = 1,
     .reloadable = true,
     .help = "packing ratio"},
    {.name = "pg.dsn",
     .type = CFG_STRING,
     .dst = &s_dsn,
     .def = "host=localhost dbname=tessera",
     .env = "DATABASE_URL",
     .help = "PostgreSQL connection string"},
    {.name = "auth.admin-password",
     .type = CFG_STRING,
     .dst = &s_password,
     .reloadable = true,
     .help = "bootstrap admin password"},
    {0},
};
static const cfg_option *const tables[] = {common_opts, svc_opts, NULL};
static const cfg_schema schema = {"testsvc", tables};

static const char *const env_names[] = {
    "TESSERA_NAME",         "TESSERA_LOG_LEVEL",    "LOG_LEVEL",
    "TESSERA_HTTP_LISTEN",  "TESSERA_HTTP_WORKERS", "TESSERA_HTTP_MAX_BODY",
    "TESSERA_HTTP_TIMEOUT", "TESSERA_HTTP_DEBUG",   "TESSERA_SCHED_RATIO",
    "TESSERA_PG_DSN",       "DATABASE_URL",         "TESSERA_AUTH_ADMIN_PASSWORD",
};

static char tmpdir[] = "/tmp/tessera-cfgtest-XXXXXX";
static int file_seq;
static char last_path[256];

static int group_setup(void **state)
{
    (void)state;
    return mkdtemp(tmpdir) ? 0 : -1;
}

static int group_teardown(void **state)
{
    (void)state;
    char cmd[300];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
    return system(cmd) == 0 ? 0 : -1;
}

static int setup(void **state)
{
    (void)state;
    for (size_t i = 0; i < TS_ARRAY_LEN(env_names); i++)
        unsetenv(env_names[i]);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    cfg_free(&schema);
    return 0;
}

/* Write content to a fresh file in tmpdir; returns its path (static buffer). */
static const char *write_file(const char *content)
{
    snprintf(last_path, sizeof(last_path), "%s/c%d.conf", tmpdir, ++file_seq);
    FILE *f = fopen(last_path, "w");
    assert_non_null(f);
    fputs(content, f);
    fclose(f);
    return last_path;
}

static bool load_text(const char *content, ts_err *err)
{
    return cfg_load(&schema, write_file(content), err);
}

static void test_defaults(void **state)
{
    (void)state;
    ts_err err = {{0}};
    assert_true(cfg_load(&schema, NULL, &err));
    assert_string_equal(s_name, "tessera");
    assert_string_equal(s_level, "info");
    assert_string_equal(s_listen, "0.0.0.0:8080");
    assert_int_equal(s_workers, 4);
    assert_int_equal(s_max_body, 1024 * 1024);
    assert_int_equal(s_timeout, 30000);
    assert_false(s_debug);
    assert_true(s_ratio == 0.5);
    assert_string_equal(s_dsn, "host=localhost dbname=tessera");
    assert_null(s_password);
}

static void test_file_overrides(void **state)
{
    (void)state;
    ts_err err = {{0}};
    const char *text = "# a comment\r\n"
                       "\r\n"
                       "name = \"say \\\"hi\\\" \\\\ # not a comment\"  # a comment\r\n"
                       "log.level = debug\r\n"
                       "   \r\n"
                       "[http]\r\n"
                       "listen = 127.0.0.1:9000   # trailing comment\r\n"
                       "workers=16\r\n"
                       "max-body = 64KiB\r\n"
                       "timeout = 250ms\r\n"
                       "debug = yes\r\n"
                       "[ sched ]  # section comment\n"
                       "ratio = 0.75\n"
                       "[auth]\n"
                       "admin-password = \"\"\n";
    assert_true(load_text(text, &err));
    assert_string_equal(s_name, "say \"hi\" \\ # not a comment");
    assert_string_equal(s_level, "debug");
    assert_string_equal(s_listen, "127.0.0.1:9000");
    assert_int_equal(s_workers, 16);
    assert_int_equal(s_max_body, 64 * 1024);
    assert_int_equal(s_timeout, 250);
    assert_true(s_debug);
    assert_true(s_ratio == 0.75);
    assert_non_null(s_password);
    assert_string_equal(s_password, "");

    /* Dotted keys inside a section; a later load starts again from defaults. */
    assert_true(load_text("[http]\nworkers = 2\n[pg]\ndsn = \"host=db\"\n", &err));
    assert_int_equal(s_workers, 2);
    assert_int_equal(s_timeout, 30000);
    assert_string_equal(s_dsn, "host=db");
    assert_string_equal(s_level, "info");
}

static void test_env_precedence(void **state)
{
    (void)state;
    ts_err err = {{0}};
    const char *path = write_file("pg.dsn = \"from-file\"\nlog.level = warn\n");
    assert_true(cfg_load(&schema, path, &err));
    assert_string_equal(s_dsn, "from-file");

    setenv("DATABASE_URL", "from-alias", 1);
    assert_true(cfg_load(&schema, path, &err));
    assert_string_equal(s_dsn, "from-alias");

    setenv("TESSERA_PG_DSN", "from-generic", 1);
    assert_true(cfg_load(&schema, path, &err));
    assert_string_equal(s_dsn, "from-generic");

    setenv("LOG_LEVEL", "error", 1);
    setenv("TESSERA_HTTP_MAX_BODY", "2MB", 1);
    setenv("TESSERA_HTTP_TIMEOUT", "2m", 1);
    setenv("TESSERA_HTTP_DEBUG", "on", 1);
    assert_true(cfg_load(&schema, path, &err));
    assert_string_equal(s_level, "error");
    assert_int_equal(s_max_body, 2 * 1024 * 1024);
    assert_int_equal(s_timeout, 120000);
    assert_true(s_debug);
}

static void test_env_errors(void **state)
{
    (void)state;
    ts_err err = {{0}};
    setenv("TESSERA_HTTP_WORKERS", "abc", 1);
    assert_false(cfg_load(&schema, NULL, &err));
    assert_string_equal(err.msg,
                        "environment TESSERA_HTTP_WORKERS: http.workers: not an integer: 'abc'");
    unsetenv("TESSERA_HTTP_WORKERS");

    setenv("LOG_LEVEL", "loud", 1);
    setenv("TESSERA_LOG_LEVEL", "warn", 1); /* the generic name wins; the alias is not read */
    assert_true(cfg_load(&schema, NULL, &err));
    assert_string_equal(s_level, "warn");
    unsetenv("TESSERA_LOG_LEVEL");
    assert_false(cfg_load(&schema, NULL, &err));
    assert_non_null(strstr(err.msg, "environment LOG_LEVEL: log.level: must be one of "
                                    "debug|info|warn|error"));
}

typedef struct bad_case {
    const char *text;
    int line;
    const char *why; /* expected after "<path>:<line>: " */
} bad_case;

static void test_file_errors(void **state)
{
    (void)state;
    static const bad_case cases[] = {
        {"\n\nhttp.nope = 1\n", 3, "http.nope: unknown key"},
        {"[http]\nworkers = abc\n", 2, "http.workers: not an integer: 'abc'"},
        {"[http]\n# c\nworkers = 65\n", 3, "http.workers: must be between 1 and 64"},
        {"[http]\nworkers = 0\n", 2, "http.workers: must be between 1 and 64"},
        {"[http]\nworkers = 99999999999999999999\n", 2, "http.workers: not an integer"},
        {"[http]\nworkers =\n", 2, "http.workers: not an integer: ''"},
        {"log.level = loud\n", 1, "log.level: must be one of debug|info|warn|error"},
        {"log.level = \"INFO\"\n", 1, "log.level: must be one of debug|info|warn|error"},
        {"name = x\nhttp.listen\n", 2, "syntax error: expected 'key = value'"},
        {"name = \"abc\n", 1, "syntax error: unterminated string"},
        {"name = \"abc\\\n", 1, "syntax error: unterminated string"},
        {"name = \"a\\qb\"\n", 1, "syntax error: unknown escape '\\q'"},
        {"name = \"a\" b\n", 1, "syntax error: unexpected text after string"},
        {"name = a\"b\n", 1, "syntax error: stray"},
        {"# ok\n[http\nworkers = 1\n", 2, "syntax error: missing ']'"},
        {"[]\n", 1, "syntax error: invalid section name"},
        {"[http] x\n", 1, "syntax error: unexpected text after section header"},
        {"bad key = 1\n", 1, "syntax error: invalid key 'bad key'"},
        {"= 1\n", 1, "syntax error: invalid key ''"},
        {"name = a\n\nname = b\n", 3, "name: set twice (first on line 1)"},
        {"http.max-body = 5x\n", 1, "http.max-body: not a byte size: '5x'"},
        {"http.max-body = -1\n", 1, "http.max-body: not a byte size: '-1'"},
        {"http.max-body = 1\n", 1, "http.max-body: must be between 1k and 1g"},
        {"http.max-body = 2g\n", 1, "http.max-body: must be between 1k and 1g"},
        {"http.timeout = -1s\n", 1, "http.timeout: not a duration: '-1s'"},
        {"http.timeout = 50ms\n", 1, "http.timeout: must be between 100ms and 1h"},
        {"http.timeout = 5 s\n", 1, "http.timeout: not a duration"},
        {"http.debug = maybe\n", 1, "http.debug: not a boolean: 'maybe'"},
        {"sched.ratio = 1.5\n", 1, "sched.ratio: must be between 0 and 1"},
        {"sched.ratio = nan\n", 1, "sched.ratio: not a number: 'nan'"},
        {"sched.ratio = 1e999\n", 1, "sched.ratio: not a number"},
    };
    for (size_t i = 0; i < TS_ARRAY_LEN(cases); i++) {
        ts_err err = {{0}};
        bool ok = load_text(cases[i].text, &err);
        char want[512];
        snprintf(want, sizeof(want), "%s:%d: %s", last_path, cases[i].line, cases[i].why);
        if (ok || strncmp(err.msg, want, strlen(want)) != 0)
            fail_msg("case %zu: got \"%s\", want prefix \"%s\"", i, ok ? "(ok)" : err.msg, want);
    }
}

static void test_unreadable_file(void **state)
{
    (void)state;
    ts_err err = {{0}};
    char path[300];
    snprintf(path, sizeof(path), "%s/does-not-exist.conf", tmpdir);
    assert_false(cfg_load(&schema, path, &err));
    char want[400];
    snprintf(want, sizeof(want), "cannot read %s: No such file or directory", path);
    assert_string_equal(err.msg, want);

    assert_false(cfg_load(&schema, tmpdir, &err)); /* a directory */
    assert_non_null(strstr(err.msg, "cannot read"));
}

static void test_parse_bytes(void **state)
{
    (void)state;
    static const struct {
        const char *s;
        int64_t v;
    } good[] = {
        {"0", 0},
        {"512", 512},
        {"1k", 1024},
        {"1K", 1024},
        {"1kb", 1024},
        {"1KiB", 1024},
        {"16m", 16LL << 20},
        {"16MB", 16LL << 20},
        {"16mib", 16LL << 20},
        {"2g", 2LL << 30},
        {"2GiB", 2LL << 30},
        {"1.5g", 3LL << 29},
        {"0.5k", 512},
        {"3t", 3LL << 40},
        {"9223372036854775807", INT64_MAX},
        {"8388607t", 8388607LL << 40},
    };
    for (size_t i = 0; i < TS_ARRAY_LEN(good); i++) {
        int64_t v = -7;
        if (!cfg_parse_bytes(good[i].s, &v) || v != good[i].v)
            fail_msg("bytes '%s': got %lld", good[i].s, (long long)v);
    }
    static const char *const bad[] = {
        "",
        "-1",
        "-1k",
        "+1",
        "5x",
        "k",
        " 1k",
        "1k ",
        "1.",
        ".5k",
        "0.1k",
        "1.5",
        "1e3",
        "1kk",
        "1 k",
        "99999999999999999999g",
        "9223372036854775808",
        "8388608t",
        "10000000000g",
    };
    for (size_t i = 0; i < TS_ARRAY_LEN(bad); i++) {
        int64_t v = -7;
        if (cfg_parse_bytes(bad[i], &v))
            fail_msg("bytes '%s' accepted as %lld", bad[i], (long long)v);
        assert_int_equal(v, -7);
    }
    int64_t v;
    assert_false(cfg_parse_bytes(NULL, &v));
}

static void test_parse_duration(void **state)
{
    (void)state;
    static const struct {
        const char *s;
        int64_t v;
    } good[] = {
        {"0", 0},          {"5", 5000},       {"250ms", 250},  {"5s", 5000},
        {"2m", 120000},    {"1h", 3600000},   {"1H", 3600000}, {"0.5s", 500},
        {"1.5h", 5400000}, {"2d", 172800000}, {"0ms", 0},
    };
    for (size_t i = 0; i < TS_ARRAY_LEN(good); i++) {
        int64_t v = -7;
        if (!cfg_parse_duration_ms(good[i].s, &v) || v != good[i].v)
            fail_msg("duration '%s': got %lld", good[i].s, (long long)v);
    }
    static const char *const bad[] = {
        "",
        "-1",
        "-5s",
        "5x",
        "s",
        "1.5ms",
        "0.0001",
        "5 s",
        "1hh",
        "99999999999999999999h",
        "9223372036854775807s",
    };
    for (size_t i = 0; i < TS_ARRAY_LEN(bad); i++) {
        int64_t v = -7;
        if (cfg_parse_duration_ms(bad[i], &v))
            fail_msg("duration '%s' accepted as %lld", bad[i], (long long)v);
    }
}

static void test_parse_bool(void **state)
{
    (void)state;
    static const char *const yes[] = {"true", "TRUE", "yes", "on", "1"};
    static const char *const no[] = {"false", "No", "off", "0"};
    static const char *const bad[] = {"", "2", "maybe", "truee", " true"};
    bool b;
    for (size_t i = 0; i < TS_ARRAY_LEN(yes); i++)
        assert_true(cfg_parse_bool(yes[i], &b) && b);
    for (size_t i = 0; i < TS_ARRAY_LEN(no); i++)
        assert_true(cfg_parse_bool(no[i], &b) && !b);
    for (size_t i = 0; i < TS_ARRAY_LEN(bad); i++)
        assert_false(cfg_parse_bool(bad[i], &b));
}

static void test_cfg_set(void **state)
{
    (void)state;
    ts_err err = {{0}};
    assert_true(cfg_load(&schema, NULL, &err));
    const cfg_option *workers = &svc_opts[1];
    assert_true(cfg_set(workers, "64", &err));
    assert_int_equal(s_workers, 64);
    assert_false(cfg_set(workers, "65", &err));
    assert_string_equal(err.msg, "http.workers: must be between 1 and 64 (got 65)");
    assert_int_equal(s_workers, 64); /* unchanged on error */
    assert_false(cfg_set(workers, NULL, &err));
    assert_true(cfg_set(&svc_opts[0], "a", &err));
    assert_true(cfg_set(&svc_opts[0], "b", &err)); /* the old string is freed (ASan) */
    assert_string_equal(s_listen, "b");
    assert_true(cfg_set(&svc_opts[0], NULL, &err));
    assert_null(s_listen);
    assert_false(cfg_set(NULL, "x", &err));
}

static void test_env_name(void **state)
{
    (void)state;
    char buf[64];
    cfg_env_name("http.max-body", buf, sizeof(buf));
    assert_string_equal(buf, "TESSERA_HTTP_MAX_BODY");
    cfg_env_name("pg.dsn", buf, sizeof(buf));
    assert_string_equal(buf, "TESSERA_PG_DSN");
    cfg_env_name("http.max-body", buf, 12);
    assert_string_equal(buf, "TESSERA_HTT");
}

static void test_reload(void **state)
{
    (void)state;
    ts_err err = {{0}};
    char *restart = (char *)"sentinel";
    const char *path = write_file("[http]\nlisten = a:1\nworkers = 4\n");
    char keep[256];
    ts_strlcpy(keep, path, sizeof(keep));
    assert_true(cfg_load(&schema, keep, &err));

    /* No change: nothing to report. */
    assert_true(cfg_reload(&schema, keep, &restart, &err));
    assert_null(restart);

    FILE *f = fopen(keep, "w");
    assert_non_null(f);
    fputs("[http]\nlisten = b:2\nworkers = 8\ntimeout = 5s\n[pg]\ndsn = other\n"
          "[log]\nlevel = debug\n",
          f);
    fclose(f);
    assert_true(cfg_reload(&schema, keep, &restart, &err));
    assert_int_equal(s_workers, 8);
    assert_int_equal(s_timeout, 5000);
    assert_string_equal(s_level, "debug");
    assert_string_equal(s_listen, "a:1");                        /* not reloadable */
    assert_string_equal(s_dsn, "host=localhost dbname=tessera"); /* not reloadable */
    assert_non_null(restart);
    assert_string_equal(restart, "http.listen,pg.dsn");
    free(restart);

    /* Environment counts on reload too. */
    setenv("TESSERA_HTTP_WORKERS", "9", 1);
    assert_true(cfg_reload(&schema, keep, &restart, &err));
    assert_int_equal(s_workers, 9);
    free(restart);
    unsetenv("TESSERA_HTTP_WORKERS");

    /* A bad file changes nothing. */
    f = fopen(keep, "w");
    assert_non_null(f);
    fputs("[http]\nworkers = 2\ntimeout = 1x\n", f);
    fclose(f);
    restart = (char *)"sentinel";
    assert_false(cfg_reload(&schema, keep, &restart, &err));
    assert_null(restart);
    assert_int_equal(s_workers, 9);
    assert_int_equal(s_timeout, 5000);
    char want[400];
    snprintf(want, sizeof(want), "%s:3: http.timeout: not a duration", keep);
    assert_memory_equal(err.msg, want, strlen(want));

    /* restart_needed may be NULL. */
    assert_true(cfg_reload(&schema, NULL, NULL, &err));
    assert_int_equal(s_workers, 4);
}

static char *cap_buf;
static size_t cap_len;

/* The output of fn as a heap string. */
static char *capture(void (*fn)(const cfg_schema *, FILE *))
{
    cap_buf = NULL;
    FILE *f = open_memstream(&cap_buf, &cap_len);
    assert_non_null(f);
    fn(&schema, f);
    fclose(f);
    return cap_buf;
}

static void test_example_roundtrip(void **state)
{
    (void)state;
    ts_err err = {{0}};
    /* Move every value away from its default, then load the example. */
    assert_true(load_text("name = x\nlog.level = warn\nhttp.listen = y\nhttp.workers = 9\n"
                          "http.max-body = 2k\nhttp.timeout = 1s\nhttp.debug = true\n"
                          "sched.ratio = 0.1\npg.dsn = z\nauth.admin-password = pw\n",
                          &err));
    char *example = capture(cfg_print_example);
    assert_non_null(strstr(example, "[http]\n"));
    assert_non_null(strstr(example, "# workers = 4\n"));
    assert_non_null(strstr(example, "# listen = \"0.0.0.0:8080\"\n"));
    assert_non_null(strstr(example, "# worker threads\n"));
    assert_non_null(strstr(example, "# name = \"tessera\"\n"));
    assert_ptr_equal(strstr(example, "[name]"), NULL);
    assert_true(strstr(example, "# name = ") < strstr(example, "[log]"));
    const char *path = write_file(example);
    free(example);
    if (!cfg_load(&schema, path, &err)) fail_msg("example does not load: %s", err.msg);
    assert_string_equal(s_name, "tessera");
    assert_string_equal(s_level, "info");
    assert_string_equal(s_listen, "0.0.0.0:8080");
    assert_int_equal(s_workers, 4);
    assert_int_equal(s_max_body, 1 << 20);
    assert_int_equal(s_timeout, 30000);
    assert_false(s_debug);
    assert_true(s_ratio == 0.5);
    assert_string_equal(s_dsn, "host=localhost dbname=tessera");
    assert_null(s_password);
}

static void test_help_lists_everything(void **state)
{
    (void)state;
    char *help = capture(cfg_print_help);
    for (const cfg_option *const *t = tables; *t; t++) {
        for (const cfg_option *o = *t; o->name; o++) {
            char env[128];
            cfg_env_name(o->name, env, sizeof(env));
            if (!strstr(help, o->name)) fail_msg("help lacks %s", o->name);
            if (!strstr(help, env)) fail_msg("help lacks %s", env);
            if (o->env && !strstr(help, o->env)) fail_msg("help lacks %s", o->env);
            if (!strstr(help, o->help)) fail_msg("help lacks help of %s", o->name);
        }
    }
    assert_non_null(strstr(help, "debug|info|warn|error"));
    assert_non_null(strstr(help, "1..64"));
    assert_non_null(strstr(help, "1k..1g"));
    assert_non_null(strstr(help, "100ms..1h"));
    /* Aligned: the TYPE column starts at the same offset on every line. */
    char *hdr = strstr(help, "OPTION");
    assert_non_null(hdr);
    size_t col = (size_t)(strstr(hdr, "TYPE") - hdr);
    char *line = strstr(hdr, "\nhttp.max-body ");
    assert_non_null(line);
    assert_memory_equal(line + 1 + col, "bytes", 5);
    free(help);
}

static void test_effective_masks_secrets(void **state)
{
    (void)state;
    ts_err err = {{0}};
    assert_true(load_text("pg.dsn = \"host=db password=hunter2\"\n"
                          "auth.admin-password = hunter3\nhttp.max-body = 64k\n",
                          &err));
    char *out = capture(cfg_print_effective);
    assert_null(strstr(out, "hunter2"));
    assert_null(strstr(out, "hunter3"));
    assert_non_null(strstr(out, "pg.dsn = \"***\"\n"));
    assert_non_null(strstr(out, "auth.admin-password = \"***\"\n"));
    assert_non_null(strstr(out, "http.listen = \"0.0.0.0:8080\"\n"));
    assert_non_null(strstr(out, "http.max-body = 64k\n"));
    assert_non_null(strstr(out, "http.timeout = 30s\n"));
    assert_non_null(strstr(out, "sched.ratio = 0.5\n"));
    free(out);
}

static int64_t s_bad;
static const cfg_option bad_default_opts[] = {
    {.name = "bad.one",
     .type = CFG_INT,
     .dst = &s_bad,
     .def = "100",
     .min = 1,
     .max = 10,
     .help = "out of its own bounds"},
    {0},
};
static const cfg_option *const bad_tables[] = {bad_default_opts, NULL};
static const cfg_schema bad_schema = {"bad", bad_tables};

static void test_bad_default_panics(void **state)
{
    (void)state;
    fflush(NULL);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        int devnull = open("/dev/null", O_WRONLY);
        if (devnull >= 0) dup2(devnull, 2);
        ts_err err;
        if (cfg_load(&bad_schema, NULL, &err)) _exit(0);
        _exit(1);
    }
    int status;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFSIGNALED(status));
    assert_int_equal(WTERMSIG(status), SIGABRT);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_defaults, setup, teardown),
        cmocka_unit_test_setup_teardown(test_file_overrides, setup, teardown),
        cmocka_unit_test_setup_teardown(test_env_precedence, setup, teardown),
        cmocka_unit_test_setup_teardown(test_env_errors, setup, teardown),
        cmocka_unit_test_setup_teardown(test_file_errors, setup, teardown),
        cmocka_unit_test_setup_teardown(test_unreadable_file, setup, teardown),
        cmocka_unit_test(test_parse_bytes),
        cmocka_unit_test(test_parse_duration),
        cmocka_unit_test(test_parse_bool),
        cmocka_unit_test_setup_teardown(test_cfg_set, setup, teardown),
        cmocka_unit_test(test_env_name),
        cmocka_unit_test_setup_teardown(test_reload, setup, teardown),
        cmocka_unit_test_setup_teardown(test_example_roundtrip, setup, teardown),
        cmocka_unit_test_setup_teardown(test_help_lists_everything, setup, teardown),
        cmocka_unit_test_setup_teardown(test_effective_masks_secrets, setup, teardown),
        cmocka_unit_test(test_bad_default_panics),
    };
    return cmocka_run_group_tests_name("config", tests, group_setup, group_teardown);
}
