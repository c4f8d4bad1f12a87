#!/usr/bin/env bash
# Elastic filters with a cache: elastic filters against uniform filters on the same tree with a
# block cache, the measurement behind elastic filters' predicted cache-miss chance
# (`alloc/cache_model.rs`). Per seed and workload (type I: every lookup absent; type II: every
# lookup present), one `strata study regret` run on an unsettled tree with `--block-cache-bytes
# CACHE`; prints, per seed and as medians, elastic filters' unnecessary reads over uniform
# filters' on elastic filters' own tree ("vs unif"), the study's cache-weighted optimum over
# uniform's on the same tree, and the measured replays' lookups per second with both filters on
# that tree.
#
#   scripts/elastic_filters_with_cache.sh [SEEDS] [CACHE] [BUDGET] [STRATA]
#     defaults: "42 7 8 9 10 11", 8MiB, 2, the workspace's release build
#
# STRATA names another build to compare (e.g. one of an earlier commit). EXTRA adds flags to
# every study run (e.g. EXTRA=--cache-metadata: index and filters in the block cache, as
# Strata's default options keep them, instead of pinned). About 25-45 s per seed and workload
# on this machine.
set -euo pipefail
seeds=${1:-"42 7 8 9 10 11"}
cache=${2:-8MiB}
bpk=${3:-2}
root=$(cd "$(dirname "$0")/.." && pwd)
out=${OUT:-$(mktemp -d)}
mkdir -p "$out"
. "$root/scripts/strata_binary.sh"
strata=$(strata_binary "${4:-}")
for seed in $seeds; do
  for workload in typeI typeII; do
    empty=1
    [ "$workload" = typeII ] && empty=0
    "$strata" study regret --no-settle --bits-per-key "$bpk" --empty-fraction "$empty" \
      --seed "$seed" --filter-policies uniform,elastic --block-cache-bytes "$cache" ${EXTRA:-} \
      --json "$out/cache-$workload-$seed.json" > "$out/cache-$workload-$seed.txt"
    echo "$workload seed $seed done" >&2
  done
done
echo "JSON and tables in $out" >&2
python3 - "$out" <<'PY'
import glob, json, statistics, sys
out = sys.argv[1]
rows = {}
for path in sorted(glob.glob(f"{out}/cache-*.json")):
    doc = json.load(open(path))
    workload = "type I" if doc["empty_fraction"] == 1 else "type II"
    for row in doc["rows"]:
        if row["policy"].startswith("elastic"):
            rows.setdefault(workload, []).append((doc["seed"], row))
for workload, group in sorted(rows.items()):
    group.sort(key=lambda item: item[0])
    versus = [row["versus_uniform"] for _, row in group]
    optimum = [row["cache_weighted_unnecessary_reads_per_lookup"]
               / row["uniform_unnecessary_reads_per_lookup"] for _, row in group]
    speed = [row["policy_lookups_per_sec"] / row["uniform_lookups_per_sec"]
             for _, row in group if row.get("uniform_lookups_per_sec")]
    print(f"{workload}: elastic vs uniform on elastic's tree, median {statistics.median(versus):.3f}"
          f" ({min(versus):.3f}-{max(versus):.3f}); cache-weighted optimum vs uniform, median "
          f"{statistics.median(optimum):.3f}"
          + (f"; lookups/s vs uniform, median {statistics.median(speed):.3f}" if speed else ""))
    for (seed, row), opt in zip(group, optimum):
        print(f"  seed {seed:>3}: vs unif {row['versus_uniform']:.3f}  elastic "
              f"{row['policy_unnecessary_reads_per_lookup']:.4f}  uniform "
              f"{row['uniform_unnecessary_reads_per_lookup']:.4f}  optimum/unif {opt:.3f}  "
              f"bits in use {row['effective_bits_per_key']:.2f}  runs {row['runs']}"
              + (f"  lookups/s {row['policy_lookups_per_sec']:.0f} vs "
                 f"{row['uniform_lookups_per_sec']:.0f}" if "policy_lookups_per_sec" in row else ""))
PY
