#!/bin/sh
# bench.sh BUILD: hooked vs direct cost of cuLaunchKernel, cuMemAlloc_v2 and
# cuMemFree_v2 against the fake driver (make bench-shim). Instructions per call
# from callgrind (--toggle-collect on the loop), wall-clock medians from 15 reps.
# BENCH_N (20480 calls under callgrind) and BENCH_WALL_N (204800 calls per
# wall-clock rep) size it; the smoke run in tests/integration/test_bench_smoke.py
# makes them small.
B=${1:-build}
SHIM=$(cd "$B/lib" && pwd)/libtessera-cuda.so
FAKE=$(cd "$B/shim/tests/fake" && pwd)
BENCH=$(cd "$B/shim/tests" && pwd)/bench
W=$(mktemp -d "${TMPDIR:-/tmp}/tessera-shim-bench.XXXXXX")
trap 'rm -rf "$W"' EXIT
N=${BENCH_N:-20480}
WALL_N=${BENCH_WALL_N:-204800}

# cfg: direct | shim (preloaded, no limits) | limited (64 GiB cap + share 0.5).
# The environments have the same number of variables (padding), so that nothing
# but the shim differs between the runs.
run_env() {
    cfg=$1
    shift
    case $cfg in
    direct) env LD_LIBRARY_PATH="$FAKE" SHIM_BENCH_PAD_A=1 SHIM_BENCH_PAD_B=1 SHIM_BENCH_PAD_C=1 \
        SHIM_BENCH_PAD_D=1 "$@" ;;
    shim) env LD_PRELOAD="$SHIM" LD_LIBRARY_PATH="$FAKE" SHIM_BENCH_PAD_A=1 SHIM_BENCH_PAD_B=1 \
        SHIM_BENCH_PAD_C=1 "$@" ;;
    limited)
        mkdir -p "$W/c"
        env LD_PRELOAD="$SHIM" LD_LIBRARY_PATH="$FAKE" TESSERA_CUDA_SHARED_DIR="$W/c" \
            TESSERA_CUDA_MEM_LIMIT=64g TESSERA_CUDA_COMPUTE_SHARE=0.5 "$@"
        ;;
    esac
}

ir() { # cfg op -> instructions per call
    fn=bench_$2
    [ "$2" = free ] && fn=bench_free
    run_env "$1" valgrind --tool=callgrind --callgrind-out-file="$W/cg.out" \
        --toggle-collect="$fn" "$BENCH" "$2" $N >/dev/null 2>&1 || { echo "n/a"; return; }
    awk -v n=$N '/^(summary|totals):/ {s=$2} END {printf "%.0f", s / n}' "$W/cg.out"
}

if command -v valgrind >/dev/null 2>&1; then
    echo "instructions per call (callgrind, N=$N):"
    printf "  %-14s %8s %8s %8s %10s %10s\n" call direct shim limited "shim-dir" "lim-dir"
    for op in launch alloc free; do
        d=$(ir direct $op)
        s=$(ir shim $op)
        l=$(ir limited $op)
        # a run callgrind could not make prints n/a, and so do its differences
        awk -v o="$op" -v d="$d" -v s="$s" -v l="$l" 'function df(a, b) {
            return (a == "n/a" || b == "n/a") ? "n/a" : sprintf("%+d", a - b) }
            BEGIN { printf "  %-14s %8s %8s %8s %10s %10s\n", o, d, s, l, df(s, d), df(l, d) }'
    done
else
    echo "valgrind not installed: instruction counts skipped"
fi
echo "wall-clock ns per call (median of 15 x $WALL_N):"
printf "  %-14s %8s %8s %8s %10s %10s\n" call direct shim limited "shim-dir" "lim-dir"
set -- $(run_env direct "$BENCH" wall $WALL_N)
dl=$1 da=$2 df=$3
set -- $(run_env shim "$BENCH" wall $WALL_N)
sl=$1 sa=$2 sf=$3
set -- $(run_env limited "$BENCH" wall $WALL_N)
ll=$1 la=$2 lf=$3
for row in "launch $dl $sl $ll" "alloc $da $sa $la" "free $df $sf $lf"; do
    set -- $row
    awk -v o="$1" -v d="$2" -v s="$3" -v l="$4" \
        'BEGIN {printf "  %-14s %8.1f %8.1f %8.1f %+10.1f %+10.1f\n", o, d, s, l, s - d, l - d}'
done
