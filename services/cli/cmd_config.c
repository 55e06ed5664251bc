/* cmd_config.c: `tessera admin config get|set|delete` and `tessera admin
 * registry list|add|delete` (superadmins): Backend.AI's configuration store
 * through the gateway's POST /config/get|set|delete (docs/cli.md). */
#include "services/cli/commands.h"
#include "services/cli/output.h"

#include <stdlib.h>
#include <string.h>

static const char config_help[] =
    "Usage: tessera admin config get KEY [--prefix] [--json]\n"
    "       tessera admin config set KEY VALUE [--json-value]\n"
    "       tessera admin config delete KEY [--prefix]\n\n"
    "Backend.AI's configuration store (superadmins). Keys:\n"
    "  config/docker/registry/HOST[:PORT]   a container registry ({\"\": url, type, project})\n"
    "  images/REGISTRY/NAME/TAG/resource/SLOT/min|max   an image's limits per kernel\n"
    "  images/REGISTRY/NAME/TAG/labels/LABEL            an image's label override\n"
    "  config/...                           settings that clients share\n"
    "get prints a key's value; with --prefix everything under it (JSON). set\n"
    "stores VALUE as text, or parses it as JSON with --json-value (an object sets\n"
    "every leaf under KEY). delete removes a key; with --prefix, all under it.\n";

static const char registry_help[] =
    "Usage: tessera admin registry list [--json]\n"
    "       tessera admin registry add HOST[:PORT] URL [--type docker|harbor|harbor2]\n"
    "                                  [--project PROJECT]\n"
    "       tessera admin registry delete HOST[:PORT]\n"
    "       tessera admin registry scan [HOST[:PORT]] [--json]\n\n"
    "The OCI registries images are scanned and pulled from (superadmins). The\n"
    "built-in one (the registry service's oci.registry) is listed, read-only. URL\n"
    "is http(s)://HOST[:PORT]; its scheme says how agents pull. scan registers\n"
    "every image of that registry (without HOST: of every registry listed).\n"
    "Credentials are not supported yet.\n";

/* Removes the flags named (and --json) from argv; *flags: which were given. */
static int _flags(cli *c, int argc, char **argv, const char *const *names, bool *given)
{
    int n = 0;
    for (int i = 0; i < argc; i++) {
        bool taken = false;
        for (int f = 0; names && names[f]; f++)
            if (strcmp(argv[i], names[f]) == 0) given[f] = taken = true;
        if (strcmp(argv[i], "--json") == 0) c->json = taken = true;
        if (!taken) argv[n++] = argv[i];
    }
    return n;
}

static int _post(cli *c, const char *path, json_t *body, json_t **result)
{
    json_t *v = NULL;
    int rc = client_call(c, "POST", path, body, true, &v);
    json_decref(body);
    if (rc == CLI_OK && result) *result = json_incref(json_object_get(v, "result"));
    json_decref(v);
    return rc;
}

int cli_admin_config(cli *c, int argc, char **argv)
{
    static const char *const names[] = {"--prefix", "--json-value", NULL};
    bool given[2] = {false, false};
    argc = _flags(c, argc, argv, names, given);
    if (argc < 2 || cli_is_help(argv[1]) || (argc > 2 && cli_is_help(argv[argc - 1]))) {
        fputs(config_help, argc < 2 ? stderr : stdout);
        return argc < 2 ? CLI_USAGE : CLI_OK;
    }
    if (!client_has_keys(c)) return CLI_FAIL;
    if (argc == 3 && strcmp(argv[1], "get") == 0) {
        json_t *r = NULL;
        int rc = _post(c, "/config/get",
                       json_pack("{s:s, s:b}", "key", argv[2], "prefix", given[0]), &r);
        if (rc == CLI_OK) {
            if (c->json || json_is_object(r))
                out_json(r ? r : json_null());
            else if (json_is_string(r))
                printf("%s\n", json_string_value(r));
            else {
                fprintf(stderr, "tessera: %s is not set\n", argv[2]);
                rc = CLI_FAIL;
            }
        }
        json_decref(r);
        return rc;
    }
    if (argc == 4 && strcmp(argv[1], "set") == 0) {
        json_t *value = json_string(argv[3]);
        if (given[1]) {
            json_decref(value);
            json_error_t e;
            value = json_loads(argv[3], JSON_DECODE_ANY, &e);
            if (!value) {
                fprintf(stderr, "tessera: VALUE is not JSON: %s\n", e.text);
                return CLI_USAGE;
            }
        } else if (!value) {
            fprintf(stderr, "tessera: VALUE is not UTF-8 text\n");
            return CLI_USAGE;
        }
        int rc =
            _post(c, "/config/set", json_pack("{s:s, s:o}", "key", argv[2], "value", value), NULL);
        if (rc == CLI_OK && !c->json) printf("ok\n");
        return rc;
    }
    if (argc == 3 && strcmp(argv[1], "delete") == 0) {
        int rc = _post(c, "/config/delete",
                       json_pack("{s:s, s:b}", "key", argv[2], "prefix", given[0]), NULL);
        if (rc == CLI_OK && !c->json) printf("ok\n");
        return rc;
    }
    return cli_usage("admin", "config", "expected get KEY, set KEY VALUE or delete KEY");
}

/* --type T / --project P out of argv (values follow their flag). */
static int _value_flag(int argc, char **argv, const char *name, const char **out, bool *bad)
{
    int n = 0;
    for (int i = 0; i < argc; i++) {
        if (strcmp(argv[i], name) == 0) {
            if (i + 1 >= argc) {
                *bad = true;
                return argc;
            }
            *out = argv[++i];
        } else {
            argv[n++] = argv[i];
        }
    }
    return n;
}

int cli_admin_registry(cli *c, int argc, char **argv)
{
    argc = _flags(c, argc, argv, NULL, NULL);
    const char *type = NULL, *project = NULL;
    bool bad = false;
    argc = _value_flag(argc, argv, "--type", &type, &bad);
    argc = _value_flag(argc, argv, "--project", &project, &bad);
    if (bad) return cli_usage("admin", "registry", "--type and --project need a value");
    if (argc < 2 || cli_is_help(argv[1]) || (argc > 2 && cli_is_help(argv[argc - 1]))) {
        fputs(registry_help, argc < 2 ? stderr : stdout);
        return argc < 2 ? CLI_USAGE : CLI_OK;
    }
    if (!client_has_keys(c)) return CLI_FAIL;
    if (argc == 2 && strcmp(argv[1], "list") == 0) {
        json_t *r = NULL;
        int rc = _post(c, "/config/get",
                       json_pack("{s:s, s:b}", "key", "config/docker/registry", "prefix", 1), &r);
        if (rc == CLI_OK && c->json) out_json(r ? r : json_null());
        if (rc == CLI_OK && !c->json) {
            json_t *rows = json_array();
            const char *name;
            json_t *f;
            json_object_foreach(r, name, f)
            {
                json_array_append_new(rows, json_pack("{s:s, s:O, s:O, s:O}", "name", name, "url",
                                                      json_object_get(f, ""), "type",
                                                      json_object_get(f, "type"), "project",
                                                      json_object_get(f, "project")));
            }
            static const out_column cols[] = {{"NAME", "name", OUT_TEXT},
                                              {"URL", "url", OUT_TEXT},
                                              {"TYPE", "type", OUT_TEXT},
                                              {"PROJECT", "project", OUT_TEXT},
                                              {NULL, NULL, OUT_TEXT}};
            out_table(cols, rows);
            json_decref(rows);
        }
        json_decref(r);
        return rc;
    }
    if ((argc == 4 && strcmp(argv[1], "add") == 0) ||
        (argc == 3 && strcmp(argv[1], "delete") == 0)) {
        char *key = ts_asprintf("config/docker/registry/%s", argv[2]);
        int rc;
        if (argv[1][0] == 'a') {
            json_t *v = json_pack("{s:s}", "", argv[3]);
            if (type) json_object_set_new(v, "type", json_string(type));
            if (project) json_object_set_new(v, "project", json_string(project));
            rc = _post(c, "/config/set", json_pack("{s:s, s:o}", "key", key, "value", v), NULL);
        } else {
            rc = _post(c, "/config/delete", json_pack("{s:s, s:b}", "key", key, "prefix", 1), NULL);
        }
        free(key);
        if (rc == CLI_OK && !c->json) printf("ok\n");
        return rc;
    }
    if ((argc == 2 || argc == 3) && strcmp(argv[1], "scan") == 0) {
        json_t *v = NULL;
        json_t *body = argc == 3 ? json_pack("{s:s}", "registry", argv[2]) : json_object();
        int rc = client_call(c, "POST", "/admin/images/scan", body, true, &v);
        json_decref(body);
        if (rc == CLI_OK && c->json) out_json(v);
        if (rc == CLI_OK && !c->json)
            printf("registered %zu image(s), %zu failed\n",
                   json_array_size(json_object_get(v, "registered")),
                   json_array_size(json_object_get(v, "failed")));
        json_decref(v);
        return rc;
    }
    return cli_usage("admin", "registry",
                     "expected list, add HOST URL, delete HOST or scan [HOST]");
}
