#!/usr/bin/env bash
# Index format: the user-key index with delta-encoded block handles (docs/FORMAT.md) against
# the format before it: the same benchmark on a build of BEFORE (a git revision, built in a
# temporary worktree) and on this tree, alternating, RUNS times each. Per entry size:
#   type II: 210,000 keys of 128 bytes, values of 384, 4 bits/key, 2 MiB buffers and files, T = 4;
#   type I:  1,000,000 keys of 32 bytes, values of 96, same settings;
# loaded in random order and settled, then 100,000 readrandom lookups with direct reads and a
# 1 MiB block cache (index and filter blocks cached, not pinned). Prints the table bytes after
# the load (the data blocks and filters are the same; the index is what differs), index blocks
# and bytes read per lookup, and lookups per second, as medians, with every run.
#
#   scripts/index_format.sh [BEFORE] [RUNS]      defaults: d1932a9~1 (the last commit before) 3
#
# Set CARGO_TARGET_DIR to reuse a build.
set -euo pipefail
before=${1:-d1932a9~1}
runs=${2:-3}
root=$(cd "$(dirname "$0")/.." && pwd)
out=$(mktemp -d)
target="${CARGO_TARGET_DIR:-$root/target}"
git -C "$root" worktree add --detach "$out/before-src" "$before" > /dev/null 2>&1
trap 'git -C "$root" worktree remove --force "$out/before-src"' EXIT
# The old revision builds in its own target directory: in a shared one, cargo does not copy a
# binary it finds up to date back over the one the other build left.
CARGO_TARGET_DIR="$out/before-target" cargo build --release -p strata-cli \
  --manifest-path "$out/before-src/Cargo.toml" >&2
cp "$out/before-target/release/strata" "$out/strata-before"
rm -rf "$out/before-target"
cargo build --release -p strata-cli --manifest-path "$root/Cargo.toml" >&2
cp "$target/release/strata" "$out/strata-after"
declare -A sizes=([typeII]="--num 210000 --key-size 128 --value-size 384"
                  [typeI]="--num 1000000 --key-size 32 --value-size 96")
echo "| entries | build | table MiB | index blocks/lookup | KiB read/lookup | lookups/s (median) | runs (lookups/s) |"
echo "|---|---|---|---|---|---|---|"
for size in typeII typeI; do
  for run in $(seq 1 "$runs"); do
    for build in before after; do
      rm -rf "$out/db"
      # shellcheck disable=SC2086
      "$out/strata-$build" bench --filter-policy uniform --workloads fillrandom,readrandom ${sizes[$size]} --reads 100000 \
        --bits-per-key 4 --settle --write-buffer-bytes 2MiB --target-file-bytes 2MiB \
        --size-ratio 4 --cache-bytes 1MiB --direct-reads --db "$out/db" \
        --json "$out/$size-$build-$run.json" > /dev/null
    done
  done
  for build in before after; do
    jq -s -r --arg size "$size" --arg build "$build" '
      def median: sort | .[(length - 1) / 2 | floor];
      [.[] | .results] as $runs
      | ($runs | map(.[0].table_bytes / 1048576) | median) as $mib
      | ($runs | map(.[1].io_per_op.index) | median) as $index
      | ($runs | map(.[1].read_bytes_per_op / 1024) | median) as $kib
      | ($runs | map(.[1].ops_per_sec)) as $ops
      | "| \($size) | \($build) | \($mib * 100 | round / 100) | \($index * 1000 | round / 1000) | \($kib * 100 | round / 100) | \($ops | median | round) | \($ops | map(round) | join(" ")) |"
    ' "$out"/"$size-$build"-*.json
  done
done
echo "(JSON in $out)"
