#!/bin/sh
# run.sh BUILD: the CUDA shim's tests without a GPU (make test-shim).
# Runs tests/shim/scenarios.c under LD_PRELOAD=libtessera-cuda.so against the fake
# libcuda.so.1 / libnvidia-ml.so.1 and prints "shim: N passed, M failed" last.
B=${1:-build}
SHIM=$(cd "$B/lib" && pwd)/libtessera-cuda.so
FAKE=$(cd "$B/shim/tests/fake" && pwd)
T=$(cd "$B/shim/tests" && pwd)
WORK=$(mktemp -d "${TMPDIR:-/tmp}/tessera-shim.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
PASS=0
FAIL=0
MiB=1048576
GiB=1073741824

# Each test gets a fresh container directory and fake-hardware state.
fresh() {
    n=$((n + 1))
    D="$WORK/c$n"
    mkdir -p "$D"
    STATE="$WORK/state$n"
}
n=0

result() { # name rc
    if [ "$2" -eq 0 ]; then
        PASS=$((PASS + 1))
        echo "ok   $1"
    else
        FAIL=$((FAIL + 1))
        echo "FAIL $1"
    fi
}

# under NAME [VAR=VALUE...] -- CMD...: run CMD with the shim preloaded
under() {
    name=$1
    shift
    fresh
    env LD_PRELOAD="$SHIM" LD_LIBRARY_PATH="$FAKE" TESSERA_CUDA_SHARED_DIR="$D" \
        FAKECU_STATE="$STATE" "$@" 2>"$WORK/err" >"$WORK/out"
    rc=$?
    sed 's/^/    /' "$WORK/out"
    sed 's/^/    /' "$WORK/err" | head -20
    result "$name" $rc
}

"$T/unit"
result "unit: config parsing, allocation map, region arithmetic" $?

under "every allocation path counted and freed (incl. pools, VMM without context, arrays)" \
    TESSERA_CUDA_MEM_LIMIT=1g "$T/scenarios" alloc_paths
# no stderr output unless TESSERA_CUDA_DEBUG is set
[ ! -s "$WORK/err" ]
result "silent without TESSERA_CUDA_DEBUG" $?
under "debug log when TESSERA_CUDA_DEBUG=1" TESSERA_CUDA_MEM_LIMIT=64m TESSERA_CUDA_DEBUG=1 \
    "$T/scenarios" oom
grep -q 'component=cuda-shim' "$WORK/err"
result "debug lines are logfmt on stderr" $?

under "byte-exact cap, CUDA_ERROR_OUT_OF_MEMORY, driver not called over the cap" \
    TESSERA_CUDA_MEM_LIMIT=64m "$T/scenarios" oom
under "per-device limit syntax 0:64m" TESSERA_CUDA_MEM_LIMIT=0:64m,1:1g "$T/scenarios" oom

under "views: cap below physical (cuMemGetInfo, cuDeviceTotalMem, NVML v1/v2, dlsym)" \
    TESSERA_CUDA_MEM_LIMIT=1g EXPECT_TOTAL=$GiB EXPECT_FREE=$GiB "$T/scenarios" views
under "views: physical free below the cap's free" TESSERA_CUDA_MEM_LIMIT=1g \
    FAKECU_OTHER_USED=$((16 * GiB - 512 * MiB)) EXPECT_TOTAL=$GiB EXPECT_FREE=$((512 * MiB)) \
    "$T/scenarios" views
under "views: cap above physical" TESSERA_CUDA_MEM_LIMIT=32g FAKECU_TOTAL=$((8 * GiB)) \
    EXPECT_TOTAL=$((8 * GiB)) EXPECT_FREE=$((8 * GiB)) "$T/scenarios" views

under "cuGetProcAddress v1/v2 (+ptsz, status) and dlsym(handle) return the wrappers" \
    TESSERA_CUDA_MEM_LIMIT=64m "$T/scenarios" procaddr

under "8 processes race under one cap: driver high-water <= cap, usage 0 after exit" \
    TESSERA_CUDA_MEM_LIMIT=256m EXPECT_TOTAL=$((256 * MiB)) "$T/scenarios" race
used=$("$T/region_tool" "$D" used0)
[ "$used" = 0 ]
result "accounting region shows 0 bytes after the racers exit (got $used)" $?

under "a process killed with -9 holding the lock blocks nobody; its usage is returned" \
    TESSERA_CUDA_MEM_LIMIT=64m "$T/scenarios" kill9
"$T/region_tool" "$D" | grep -q 'repairs=1'
result "the region recorded the EOWNERDEAD repair" $?

cfg="$WORK/shim.conf"
printf '# written by the agent\nmem_limit = 32m\n' >"$cfg"
under "config file wins over the environment" TESSERA_CUDA_CONFIG="$cfg" \
    TESSERA_CUDA_MEM_LIMIT=1g "$T/scenarios" config_file

# ---- NVML visibility (visible_uuids); the fake NVML numbers devices in reverse -------
uuid() { printf 'GPU-%02xababab-abab-abab-abab-abababababab' "$1"; }
printf 'visible_uuids = %s,%s\nmem_limit = 0:1g,1:2g\n' "$(uuid 0)" "$(uuid 1)" >"$cfg"
under "NVML shows the 2 listed of 4 GPUs in CUDA order; hidden ones NOT_FOUND; views per ordinal" \
    TESSERA_CUDA_CONFIG="$cfg" FAKECU_DEVICES=4 VIS_EXPECT=0,1 VIS_TOTALS=$GiB,$((2 * GiB)) \
    "$T/scenarios" visibility
printf 'visible_uuids = %s, %s\n' "$(uuid 2)" "$(uuid 0)" >"$cfg"
under "NVML order is the list's order, not NVML's or CUDA's" TESSERA_CUDA_CONFIG="$cfg" \
    FAKECU_DEVICES=3 VIS_EXPECT=2,0 "$T/scenarios" visibility
under "TESSERA_CUDA_VISIBLE_UUIDS without a config file" TESSERA_CUDA_VISIBLE_UUIDS="$(uuid 1)" \
    FAKECU_DEVICES=2 VIS_EXPECT=1 "$T/scenarios" visibility
under "no visible_uuids: NVML unfiltered, as before" FAKECU_DEVICES=3 VIS_EXPECT=all \
    "$T/scenarios" visibility
printf 'visible_uuids = %s,%s,%s\n' "$(uuid 1)" "$(uuid 7)" "$(uuid 0)" >"$cfg"
under "more UUIDs than GPUs: unknown ones skipped, order kept" TESSERA_CUDA_CONFIG="$cfg" \
    FAKECU_DEVICES=2 VIS_EXPECT=1,0 "$T/scenarios" visibility
seventeen=$(for i in 0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15; do printf '%s,' "$(uuid 0)"; done)
for bad in "empty entry:$(uuid 0),,$(uuid 1)" "not a uuid:$(uuid 0),nonsense" "prefix only:GPU-" \
    "not hex:$(uuid 0),GPU-zz" "17 entries:$seventeen$(uuid 1)" "empty value:"; do
    printf 'visible_uuids = %s\n' "${bad#*:}" >"$cfg"
    under "malformed visible_uuids ignored, NVML unfiltered (${bad%%:*})" \
        TESSERA_CUDA_CONFIG="$cfg" FAKECU_DEVICES=3 VIS_EXPECT=all "$T/scenarios" visibility
done

# ---- compute share ------------------------------------------------------------------
under "share 0.30 via cuLaunchKernel (1 ms kernels)" TESSERA_CUDA_COMPUTE_SHARE=0.3 \
    SHARE_MS=1500 "$T/scenarios" share
under "share 0.50 via cuLaunchKernelEx (200 us kernels)" TESSERA_CUDA_COMPUTE_SHARE=0.5 \
    SHARE_PATH=1 SHARE_KERNEL_US=200 SHARE_MS=1500 "$T/scenarios" share
under "share 0.20 via cuGraphLaunch (5 ms graphs)" TESSERA_CUDA_COMPUTE_SHARE=0.2 SHARE_PATH=2 \
    SHARE_KERNEL_US=5000 SHARE_MS=1500 "$T/scenarios" share
under "share 0.70 via cuLaunchCooperativeKernel_ptsz (200 us kernels)" \
    TESSERA_CUDA_COMPUTE_SHARE=0.7 SHARE_PATH=3 SHARE_KERNEL_US=200 SHARE_MS=1500 \
    "$T/scenarios" share
# Events as a real GPU stamps them (an idle stream's first event waits for the
# host), and a 20 ms first launch (lazy module loading): measured naively, the
# kernel's estimate would be 100 times its length and the share would collapse.
under "share 0.80, wall-clock events, a 20 ms first launch (200 us kernels)" \
    TESSERA_CUDA_COMPUTE_SHARE=0.8 FAKE_CUDA_EVENTS=wall FAKE_CUDA_FIRST_LAUNCH_US=20000 \
    SHARE_KERNEL_US=200 SHARE_MS=1500 "$T/scenarios" share

# the region counts the container's GPU time (busy_ns) while a share is set
under "GPU time in the region: 200 x 1 ms kernels at share 0.5 = 200 ms" \
    TESSERA_CUDA_COMPUTE_SHARE=0.5 BUSY_N=200 SHARE_KERNEL_US=1000 "$T/scenarios" busy
under "GPU time in the region: 300 x 200 us kernels, wall-clock events, share 0.8" \
    TESSERA_CUDA_COMPUTE_SHARE=0.8 FAKE_CUDA_EVENTS=wall BUSY_N=300 SHARE_KERNEL_US=200 \
    "$T/scenarios" busy
under "a memory cap, no share: no GPU time counted (0, busy_counted 0)" TESSERA_CUDA_MEM_LIMIT=1g \
    BUSY_N=50 SHARE_KERNEL_US=1000 "$T/scenarios" busy

# two processes of one container share one budget
fresh
for i in 1 2; do
    env LD_PRELOAD="$SHIM" LD_LIBRARY_PATH="$FAKE" TESSERA_CUDA_SHARED_DIR="$D" \
        FAKECU_STATE="$STATE" TESSERA_CUDA_COMPUTE_SHARE=0.4 SHARE_MS=1500 SHARE_KERNEL_US=1000 \
        "$T/scenarios" share_worker >"$WORK/w$i" &
done
wait
sum=$(cat "$WORK/w1" "$WORK/w2" | awk '{s += $1} END {printf "%.3f", s}')
echo "    one container, two processes, share 0.40: $(cat "$WORK/w1") + $(cat "$WORK/w2") = $sum"
awk -v s="$sum" 'BEGIN {exit !(s > 0.35 && s < 0.45)}'
result "two processes of one container hold 0.40 together" $?

# two containers, 0.3 and 0.7, on one (fake) GPU
fresh
mkdir -p "$D/a" "$D/b"
env LD_PRELOAD="$SHIM" LD_LIBRARY_PATH="$FAKE" TESSERA_CUDA_SHARED_DIR="$D/a" FAKECU_STATE="$STATE" \
    TESSERA_CUDA_COMPUTE_SHARE=0.3 SHARE_MS=1500 SHARE_KERNEL_US=1000 "$T/scenarios" share_worker \
    >"$WORK/a" &
env LD_PRELOAD="$SHIM" LD_LIBRARY_PATH="$FAKE" TESSERA_CUDA_SHARED_DIR="$D/b" FAKECU_STATE="$STATE" \
    TESSERA_CUDA_COMPUTE_SHARE=0.7 SHARE_MS=1500 SHARE_KERNEL_US=1000 "$T/scenarios" share_worker \
    >"$WORK/b" &
wait
a=$(cat "$WORK/a")
b=$(cat "$WORK/b")
echo "    containers 0.3 / 0.7 on one GPU: $a / $b"
awk -v a="$a" -v b="$b" 'BEGIN {exit !(a > 0.25 && a < 0.35 && b > 0.62 && b < 0.76)}'
result "0.3 / 0.7 split within 5 points (8 for the side that absorbs queueing)" $?

# ---- processes that never touch CUDA ----------------------------------------------------
fresh
LD_PRELOAD="$SHIM" TESSERA_CUDA_SHARED_DIR="$D" TESSERA_CUDA_MEM_LIMIT=1g /bin/true
result "/bin/true under the preload" $?
LD_PRELOAD="$SHIM" TESSERA_CUDA_SHARED_DIR="$D" TESSERA_CUDA_MEM_LIMIT=1g python3 -c \
    "import sys; m=open('/proc/self/maps').read(); sys.exit('libcuda' in m or 'tessera-cuda' not in m)"
result "python3 under the preload: shim mapped, libcuda not loaded" $?
[ -z "$(ls -A "$D")" ]
result "no accounting file created by non-CUDA processes" $?
python3 - "$SHIM" <<'PY'
import os, statistics, subprocess, sys, time
shim = sys.argv[1]
env_on = dict(os.environ, LD_PRELOAD=shim, TESSERA_CUDA_MEM_LIMIT="1g")
env_off = dict(os.environ)
env_off.pop("LD_PRELOAD", None)
on, off = [], []
for i in range(200):
    for env, acc in ((env_off, off), (env_on, on)):
        t = time.perf_counter_ns()
        subprocess.run(["/bin/true"], env=env, check=True)
        acc.append(time.perf_counter_ns() - t)
d = (statistics.median(on) - statistics.median(off)) / 1000
print(f"    /bin/true x200: median {statistics.median(off)/1000:.0f} us without, "
      f"{statistics.median(on)/1000:.0f} us with the preload, difference {d:+.0f} us")
sys.exit(0 if d < 2000 else 1)  # generous: the loader maps one small library
PY
result "non-CUDA process cost (median difference below 2 ms)" $?

echo "shim: $PASS passed, $FAIL failed"
[ "$FAIL" -eq 0 ]
