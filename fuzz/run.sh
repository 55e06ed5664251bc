#!/bin/sh
# run.sh: replay fuzz/regressions/ and then run each libFuzzer harness.
#   sh fuzz/run.sh <bindir> <workdir> <seconds> <name>=<max_len> ...
# For each name: the binary is <bindir>/fuzz_<name>; fuzz/regressions/<name>-*.bin
# are replayed first (each must pass); then fuzz/corpus/<name>/ is copied to
# <workdir>/<name>/corpus (the repository is never written) and libFuzzer runs
# for <seconds> with -max_len, a per-input timeout, and fuzz/<name>.dict when
# present. Crash, leak, timeout or OOM artifacts and the log land in
# <workdir>/<name>/. Prints "fuzz: N passed, M failed"; exits 1 when M > 0.
set -u

bindir=$1 workdir=$2 secs=$3
shift 3
here=$(cd "$(dirname "$0")" && pwd)
pass=0 fail=0 failed=""

for spec in "$@"; do
  name=${spec%%=*} maxlen=${spec#*=}
  bin=$bindir/fuzz_$name
  dir=$workdir/$name
  rm -rf "$dir"
  mkdir -p "$dir/corpus"
  log=$dir/fuzz.log
  ok=yes

  regs=$(find "$here/regressions" -maxdepth 1 -type f -name "$name-*" 2>/dev/null | sort)
  if [ -n "$regs" ]; then
    # shellcheck disable=SC2086 # one argument per file; names have no spaces
    if ! "$bin" -artifact_prefix="$dir/" $regs >"$dir/regressions.log" 2>&1; then
      echo "fuzz: $name: a regression input fails again; see $dir/regressions.log" >&2
      grep -E '^(==[0-9]+==ERROR|SUMMARY|Running:)' "$dir/regressions.log" | tail -n 6 >&2
      ok=no
    fi
  fi

  if [ "$ok" = yes ]; then
    if [ -d "$here/corpus/$name" ]; then cp "$here/corpus/$name"/* "$dir/corpus/" 2>/dev/null; fi
    dict=
    [ -f "$here/$name.dict" ] && dict="-dict=$here/$name.dict"
    # shellcheck disable=SC2086 # $dict is empty or one argument
    "$bin" -max_total_time="$secs" -max_len="$maxlen" -timeout=10 -rss_limit_mb=2048 \
      -print_final_stats=1 -artifact_prefix="$dir/" $dict "$dir/corpus" >"$log" 2>&1
    rc=$?
    runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
    cov=$(grep -E '^#[0-9]+' "$log" | tail -n 1 | sed -n 's/.*cov: \([0-9]*\).*/\1/p')
    if [ "$rc" -ne 0 ]; then
      ok=no
      echo "fuzz: $name: libFuzzer exited $rc; see $log" >&2
      grep -E '^(==[0-9]+==ERROR|SUMMARY|artifact_prefix|Test unit written)' "$log" | tail -n 6 >&2
    else
      echo "fuzz: $name: ok (${secs}s, ${runs:-?} runs, cov ${cov:-?}, corpus $(ls "$dir/corpus" | wc -l))"
    fi
  fi

  if [ "$ok" = yes ]; then
    pass=$((pass + 1))
  else
    fail=$((fail + 1))
    failed="$failed $name"
  fi
done

echo "fuzz: $pass passed, $fail failed${failed:+ (failed:$failed)}"
[ "$fail" -eq 0 ]
