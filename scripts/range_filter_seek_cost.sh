#!/usr/bin/env bash
# Range-filter seek cost: what a short closed-range seek costs with and without
# Strata's range filters (`--range-filter-bits`), on the trees four merge policies build, beside
# RocksDB (with `iterate_upper_bound`, no range filter). Each configuration gets a fresh tree:
# NUM keys loaded by fillrandom (1 MiB write buffer, 10 bits per key, size ratio 10, an 8 MiB
# block cache as in the EcoTune paper), then READS seeks into `[key i, key i + 1)` (one key each:
# `seekrandom --seek-nexts 0 --seek-bounded`), then READS point lookups for comparison. RUNS
# runs, medians. Prints per policy and range filter setting the seeks per second, the data and
# index blocks read per seek, the runs a range filter ruled out per seek, and the range filters'
# memory in bits per key loaded.
#
#   scripts/range_filter_seek_cost.sh [BITS] [POLICIES] [RUNS] [NUM] [READS]
#     defaults: "0 6 10", "ecotune,leveling,lazy-leveling,tiering", 3, 1000000, 300000
#
# PEERS=1 adds RocksDB (needs the `peers` feature: set CARGO_TARGET_DIR to a peers build, which
# the script then builds with `--features peers`). About 15 minutes with the defaults and PEERS=1.
# OUT=dir keeps the files.
set -euo pipefail
bits_list=${1:-"0 6 10"}
policies=${2:-ecotune,leveling,lazy-leveling,tiering}
runs=${3:-3}
num=${4:-1000000}
reads=${5:-300000}
root=$(cd "$(dirname "$0")/.." && pwd)
out=${OUT:-$(mktemp -d)}
mkdir -p "$out"
features=()
engines=strata
if [ "${PEERS:-0}" = 1 ]; then
  features=(--features peers)
  engines=strata,rocksdb
fi
cargo build --release -p strata-cli "${features[@]}" --manifest-path "$root/Cargo.toml" >&2
strata="${CARGO_TARGET_DIR:-$root/target}/release/strata"
for bits in $bits_list; do
  # RocksDB has no range filter: measure it once, beside the first setting.
  run_engines=$engines
  if [ "$bits" != "$(echo $bits_list | cut -d' ' -f1)" ]; then
    run_engines=strata
  fi
  "$strata" bench --filter-policy uniform --engines "$run_engines" --workloads fillrandom,seekrandom,readrandom \
    --num "$num" --reads "$reads" --seek-nexts 0 --seek-bounded \
    --compaction "$policies" --size-ratio 10 --write-buffer-bytes 1MiB --bits-per-key 10 \
    --cache-bytes 8MiB --range-filter-bits "$bits" --runs "$runs" \
    --json "$out/seek-$bits.json" > "$out/seek-$bits.txt"
  echo "range filter bits $bits done" >&2
done
echo "JSON and tables in $out" >&2
python3 - "$out" "$num" <<'PY'
import glob, json, re, statistics, sys
out, num = sys.argv[1], int(sys.argv[2])
def med(values):
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else float("nan")
print(f"{'configuration':<30} {'rf bits':>7} {'seeks/s':>9} {'data/seek':>9} {'index/seek':>10} "
      f"{'rf out/seek':>11} {'rf bits/key':>13} {'gets/s':>9}  runs/levels")
for path in sorted(glob.glob(f"{out}/seek-*.json"), key=lambda p: int(re.findall(r"seek-(\d+)", p)[0])):
    bits = re.findall(r"seek-(\d+)", path)[0]
    data = json.load(open(path))
    rows = {}
    for result in data["results"]:
        rows.setdefault(result["configuration"], {}).setdefault(result["phase"], []).append(result)
    for label, phases in rows.items():
        seeks = phases.get("seekrandom", [])
        gets = phases.get("readrandom", [])
        rf_bytes = med([r.get("range_filter_bytes") for r in seeks])
        rf_bits = rf_bytes * 8 / num
        shape = f"{seeks[-1]['runs']}/{seeks[-1]['levels']}" if seeks else "-"
        print(f"{label:<30} {bits if label.startswith('strata') else '-':>7} "
              f"{med([r['ops_per_sec'] for r in seeks]):>9.0f} "
              f"{med([r['io_per_op']['data'] for r in seeks]):>9.3f} "
              f"{med([r['io_per_op']['index'] for r in seeks]):>10.3f} "
              f"{med([r.get('range_filter_negatives_per_op') for r in seeks]):>11.3f} "
              f"{rf_bits:>13.2f} {med([r['ops_per_sec'] for r in gets]):>9.0f}  {shape}")
PY
