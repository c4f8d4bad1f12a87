#!/usr/bin/env bash
# Tuner vs reality: for three workload mixes, `strata tune` recommends a design
# (merge policy, size ratio, buffer/filter split) for this machine's device, and the
# recommendation and its two runners-up are run through `strata bench` with that mix. Each design
# runs RUNS times, the three designs in rotating order (run 1: 1 2 3, run 2: 2 3 1, ...); the
# table gives each design's median ops/s of the mix phase, the tree it ran on, and whether the
# recommendation was the fastest.
#
#   scripts/tuner_vs_reality.sh [RUNS] [NUM] [OPS] [MEMORY_BITS_PER_KEY]
#   defaults:                    3      1000000 200000 16
#
# Mixes (Mnemosyne's workload types, 32-byte keys and 96-byte values, the tuner told the same
# proportions): mnemosyne-i (25% inserts, 50% empty lookups, 25% updates: lookups=0.5, empty=1,
# updates=0.5), mnemosyne-ii:0 and mnemosyne-ii:1 (31 lookups, all existing or all empty, to 10
# updates: lookups=0.756, updates=0.244). Direct reads, a 1 MiB block cache, index and filter
# blocks pinned (the filter memory is the design's, in memory as the model assumes). The tuner's
# candidates are every registered merge policy (leveling, leveling-dynamic, tiering, lazy-leveling,
# garnering, ecotune, moose, each with Monkey's and uniform filters); for each mix a second table
# gives every policy's best rank and predicted ops/s, and the load average is printed before each
# mix (the machine may be shared), with the tuner's ties (designs within the spread of its measured
# costs; the recommendation is the tied design with the fewest merge I/Os per update, DESIGN.md
# §7.5), the best three designs' merges per update (by the replay of each design's merge policy,
# and the closed form it replaced), and the 1-minute load average as each run started is in the
# table's last column, in the order of the measured column's runs. Set CARGO_TARGET_DIR to reuse a
# build.
set -euo pipefail
runs=${1:-3}
num=${2:-1000000}
ops=${3:-200000}
memory=${4:-16}
root=$(cd "$(dirname "$0")/.." && pwd)
out=$(mktemp -d)
cargo build --release -p strata-cli --manifest-path "$root/Cargo.toml" >&2
strata="${CARGO_TARGET_DIR:-$root/target}/release/strata"
declare -A tuner_mix=(
  [mnemosyne-i]="lookups=0.5,empty=1,updates=0.5"
  [mnemosyne-ii:0]="lookups=0.756,empty=0,updates=0.244"
  [mnemosyne-ii:1]="lookups=0.756,empty=1,updates=0.244"
)
echo "| mix | rank | design (tuner) | predicted ops/s | measured ops/s (median of $runs) | runs | tree before the mix | load average per run |"
echo "|---|---|---|---|---|---|---|---|"
for mix in mnemosyne-i mnemosyne-ii:0 mnemosyne-ii:1; do
  dir="$out/${mix/:/-}"
  mkdir -p "$dir"
  echo "load average before $mix: $(cut -d' ' -f1-3 /proc/loadavg)" >&2
  "$strata" tune --entries "$num" --entry-size 128 --memory-bits-per-key "$memory" \
    --workload "${tuner_mix[$mix]}" --measure-device "$dir" --show 3 \
    --candidates-out "$dir" > "$dir/tune.txt"
  device=$(grep -oE 'read-us=[0-9.]+,merge-read-us=[0-9.]+,write-us=[0-9.]+' "$dir/tune.txt" | head -1)
  cpu=$(grep -oE 'cpu-lookup-us=[0-9.]+,cpu-run-us=[0-9.]+(,cpu-seek-run-us=[0-9.]+,cpu-block-us=[0-9.]+)?,cpu-update-us=[0-9.]+,cpu-merge-us=[0-9.]+,flush-us=[0-9.]+(,merge-threads=[0-9.]+)?(,merge-share=[0-9.]+)?' "$dir/tune.txt" | head -1)
  spread=$(grep -oE 'spread=device=[0-9.]+,processor=[0-9.]+,flush=[0-9.]+' "$dir/tune.txt" | head -1)
  spread=${spread#spread=}
  "$strata" tune --entries "$num" --entry-size 128 --memory-bits-per-key "$memory" \
    --workload "${tuner_mix[$mix]}" --device "$device,$cpu" --spread "$spread" --json > "$dir/tune.json"
  grep -E '^ties: ' "$dir/tune.txt" | sed "s/^/$mix: /" >&2
  python3 - "$dir/tune.json" "$mix" >&2 <<'PY'
import json, sys
candidates = json.load(open(sys.argv[1]))["candidates"]
best = {}
for rank, c in enumerate(candidates, 1):
    best.setdefault(c["policy"], (rank, c["predicted"]["throughput_ops"]))
print(f"{sys.argv[2]}: every policy's best candidate (rank, predicted ops/s):",
      ", ".join(f"{p} {r} {o:.0f}" for p, (r, o) in sorted(best.items(), key=lambda x: x[1][0])))
for rank, c in enumerate(candidates[:3], 1):
    w = c["writes"]
    merges = w.get("merges_per_update")
    closed = w.get("closed_form_merges_per_update")
    priced = f"{merges:.2f} merges/update by the replay, {closed:.2f} by the closed form" \
        if merges is not None else w["priced_by"]
    print(f"{sys.argv[2]}: rank {rank} {c['policy']} T={c['size_ratio']:.2f}: writes {priced}")
PY
  for run in $(seq 1 "$runs"); do
    for offset in 0 1 2; do
      rank=$(( (run - 1 + offset) % 3 + 1 ))
      cut -d' ' -f1 /proc/loadavg > "$dir/rank$rank-run$run.load"
      "$strata" bench --options "$dir/$rank.toml" --engines strata --workloads "load,$mix" \
        --num "$num" --reads "$ops" --key-size 32 --value-size 96 --direct-reads \
        --cache-bytes 1MiB --pin-index-filter > "$dir/rank$rank-run$run.txt"
    done
  done
  for rank in 1 2 3; do
    design=$(awk -v r="$rank" '$1 == r && NF > 10 { printf "%s, %s filters, T=%s, %s levels, %s MiB buffer, %s bits/key", $2, $3, $4, $5, $6, $7 }' "$dir/tune.txt")
    predicted=$(awk -v r="$rank" '$1 == r && NF > 10 { print $NF }' "$dir/tune.txt")
    measured=$(for run in $(seq 1 "$runs"); do
      awk -v m="$mix" '$1 == "strata" && $2 == m { print $4; exit }' "$dir/rank$rank-run$run.txt"
    done | sort -n | tr '\n' ' ')
    loads=$(for run in $(seq 1 "$runs"); do
      printf '%s:%s ' "$(awk -v m="$mix" '$1 == "strata" && $2 == m { print $4; exit }' "$dir/rank$rank-run$run.txt")" \
        "$(cat "$dir/rank$rank-run$run.load")"
    done)
    median=$(echo "$measured" | awk '{ print $(int((NF + 1) / 2)) }')
    tree=$(grep -E "^tree strata before" "$dir/rank$rank-run1.txt" | tail -1 |
      sed -E 's/^tree strata before [^ ]+: //; s/, [0-9]+ files.*//')
    echo "| $mix | $rank | $design | $predicted | $median | $measured | $tree | $loads |"
  done
done
echo "(tuner output, options files and reports in $out)"
