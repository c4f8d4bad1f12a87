#!/usr/bin/env bash
# Index block restart interval: table bytes (so index bytes) and instructions per cached lookup
# for Strata's --index-restart-interval 1, 4 and 16.
#   1. 210,000 keys of 128 bytes (values of 384) loaded in key order with 2 MiB buffers and files
#      and 4 bits/key, settled: the bytes of the tree (`strata inspect`), whose only difference
#      between the runs is the index blocks (the same entries, data blocks and filters).
#   2. Instructions per lookup under callgrind: 50,000 keys (16-byte keys) loaded in order, then
#      20,000 and 60,000 cached readrandom lookups; (I(60k) - I(20k)) / 40,000.
#
#   scripts/index_restart_interval.sh
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cargo build --release -p strata-cli --manifest-path "$root/Cargo.toml" >&2
strata="${CARGO_TARGET_DIR:-$root/target}/release/strata"
for interval in 1 4 16; do
  rm -rf "$work/db"
  "$strata" bench --filter-policy uniform --workloads fillseq --num 210000 --key-size 128 --value-size 384 --size-ratio 4 \
    --bits-per-key 4 --settle --write-buffer-bytes 2MiB --target-file-bytes 2MiB \
    --index-restart-interval "$interval" --db "$work/db" > /dev/null
  tree=$("$strata" inspect "$work/db" | grep '^tree:')
  declare -A instructions=()
  for reads in 20000 60000; do
    rm -rf "$work/cg"
    valgrind --tool=callgrind --callgrind-out-file="$work/cg.out" "$strata" bench --filter-policy uniform \
      --workloads fillseq,readrandom --num 50000 --reads "$reads" --settle --cache-bytes 64MiB \
      --index-restart-interval "$interval" --db "$work/cg" > /dev/null 2> "$work/cg.err"
    instructions[$reads]=$(grep -o 'Collected : [0-9]*' "$work/cg.err" | head -1 | grep -o '[0-9]*$')
  done
  per_lookup=$(( (instructions[60000] - instructions[20000]) / 40000 ))
  echo "interval $interval: $tree; $per_lookup instructions per cached lookup"
done
