#!/usr/bin/env bash
# Strata vs RocksDB's own db_bench on the same machine, alternating, median of N runs.
#
#   scripts/compare_db_bench.sh [RUNS]       (default 3)
#   PEERS=1 scripts/compare_db_bench.sh 3    also runs the harness's own RocksDB engine (a build
#                                            with --features peers) with the same settings, to
#                                            check the harness against db_bench
#
# Needs db_bench (Debian: apt-get install rocksdb-tools) and python3. Settings on both sides:
# 1,000,000 keys, 16-byte keys, 100-byte values, no compression, 10 bits/key Bloom filters,
# 64 MiB write buffer, WAL on without fsync, one thread.
#   fillrandom                       db_bench --benchmarks=fillrandom
#   readrandom (everything cached)   db_bench --benchmarks=fillseq,readrandom --cache_size=1GiB
set -euo pipefail
runs=${1:-3}
root=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
features=()
[ "${PEERS:-0}" = 1 ] && features=(--features peers)
cargo build --release -p strata-cli "${features[@]}" --manifest-path "$root/Cargo.toml" >&2
strata="${CARGO_TARGET_DIR:-$root/target}/release/strata"
common_dbb=(--num=1000000 --key_size=16 --value_size=100 --compression_type=none --bloom_bits=10
            --write_buffer_size=67108864 --threads=1 --seed=42)
common_strata=(--num 1000000 --key-size 16 --value-size 100 --bits-per-key 10 --write-buffer-bytes 64MiB)
for run in $(seq 1 "$runs"); do
  rm -rf "$work/dbb"
  db_bench --benchmarks=fillrandom "${common_dbb[@]}" --db="$work/dbb" --sync=false --disable_wal=false \
    > "$work/dbb-fillrandom-$run.txt" 2>&1
  rm -rf "$work/dbb"
  "$strata" bench --filter-policy uniform --workloads fillrandom "${common_strata[@]}" --json "$work/strata-fillrandom-$run.json" \
    > "$work/strata-fillrandom-$run.txt"
  db_bench --benchmarks=fillseq,readrandom "${common_dbb[@]}" --cache_size=1073741824 --db="$work/dbb" \
    > "$work/dbb-readrandom-$run.txt" 2>&1
  rm -rf "$work/dbb"
  "$strata" bench --filter-policy uniform --workloads fillseq,readrandom "${common_strata[@]}" --cache-bytes 1GiB \
    --json "$work/strata-readrandom-$run.json" > "$work/strata-readrandom-$run.txt"
  if [ "${PEERS:-0}" = 1 ]; then
    "$strata" bench --engines rocksdb --workloads fillrandom "${common_strata[@]}" \
      --json "$work/rocksdb-fillrandom-$run.json" > "$work/rocksdb-fillrandom-$run.txt"
    "$strata" bench --engines rocksdb --workloads fillseq,readrandom "${common_strata[@]}" \
      --cache-bytes 1GiB --json "$work/rocksdb-readrandom-$run.json" > "$work/rocksdb-readrandom-$run.txt"
  fi
  echo "run $run done" >&2
done
python3 - "$work" "$runs" <<'PY'
import json, re, statistics, sys
work, runs = sys.argv[1], int(sys.argv[2])
def dbb(phase, file_phase):
    out = []
    for run in range(1, runs + 1):
        text = open(f"{work}/dbb-{file_phase}-{run}.txt").read()
        m = re.search(rf"^{phase}\s*:\s*[\d.]+ micros/op (\d+) ops/sec", text, re.M)
        out.append(int(m.group(1)))
    return out
def strata(phase, file_phase, engine="strata"):
    out = []
    for run in range(1, runs + 1):
        doc = json.load(open(f"{work}/{engine}-{file_phase}-{run}.json"))
        out.append(next(r["ops_per_sec"] for r in doc["results"] if r["phase"] == phase))
    return out
print(f"{'phase':<12} {'db_bench ops/s (runs)':<36} {'strata ops/s (runs)':<36} {'ratio of medians':>16}")
for phase, file_phase in [("fillrandom", "fillrandom"), ("fillseq", "readrandom"), ("readrandom", "readrandom")]:
    a, b = dbb(phase, file_phase), strata(phase, file_phase)
    ma, mb = statistics.median(a), statistics.median(b)
    print(f"{phase:<12} {int(ma):>8} {str([int(x) for x in a]):<27} {int(mb):>8} {str([int(x) for x in b]):<27} {mb / ma:>16.2f}")
import os
if os.path.exists(f"{work}/rocksdb-fillrandom-1.json"):
    print()
    print(f"{'phase':<12} {'db_bench ops/s':<36} {'harness rocksdb ops/s':<36} {'ratio of medians':>16}")
    for phase, file_phase in [("fillrandom", "fillrandom"), ("fillseq", "readrandom"), ("readrandom", "readrandom")]:
        a, b = dbb(phase, file_phase), strata(phase, file_phase, "rocksdb")
        ma, mb = statistics.median(a), statistics.median(b)
        print(f"{phase:<12} {int(ma):>8} {str([int(x) for x in a]):<27} {int(mb):>8} {str([int(x) for x in b]):<27} {mb / ma:>16.2f}")
PY
