#!/bin/bash
# Point-lookup cost, load-independent: instructions (callgrind) and heap allocations (DHAT) per
# lookup, and the engine's counted I/O per lookup, for readmissing and readrandom with pinned and
# cached index/filter blocks, for one or more `strata` binaries on the same database.
#
#   scripts/lookup_cost.sh OUT BIN [BIN...]
#
# Fills OUT/db once with the first binary (200,000 keys, 10 bits/key, 4 MiB memtables, 2 MiB
# files) and reopens it once so that its WAL is empty. Each figure is the difference between a
# run of 60,000 and one of 20,000 lookups, divided by 40,000: opening, recovery and the harness's
# setup cancel out (the harness's own per-operation work, key generation, timing and histogram,
# about 650 instructions, stays in).
set -euo pipefail
OUT=$1; shift
mkdir -p "$OUT"
COMMON="--num 200000 --seed 42 --bits-per-key 10 --write-buffer-bytes 4MiB --target-file-bytes 2MiB --cache-bytes 64MiB"
if [ ! -d "$OUT/db" ]; then
  "$1" bench --filter-policy uniform $COMMON --workloads fillrandom --db "$OUT/db" > "$OUT/fill.log" 2>&1
  "$1" bench --filter-policy uniform $COMMON --workloads readrandom --reads 10 --settle --db "$OUT/db" >> "$OUT/fill.log" 2>&1
fi
for BIN in "$@"; do
  TAG=$(basename "$BIN")
  for mode in pinned cached; do
    PIN=""; [ $mode = pinned ] && PIN="--pin-index-filter"
    for wl in readmissing readrandom; do
      for reads in 20000 60000; do
        run="$OUT/$TAG-$mode-$wl-$reads"
        rm -rf "$run.db"; cp -r "$OUT/db" "$run.db"
        valgrind --tool=callgrind --callgrind-out-file="$run.cg" "$BIN" bench --filter-policy uniform $COMMON $PIN \
          --workloads $wl --reads $reads --db "$run.db" --json "$run.json" > "$run.cg.log" 2>&1
        rm -rf "$run.db"; cp -r "$OUT/db" "$run.db"
        valgrind --tool=dhat --dhat-out-file="$run.dhat" "$BIN" bench --filter-policy uniform $COMMON $PIN \
          --workloads $wl --reads $reads --db "$run.db" > "$run.dhat.log" 2>&1
        rm -rf "$run.db"
      done
    done
  done
done
python3 - "$OUT" "$@" <<'PY'
import json, os, sys
out, bins = sys.argv[1], sys.argv[2:]
def ir(path):
    for line in open(path):
        if line.startswith(("summary:", "totals:")):
            return int(line.split()[1])
def allocs(path):
    return sum(pp["tbk"] for pp in json.load(open(path))["pps"])
print(f"{'binary':24} {'index/filter':12} {'phase':12} {'instr/lookup':>12} {'allocs/lookup':>13} {'data/op':>8} {'index/op':>9} {'filter/op':>9} {'bytes/op':>9}")
for b in bins:
    tag = os.path.basename(b)
    for mode in ["pinned", "cached"]:
        for wl in ["readmissing", "readrandom"]:
            a, z = (f"{out}/{tag}-{mode}-{wl}-{n}" for n in (20000, 60000))
            r = json.load(open(z + ".json"))["results"][0]
            print(f"{tag:24} {mode:12} {wl:12} {(ir(z + '.cg') - ir(a + '.cg')) / 40000:12.1f} "
                  f"{(allocs(z + '.dhat') - allocs(a + '.dhat')) / 40000:13.3f} "
                  f"{r['io_per_op']['data']:8.4f} {r['io_per_op']['index']:9.5f} "
                  f"{r['io_per_op']['filter']:9.5f} {r['read_bytes_per_op']:9.2f}")
PY
