#!/usr/bin/env bash
# Merge policies on Autumn's micro-benchmark, scaled to this machine. 2,000,000 keys of 16
# bytes with 100-byte values are loaded (random order), then point reads (readrandom) and short
# scans (seekrandom: a seek and 10 nexts) run against a block cache of 5% of the data, with
# buffered and with direct reads. Small level base: 2 MiB write buffers and files, so level 1 holds
# 2 MiB x T (the authors' script: T = 3, a 10 MB base). For each T in SIZE_RATIOS, leveling, lazy
# leveling, tiering and Garnering at every c in C_VALUES run alternately in one invocation
# (medians of RUNS). The harness prints the tree (levels, runs) beside every read figure, and the
# load's write amplification.
#
#   scripts/autumn.sh [RUNS] [SIZE_RATIOS] [C_VALUES] [IO]
#   defaults:          3      "2 3"         "0.4 0.6 0.8 1.0" "buffered direct"
#
# Strata only (no peer has Garnering or lazy leveling). Set CARGO_TARGET_DIR to reuse a build.
set -euo pipefail
runs=${1:-3}
ratios=${2:-"2 3"}
cs=${3:-"0.4 0.6 0.8 1.0"}
ios=${4:-"buffered direct"}
root=$(cd "$(dirname "$0")/.." && pwd)
out=$(mktemp -d)
cargo build --release -p strata-cli --manifest-path "$root/Cargo.toml" >&2
strata="${CARGO_TARGET_DIR:-$root/target}/release/strata"
common=(--workloads load,readrandom,seekrandom --num 2000000 --reads 200000 --key-size 16
        --value-size 100 --write-buffer-bytes 2MiB --target-file-bytes 2MiB --cache-fraction 0.05
        --bits-per-key 10 --settle --engines strata --runs "$runs")
# The tree each run read from (printed by --settle before the first read phase).
shapes() {
  grep -E "^[^ ]+ \(run [0-9]+/[0-9]+\)|^tree strata before readrandom" "$1" |
    sed -E 's/ bench: db .*//; s/^tree strata before readrandom: /    tree: /'
}
for t in $ratios; do
  for io in $ios; do
    flags=()
    [ "$io" = direct ] && flags=(--direct-reads)
    echo "== T = $t, $io reads: leveling, lazy leveling, tiering and Garnering at c = $cs, alternating"
    "$strata" bench --filter-policy uniform "${common[@]}" "${flags[@]}" --size-ratio "$t" --compare \
      --compaction leveling,lazy-leveling,tiering,garnering --garnering-c "${cs// /,}" \
      --json "$out/T$t-$io.json" > "$out/T$t-$io.txt"
    sed -n '/^medians/,$p' "$out/T$t-$io.txt"
    shapes "$out/T$t-$io.txt"
  done
done
echo "(JSON and full reports in $out)"
