/* bench/portmap/cni_bench.c: a kernel's whole CNI ADD and DEL as the agent
 * makes them (services/agent/cni.c: cni_add, cni_del; the bridge plugin, the
 * network's rules and the port plugin), wall time and CPU time (the agent's
 * and its children's), on a bridge and subnet of its own. Figures in
 * docs/agent.md, "Networking". Needs root.
 *
 * It links the agent's cni.o and netfilter*.o from a build directory (and
 * libcommon's archive, with proc.c and ipt.c), so the same file measures two
 * trees:
 *   B=build; O=$B/obj/services/agent
 *   cc -std=gnu11 -I. -o /tmp/cni_bench bench/portmap/cni_bench.c $O/cni.o \
 *      $(ls $O/netfilter*.o 2>/dev/null) $B/lib/libtessera-common.a -pthread \
 *      $(pkg-config --libs jansson)
 *   /tmp/cni_bench $B/bin/tessera-bridge $B/bin/tessera-portmap [runs]
 * One kernel (one port mapping, as every kernel has ttyd), ADD then DEL,
 * runs times (default 20) after two warm-up rounds (the first ADD of a
 * network sets its rules up). Prints median, p90 and max. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "services/agent/cni.h"

#define NET "tstcb0"
#define SUBNET "10.231.192.0/24"

static double _now_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

static double _cpu_ms(void)
{
    struct rusage s, c;
    getrusage(RUSAGE_SELF, &s);
    getrusage(RUSAGE_CHILDREN, &c);
    double us = 0;
    const struct rusage *r[] = {&s, &c};
    for (int i = 0; i < 2; i++)
        us += (double)(r[i]->ru_utime.tv_sec + r[i]->ru_stime.tv_sec) * 1e6 +
              (double)(r[i]->ru_utime.tv_usec + r[i]->ru_stime.tv_usec);
    return us / 1e3;
}

static int _cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static void _report(const char *what, double *v, int n)
{
    qsort(v, (size_t)n, sizeof(double), _cmp);
    printf("  %-12s median %7.1f ms  p90 %7.1f ms  max %7.1f ms\n", what, v[n / 2], v[(n * 9) / 10],
           v[n - 1]);
}

int main(int argc, char **argv)
{
    if (argc < 3 || geteuid() != 0) {
        fprintf(stderr, "usage (as root): %s BRIDGE-PLUGIN PORT-PLUGIN [runs]\n", argv[0]);
        return 2;
    }
    int runs = argc > 3 ? atoi(argv[3]) : 20;
    char data[] = "/tmp/cni-bench-XXXXXX";
    if (!mkdtemp(data)) return 1;
    cni_conf c = {.bin_dir = "/usr/lib/cni",
                  .network = NET,
                  .subnet = SUBNET,
                  .data_dir = data,
                  .portmap = argv[2],
                  .bridge = argv[1]};
    const char *id = "tstcb-bench";
    char netns[256], ip[64];
    cni_netns_path(id, netns, sizeof(netns));
    ts_err err = {{0}};
    if (!cni_netns_create(netns, &err)) {
        fprintf(stderr, "%s\n", err.msg);
        return 1;
    }
    kernel_ports port = {.container_port = 7681, .host_port = 39960};
    double *add = calloc((size_t)runs, sizeof(double)), *del = calloc((size_t)runs, sizeof(double));
    double *add_cpu = calloc((size_t)runs, sizeof(double)),
           *del_cpu = calloc((size_t)runs, sizeof(double));
    int rc = 0;
    for (int i = 0; i < runs + 2 && rc == 0; i++) {
        char *res = NULL;
        double t0 = _now_ms(), c0 = _cpu_ms();
        if (!cni_add(&c, id, NULL, netns, &port, 1, &res, ip, sizeof(ip), &err)) {
            fprintf(stderr, "ADD: %s\n", err.msg);
            rc = 1;
            break;
        }
        double t1 = _now_ms(), c1 = _cpu_ms();
        if (!cni_del(&c, id, netns, &port, 1, res, NULL, NULL, &err)) {
            fprintf(stderr, "DEL: %s\n", err.msg);
            rc = 1;
        }
        double t2 = _now_ms(), c2 = _cpu_ms();
        free(res);
        if (i < 2) continue;
        add[i - 2] = t1 - t0;
        del[i - 2] = t2 - t1;
        add_cpu[i - 2] = c1 - c0;
        del_cpu[i - 2] = c2 - c1;
    }
    if (!cni_netns_delete(netns, &err)) fprintf(stderr, "%s\n", err.msg);
    if (system("ip link delete " NET " 2>/dev/null")) { /* already gone */
    }
    cni_masq_remove(NET, SUBNET);
    char rm[64];
    snprintf(rm, sizeof(rm), "rm -rf %s", data);
    if (system(rm)) { /* best effort */
    }
    if (rc == 0) {
        printf("cni_add / cni_del of one kernel, one port, %d runs (%s, %s):\n", runs, argv[1],
               argv[2]);
        _report("ADD wall", add, runs);
        _report("ADD cpu", add_cpu, runs);
        _report("DEL wall", del, runs);
        _report("DEL cpu", del_cpu, runs);
    }
    free(add);
    free(del);
    free(add_cpu);
    free(del_cpu);
    return rc;
}
