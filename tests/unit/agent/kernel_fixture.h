/* kernel_fixture.h: what the unit tests that run real kernels with the
 * agent's runtime share (test_runtime, test_runtime_cost, test_privileges):
 * finding runc, busybox, overlayfs, the CNI plugins and the agent's helper
 * programs (../../bin/tessera-* beside the test), a temporary state dir the
 * containers' root can reach, a busybox image layer, a runtime over them,
 * and starting, running in and destroying kernels. Header-only (static
 * inline): each test binary gets its own copy. */
#ifndef TESTS_KERNEL_FIXTURE_H
#define TESTS_KERNEL_FIXTURE_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "libcommon/log.h"
#include "libcommon/proc.h"
#include "services/agent/cni.h"
#include "services/agent/container.h"
#include "services/agent/runtime_destroy.h"
#include "services/agent/runtime_start.h"
#include "services/agent/userns.h"
#include "tests/unit/agent/shell_util.h"

#define KF_BUSYBOX "/bin/busybox"
#define KF_RUNC "runc"

/* One test binary's set-up. */
typedef struct kfix {
    const char *name;    /* the test, in messages */
    const char *network; /* its CNI network (bridge) and subnet */
    const char *subnet;
    int port_start, port_end; /* its host ports (below 32768: not ephemeral) */
    int64_t log_cap;
    char tmp[256];   /* /var/tmp/tessera-...: passable by the containers' root */
    char state[300]; /* <tmp>/state: agent.state_dir */
    const char *skip;
    char *portmap, *bridge, *sup; /* the agent's helper programs */
    char *term, *shim;            /* tessera-term and the CUDA shim, or NULL */
} kfix;

#define KF_SKIP_IF_UNAVAILABLE(f)                                                                  \
    do {                                                                                           \
        if ((f)->skip) {                                                                           \
            fprintf(stderr, "skipped: %s\n", (f)->skip);                                           \
            skip();                                                                                \
        }                                                                                          \
    } while (0)

/* build/bin/<x> or build/lib/<x> beside build/tests/agent/<test>, or NULL. */
static inline char *kf_sibling(const char *rel)
{
    char *p = proc_sibling_path(rel, NULL);
    if (p && access(p, F_OK) == 0) return p;
    free(p);
    return NULL;
}

/* Why kernels cannot run here, or NULL (the helper programs found). */
static inline const char *kf_why_skip(kfix *f, bool need_userns)
{
    if (geteuid() != 0) return "not root";
    if (sh("%s --version >/dev/null 2>&1", KF_RUNC) != 0) return "runc not found";
    if (access(KF_BUSYBOX, X_OK) != 0) return "no " KF_BUSYBOX " (apt-get install busybox-static)";
    if (sh("grep -qw overlay /proc/filesystems || modprobe overlay 2>/dev/null") != 0)
        return "no overlayfs";
    if (access("/usr/lib/cni/bridge", X_OK) != 0) return "no CNI plugins in /usr/lib/cni";
    char why[256];
    if (need_userns && !userns_supported(why, sizeof(why)))
        return "no user namespaces on this kernel";
    if (!(f->portmap = kf_sibling("../../bin/tessera-portmap")))
        return "no ../../bin/tessera-portmap (make)";
    if (!(f->bridge = kf_sibling("../../bin/tessera-bridge")))
        return "no ../../bin/tessera-bridge (make)";
    if (!(f->sup = kf_sibling("../../bin/tessera-sup"))) return "no ../../bin/tessera-sup (make)";
    f->term = kf_sibling("../../bin/tessera-term");
    f->shim = kf_sibling("../../lib/libtessera-cuda.so");
    return NULL;
}

/* The group set-up's start: f->skip, or the temporary dirs made (false: a
 * set-up error). pattern: "/var/tmp/tessera-x-XXXXXX". */
static inline bool kf_begin(kfix *f, const char *pattern, bool need_userns)
{
    if (getenv("TEST_DEBUG")) tlog_min_level = TLOG_LEVEL_DEBUG;
    f->skip = kf_why_skip(f, need_userns);
    if (f->skip) {
        fprintf(stderr, "%s: skipping: %s\n", f->name, f->skip);
        return true;
    }
    snprintf(f->tmp, sizeof(f->tmp), "%s", pattern);
    if (!mkdtemp(f->tmp)) return false;
    /* mkdtemp makes 0700: the containers' root must pass it to its kernels */
    if (chmod(f->tmp, 0711) != 0) return false;
    snprintf(f->state, sizeof(f->state), "%s/state", f->tmp);
    return true;
}

/* A busybox image layer in dir: /bin/busybox and a symlink per applet,
 * /etc/passwd and group (root, work 1000), /tmp, /home/work (1000:1000),
 * /root, /mnt; and extra_bin as /bin/<its name> when given. */
static inline bool kf_busybox_layer(const char *dir, const char *extra_bin)
{
    const char *L = dir;
    if (sh("mkdir -p %s/bin %s/etc %s/tmp %s/home/work %s/root %s/mnt && cp %s %s/bin/busybox && "
           "chmod 1777 %s/tmp && for a in $(%s --list); do [ -e %s/bin/$a ] || ln -s busybox "
           "%s/bin/$a; done && chown 1000:1000 %s/home/work",
           L, L, L, L, L, L, KF_BUSYBOX, L, L, KF_BUSYBOX, L, L, L) != 0)
        return false;
    if (extra_bin && sh("cp %s %s/bin/", extra_bin, L) != 0) return false;
    static const char *const files[][2] = {
        {"passwd", "root:x:0:0:root:/root:/bin/sh\nwork:x:1000:1000:work:/home/work:/bin/sh\n"},
        {"group", "root:x:0:\nwork:x:1000:\n"},
    };
    for (size_t i = 0; i < TS_ARRAY_LEN(files); i++) {
        char path[400];
        snprintf(path, sizeof(path), "%s/etc/%s", L, files[i][0]);
        FILE *fp = fopen(path, "w");
        if (!fp) return false;
        fputs(files[i][1], fp);
        fclose(fp);
    }
    return true;
}

/* The layer's owners shifted as the image store unpacks it for a user
 * namespace at base (root -> base, work -> base + 1000). */
static inline bool kf_shift_layer(const char *dir, unsigned base)
{
    return sh("chown -R -h %u:%u %s && chown %u:%u %s/home/work", base, base, dir, base + 1000,
              base + 1000, dir) == 0;
}

/* The runtime options of f with the agent's plugins and supervisor. */
static inline runtime_opts kf_opts(const kfix *f, const userns_map *userns)
{
    return (runtime_opts){.state_dir = f->state,
                          .runc_path = KF_RUNC,
                          .cni_bin_dir = "/usr/lib/cni",
                          .cni_network = f->network,
                          .cni_subnet = f->subnet,
                          .cni_portmap = f->portmap,
                          .cni_bridge = f->bridge,
                          .sup_path = f->sup,
                          .port_pool_start = f->port_start,
                          .port_pool_end = f->port_end,
                          .log_cap_bytes = f->log_cap,
                          .userns = userns};
}

/* runtime_new of opts, or NULL (said on stderr). */
static inline runtime *kf_runtime(const runtime_opts *o)
{
    ts_err err = {{0}};
    runtime *rt = runtime_new(o, &err);
    if (!rt) fprintf(stderr, "runtime_new: %s\n", err.msg);
    return rt;
}

/* Destroy the kernels a failed test left in rt. */
static inline void kf_destroy_leftovers(runtime *rt)
{
    char **ids = NULL;
    int n = 0;
    ts_err lerr = {{0}};
    if (rt && !runtime_list(rt, &ids, &n, &lerr))
        fprintf(stderr, "leftover kernels unknown: %s\n", lerr.msg);
    for (int i = 0; i < n; i++) {
        ts_err err = {{0}};
        if (!runtime_destroy(rt, ids[i], 0, &err))
            fprintf(stderr, "leftover kernel %s: %s\n", ids[i], err.msg);
        free(ids[i]);
    }
    free(ids);
}

/* The group teardown's end: the network's bridge and rules (unless keep_net),
 * the helper paths, the temporary dirs (kept with TESSERA_KEEP_STATE). */
static inline void kf_end(kfix *f, bool keep_net)
{
    if (!f->skip && !keep_net) {
        cni_masq_remove(f->network, f->subnet);
        sh("ip link del %s 2>/dev/null", f->network);
    }
    free(f->portmap);
    free(f->bridge);
    free(f->sup);
    free(f->term);
    free(f->shim);
    if (f->tmp[0] && !getenv("TESSERA_KEEP_STATE"))
        sh("umount -R %s/state/kernels/*/bundle/rootfs 2>/dev/null; "
           "umount %s/state/kernels/*/disk 2>/dev/null; rm -rf %s",
           f->tmp, f->tmp, f->tmp);
}

/* Two runtimes over f's state (agent.userns on with userns, and off) and a
 * busybox image for each: a plain layer (with extra_bin) for off, a copy
 * with owners shifted for userns for on. */
typedef struct kf_pair {
    char plain[300], shifted[300];
    char *layer_on[1], *layer_off[1];
    image_info img, img_off;
    runtime *rt, *rt_off;
} kf_pair;

static inline bool kf_pair_make(const kfix *f, kf_pair *p, const userns_map *userns,
                                const char *extra_bin)
{
    snprintf(p->plain, sizeof(p->plain), "%s/layer", f->tmp);
    snprintf(p->shifted, sizeof(p->shifted), "%s/layer-shifted", f->tmp);
    if (!kf_busybox_layer(p->plain, extra_bin) || sh("cp -a %s %s", p->plain, p->shifted) != 0 ||
        !kf_shift_layer(p->shifted, userns->base))
        return false;
    runtime_opts on = kf_opts(f, userns), off = kf_opts(f, NULL);
    p->rt = kf_runtime(&on);
    p->rt_off = kf_runtime(&off);
    if (!p->rt || !p->rt_off) return false;
    static char ref[] = "local/busybox:test";
    p->layer_on[0] = p->shifted;
    p->layer_off[0] = p->plain;
    p->img = (image_info){.reference = ref, .layer_dirs = p->layer_on, .n_layers = 1};
    p->img_off = (image_info){.reference = ref, .layer_dirs = p->layer_off, .n_layers = 1};
    return true;
}

/* Leftover kernels destroyed, both runtimes freed, then kf_end. */
static inline void kf_pair_end(kfix *f, kf_pair *p)
{
    kf_destroy_leftovers(p->rt);
    runtime_free(p->rt);
    runtime_free(p->rt_off);
    kf_end(f, false);
}

/* A kernel of image img in session sess, named host, with 8 MiB of /dev/shm. */
static inline kernel_spec kf_spec(const char *id, const image_info *img, const char *session,
                                  const char *hostname)
{
    return (kernel_spec){.kernel_id = id,
                         .session_id = session,
                         .hostname = hostname,
                         .image = img,
                         .shm_bytes = 8 << 20};
}

static inline void kf_start_ok(runtime *rt, const kernel_spec *s, kernel_status *st)
{
    ts_err err = {{0}};
    if (!runtime_start(rt, s, st, &err)) fail_msg("start: %s", err.msg);
}

static inline void kf_destroy_ok(runtime *rt, const char *id, int grace_ms)
{
    ts_err err = {{0}};
    if (!runtime_destroy(rt, id, grace_ms, &err)) fail_msg("destroy: %s", err.msg);
}

/* argv in the kernel, its result (the exec must run). */
static inline exec_result kf_run_in(runtime *rt, const char *id, const char *const *argv,
                                    int timeout_ms, size_t cap)
{
    exec_result r;
    ts_err err = {{0}};
    if (!runtime_exec(rt, id, argv, NULL, timeout_ms, cap, &r, &err))
        fail_msg("exec %s: %s", argv[0], err.msg);
    return r;
}

/* <state>/kernels/<id>/<rel> (heap). */
static inline char *kf_kpath(const kfix *f, const char *id, const char *rel)
{
    return ts_asprintf("%s/kernels/%s/%s", f->state, id, rel);
}

#endif
