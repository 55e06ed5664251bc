/* test_sql_row.c: the INSERT text and its parameters come from one list of
 * named columns, in order, each value at the $N of its own column
 * (services/registry/sql_row.h). */
#include "services/registry/sql_row.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

static void test_names_exprs_and_params_line_up(void **state)
{
    (void)state;
    sql_row r = {0};
    sql_row_set(&r, "id", "?::uuid", "0b7e");
    sql_row_set(&r, "name", NULL, "s1");
    sql_row_set(&r, "starts_at", "to_timestamp(?::bigint / 1000.0)", NULL);
    sql_row_set(&r, "slots", "?::jsonb", "{}");
    const char *p[SQL_ROW_MAX];
    char *sql = sql_row_insert(&r, "registry.sessions", p);
    assert_string_equal(sql, "INSERT INTO registry.sessions (id, name, starts_at, slots) VALUES"
                             " ($1::uuid, $2, to_timestamp($3::bigint / 1000.0), $4::jsonb)");
    assert_string_equal(p[0], "0b7e");
    assert_string_equal(p[1], "s1");
    assert_null(p[2]);
    assert_string_equal(p[3], "{}");
    free(sql);
}

/* A column added in the middle moves no other column's value away from its
 * name: each name's $N still holds that name's value. */
static void test_added_column_keeps_the_others(void **state)
{
    (void)state;
    sql_row r = {0};
    sql_row_set(&r, "a", NULL, "va");
    sql_row_set(&r, "added", "?::int", "7");
    sql_row_set(&r, "b", NULL, "vb");
    const char *p[SQL_ROW_MAX];
    char *sql = sql_row_insert(&r, "t", p);
    assert_string_equal(sql, "INSERT INTO t (a, added, b) VALUES ($1, $2::int, $3)");
    assert_string_equal(p[0], "va");
    assert_string_equal(p[1], "7");
    assert_string_equal(p[2], "vb");
    free(sql);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_names_exprs_and_params_line_up),
        cmocka_unit_test(test_added_column_keeps_the_others),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
