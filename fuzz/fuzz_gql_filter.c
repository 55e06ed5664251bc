/* fuzz_gql_filter.c: arbitrary bytes as Backend.AI's filter and order
 * arguments (the gateway's gql_filter.h): parsed within its bounds; an
 * accepted filter is evaluated on a few items of every JSON kind (nulls,
 * numbers, text, lists, a missing field) without crashing, and its
 * refusals carry a message; the same text as an order sorts a list or is
 * refused with a message, and a refused order leaves the list as it was.
 * Leaks fail (ASan). */
#include "services/gateway/gql_filter.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* gql_filter.c's gql_refine reports through the executor: not used here */
void gql_error(gql_exec *ex, const char *fmt, ...)
{
    (void)ex;
    (void)fmt;
    abort();
}

static const char ITEMS[] =
    "[{\"name\": \"a\", \"n\": 1, \"f\": 1.5, \"b\": true, \"z\": null, \"l\": [\"x\", 2]},"
    " {\"name\": \"B\", \"n\": -3, \"f\": 0.0, \"b\": false, \"l\": []},"
    " {\"name\": \"%_\", \"n\": 9007199254740993, \"z\": \"z\"}, {}]";

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = malloc(size + 1);
    if (!text) return 0;
    memcpy(text, data, size);
    text[size] = '\0';
    json_t *items = json_loads(ITEMS, 0, NULL);
    ts_err err = {{0}};
    gql_filter *f = gql_filter_parse(text, &err);
    if (f) {
        size_t i;
        json_t *it;
        json_array_foreach(items, i, it)(void) gql_filter_match(f, it);
        gql_filter_free(f);
    } else if (!err.msg[0]) {
        abort(); /* a refusal says why */
    }
    char *before = json_dumps(items, JSON_COMPACT);
    if (!gql_order_sort(items, text, &err)) {
        char *after = json_dumps(items, JSON_COMPACT);
        if (!err.msg[0] || strcmp(before, after) != 0) abort();
        free(after);
    } else if (json_array_size(items) != 4) {
        abort();
    }
    free(before);
    json_decref(items);
    free(text);
    return 0;
}
