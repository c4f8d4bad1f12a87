#!/usr/bin/env bash
# Write throughput and amplification against RocksDB and fjall, every engine in the same run,
# medians of RUNS alternating runs (the harness alternates engines run by run with --runs):
#   1. the direct-read load: 300,000 entries of 128-byte keys and 384-byte values, 2 MiB write
#      buffers and files, T = 4, with direct reads and with buffered reads (Strata vs RocksDB);
#   2. fillrandom: 1,000,000 keys, 16-byte keys, 100-byte values, 10 bits/key, 64 MiB write
#      buffer (Strata vs RocksDB vs fjall).
# Prints the harness's median tables (ops/s, ratio to Strata, p50/p99, write stalls).
#
#   scripts/writes_vs_peers.sh [RUNS]          (default 3)
#
# Needs a build with the peers (README: "Peers"); set CARGO_TARGET_DIR to reuse one.
set -euo pipefail
runs=${1:-3}
root=$(cd "$(dirname "$0")/.." && pwd)
out=$(mktemp -d)
cargo build --release -p strata-cli --features peers --manifest-path "$root/Cargo.toml" >&2
strata="${CARGO_TARGET_DIR:-$root/target}/release/strata"
load=(--workloads load --num 300000 --key-size 128 --value-size 384 --write-buffer-bytes 2MiB
      --target-file-bytes 2MiB --size-ratio 4 --engines strata,rocksdb --compare --runs "$runs")
for io in direct buffered; do
  flags=()
  [ "$io" = direct ] && flags=(--direct-reads)
  echo "== load, $io reads" 
  "$strata" bench --filter-policy uniform "${load[@]}" "${flags[@]}" --json "$out/load-$io.json" > "$out/load-$io.txt"
  sed -n '/^medians/,$p' "$out/load-$io.txt"
done
echo "== fillrandom"
"$strata" bench --filter-policy uniform --workloads fillrandom --num 1000000 --engines strata,rocksdb,fjall --compare \
  --runs "$runs" --bits-per-key 10 --json "$out/fillrandom.json" > "$out/fillrandom.txt"
sed -n '/^medians/,$p' "$out/fillrandom.txt"
echo "(JSON and full reports in $out)"
