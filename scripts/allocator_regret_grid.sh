#!/usr/bin/env bash
# Allocator regret grid: every filter allocator on unsettled trees (`strata study regret
# --no-settle`), at BUDGETS bits per key, on type-I lookups (every key absent) and type-II
# lookups (every key present), SEEDS seeds each. Per configuration: the bits per key in use
# during the load (least once a last level existed, most), at the end, the unnecessary
# data-block reads per lookup, and the regret (the policy's reads over the per-file optimum's on
# the same tree and lookups). Prints one row per policy, budget and workload: medians over the
# seeds, with the least and most.
#
#   scripts/allocator_regret_grid.sh [SEEDS] [BUDGETS] [POLICIES]
#     defaults: "42 7 8 9 10", "2 3 5", "uniform,monkey,mnemosyne,mnemosyne-plus,elastic"
#
# About 25 s per seed, budget and workload on this machine (600,000 keys, 200,000 lookups).
set -euo pipefail
seeds=${1:-"42 7 8 9 10"}
budgets=${2:-"2 3 5"}
policies=${3:-uniform,monkey,mnemosyne,mnemosyne-plus,elastic}
root=$(cd "$(dirname "$0")/.." && pwd)
out=${OUT:-$(mktemp -d)}
mkdir -p "$out"
cargo build --release -p strata-cli --manifest-path "$root/Cargo.toml" >&2
strata="${CARGO_TARGET_DIR:-$root/target}/release/strata"
for bpk in $budgets; do
  for workload in typeI typeII; do
    empty=1
    [ "$workload" = typeII ] && empty=0
    for seed in $seeds; do
      "$strata" study regret --no-settle --bits-per-key "$bpk" --empty-fraction "$empty" \
        --seed "$seed" --filter-policies "$policies" \
        --json "$out/regret-$bpk-$workload-$seed.json" > "$out/regret-$bpk-$workload-$seed.txt"
      echo "bpk $bpk $workload seed $seed done" >&2
    done
  done
done
echo "JSON and tables in $out" >&2
python3 - "$out" <<'PY'
import glob, json, statistics, sys
out = sys.argv[1]
rows = {}
for path in sorted(glob.glob(f"{out}/regret-*.json")):
    doc = json.load(open(path))
    workload = "typeI" if doc["empty_fraction"] == 1 else "typeII"
    for row in doc["rows"]:
        rows.setdefault((doc["bits_per_key"], workload, row["policy"]), []).append(row)
def span(values, digits):
    values = [v for v in values if v is not None]
    if not values:
        return "-"
    return f"{statistics.median(values):.{digits}f} ({min(values):.{digits}f}-{max(values):.{digits}f})"
print(f"{'bpk':>3} {'workload':<7} {'policy':<15} {'seeds':>5} {'load least':>11} {'load most':>9} "
      f"{'end in use':<20} {'unnec/lookup':<24} {'regret':<22} runs")
for (bpk, workload, policy), group in sorted(rows.items()):
    least = [r["in_use_during_load"]["least"] for r in group]
    most = [r["in_use_during_load"]["most"] for r in group]
    least_known = [v for v in least if v is not None]
    print(f"{bpk:>3g} {workload:<7} {policy:<15} {len(group):>5} "
          f"{(min(least_known) if least_known else float('nan')):>11.2f} {max(most):>9.2f} "
          f"{span([r['effective_bits_per_key'] for r in group], 2):<20} "
          f"{span([r['policy_unnecessary_reads_per_lookup'] for r in group], 4):<24} "
          f"{span([r['regret'] for r in group], 3):<22} "
          f"{','.join(str(r['runs']) for r in group)}")
PY
