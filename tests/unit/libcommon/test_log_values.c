/* test_log_values.c: every value a log line carries stays one logfmt value
 * (libcommon/log.h), whatever text it holds. An error text with a quote, a
 * space, an '=' or a newline is quoted and escaped, whether the format wrote
 * key=%s or key="%s"; a value tlog_quote made is not quoted twice; numbers
 * and the other conversions are printf's; a line cut at its size limit
 * still closes its quotes. Each line is read back with a logfmt parser. */
#include "libcommon/log.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct field {
    char key[64];
    char value[4096];
} field;

/* key=value pairs of one logfmt line (values unquoted and unescaped); -1
 * when the line is not logfmt: a token without '=', a quote inside an
 * unquoted value, an unknown escape, an unterminated quote. */
static int parse_logfmt(const char *line, field *out, int max)
{
    int n = 0;
    const char *p = line;
    while (*p && *p != '\n') {
        if (*p == ' ') {
            p++;
            continue;
        }
        if (n == max) return -1;
        field *f = &out[n++];
        size_t k = strcspn(p, "= \n\"");
        if (p[k] != '=' || k == 0 || k >= sizeof(f->key)) return -1;
        memcpy(f->key, p, k);
        f->key[k] = '\0';
        p += k + 1;
        size_t o = 0;
        if (*p == '"') {
            for (p++; *p != '"'; p++) {
                if (!*p || *p == '\n' || o + 1 >= sizeof(f->value)) return -1;
                char c = *p;
                if (c == '\\') {
                    c = *++p;
                    if (c == 'n')
                        c = '\n';
                    else if (c == 'r')
                        c = '\r';
                    else if (c == 't')
                        c = '\t';
                    else if (c != '"' && c != '\\')
                        return -1;
                }
                f->value[o++] = c;
            }
            p++;
            if (*p && *p != ' ' && *p != '\n') return -1;
        } else {
            for (; *p && *p != ' ' && *p != '\n'; p++) {
                if (*p == '"' || *p == '=' || o + 1 >= sizeof(f->value)) return -1;
                f->value[o++] = *p;
            }
        }
        f->value[o] = '\0';
    }
    return n;
}

static field g_fields[32];

/* The value of key in the last parsed line, or NULL. */
static const char *value_of(int n, const char *key)
{
    for (int i = 0; i < n; i++)
        if (strcmp(g_fields[i].key, key) == 0) return g_fields[i].value;
    return NULL;
}

static char *g_line;

/* What fn logs; it must be `lines` lines. */
static void capture(void (*fn)(void), int lines)
{
    free(g_line);
    FILE *f = tmpfile();
    assert_non_null(f);
    tlog_init("test", NULL);
    tlog_min_level = TLOG_LEVEL_INFO;
    tlog_set_stream((struct _IO_FILE *)f);
    fn();
    tlog_set_stream(NULL);
    long len = ftell(f);
    rewind(f);
    g_line = calloc(1, (size_t)len + 1);
    assert_int_equal(fread(g_line, 1, (size_t)len, f), (size_t)len);
    fclose(f);
    int n = 0;
    for (const char *p = g_line; (p = strchr(p, '\n')); p++)
        n++;
    assert_int_equal(n, lines);
    assert_int_equal(g_line[len - 1], '\n');
}

/* The fields of the captured line; fails when it is not logfmt. */
static int fields(void)
{
    int n = parse_logfmt(g_line, g_fields, (int)TS_ARRAY_LEN(g_fields));
    if (n < 0) fail_msg("not a logfmt line: %s", g_line);
    return n;
}

static const char *const EVIL = "bad \"thing\" at=home\nlevel=error \\ end";

static void log_whole(void)
{
    TLOG_WARN("not stored", "error=%s n=%d", EVIL, 3);
}

static void test_whole_value_quoted_and_escaped(void **state)
{
    (void)state;
    capture(log_whole, 1);
    int n = fields();
    assert_string_equal(value_of(n, "error"), EVIL);
    assert_string_equal(value_of(n, "n"), "3");
    assert_string_equal(value_of(n, "level"), "warn"); /* not forged */
    assert_null(value_of(n, "at"));
}

static void log_in_quotes(void)
{
    TLOG_WARN("not stored", "why=\"%s\" path=\"%s/%s\" done=%s", EVIL, "a b", "c\"d", "yes");
}

static void test_value_between_format_quotes_escaped(void **state)
{
    (void)state;
    capture(log_in_quotes, 1);
    int n = fields();
    assert_string_equal(value_of(n, "why"), EVIL);
    assert_string_equal(value_of(n, "path"), "a b/c\"d");
    assert_string_equal(value_of(n, "done"), "yes");
    assert_null(value_of(n, "at"));
}

static void log_plain(void)
{
    TLOG_INFO("counted",
              "id=%s empty=%s d=%d ld=%ld lld=%lld zu=%zu u=%u x=%x c=%c f=%.2f "
              "pct=%d%% p=%.*s q=%.3s target=%s:%d",
              "k-1", "", -4, 5L, 6LL, (size_t)7, 8u, 255, 'z', 1.5, 50, 2, "hello", "world", "host",
              80);
}

static void test_plain_values_and_conversions(void **state)
{
    (void)state;
    capture(log_plain, 1);
    assert_non_null(strstr(g_line, " id=k-1 empty=\"\" d=-4 ld=5 lld=6 zu=7 u=8 x=ff "
                                   "c=z f=1.50 pct=50% p=he q=wor target=host:80\n"));
    assert_true(fields() > 0);
}

static void log_already_quoted(void)
{
    char q[64];
    TLOG_WARN("refused", "error=%s", tlog_quote(q, sizeof(q), "say \"hi\""));
}

static void test_tlog_quote_value_not_quoted_twice(void **state)
{
    (void)state;
    capture(log_already_quoted, 1);
    assert_string_equal(value_of(fields(), "error"), "say \"hi\"");
}

static void log_too_long(void)
{
    static char big[9000];
    for (size_t i = 0; i + 1 < sizeof(big); i++)
        big[i] = "ab\"\\ "[i % 5];
    TLOG_ERROR("long", "a=1 why=\"%s\" after=2", big);
    TLOG_ERROR("long", "a=1 why=%s after=2", big);
}

static void test_cut_line_closes_its_quote(void **state)
{
    (void)state;
    capture(log_too_long, 2);
    char *second = strchr(g_line, '\n') + 1;
    int n = parse_logfmt(g_line, g_fields, (int)TS_ARRAY_LEN(g_fields));
    assert_true(n > 0);
    assert_non_null(value_of(n, "why"));
    assert_true(strlen(value_of(n, "why")) > 1000);
    n = parse_logfmt(second, g_fields, (int)TS_ARRAY_LEN(g_fields));
    assert_true(n > 0);
    assert_non_null(value_of(n, "why"));
}

static void test_tlog_quote_escapes(void **state)
{
    (void)state;
    char buf[64];
    assert_string_equal(tlog_quote(buf, sizeof(buf), "a\tb\r\n\"c\"\\"),
                        "\"a\\tb\\r\\n\\\"c\\\"\\\\\"");
    assert_string_equal(tlog_quote(buf, sizeof(buf), "bell\a"), "\"bell?\"");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_whole_value_quoted_and_escaped),
        cmocka_unit_test(test_value_between_format_quotes_escaped),
        cmocka_unit_test(test_plain_values_and_conversions),
        cmocka_unit_test(test_tlog_quote_value_not_quoted_twice),
        cmocka_unit_test(test_cut_line_closes_its_quote),
        cmocka_unit_test(test_tlog_quote_escapes),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    free(g_line);
    return rc;
}
