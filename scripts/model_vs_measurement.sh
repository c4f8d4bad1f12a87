#!/usr/bin/env bash
# Model vs measurement: the cost models on the tree each run actually built against what the
# engine counted, for every merge policy and filter allocator given, once per block-cache size
# given, three tables:
#
# - per lookup: strata::model::tree (printed by `strata bench` under every point-read phase)
#   against the device reads per lookup the engine counted (block-cache misses). readrandom
#   measures the existing-key stream, readmissing the missing-key one. Each row holds the model
#   without the block cache (every data block a lookup probes a device read, as before the model
#   saw the cache) and the model through it (`strata::model::tree::stream_device_reads`, with
#   the phase's distinct keys and lookups), each with measured/predicted, and the model through
#   it taking every lookup as a new key (as it did before it saw the phase's recurring keys,
#   DESIGN.md §7.6 "Recurring keys");
# - per seek: strata::model::seek (`Db::predicted_seek_reads`) against the blocks seekrandom read
#   per seek (a seek and 10 more entries, open scans), through the cache;
# - per write: the load's table bytes written per user byte, settle included, against the merge
#   policy replayed over the same stream (`Db::predicted_write_amplification`) and Monkey's
#   closed form on the settled tree (none for EcoTune and Moose).
#
# Then how many cells of each table are within 10%. Counts, not times: the machine's load
# changes nothing but how long it takes (the write amplification of a run depends on when the
# background compactions ran, which the load does change a little).
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
lookups="$out/lookups.md"
seeks="$out/seeks.md"
writes="$out/writes.md"
: > "$lookups"
: > "$seeks"
: > "$writes"
IFS=',' read -r -a cache_list <<< "$caches"
for cache in "${cache_list[@]}"; do
  report="$out/model-$cache.txt"
  "$strata" bench --engines strata --filter-policy "$allocators" --compaction "$policies" \
    --workloads load,readrandom,readmissing,seekrandom --num "$num" --reads "$reads" --key-size 16 \
    --value-size 100 --write-buffer-bytes 1MiB --target-file-bytes 1MiB --size-ratio 4 \
    --bits-per-key "$bits" --direct-reads --cache-bytes "$cache" "${pin_flag[@]}" --settle \
    --json "$out/model-$cache.json" > "$report"
  # The prediction lines read: "model (strata::model::tree): device reads per lookup
  # predicted/measured: data P/M (R), index P/M (R), filter P/M (R); without the cache data P (R)",
  # "model (strata::model::seek): device reads per seek predicted/measured: data P/M (R), ..."
  # and "model (strata::model::writes): table bytes written per user byte predicted/measured:
  # replay P/M (R); closed form on the tree's L disk levels C (R)" (or "... levels none for this
  # policy").
  awk -v cache="$cache" -v lookups="$lookups" -v seeks="$seeks" -v writes="$writes" '
    / \(run [0-9]+\/[0-9]+\) bench:/ { configuration = $1 }
    /^tree strata before / { sub(/^tree strata before [^ ]+: /, ""); sub(/, [0-9]+ files.*/, ""); tree = $0 }
    $1 == "strata" && ($2 == "readrandom" || $2 == "readmissing" || $2 == "seekrandom") { phase = $2 }
    /model \(strata::model::tree\)/ {
      line = $0
      sub(/.*predicted\/measured: /, "", line)
      gsub(/[(),;]/, " ", line)
      # data P/M R index P/M R filter P/M R without the cache data P R
      n = split(line, f, " ")
      split(f[2], d, "/"); split(f[5], i, "/"); split(f[8], fl, "/")
      # "every key new data P R ...": the model taking every lookup as a new key.
      new_keys = "- | -"
      for (k = 1; k <= n; k++) if (f[k] == "every") { new_keys = f[k + 4] " | " f[k + 5]; break }
      printf "| %s | %s | %s | %s | %s | %s | %s | %s | %s | %.4f | %.4f | %s |\n", cache, configuration, phase, tree,
        f[n-1], f[n], d[1], d[2], f[3], i[1] + fl[1], i[2] + fl[2], new_keys >> lookups
    }
    /model \(strata::model::seek\)/ {
      line = $0
      sub(/.*predicted\/measured: /, "", line)
      gsub(/[(),;]/, " ", line)
      split(line, f, " ")
      split(f[2], d, "/"); split(f[5], i, "/")
      printf "| %s | %s | %s | %s | %s | %s | %s | %s |\n", cache, configuration, tree, d[1], d[2], f[3], i[1], i[2] >> seeks
    }
    /model \(strata::model::writes\)/ {
      line = $0
      sub(/.*predicted\/measured: replay /, "", line)
      split(line, f, " ")
      split(f[1], r, "/")
      closed = line
      sub(/.*disk levels /, "", closed)
      gsub(/[()]/, "", closed)
      if (closed ~ /^none/) { closed = "- | -" } else { split(closed, c, " "); closed = c[1] " | " c[2] }
      levels = line
      sub(/.*on the tree.s /, "", levels)
      sub(/ disk levels.*/, "", levels)
      ratio = f[2]
      gsub(/[();]/, "", ratio)
      printf "| %s | %s | %s | %s | %s | %s | %s |\n", cache, configuration, levels, r[2], r[1], ratio, closed >> writes
    }
  ' "$report"
done
echo "Per lookup:"
echo
echo "| cache | configuration | phase | tree | data predicted without cache | measured/predicted | data predicted through cache | measured | measured/predicted | index+filter predicted | measured | data through cache, every key new | measured/predicted |"
echo "|---|---|---|---|---|---|---|---|---|---|---|---|---|"
cat "$lookups"
echo
echo "Per seek (seekrandom: a seek and 10 more entries):"
echo
echo "| cache | configuration | tree | data predicted | measured | measured/predicted | index predicted | measured |"
echo "|---|---|---|---|---|---|---|---|"
cat "$seeks"
echo
echo "Per write (the load, settle included; table bytes per user byte):"
echo
echo "| cache | configuration | disk levels | measured | replay predicted | measured/predicted | closed form predicted | measured/predicted |"
echo "|---|---|---|---|---|---|---|---|"
cat "$writes"
echo
# Cells within 10%: a ratio column in [0.90, 1.10].
for cache in "${cache_list[@]}"; do
  awk -F'|' -v cache="$cache" '
    function trim(s) { gsub(/ /, "", s); return s }
    function ok(r) { return r != "-" && r + 0 >= 0.9 && r + 0 <= 1.1 }
    FILENAME ~ /lookups/ && trim($2) == cache { n1++; if (ok(trim($10))) k1++; if (ok(trim($14))) k5++ }
    FILENAME ~ /seeks/ && trim($2) == cache { n2++; if (ok(trim($7))) k2++ }
    FILENAME ~ /writes/ && trim($2) == cache {
      n3++; if (ok(trim($7))) k3++
      if (trim($9) != "-") { n4++; if (ok(trim($9))) k4++ }
    }
    END {
      printf "cache %s: within 10%%: per lookup %d/%d (every key new %d/%d), per seek %d/%d, per write replay %d/%d, closed form %d/%d\n",
        cache, k1, n1, k5, n1, k2, n2, k3, n3, k4, n4
    }
  ' "$lookups" "$seeks" "$writes"
done
echo "(JSON and the full reports in $out)"
