#!/usr/bin/env bash
# Strata vs RocksDB vs fjall on 1,000,000 keys (16-byte keys, 100-byte values): fillrandom,
# readrandom, readmissing and seekrandom+next10, at 10 and 2 bits/key, buffered and direct reads,
# median of RUNS alternating runs. Prints one table of ops/s and I/Os per operation.
#
#   scripts/peers_table.sh [RUNS] [READS] [DIRECT_READS]      (defaults 3, 200000, 50000)
#
# Needs a build with the peers (README: "Peers"). Read phases with direct reads are device-bound,
# hence their smaller operation count.
set -euo pipefail
runs=${1:-3}
reads=${2:-200000}
direct_reads=${3:-50000}
root=$(cd "$(dirname "$0")/.." && pwd)
out=$(mktemp -d)
cargo build --release -p strata-cli --features peers --manifest-path "$root/Cargo.toml" >&2
strata="${CARGO_TARGET_DIR:-$root/target}/release/strata"
for bpk in 10 2; do
  for io in buffered direct; do
    flags=(--reads "$reads")
    [ "$io" = direct ] && flags=(--direct-reads --reads "$direct_reads")
    "$strata" bench --filter-policy uniform --engines strata,rocksdb,fjall --compare --runs "$runs" --num 1000000 \
      --bits-per-key "$bpk" --settle "${flags[@]}" \
      --workloads fillrandom,readrandom,readmissing,seekrandom --seek-nexts 10 \
      --json "$out/bpk$bpk-$io.json" > "$out/bpk$bpk-$io.txt"
    echo "bpk $bpk $io done" >&2
  done
done
python3 - "$out" <<'PY'
import json, sys
out = sys.argv[1]
def f(value, digits):
    return "-" if value is None else f"{value:.{digits}f}"
print(f"{'bpk':>3} {'io':<8} {'engine':<8} {'phase':<12} {'ops/s':>9} {'ratio':>6} {'data/op':>8} {'idx/op':>7} {'flt/op':>7} {'fp/lk':>7}")
for bpk in (10, 2):
    for io in ("buffered", "direct"):
        doc = json.load(open(f"{out}/bpk{bpk}-{io}.json"))
        for row in doc["medians"]:
            print(f"{bpk:>3} {io:<8} {row['engine']:<8} {row['phase']:<12} {row['ops_per_sec']:>9.0f} "
                  f"{f(row['ops_per_sec_ratio'], 2):>6} {f(row['data_io_per_op'], 3):>8} "
                  f"{f(row['index_io_per_op'], 3):>7} {f(row['filter_io_per_op'], 3):>7} "
                  f"{f(row['false_positives_per_lookup'], 4):>7}")
print(f"(JSON and full reports in {out})")
PY
