#!/usr/bin/env bash
# Before/after throughput check for a change that should not alter speed (a refactor): runs
# `strata bench --workloads fillrandom,readrandom,readmissing` with two `strata` binaries, RUNS
# times each, alternating which binary goes first (before-after, after-before, ...) so a drift in
# the machine's load falls on both alike.
#
#   scripts/bench_before_after.sh BEFORE_BIN AFTER_BIN [RUNS]
#
# Every run uses the engine's default options, the same seed (SEED, default 42) and NUM keys
# (default 1,000,000; about a minute per run on 2 cores), each on a fresh database in a temporary
# directory that is deleted afterwards. `--settle` flushes the memtable and waits for compactions
# before each read phase, so both binaries read a tree of the same shape (BENCH_FLAGS replaces it;
# set it empty to read the unsettled tree). Fill throughput is measured before the settle, so it
# is the fill alone.
#
# Output, per workload: the median ops/s of the before binary, of the after binary, and
# after/before. A ratio within a few percent of 1 is noise on a shared machine (compare the spread
# of the single runs, printed above the medians); fillrandom varies more than the read phases,
# since its background flushes and compactions compete for the cores. Then the tree each read
# phase ran on (the `tree strata before ...` line of the bench), once per binary and run: if the
# shapes differ, the read figures compare different trees, not the code. The load average is
# printed before and after every run. Logs, tables and JSON stay in $OUT (default a new temporary
# directory).
set -euo pipefail

if [ $# -lt 2 ]; then
  echo "usage: $0 BEFORE_BIN AFTER_BIN [RUNS]" >&2
  exit 64
fi
before_bin=$1
after_bin=$2
runs=${3:-3}
num=${NUM:-1000000}
seed=${SEED:-42}
bench_flags=${BENCH_FLAGS---settle}
workloads=fillrandom,readrandom,readmissing
out=${OUT:-$(mktemp -d /tmp/bench_before_after.XXXXXX)}
mkdir -p "$out"
for bin in "$before_bin" "$after_bin"; do
  [ -x "$bin" ] || { echo "not an executable: $bin" >&2; exit 64; }
done
echo "logs in $out"
echo "before: $before_bin"
echo "after:  $after_bin"
echo "runs: $runs, keys: $num, seed: $seed, workloads: $workloads, flags: ${bench_flags:-none}"

run_one() { # LABEL BIN RUN
  local label=$1 bin=$2 run=$3 dir rc=0
  dir=$(mktemp -d /tmp/bench_before_after_db.XXXXXX)
  echo "[$(date -u +%H:%M:%S)] run $run $label: load before: $(uptime | sed 's/.*load average: //')"
  # shellcheck disable=SC2086 # bench_flags is a list of flags
  "$bin" bench --workloads "$workloads" --num "$num" --seed "$seed" $bench_flags \
    --db "$dir/db" --json "$out/$label-$run.json" >"$out/$label-$run.txt" 2>&1 || rc=$?
  rm -rf "$dir"
  echo "[$(date -u +%H:%M:%S)] run $run $label: load after:  $(uptime | sed 's/.*load average: //')  exit $rc"
  if [ "$rc" -ne 0 ]; then
    echo "bench failed (exit $rc); its output: $out/$label-$run.txt" >&2
    tail -20 "$out/$label-$run.txt" >&2
    exit 1
  fi
}

for run in $(seq 1 "$runs"); do
  if [ $((run % 2)) -eq 1 ]; then
    run_one before "$before_bin" "$run"
    run_one after "$after_bin" "$run"
  else
    run_one after "$after_bin" "$run"
    run_one before "$before_bin" "$run"
  fi
done

echo
python3 - "$out" "$runs" "$workloads" <<'EOF'
import json, statistics, sys
out, runs, workloads = sys.argv[1], int(sys.argv[2]), sys.argv[3].split(",")
ops = {}  # (label, workload) -> [ops/s per run]
for label in ("before", "after"):
    for run in range(1, runs + 1):
        with open(f"{out}/{label}-{run}.json") as f:
            report = json.load(f)
        for result in report["results"]:
            ops.setdefault((label, result["phase"]), []).append(result["ops_per_sec"])

print("single runs (ops/s, in run order):")
for w in workloads:
    for label in ("before", "after"):
        print(f"  {w:<12} {label:<6} " + "  ".join(f"{v:>10.0f}" for v in ops[(label, w)]))
print()
print(f"{'workload':<12} {'before ops/s':>14} {'after ops/s':>14} {'after/before':>13}   (medians of {runs})")
for w in workloads:
    b = statistics.median(ops[("before", w)])
    a = statistics.median(ops[("after", w)])
    print(f"{w:<12} {b:>14.0f} {a:>14.0f} {a / b:>13.3f}")

print()
print("tree before each read phase (levels, runs, files, entries in tables, MiB):")
for w in workloads:
    title = f"tree strata before {w}: "
    shapes = {}
    for label in ("before", "after"):
        for run in range(1, runs + 1):
            with open(f"{out}/{label}-{run}.txt") as f:
                lines = f.read().splitlines()
            for i, line in enumerate(lines):
                if line.startswith(title):
                    summary = line[len(title):].split(", memtables")[0]
                    levels = []
                    for level in lines[i + 1:]:
                        if not level.startswith("  L"):
                            break
                        fields = level.split()
                        levels.append(f"{fields[0]}:{fields[2]}r/{fields[4]}f")
                    shapes.setdefault(summary + "  [" + " ".join(levels) + "]", []).append(f"{label}{run}")
    if not shapes:
        continue
    same = "same shape in every run" if len(shapes) == 1 else "SHAPES DIFFER"
    print(f"  {w} ({same}):")
    for shape, who in shapes.items():
        print(f"    {shape}  <- {' '.join(who)}")
EOF
