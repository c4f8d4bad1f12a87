#!/usr/bin/env bash
# Model vs measurement: the cost model on the tree each run actually built
# (strata::model::tree, printed by `strata bench` under every point-read phase) against the
# device reads per lookup the engine counted (block-cache misses), for every merge policy and
# filter allocator given, once per block-cache size given. readrandom measures the existing-key
# stream, readmissing the missing-key one. Each row holds the model without the block cache
# (every data block a lookup probes a device read, as before the model saw the cache) and the
# model through it (`strata::model::tree::device_reads`), each with measured/predicted.
# Counts, not times: the machine's load changes nothing but how long it takes.
#
#   scripts/model_vs_measurement.sh [NUM] [READS] [BITS_PER_KEY_LIST] [CACHE_LIST] [POLICIES] [ALLOCATORS] [PIN]
#   defaults: 200000 50000 "3" "0,1MiB"
#             "leveling,leveling-dynamic,tiering,lazy-leveling,garnering,ecotune,moose"
#             "uniform,monkey,mnemosyne,mnemosyne-plus,elastic" pin
#
# PIN is `pin` (index and filter blocks pinned outside the cache: lookups read only data blocks
# through it) or `cache` (they compete for the cache too; the row then shows index and filter
# reads as well). Direct reads throughout, so every counted read is a device read. Set
# CARGO_TARGET_DIR to reuse a build.
set -euo pipefail
num=${1:-200000}
reads=${2:-50000}
bits=${3:-"3"}
caches=${4:-"0,1MiB"}
policies=${5:-"leveling,leveling-dynamic,tiering,lazy-leveling,garnering,ecotune,moose"}
allocators=${6:-"uniform,monkey,mnemosyne,mnemosyne-plus,elastic"}
pin=${7:-pin}
root=$(cd "$(dirname "$0")/.." && pwd)
out=$(mktemp -d)
cargo build --release -p strata-cli --manifest-path "$root/Cargo.toml" >&2
strata="${CARGO_TARGET_DIR:-$root/target}/release/strata"
pin_flag=()
if [ "$pin" = pin ]; then
  pin_flag=(--pin-index-filter)
fi
echo "| cache | configuration | phase | tree | data predicted without cache | measured/predicted | data predicted through cache | measured | measured/predicted | index+filter predicted | measured |"
echo "|---|---|---|---|---|---|---|---|---|---|---|"
IFS=',' read -r -a cache_list <<< "$caches"
for cache in "${cache_list[@]}"; do
  report="$out/model-$cache.txt"
  "$strata" bench --engines strata --filter-policy "$allocators" --compaction "$policies" \
    --workloads load,readrandom,readmissing --num "$num" --reads "$reads" --key-size 16 \
    --value-size 100 --write-buffer-bytes 1MiB --target-file-bytes 1MiB --size-ratio 4 \
    --bits-per-key "$bits" --direct-reads --cache-bytes "$cache" "${pin_flag[@]}" --settle \
    --json "$out/model-$cache.json" > "$report"
  # The prediction line reads: "model (strata::model::tree): device reads per lookup
  # predicted/measured: data P/M (R), index P/M (R), filter P/M (R); without the cache data P (R)".
  awk -v cache="$cache" '
    / \(run [0-9]+\/[0-9]+\) bench:/ { configuration = $1 }
    /^tree strata before / { sub(/^tree strata before [^ ]+: /, ""); sub(/, [0-9]+ files.*/, ""); tree = $0 }
    $1 == "strata" && ($2 == "readrandom" || $2 == "readmissing") { phase = $2 }
    /model \(strata::model::tree\)/ {
      line = $0
      sub(/.*predicted\/measured: /, "", line)
      gsub(/[(),;]/, " ", line)
      # data P/M R index P/M R filter P/M R without the cache data P R
      n = split(line, f, " ")
      split(f[2], d, "/"); split(f[5], i, "/"); split(f[8], fl, "/")
      printf "| %s | %s | %s | %s | %s | %s | %s | %s | %s | %.4f | %.4f |\n", cache, configuration, phase, tree,
        f[n-1], f[n], d[1], d[2], f[3], i[1] + fl[1], i[2] + fl[2]
    }
  ' "$report"
done
echo "(JSON and the full reports in $out)"
