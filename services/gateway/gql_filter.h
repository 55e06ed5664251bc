/* gql_filter.h: Backend.AI's `filter` and `order` arguments of its paginated
 * GraphQL lists (its "minilang"), applied to the shaped items (the fields a
 * query may select), which is how Backend.AI's CLI lists models
 * (`usage_mode == "MODEL"`) and how `--filter` / `--order` of its listings
 * work.
 *
 * filter:  expr := term (("&" | "|") term)*     "&" binds tighter than "|"
 *          term := "(" expr ")" | FIELD "isnull" | FIELD "notnull"
 *                | FIELD op value
 *          op   := == != > >= < <= contains in "not in" like ilike
 *          value:= "text" | 'text' | number | true | false | null
 *                | "[" value ("," value)* "]"
 * == and != compare text without regard to case (Backend.AI's enums are
 * upper case where Tessera answers lower case); like / ilike take % and _.
 * order:   [+|-]FIELD ("," [+|-]FIELD)*, ascending unless "-".
 * Bounded: 1 KiB of text, 64 terms, nesting 16. */
#ifndef GATEWAY_GQL_FILTER_H
#define GATEWAY_GQL_FILTER_H

#include "gql_exec.h"

#include "libcommon/common.h"

#include <jansson.h>

typedef struct gql_filter gql_filter;

/* Parse text; NULL with err (a message for the client: what, and at which
 * offset). */
gql_filter *gql_filter_parse(const char *text, ts_err *err);
/* Whether item (a JSON object) passes; a field it does not have counts as
 * null. */
bool gql_filter_match(const gql_filter *f, const json_t *item) TS_MUST_CHECK;
void gql_filter_free(gql_filter *f);

/* Sort items (an array of objects) in place by order (nulls last); false
 * with err for a malformed order, items then as they were. */
bool gql_order_sort(json_t *items, const char *order, ts_err *err) TS_MUST_CHECK;

/* A page of all (a whole list of shaped items, consumed) as the root field's
 * args ask: filtered, ordered, then items[offset, offset + limit), as
 * {"items", "total_count"} (the count after the filter). NULL after a
 * GraphQL error (a malformed filter or order). */
json_t *gql_refine(gql_exec *ex, json_t *all, const json_t *args);

#endif
