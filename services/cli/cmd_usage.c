/* cmd_usage.c: `tessera usage` (GET /usage: the caller's scope, totals
 * grouped, a table or CSV) and `tessera admin usage month|period`
 * (Backend.AI's /resource/usage/month and /period, administrators). */
#include "services/cli/commands.h"
#include "services/cli/output.h"

#include <getopt.h>
#include <stdlib.h>
#include <string.h>

/* Hours (and GiB-hours) as table text, for a figure in seconds. */
static void add_hours(json_t *o, const char *to, const char *from, double div)
{
    char b[32];
    snprintf(b, sizeof(b), "%.3f", json_number_value(json_object_get(o, from)) / div);
    json_object_set_new(o, to, json_string(b));
}

/* The table's rows: the answer's items, or with a bucket one per bucket
 * and group (the bucket first, in order), each with its hours as text. */
static json_t *usage_rows(json_t *answer, const char *key, const char *bucket)
{
    json_t *rows = json_array();
    size_t i, j;
    json_t *o, *b;
    json_array_foreach(json_object_get(answer, "items"), i, o)
    {
        if (!bucket) {
            json_array_append(rows, o);
            continue;
        }
        json_array_foreach(json_object_get(o, bucket[0] == 'd' ? "days" : "hours"), j, b)
        {
            json_t *row = json_deep_copy(b);
            json_object_set(row, key, json_object_get(o, key));
            json_object_set(row, "name", json_object_get(o, "name"));
            json_array_append_new(rows, row);
        }
    }
    json_array_foreach(rows, i, o)
    {
        add_hours(o, "cpu_h", "cpu_seconds", 3600.0);
        add_hours(o, "mem_gib_h", "mem_byte_seconds", 3600.0 * 1024 * 1024 * 1024);
        add_hours(o, "gpu_h", "gpu_hours", 1.0);
    }
    if (bucket) { /* by bucket, then as the groups came */
        size_t n = json_array_size(rows);
        json_t **v = ts_calloc(n + 1, sizeof(*v));
        json_array_foreach(rows, i, o) v[i] = json_incref(o);
        for (i = 1; i < n; i++) /* insertion sort: stable */
            for (j = i; j > 0 && strcmp(json_string_value(json_object_get(v[j - 1], bucket)),
                                        json_string_value(json_object_get(v[j], bucket))) > 0;
                 j--) {
                json_t *t = v[j];
                v[j] = v[j - 1];
                v[j - 1] = t;
            }
        json_array_clear(rows);
        for (i = 0; i < n; i++)
            json_array_append_new(rows, v[i]);
        free(v);
    }
    return rows;
}

int cmd_usage(cli *c, const cli_command *self, int argc, char **argv)
{
    static const struct option longopts[] = {
        {"from", required_argument, NULL, 'f'},
        {"to", required_argument, NULL, 't'},
        {"group-by", required_argument, NULL, 'g'},
        {"by", required_argument, NULL, 'b'},
        {"csv", no_argument, NULL, 'C'},
        {"json", no_argument, NULL, 'J'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    const char *from = NULL, *to = NULL, *by = "user", *bucket = NULL;
    bool csv = false;
    int opt;
    optind = 0;
    opterr = 0;
    while ((opt = getopt_long(argc, argv, ":f:t:g:b:h", longopts, NULL)) != -1) {
        if (opt == 'h') {
            cli_command_help(self, stdout);
            return CLI_OK;
        } else if (opt == 'f') {
            from = optarg;
        } else if (opt == 't') {
            to = optarg;
        } else if (opt == 'g') {
            by = optarg;
        } else if (opt == 'b') {
            bucket = optarg;
            if (strcmp(bucket, "day") != 0 && strcmp(bucket, "hour") != 0)
                return cli_usage(self->name, NULL, "--by: day or hour, not '%s'", bucket);
        } else if (opt == 'C') {
            csv = true;
        } else if (opt == 'J') {
            c->json = true;
        } else {
            return cli_usage(self->name, NULL,
                             opt == ':' ? "missing value for '%s'" : "unknown option '%s'",
                             argv[optind - 1]);
        }
    }
    if (optind < argc) return cli_usage(self->name, NULL, "unexpected '%s'", argv[optind]);
    if (!client_has_keys(c)) return CLI_FAIL;
    char *path = ts_strdup("/usage");
    client_query_add(&path, "group_by", by);
    if (from) client_query_add(&path, "start", from);
    if (to) client_query_add(&path, "end", to);
    if (bucket) client_query_add(&path, "bucket", bucket);
    if (csv) client_query_add(&path, "format", "csv");
    cli_status rc;
    if (csv) {
        httpc_resp a;
        rc = client_call_raw(c, "GET", path, NULL, NULL, 0, true, &a);
        if (rc == CLI_OK) {
            fwrite(a.body, 1, a.body_len, stdout);
            httpc_resp_free(&a);
        }
        free(path);
        return rc;
    }
    json_t *answer = NULL;
    rc = client_call(c, "GET", path, NULL, true, &answer);
    free(path);
    if (rc != CLI_OK) return rc;
    if (c->json) {
        out_json(answer);
    } else {
        const char *key = json_string_value(json_object_get(answer, "group_by"));
        if (!key) key = "user";
        json_t *rows = usage_rows(answer, key, bucket);
        out_column cols[] = {
            {bucket ? (bucket[0] == 'd' ? "DAY" : "HOUR") : "KEY", bucket ? bucket : key, OUT_TEXT},
            {"KEY", key, OUT_TEXT},
            {"NAME", "name", OUT_TEXT},
            {"SESSIONS", "sessions", OUT_TEXT},
            {"CPU-HOURS", "cpu_h", OUT_TEXT},
            {"MEM-GIB-HOURS", "mem_gib_h", OUT_TEXT},
            {"GPU-HOURS", "gpu_h", OUT_TEXT},
            {"MEM-PEAK", "mem_peak_bytes", OUT_TEXT},
            {NULL, NULL, OUT_TEXT}};
        printf("%s .. %s\n", json_string_value(json_object_get(answer, "start")),
               json_string_value(json_object_get(answer, "end")));
        out_table(bucket ? cols : cols + 1, rows);
        json_decref(rows);
    }
    json_decref(answer);
    return CLI_OK;
}

static void admin_usage_help(FILE *out)
{
    fprintf(out, "Usage: tessera admin usage month YYYYMM [--group ID[,ID...]] [--json]\n"
                 "       tessera admin usage period --from YYYYMMDD --to YYYYMMDD [--project ID] "
                 "[--json]\n\n"
                 "Backend.AI's usage reports, one row per session (GET /resource/usage/month,\n"
                 "/resource/usage/period; administrators: domain admins see their domain).\n"
                 "A session across the period's edge counts with its share of the time.\n");
}

/* The answer as a table of sessions: a month's c_infos, a period's sessions. */
static void usage_table(json_t *answer, bool month)
{
    json_t *rows = json_array();
    size_t i;
    json_t *g;
    json_array_foreach(answer, i, g)
    {
        json_t *list = json_object_get(g, month ? "c_infos" : "sessions");
        const char *k;
        json_t *v;
        size_t j;
        json_t *t;
        if (month) {
            json_array_foreach(list, j, t) json_array_append(rows, t);
        } else {
            json_object_foreach(list, k, v)
            {
                json_t *row = json_deep_copy(v);
                json_object_set(row, "name", json_object_get(v, "session_name"));
                json_object_set(row, "group_name", json_object_get(g, "project_name"));
                json_array_append_new(rows, row);
            }
        }
    }
    json_array_foreach(rows, i, g)
    {
        json_t *ts = json_object_get(g, "tessera");
        char b[32];
        snprintf(b, sizeof(b), "%.1f", json_number_value(json_object_get(ts, "cpu_seconds")));
        json_object_set_new(g, "cpu_s", json_string(b));
        snprintf(b, sizeof(b), "%.3f", json_number_value(json_object_get(ts, "gpu_hours")));
        json_object_set_new(g, "gpu_h", json_string(b));
    }
    out_column cols[] = {
        {"SESSION", "name", OUT_TEXT},          {"PROJECT", "group_name", OUT_TEXT},
        {"ACCESS KEY", "access_key", OUT_TEXT}, {"STATUS", "status", OUT_TEXT},
        {"CPU-SECONDS", "cpu_s", OUT_TEXT},     {"GPU-HOURS", "gpu_h", OUT_TEXT},
        {"CREATED", "created_at", OUT_TIME},    {NULL, NULL, OUT_TEXT}};
    out_table(cols, rows);
    json_decref(rows);
}

int cli_admin_usage(cli *c, int argc, char **argv)
{
    if (argc < 2 || cli_is_help(argv[1])) {
        admin_usage_help(argc < 2 ? stderr : stdout);
        return argc < 2 ? CLI_USAGE : CLI_OK;
    }
    const char *verb = argv[1];
    bool month = strcmp(verb, "month") == 0;
    if (!month && strcmp(verb, "period") != 0)
        return cli_usage("admin usage", NULL, "month or period, not '%s'", verb);
    static const struct option longopts[] = {
        {"from", required_argument, NULL, 'f'},
        {"to", required_argument, NULL, 't'},
        {"group", required_argument, NULL, 'g'},
        {"project", required_argument, NULL, 'p'},
        {"json", no_argument, NULL, 'J'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    const char *from = NULL, *to = NULL, *group = NULL;
    int opt;
    optind = 0;
    opterr = 0;
    while ((opt = getopt_long(argc - 1, argv + 1, ":f:t:g:p:h", longopts, NULL)) != -1) {
        if (opt == 'h') {
            admin_usage_help(stdout);
            return CLI_OK;
        } else if (opt == 'f') {
            from = optarg;
        } else if (opt == 't') {
            to = optarg;
        } else if (opt == 'g' || opt == 'p') {
            group = optarg;
        } else if (opt == 'J') {
            c->json = true;
        } else {
            return cli_usage("admin usage", verb,
                             opt == ':' ? "missing value for '%s'" : "unknown option '%s'",
                             argv[optind]);
        }
    }
    int rest = argc - 1 - optind;
    char *path;
    if (month) {
        if (rest != 1) return cli_usage("admin usage", verb, "one month, YYYYMM");
        path = ts_strdup("/resource/usage/month");
        client_query_add(&path, "month", argv[1 + optind]);
        if (group) client_query_add(&path, "group_ids", group);
    } else {
        if (rest != 0 || !from || !to)
            return cli_usage("admin usage", verb, "--from and --to (YYYYMMDD), no arguments");
        path = ts_strdup("/resource/usage/period");
        client_query_add(&path, "start_date", from);
        client_query_add(&path, "end_date", to);
        if (group) client_query_add(&path, "project_id", group);
    }
    if (!client_has_keys(c)) {
        free(path);
        return CLI_FAIL;
    }
    json_t *answer = NULL;
    cli_status rc = client_call(c, "GET", path, NULL, true, &answer);
    free(path);
    if (rc != CLI_OK) return rc;
    if (c->json) {
        out_json(answer);
        json_decref(answer);
        return CLI_OK;
    }
    usage_table(answer, month);
    json_decref(answer);
    return CLI_OK;
}
