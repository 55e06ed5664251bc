/* cluster_names.c: the names of a session's kernels (cluster_names.h). */
#include "libcommon/cluster_names.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static bool _is_main(const char *role)
{
    return !role || !*role || strcmp(role, "main") == 0;
}

int cluster_role_index(const char *role, int idx)
{
    if (_is_main(role)) return idx + 1; /* the one main kernel is index 0 */
    return idx > 0 ? idx : 1;           /* subs follow the main kernel: sub1 is index 1 */
}

const char *cluster_hostname(const char *role, int idx, char *buf, size_t size)
{
    snprintf(buf, size, "%s%d", _is_main(role) ? "main" : role, cluster_role_index(role, idx));
    return buf;
}

char *cluster_hosts(int size)
{
    if (size < 1) size = 1;
    size_t cap = (size_t)size * 8 + 8, len = 0;
    char *out = ts_malloc(cap);
    len += (size_t)snprintf(out, cap, "main1");
    for (int i = 1; i < size; i++)
        len += (size_t)snprintf(out + len, cap - len, ",sub%d", i);
    return out;
}

char *cluster_replicas(int size)
{
    if (size <= 1) return ts_strdup("main:1");
    return ts_asprintf("main:1,sub:%d", size - 1);
}

bool cluster_name_index(const char *name, int size, int *idx)
{
    const char *digits;
    if (!name) return false;
    if (strncmp(name, "main", 4) == 0)
        digits = name + 4;
    else if (strncmp(name, "sub", 3) == 0)
        digits = name + 3;
    else
        return false;
    if (*digits < '1' || *digits > '9' || strlen(digits) > 6) return false;
    char *end = NULL;
    long n = strtol(digits, &end, 10);
    if (*end) return false;
    if (digits == name + 4) {
        if (n != 1) return false;
        *idx = 0;
        return true;
    }
    if (n >= size) return false;
    *idx = (int)n;
    return true;
}
