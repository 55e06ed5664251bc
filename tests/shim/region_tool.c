/* region_tool.c: print a container's accounting region (tests, debugging).
 *   region_tool <dir>          used/peak per device, live slots
 *   region_tool <dir> used0    just the usage of device 0 (after reaping) */
#include "services/cuda-shim/region.h"

#include <stdio.h>
#include <string.h>

int main(int argc, char **argv)
{
    if (argc < 2) return 2;
    char path[512];
    snprintf(path, sizeof(path), "%s/%s", argv[1], TSHIM_REGION_FILE);
    tshim_reg = tshim_region_map_file(path);
    if (!tshim_reg) {
        fprintf(stderr, "cannot map %s\n", path);
        return 1;
    }
    tshim_region_reap();
    if (argc > 2 && !strcmp(argv[2], "used0")) {
        printf("%llu\n", (unsigned long long)tshim_region_used(0));
        return 0;
    }
    tshim_region *r = tshim_reg;
    printf("version=%u repairs=%llu reaped=%llu\n", r->version, (unsigned long long)r->repairs,
           (unsigned long long)r->reaped);
    for (int d = 0; d < TSHIM_MAX_DEVICES; d++)
        if (r->limit[d] || r->used[d] || r->peak[d])
            printf("dev=%d limit=%llu used=%llu peak=%llu\n", d, (unsigned long long)r->limit[d],
                   (unsigned long long)r->used[d], (unsigned long long)r->peak[d]);
    for (int i = 0; i < TSHIM_REGION_SLOTS; i++)
        if (r->slots[i].pid)
            printf("slot=%d pid=%d used0=%llu\n", i, r->slots[i].pid,
                   (unsigned long long)r->slots[i].used[0]);
    return 0;
}
