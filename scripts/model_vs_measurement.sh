#!/usr/bin/env bash
# Model vs measurement: the cost model on the tree each run actually built
# (strata::model::tree, printed by `strata bench` under every point-read phase) against the
# data-block reads per lookup the engine counted. Leveling, tiering, lazy leveling and Garnering
# at two filter budgets, direct reads, pinned index and filter blocks and by default no block
# cache, so that every data block a lookup probes is a device read, as the model assumes (give a
# CACHE such as 1MiB to see what a cache serves: the false positives of small, recent runs, whose
# blocks it keeps); readrandom measures the existing-key cost V, readmissing the zero-result cost
# R.
#
#   scripts/model_vs_measurement.sh [NUM] [READS] [BITS_PER_KEY_LIST] [CACHE]
#   defaults:                        500000 100000 "2,6"              0
#
# Set CARGO_TARGET_DIR to reuse a build.
set -euo pipefail
num=${1:-500000}
reads=${2:-100000}
bits=${3:-"2,6"}
cache=${4:-0}
root=$(cd "$(dirname "$0")/.." && pwd)
out=$(mktemp -d)
cargo build --release -p strata-cli --manifest-path "$root/Cargo.toml" >&2
strata="${CARGO_TARGET_DIR:-$root/target}/release/strata"
"$strata" bench --filter-policy uniform --engines strata --workloads load,readrandom,readmissing --num "$num" \
  --reads "$reads" --key-size 16 --value-size 100 --write-buffer-bytes 1MiB \
  --target-file-bytes 1MiB --size-ratio 4 --compaction leveling,tiering,lazy-leveling,garnering \
  --bits-per-key "$bits" --direct-reads --cache-bytes "$cache" --pin-index-filter --settle \
  --json "$out/model.json" > "$out/model.txt"
# configuration, phase, tree, predicted, measured, measured/predicted
awk '
  / \(run [0-9]+\/[0-9]+\) bench:/ { configuration = $1 }
  /^tree strata before / { sub(/^tree strata before [^ ]+: /, ""); sub(/, [0-9]+ files.*/, ""); tree = $0 }
  $1 == "strata" && ($2 == "readrandom" || $2 == "readmissing") { phase = $2 }
  /model \(strata::model::tree\)/ {
    predicted = $3; measured = $(NF-3); ratio = $NF; sub(/\)$/, "", ratio)
    printf "| %s | %s | %s | %s | %s | %s |\n", configuration, phase, tree, predicted, measured, ratio
  }
' "$out/model.txt" | sed '1i | configuration | phase | tree | predicted reads/lookup | measured | measured/predicted |\n|---|---|---|---|---|---|'
echo "(JSON and the full report in $out)"
