#!/usr/bin/env bash
# Elastic filter rebuilds: elastic filters with and without the priced rebuild (DESIGN.md §3.5
# "Rebuild, priced"), on `strata study regret`'s unsettled trees, with Merlin recording during the
# replay so the filters learn the lookups. Per seed and workload (type I: every lookup absent;
# type II: every lookup present), one run without rebuilds and one with `--rebuild-rate RATE` (the
# warm-up replays the lookups until a round brings no rebuild); prints medians over the seeds of
# the unnecessary reads per lookup, the regret, the bits in use and on disk, and the rebuilds.
#
#   scripts/elastic_filter_rebuilds.sh [SEEDS] [RATE] [BUDGET]
#     defaults: "42 7 8 9 10", 8MiB (Strata's default rate), 2
#
# About a minute per seed and workload on this machine.
set -euo pipefail
seeds=${1:-"42 7 8 9 10"}
rate=${2:-8MiB}
bpk=${3:-2}
root=$(cd "$(dirname "$0")/.." && pwd)
out=${OUT:-$(mktemp -d)}
mkdir -p "$out"
cargo build --release -p strata-cli --manifest-path "$root/Cargo.toml" >&2
strata="${CARGO_TARGET_DIR:-$root/target}/release/strata"
for workload in typeI typeII; do
  empty=1
  [ "$workload" = typeII ] && empty=0
  for seed in $seeds; do
    for mode in off on; do
      extra=()
      [ "$mode" = on ] && extra=(--rebuild-rate "$rate")
      "$strata" study regret --no-settle --access-statistics --bits-per-key "$bpk" \
        --empty-fraction "$empty" --seed "$seed" --filter-policies elastic "${extra[@]}" \
        --json "$out/rebuild-$workload-$seed-$mode.json" > "$out/rebuild-$workload-$seed-$mode.txt"
      echo "$workload seed $seed rebuilds $mode done" >&2
    done
  done
done
echo "JSON and tables in $out" >&2
python3 - "$out" <<'PY'
import glob, json, statistics, sys
out = sys.argv[1]
rows = {}
for path in sorted(glob.glob(f"{out}/rebuild-*.json")):
    doc = json.load(open(path))
    workload = "typeI" if doc["empty_fraction"] == 1 else "typeII"
    mode = "on" if doc.get("rebuild_rate", 0) > 0 else "off"
    for row in doc["rows"]:
        rows.setdefault((workload, mode), []).append((doc["seed"], row))
def span(values, digits):
    return f"{statistics.median(values):.{digits}f} ({min(values):.{digits}f}-{max(values):.{digits}f})"
print(f"{'workload':<8} {'rebuilds':<8} {'seeds':>5} {'unnec/lookup':<24} {'regret':<22} "
      f"{'in use':<18} {'on disk':<18} {'rebuilt files':<16} {'MiB rebuilt':<18} rounds")
for (workload, mode), group in sorted(rows.items()):
    r = [row for _, row in group]
    print(f"{workload:<8} {mode:<8} {len(r):>5} "
          f"{span([x['policy_unnecessary_reads_per_lookup'] for x in r], 4):<24} "
          f"{span([x['regret'] for x in r if x['regret'] is not None], 3):<22} "
          f"{span([x['effective_bits_per_key'] for x in r], 2):<18} "
          f"{span([x['average_bits_per_key'] for x in r], 2):<18} "
          f"{span([x['filter_rebuilds'] for x in r], 0):<16} "
          f"{span([x['filter_rebuild_bytes'] / 2**20 for x in r], 1):<18} "
          f"{span([x['warmup_rounds'] for x in r], 0)}")
print()
print("per seed (unnecessary reads per lookup, regret): off -> on")
for workload in ("typeI", "typeII"):
    off = dict((s, x) for s, x in rows.get((workload, "off"), []))
    on = dict((s, x) for s, x in rows.get((workload, "on"), []))
    for seed in sorted(set(off) & set(on)):
        a, b = off[seed], on[seed]
        print(f"  {workload} seed {seed}: {a['policy_unnecessary_reads_per_lookup']:.4f} / {a['regret']:.3f} -> "
              f"{b['policy_unnecessary_reads_per_lookup']:.4f} / {b['regret']:.3f} "
              f"({b['filter_rebuilds']} rebuilds, {b['warmup_rounds']} rounds)")
PY
