#!/usr/bin/env bash
# Compaction workers (Options::max_background_compactions): the same loads with 1, 2 and 3
# workers, run by run alternating the worker count (RUNS rounds), and the median of each:
#   1. fillrandom: 1,000,000 keys, 16-byte keys, 100-byte values, 10 bits/key, 1 MiB write buffer
#      and files, T = 4 (small buffers, so that compaction, not the memtable, sets the pace);
#   2. the direct-read load (as in scripts/writes_vs_peers.sh): 300,000 entries of 128-byte
#      keys and 384-byte values, 2 MiB write buffers and files, T = 4, direct reads.
# Prints one line per load and worker count: median ops/s, p99 µs, write stalls and stall ms,
# write amplification, and the tree shape (levels, runs) of the median run.
#
#   scripts/compaction_workers.sh [RUNS] [WORKERS...]     (default 3 rounds; workers 1 2 3)
#
# Strata only (no peers needed). Set CARGO_TARGET_DIR to reuse a build.
set -euo pipefail
runs=${1:-3}
shift || true
workers=("$@")
[ ${#workers[@]} -eq 0 ] && workers=(1 2 3)
root=$(cd "$(dirname "$0")/.." && pwd)
out=$(mktemp -d)
cargo build --release -p strata-cli --manifest-path "$root/Cargo.toml" >&2
strata="${CARGO_TARGET_DIR:-$root/target}/release/strata"
fill=(--workloads fillrandom --num 1000000 --bits-per-key 10 --write-buffer-bytes 1MiB
      --target-file-bytes 1MiB --size-ratio 4 --engines strata)
load=(--workloads load --num 300000 --key-size 128 --value-size 384 --write-buffer-bytes 2MiB
      --target-file-bytes 2MiB --size-ratio 4 --direct-reads --engines strata)
for run in $(seq 1 "$runs"); do
  for w in "${workers[@]}"; do
    "$strata" bench --filter-policy uniform "${fill[@]}" --max-background-compactions "$w" --json "$out/fill-$w-$run.json" \
      > /dev/null
    "$strata" bench --filter-policy uniform "${load[@]}" --max-background-compactions "$w" --json "$out/load-$w-$run.json" \
      > /dev/null
  done
done
python3 - "$out" "$runs" "${workers[@]}" <<'EOF'
import json, statistics, sys
out, runs, workers = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
for load in ("fill", "load"):
    for w in workers:
        rows = []
        for run in range(1, runs + 1):
            for r in json.load(open(f"{out}/{load}-{w}-{run}.json"))["results"]:
                rows.append(r)
        rows.sort(key=lambda r: r["ops_per_sec"])
        median = rows[len(rows) // 2]
        runs_text = ", ".join(f"{r['ops_per_sec']:,.0f}" for r in rows)
        print(f"{load:5} workers {w}: median {statistics.median(r['ops_per_sec'] for r in rows):,.0f} ops/s "
              f"(runs {runs_text}); median run: "
              f"p99 {median['latency_us']['p99']:.1f} us, stalls {median['write_stalls']} "
              f"({median['write_stall_ms']:.0f} ms), w-amp {median['write_amp']:.2f}, "
              f"levels {median['levels']}, runs {median['runs']}")
EOF
echo "(JSON in $out)"
