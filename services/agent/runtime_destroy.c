/* runtime_destroy.c: removing a kernel from this node (runtime_destroy.h). */
#include "services/agent/runtime_destroy.h"

#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "libcommon/log.h"
#include "libcommon/proc.h"
#include "services/agent/cgroups.h"
#include "services/agent/cni_cluster.h"
#include "services/agent/overlay.h"
#include "services/agent/runtime_disk.h"
#include "services/agent/runtime_state.h"

/* What a teardown failed to do: every step runs; the first failure is the
 * error. */
typedef struct teardown {
    runtime *rt;
    const char *id;
    kstate st;
    bool have; /* st was read */
    char rel[128], hint[160], netns[256];
    bool ok;
    char first[512];
    kernel_usage *last; /* NULL: not wanted */
    bool *have_last;
    bool keep_home; /* a restart: the disk stays for the next generation */
} teardown;

static void _note(teardown *t, const char *fmt, ...) TS_PRINTF(2, 3);
static void _note(teardown *t, const char *fmt, ...)
{
    t->ok = false;
    if (t->first[0]) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(t->first, sizeof(t->first), fmt, ap);
    va_end(ap);
}

/* Whether pid handles SIGTERM. The init of a pid namespace without a handler
 * ignores it (even from outside), so waiting a grace period would only wait. */
static bool _catches_sigterm(pid_t pid)
{
    char path[64];
    snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
    char *text = rts_read_file(path, 8192);
    if (!text) return false;
    char *p = strstr(text, "\nSigCgt:");
    unsigned long long mask = p ? strtoull(p + 8, NULL, 16) : 0;
    free(text);
    return (mask >> (SIGTERM - 1)) & 1;
}

/* 1. SIGTERM to init and a grace period, then runc kills what is left and
 *    removes the container (and its cgroups). */
static void _processes(teardown *t, int grace_ms)
{
    const kstate *st = &t->st;
    if (t->have && st->init_pid > 0 && grace_ms > 0 && _catches_sigterm(st->init_pid)) {
        /* Our keep-alive shell can take a SIGTERM that lands between its
         * `sleep &` and `wait` only at its next command, so it gets one
         * again every 50 ms; a user's program gets one, as from Docker. */
        int64_t until = ts_now_mono_ms() + grace_ms;
        while (proc_signal_checked(st->init_pid, SIGTERM, t->hint)) {
            int64_t left = until - ts_now_mono_ms();
            if (left <= 0) break;
            if (proc_wait_gone(st->init_pid, st->keepalive && left > 50 ? 50 : (int)left)) break;
            if (!st->keepalive) break;
        }
    }
}

/* The kernel's usage as it ends, before runc removes its cgroups. */
static void _last_usage(teardown *t)
{
    if (!t->last) return;
    ts_err e;
    *t->have_last = runtime_usage(t->rt, t->id, t->last, &e);
}

static void _runc_delete(teardown *t)
{
    exec_result r;
    ts_err e;
    const char *del[] = {"delete", "--force", t->id, NULL};
    if (!rts_runc(t->rt, del, &r, &e)) {
        _note(t, "%s", e.msg);
        return;
    }
    if (r.exit_code != 0 && !strstr(r.err, "does not exist") && !strstr(r.err, "not exist"))
        _note(t, "runc delete: %.300s", r.err);
    exec_result_free(&r);
}

/* 2. The supervisor sees init end, writes the exit file and leaves. */
static void _supervisor(teardown *t)
{
    const kstate *st = &t->st;
    if (!t->have || st->sup_pid <= 0 || !st->sup_start ||
        rts_proc_starttime(st->sup_pid) != st->sup_start)
        return;
    if (!proc_wait_gone(st->sup_pid, 3000) && rts_proc_starttime(st->sup_pid) == st->sup_start) {
        /* best effort: a supervisor that outlives this is reaped by its
         * own death signal (it dies with init) */
        TS_IGNORE(proc_signal_checked(st->sup_pid, SIGKILL, NULL));
        TS_IGNORE(proc_wait_gone(st->sup_pid, 1000));
    }
}

/* 3. The network: CNI DEL (the cluster network's interface, veth, lease,
 *    iptables rules), then the netns. */
static void _network(teardown *t)
{
    const kstate *st = &t->st;
    ts_err e;
    struct stat sb;
    bool netns_exists = stat(t->netns, &sb) == 0;
    /* the cluster network first: its bridge goes with the session's last
     * kernel here, also when the namespace is gone */
    if (t->have && st->cluster_conf &&
        !cni_cluster_del(&t->rt->cni, t->id, t->netns, st->cluster_conf, st->cluster_result, &e))
        _note(t, "cluster network: %s", e.msg);
    if (t->have && (st->cni_result || netns_exists)) {
        if (!cni_del(&t->rt->cni, t->id, t->netns, st->ports, st->n_ports, st->cni_result,
                     st->bridge, st->portmap, &e))
            _note(t, "%s", e.msg);
    } else if (netns_exists) {
        if (!cni_del(&t->rt->cni, t->id, t->netns, NULL, 0, NULL, NULL, NULL, &e))
            _note(t, "%s", e.msg);
    }
    if (!cni_netns_delete(t->netns, &e)) _note(t, "%s", e.msg);
    char *userns_path = rts_kpath(t->rt, t->id, "userns");
    if (!userns_ns_delete(userns_path, &e)) _note(t, "%s", e.msg);
    free(userns_path);
}

/* 4.-6. Staged vfolder mounts (when a failed start left them), the rootfs,
 * then the disk's file system (runtime_disk.h), cgroups runc did not remove (runc delete failed, or
 * never ran), host ports, the kernel dir: never while anything is mounted below it (a staged
 * vfolder is a bind mount of the same file system, which nftw's FTW_MOUNT
 * would not stop at). */
static void _files(teardown *t)
{
    ts_err e;
    char *binds = rts_kpath(t->rt, t->id, "binds");
    if (!userns_unstage(binds)) _note(t, "%s: staged mounts remain", binds);
    free(binds);
    char *rootfs = rts_kpath(t->rt, t->id, "bundle/rootfs");
    if (!overlay_unmount(rootfs, &e)) _note(t, "%s", e.msg);
    bool still_mounted = overlay_is_mounted(rootfs);
    free(rootfs);
    char *kdir = rts_kdir(t->rt, t->id);
    /* the disk's file system, after the overlay whose upper dir it holds */
    if (!still_mounted && !rdisk_unmount(kdir, &e)) _note(t, "%s", e.msg);
    if (!cg_remove(t->rel))
        _note(t, "cgroup %s: could not remove every hierarchy's directory", t->rel);
    (void)ports_release_kernel(t->rt->ports, t->id);
    struct stat sb;
    if (!still_mounted && !rts_mounted_below(kdir)) {
        if (t->keep_home && stat(kdir, &sb) == 0 && !rdisk_keep(t->rt, t->id, kdir, &e))
            _note(t, "%s", e.msg); /* nothing removed: a destroy again may keep it */
        else
            rts_rm_tree(kdir);
        if (stat(kdir, &sb) == 0 && t->ok) _note(t, "%s: could not remove", kdir);
    } else if (!still_mounted) {
        _note(t, "%s: kept, something is still mounted below it", kdir);
    }
    if (!t->keep_home) rdisk_discard_kept(t->rt, t->id);
    free(kdir);
}

static bool _teardown(runtime *rt, const char *id, const destroy_opts *o, ts_err *err)
{
    teardown t = {.rt = rt,
                  .id = id,
                  .ok = true,
                  .last = o->last,
                  .have_last = o->have_last,
                  .keep_home = o->keep_home};
    if (t.have_last) *t.have_last = false;
    int grace_ms = o->grace_ms;
    t.have = rts_state_load(rt, id, &t.st);
    rts_cg_rel(id, t.rel, sizeof(t.rel));
    rts_cg_hint(id, t.hint, sizeof(t.hint));
    cni_netns_path(id, t.netns, sizeof(t.netns));
    int64_t t0 = ts_now_mono_us();
    _processes(&t, grace_ms);
    _last_usage(&t);
    int64_t t_term = ts_now_mono_us();
    _runc_delete(&t);
    int64_t t_del = ts_now_mono_us();
    _supervisor(&t);
    int64_t t_sup = ts_now_mono_us();
    _network(&t);
    int64_t t_net = ts_now_mono_us();
    _files(&t);
    if (t.have) rts_state_free(&t.st);
    TLOG_DEBUG("kernel torn down",
               "term_us=%lld delete_us=%lld supervisor_us=%lld net_us=%lld rest_us=%lld",
               (long long)(t_term - t0), (long long)(t_del - t_term), (long long)(t_sup - t_del),
               (long long)(t_net - t_sup), (long long)(ts_now_mono_us() - t_net));
    if (!t.ok) ts_err_set(err, "%s", t.first);
    return t.ok;
}

bool runtime_teardown(runtime *rt, const char *id, int grace_ms, ts_err *err)
{
    destroy_opts o = {.grace_ms = grace_ms};
    return _teardown(rt, id, &o, err);
}

bool runtime_destroy_with(runtime *rt, const char *id, const destroy_opts *o, ts_err *err)
{
    if (o->have_last) *o->have_last = false;
    if (!rts_check_id(id, err)) return false;
    if (!_teardown(rt, id, o, err)) {
        ts_err_prefix(err, "destroy kernel %s", id);
        return false;
    }
    return true;
}

bool runtime_destroy(runtime *rt, const char *id, int grace_ms, ts_err *err)
{
    destroy_opts o = {.grace_ms = grace_ms};
    return runtime_destroy_with(rt, id, &o, err);
}
