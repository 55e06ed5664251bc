/* unit.c: plain C unit tests of the shim's pure parts (config parsing, the
 * allocation map, the region's reserve/release arithmetic). */
#include "services/cuda-shim/allocmap.h"
#include "services/cuda-shim/region.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

static int _fails, _checks;
#define CHECK(c)                                                                                   \
    do {                                                                                           \
        _checks++;                                                                                 \
        if (!(c)) {                                                                                \
            fprintf(stderr, "  FAIL %s:%d: %s\n", __FILE__, __LINE__, #c);                         \
            _fails++;                                                                              \
        }                                                                                          \
    } while (0)

int main(void)
{
    uint64_t v, lim[TSHIM_MAX_DEVICES];
    CHECK(tshim_parse_size("4g", &v) && v == 4ull << 30);
    CHECK(tshim_parse_size("512MiB", &v) && v == 512ull << 20);
    CHECK(tshim_parse_size("1073741824", &v) && v == 1ull << 30);
    CHECK(tshim_parse_size("1.5G", &v) && v == 3ull << 29);
    CHECK(!tshim_parse_size("-1", &v));
    CHECK(!tshim_parse_size("4x", &v));
    CHECK(!tshim_parse_size("", &v));
    CHECK(tshim_parse_mem_limit("2g", lim) && lim[0] == 2ull << 30 && lim[15] == 2ull << 30);
    CHECK(tshim_parse_mem_limit("0:4g,1:2g", lim) && lim[0] == 4ull << 30 && lim[1] == 2ull << 30 &&
          lim[2] == 0);
    CHECK(!tshim_parse_mem_limit("0:4g,99:1g", lim));
    CHECK(!tshim_parse_mem_limit("0-4g", lim) || lim[0] == 0);

    /* visible_uuids: order kept, spaces trimmed; a malformed list leaves out alone */
    static char uu[TSHIM_MAX_DEVICES][TSHIM_UUID_LEN];
    int n = 0;
    CHECK(tshim_parse_uuid_list("GPU-01ab-cd, GPU-00ab-cd ", uu, &n) && n == 2 &&
          !strcmp(uu[0], "GPU-01ab-cd") && !strcmp(uu[1], "GPU-00ab-cd"));
    CHECK(tshim_parse_uuid_list("GPU-0a", uu, &n) && n == 1 && !strcmp(uu[0], "GPU-0a") &&
          !strcmp(uu[1], "GPU-00ab-cd"));
    CHECK(!tshim_parse_uuid_list("", uu, &n));
    CHECK(!tshim_parse_uuid_list("GPU-0a,", uu, &n));
    CHECK(!tshim_parse_uuid_list("GPU-0a,,GPU-0b", uu, &n));
    CHECK(!tshim_parse_uuid_list("MIG-0a", uu, &n));
    CHECK(!tshim_parse_uuid_list("GPU-0x", uu, &n));
    CHECK(!tshim_parse_uuid_list("GPU-", uu, &n) && !strcmp(uu[0], "GPU-0a"));
    char many[1024] = "";
    for (int i = 0; i <= TSHIM_MAX_DEVICES; i++)
        strcat(many, i ? ",GPU-01" : "GPU-01");
    CHECK(!tshim_parse_uuid_list(many, uu, &n));
    many[strlen(many) - strlen(",GPU-01")] = '\0';
    CHECK(tshim_parse_uuid_list(many, uu, &n) && n == TSHIM_MAX_DEVICES);
    char long_uuid[TSHIM_UUID_LEN + 8] = "GPU-";
    memset(long_uuid + 4, 'a', TSHIM_UUID_LEN);
    long_uuid[TSHIM_UUID_LEN + 4] = '\0';
    CHECK(!tshim_parse_uuid_list(long_uuid, uu, &n));

    /* allocation map: put/take many, collisions, kinds keep separate key spaces */
    for (uint64_t i = 1; i <= 5000; i++) {
        tshim_alloc a = {.key = i * 4096, .bytes = i, .dev = 0, .kind = TSHIM_KIND_MEM};
        CHECK(tshim_map_put(&a));
    }
    tshim_alloc vmm = {.key = 4096, .bytes = 7, .kind = TSHIM_KIND_VMM};
    CHECK(tshim_map_put(&vmm));
    CHECK(tshim_map_count() == 5001);
    tshim_alloc out;
    int bad = 0;
    for (uint64_t i = 1; i <= 5000; i += 2)
        if (!tshim_map_take(TSHIM_KIND_MEM, i * 4096, &out) || out.bytes != i) bad++;
    CHECK(bad == 0);
    CHECK(!tshim_map_take(TSHIM_KIND_MEM, 4096, &out));
    CHECK(tshim_map_take(TSHIM_KIND_VMM, 4096, &out) && out.bytes == 7);
    bad = 0;
    for (uint64_t i = 2; i <= 5000; i += 2)
        if (!tshim_map_take(TSHIM_KIND_MEM, i * 4096, &out) || out.bytes != i) bad++;
    CHECK(bad == 0 && tshim_map_count() == 0);

    /* region (anonymous): check-and-add, release never underflows */
    memset(&tshim_cfg, 0, sizeof(tshim_cfg));
    CHECK(tshim_region_attach());
    CHECK(tshim_region_reserve(0, 100, 150));
    CHECK(!tshim_region_reserve(0, 51, 150));
    CHECK(tshim_region_reserve(0, 50, 150));
    CHECK(tshim_region_used(0) == 150);
    tshim_region_release(0, 1000);
    CHECK(tshim_region_used(0) == 0);
    CHECK(tshim_region_reserve(1, UINT64_MAX, 0)); /* no cap on dev 1 */
    CHECK(!tshim_region_reserve(2, UINT64_MAX, 10));
    CHECK(tshim_proc_start_time(getpid()) > 0);
    printf("  unit: %d checks, %d failed\n", _checks, _fails);
    return _fails ? 1 : 0;
}
