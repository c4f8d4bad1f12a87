#!/usr/bin/env bash
# What Merlin's access statistics (DESIGN.md §4) cost and what they buy, with elastic filters
# (the default allocator): lookups per second and unnecessary data-block reads per lookup with
# statistics on (sampling every lookup, or one in EVERY) and off, against uniform filters, on
#   cached     the main job's shape (500,000 keys, 4 MiB buffer, settled, 8 MiB cache, buffered
#              reads): readrandom and readmissing, uniform keys;
#   pressure   3 bits/key, a cache of 5% of the data, direct reads, 2 MiB buffers and files, T = 4,
#              paced fill, an unsettled tree: the Mnemosyne paper's type-II mix with 90% empty
#              lookups over uniform keys;
#   skewed     the same with the lookups on a hot spot (normal keys, mean 0.5, sd 0.05 of the
#              key range).
# Each is one `strata bench --compare --runs RUNS` (configurations alternate from run to run,
# medians reported, trees printed with the statistics' memory, `Stats::access_statistics_bytes`).
# The bench takes that memory from the block cache, so every configuration has the same memory.
#
#   scripts/access_statistics_cost.sh [RUNS] [STRATA]      # defaults: 3, the release build
#
# EVERY lists the sampling rates to run (default "1"; "1 4" adds one lookup in 4).
#
# OUT keeps the JSON and logs (default: a temporary directory). About 4 minutes per workload and
# rate at RUNS = 3 on 2 cores; run it on a quiet machine.
set -euo pipefail
runs=${1:-3}
root=$(cd "$(dirname "$0")/.." && pwd)
out=${OUT:-$(mktemp -d)}
mkdir -p "$out"
. "$root/scripts/strata_binary.sh"
strata=$(strata_binary "${2:-}")
pressure="--num 500000 --reads 200000 --bits-per-key 3 --cache-fraction 0.05 --direct-reads
  --write-buffer-bytes 2MiB --target-file-bytes 2MiB --size-ratio 4 --paced-fill"
run() {  # NAME SAMPLE_EVERY FLAGS...
  local name=$1 every=$2; shift 2
  "$strata" bench "$@" --filter-policy elastic,uniform --access-statistics on,off \
    --access-sample-every "$every" --compare --runs "$runs" --json "$out/$name-$every.json" \
    > "$out/$name-$every.log" 2>&1
  echo "== $name, statistics sampling one lookup in $every"
  sed -n '/^tree strata before/,/^  access statistics/{p;/^  access statistics/q}' "$out/$name-$every.log"
  sed -n '/^medians of/,$p' "$out/$name-$every.log" | grep -v fill
}
for every in ${EVERY:-1}; do
  run cached "$every" --preset quick --workloads fillrandom,readrandom,readmissing
  run pressure "$every" $pressure --workloads fillrandom,mnemosyne-ii:0.9
  run skewed "$every" $pressure --workloads fillrandom,mnemosyne-ii:0.9 --distribution normal:0.5:0.05
done
echo "logs and JSON in $out"
