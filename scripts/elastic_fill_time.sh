#!/bin/bash
# Fill time of elastic filters against uniform filters: wall-clock seconds of one settled
# `fillrandom` per filter family (Bloom, Ribbon) and filter policy (uniform, elastic with its
# default modules on disk), RUNS runs of each. The instruction counts of the same comparison are
# scripts/elastic_fill_instructions.sh; this one times it.
#
#   scripts/elastic_fill_time.sh [BIN] [NUM]
#   scripts/elastic_fill_time.sh --report DIR [DIR...]
#
# BIN: a release build of `strata` (default: the workspace's, built first); NUM: keys written
# (default: the bench's, 1,000,000). Every run is `strata bench --workloads fillrandom --settle`
# at the bench's defaults (64 MiB memtables, 10 bits per key) with seed 7, so the writes and the
# filters are the same in every run. `--settle` makes the flush and compactions the fill caused
# (where every filter is built, docs/DESIGN.md §3.5) part of what is timed: the fill's time is the
# phase's (num / ops/s) plus the settle's, and the process's processor time (user + system, from
# /usr/bin/time) is printed beside it.
#
# The four configurations run in a rotating order (ABBA within a family, the families' order
# alternating: every configuration takes every position once in four runs) and the two policies
# of a family are always adjacent, so a change in the machine's load hits every configuration
# alike and a pair (elastic run i against uniform run i) shares the load; the load average is
# recorded before every run. Prints, per family: every run's figures, the medians, elastic's
# ratio to uniform of the medians and the median of the per-pair ratios, and each run's tree after
# the settle (`strata stats`: runs, files, entries and filter bits per key by level). Besides the
# times: the process's processor seconds (`cpu s`), and the fill phase's flush and compaction
# threads' processor seconds as the bench counts them (`bg cpu s`, the settle's left out): the
# threads that build the filters.
#
# Per family and time, the per-pair ratios' median comes with its distribution-free interval (the
# order statistics that hold the median with at least 95% probability, from the binomial). With
# `--report`, nothing runs: the runs kept in the OUT directories given (sets of the same binary and
# configuration) are pooled into one report.
#
# Environment: RUNS (default 5), BITS_PER_KEY (the budget, default the bench's 10; elastic writes
# the most spare bits at 2), WRITE_BUFFER (memtable size, default the bench's 64 MiB; 4MiB gives
# recipe 35's many flushes and compactions), SEED (default 7), OUT (a directory to keep the logs
# in; default a temporary one, deleted afterwards).
set -euo pipefail
if [ "${1:-}" = "--report" ]; then
  shift
  DIRS=("$@")
else
  source "$(dirname "$0")/strata_binary.sh"
  BIN=$(strata_binary "${1:-}")
  NUM=${2:-}
  RUNS=${RUNS:-5}
  SEED=${SEED:-7}
  if [ -n "${OUT:-}" ]; then
    mkdir -p "$OUT"
  else
    OUT=$(mktemp -d)
    trap 'rm -rf "$OUT"' EXIT
  fi
  ARGS=(--workloads fillrandom --settle --runs 1 --seed "$SEED")
  if [ -n "$NUM" ]; then ARGS+=(--num "$NUM"); fi
  if [ -n "${BITS_PER_KEY:-}" ]; then ARGS+=(--bits-per-key "$BITS_PER_KEY"); fi
  if [ -n "${WRITE_BUFFER:-}" ]; then ARGS+=(--write-buffer-bytes "$WRITE_BUFFER"); fi
  echo "binary $BIN; runs $RUNS; bench ${ARGS[*]}"
  # Orders of the four configurations in a cycle of four runs.
  ORDERS=(
    "bloom-uniform bloom-elastic ribbon-uniform ribbon-elastic"
    "ribbon-elastic ribbon-uniform bloom-elastic bloom-uniform"
    "ribbon-uniform ribbon-elastic bloom-uniform bloom-elastic"
    "bloom-elastic bloom-uniform ribbon-elastic ribbon-uniform"
  )
  for run in $(seq 1 "$RUNS"); do
    for config in ${ORDERS[$(((run - 1) % 4))]}; do
      family=${config%-*}
      policy=${config#*-}
      base="$OUT/$config-$run"
      db="$OUT/db"
      rm -rf "$db"
      cut -d' ' -f1-3 /proc/loadavg > "$base.load"
      /usr/bin/time -f "%e %U %S" -o "$base.time" "$BIN" bench "${ARGS[@]}" \
        --filter-family "$family" --filter-policy "$policy" --db "$db" --json "$base.json" \
        > "$base.log" 2>&1
      "$BIN" stats "$db" > "$base.stats" 2>&1
      rm -rf "$db"
      echo "run $run $config: load $(cat "$base.load"); $(grep -m1 '^settled in' "$base.log")"
    done
  done
  DIRS=("$OUT")
fi

python3 - "${DIRS[@]}" <<'PY'
import glob, json, re, statistics, sys
from math import comb
dirs = sys.argv[1:]
med = statistics.median

def run(d, family, policy, i):
    base = f"{d}/{family}-{policy}-{i}"
    r = json.load(open(base + ".json"))["results"][0]
    log = open(base + ".log").read()
    settle = float(re.search(r"^settled in ([\d.]+) s", log, re.M).group(1))
    wall, user, system = map(float, open(base + ".time").read().split()[-3:])
    fill = r["ops"] / r["ops_per_sec"]
    levels = []
    for line in open(base + ".stats"):
        m = re.match(r"\s+(\d+)\s+(\d+)\s+(\d+)\s+(\d+)\s+[\d.]+\s+[\d.]+\s+([\d.]+)\s*$", line)
        if m:
            levels.append(f"L{m[1]} {m[2]} runs {m[3]} files {int(m[4]):,} entries {m[5]} bits/key")
    return {
        "ops": r["ops_per_sec"], "fill": fill, "settle": settle, "total": fill + settle,
        "cpu": user + system, "wall": wall,
        "bg": sum((r["cpu_seconds"] or {}).get(k) or 0 for k in ("flush", "compaction")),
        "load": open(base + ".load").read().split()[0],
        "use": r["effective_bits_per_key"], "disk": r["avg_bits_per_key"],
        "wamp": r["write_amp"], "rebuilds": r.get("filter_rebuilds") or 0,
        "tree": "; ".join(levels),
    }

def interval(xs):
    """The order statistics around the median of xs that hold it with at least 95% probability."""
    xs, n = sorted(xs), len(xs)
    best = None
    for k in range(1, n // 2 + 1):
        cover = sum(comb(n, j) for j in range(k, n - k + 1)) / 2**n
        if cover >= 0.95:
            best = (xs[k - 1], xs[n - k], cover)
    return best

runs = [(d, i) for d in dirs for i in range(1, len(glob.glob(f"{d}/bloom-uniform-*.json")) + 1)]
for family in ["bloom", "ribbon"]:
    data = {p: [run(d, family, p, i) for d, i in runs] for p in ["uniform", "elastic"]}
    print(f"\n== {family} ==")
    print("policy  run  load  ops/s    fill s  settle s  fill+settle s  cpu s  bg cpu s  bpk use/disk  w-amp  rebuilds  tree after the settle")
    for p, rows in data.items():
        for i, r in enumerate(rows, 1):
            print(f"{p:8}{i:3}  {r['load']:>5} {r['ops']:8.0f}  {r['fill']:6.3f}  {r['settle']:8.3f}  "
                  f"{r['total']:13.3f}  {r['cpu']:5.2f}  {r['bg']:8.2f}  {r['use']:5.2f}/{r['disk']:5.2f}  "
                  f"{r['wamp']:5.2f}  {r['rebuilds']:8}  {r['tree']}")
    print("policy   median ops/s  median fill s  median settle s  median fill+settle s  median cpu s  median bg cpu s")
    for p, rows in data.items():
        print(f"{p:8} {med(r['ops'] for r in rows):12.0f}  {med(r['fill'] for r in rows):13.3f}  "
              f"{med(r['settle'] for r in rows):15.3f}  {med(r['total'] for r in rows):20.3f}  "
              f"{med(r['cpu'] for r in rows):12.2f}  {med(r['bg'] for r in rows):15.2f}")
    for key, name in [("fill", "fill s"), ("total", "fill+settle s"), ("cpu", "cpu s"), ("bg", "bg cpu s")]:
        u, e = data["uniform"], data["elastic"]
        if min(r[key] for r in u) <= 0:
            print(f"elastic/uniform {name}: a uniform run measured 0")
            continue
        pairs = [b[key] / a[key] for a, b in zip(u, e)]
        bounds = interval(pairs)
        within = f", {bounds[2]:.1%} interval {bounds[0]:.3f}-{bounds[1]:.3f}" if bounds else ""
        print(f"elastic/uniform {name}: of the medians {med(r[key] for r in e) / med(r[key] for r in u):.3f}; "
              f"per pair median {med(pairs):.3f}{within} (" + " ".join(f"{x:.3f}" for x in pairs) + ")")
PY
