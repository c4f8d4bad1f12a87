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
#
# Environment (defaults in brackets): FILTER_POLICY [uniform] and FILTER_FAMILY [bloom] for the
# fill and the lookups; MODES ["pinned cached"]; WORKLOADS ["readmissing readrandom"]; DHAT [1]
# (0 skips the allocation counts); DB_PER_BINARY [0] (1 fills a database with each binary, for
# binaries that write different filter formats).
set -euo pipefail
OUT=$1; shift
mkdir -p "$OUT"
POLICY=${FILTER_POLICY:-uniform}
FAMILY=${FILTER_FAMILY:-bloom}
MODES=${MODES:-pinned cached}
WORKLOADS=${WORKLOADS:-readmissing readrandom}
DHAT=${DHAT:-1}
DB_PER_BINARY=${DB_PER_BINARY:-0}
COMMON="--num 200000 --seed 42 --bits-per-key 10 --write-buffer-bytes 4MiB --target-file-bytes 2MiB --cache-bytes 64MiB --filter-policy $POLICY --filter-family $FAMILY"
fill() {  # fill BIN DB
  if [ ! -d "$2" ]; then
    "$1" bench $COMMON --workloads fillrandom --db "$2" > "$2.fill.log" 2>&1
    "$1" bench $COMMON --workloads readrandom --reads 10 --settle --db "$2" >> "$2.fill.log" 2>&1
  fi
}
fill "$1" "$OUT/db"
for BIN in "$@"; do
  TAG=$(basename "$BIN")
  DB="$OUT/db"
  if [ "$DB_PER_BINARY" = 1 ]; then DB="$OUT/db-$TAG"; fill "$BIN" "$DB"; fi
  for mode in $MODES; do
    PIN=""; [ $mode = pinned ] && PIN="--pin-index-filter"
    for wl in $WORKLOADS; do
      for reads in 20000 60000; do
        run="$OUT/$TAG-$mode-$wl-$reads"
        rm -rf "$run.db"; cp -r "$DB" "$run.db"
        valgrind --tool=callgrind --callgrind-out-file="$run.cg" "$BIN" bench $COMMON $PIN \
          --workloads $wl --reads $reads --db "$run.db" --json "$run.json" > "$run.cg.log" 2>&1
        if [ "$DHAT" = 1 ]; then
          rm -rf "$run.db"; cp -r "$DB" "$run.db"
          valgrind --tool=dhat --dhat-out-file="$run.dhat" "$BIN" bench $COMMON $PIN \
            --workloads $wl --reads $reads --db "$run.db" > "$run.dhat.log" 2>&1
        fi
        rm -rf "$run.db"
      done
    done
  done
done
python3 - "$OUT" "$MODES" "$WORKLOADS" "$DHAT" "$@" <<'PY'
import json, os, sys
out, modes, workloads, dhat, bins = sys.argv[1], sys.argv[2].split(), sys.argv[3].split(), sys.argv[4] == "1", sys.argv[5:]
def ir(path):
    for line in open(path):
        if line.startswith(("summary:", "totals:")):
            return int(line.split()[1])
def allocs(path):
    return sum(pp["tbk"] for pp in json.load(open(path))["pps"])
print(f"{'binary':24} {'index/filter':12} {'phase':12} {'instr/lookup':>12} {'allocs/lookup':>13} {'data/op':>8} {'index/op':>9} {'filter/op':>9} {'bytes/op':>9}")
for b in bins:
    tag = os.path.basename(b)
    for mode in modes:
        for wl in workloads:
            a, z = (f"{out}/{tag}-{mode}-{wl}-{n}" for n in (20000, 60000))
            r = json.load(open(z + ".json"))["results"][0]
            print(f"{tag:24} {mode:12} {wl:12} {(ir(z + '.cg') - ir(a + '.cg')) / 40000:12.1f} "
                  f"{(allocs(z + '.dhat') - allocs(a + '.dhat')) / 40000 if dhat else float('nan'):13.3f} "
                  f"{r['io_per_op']['data']:8.4f} {r['io_per_op']['index']:9.5f} "
                  f"{r['io_per_op']['filter']:9.5f} {r['read_bytes_per_op']:9.2f}")
PY
