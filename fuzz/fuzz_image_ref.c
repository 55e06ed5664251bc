/* fuzz_image_ref.c: arbitrary bytes as an image reference (the registry's
 * image registration and session create, the agent's pulls). Checks:
 * image_ref_valid and image_ref_parse agree; a parsed reference's parts obey
 * the grammar (no "..", no "/" at the ends, lowercase repository) and put
 * together again parse to the same parts. */
#include "libcommon/image_ref.h"

#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = ts_strndup((const char *)data, size);
    ts_err err = {{0}};
    bool valid = image_ref_valid(text, &err);
    image_ref r;
    bool parsed = image_ref_parse(text, "default.example:5000", &r, &err);
    if (valid != parsed) abort();
    (void)image_ref_host_valid(text);
    if (parsed) {
        if (!r.registry || !r.api_host || !r.repository || !*r.repository) abort();
        if (!r.tag && !r.digest) abort();
        if (strstr(r.repository, "..") || strstr(r.repository, "//") || r.repository[0] == '/' ||
            r.repository[strlen(r.repository) - 1] == '/')
            abort();
        for (const char *p = r.repository; *p; p++)
            if (*p >= 'A' && *p <= 'Z') abort();
        if (strstr(r.registry, "..") || strchr(r.registry, '/')) abort();
        /* The round trip names the registry: only where the name (at most
         * 255 bytes as written) still fits with it. */
        if (strcmp(r.registry, "docker.io") != 0 && strcmp(r.registry, "index.docker.io") != 0 &&
            strlen(r.registry) + 1 + strlen(r.repository) <= 255) {
            char *again =
                ts_asprintf("%s/%s%s%s%s%s", r.registry, r.repository, r.tag ? ":" : "",
                            r.tag ? r.tag : "", r.digest ? "@" : "", r.digest ? r.digest : "");
            image_ref r2;
            if (!image_ref_parse(again, NULL, &r2, &err)) abort();
            if (strcmp(r2.registry, r.registry) || strcmp(r2.repository, r.repository)) abort();
            image_ref_free(&r2);
            free(again);
        }
        image_ref_free(&r);
    }
    free(text);
    return 0;
}
