#!/bin/bash
# What elastic filters' module layout costs, load-independent, for one or more `strata` binaries
# (e.g. builds before and after a change of the layout, DESIGN.md §3.5 "Modules on disk"):
#
#   fill       instructions per key of a 200,000-key `fillrandom` (every thread: the puts, the
#              flushes that build level-0 filters, the compactions), callgrind;
#   filters    the filter bytes on disk per key and in use after the fill (`strata bench`'s
#              summary: bits per key on disk and in use);
#   lookups    instructions per lookup of `readmissing` and `readrandom` on the filled tree,
#              unsettled (level-0 runs left as the fill left them), pinned index and filters:
#              (I(60,000 lookups) - I(20,000)) / 40,000 as in recipe 10.
#
#   scripts/elastic_module_layout_cost.sh OUT BPK BIN [BIN...]
#
# Each binary fills its own database (the filters differ), with default options (elastic filters,
# access statistics) at BPK bits per key. Several minutes per binary under valgrind.
set -euo pipefail
OUT=$1; BPK=$2; shift 2
mkdir -p "$OUT"
COMMON="--num 200000 --seed 42 --bits-per-key $BPK --write-buffer-bytes 4MiB --target-file-bytes 2MiB --cache-bytes 64MiB"
for BIN in "$@"; do
  TAG=$(basename "$BIN")-$BPK
  rm -rf "$OUT/$TAG.db"
  valgrind --tool=callgrind --callgrind-out-file="$OUT/$TAG-fill.cg" "$BIN" bench $COMMON \
    --workloads fillrandom --db "$OUT/$TAG.db" --json "$OUT/$TAG-fill.json" > "$OUT/$TAG-fill.log" 2>&1
  for wl in readmissing readrandom; do
    for reads in 20000 60000; do
      run="$OUT/$TAG-$wl-$reads"
      rm -rf "$run.db"; cp -r "$OUT/$TAG.db" "$run.db"
      valgrind --tool=callgrind --callgrind-out-file="$run.cg" "$BIN" bench $COMMON --pin-index-filter \
        --workloads $wl --reads $reads --db "$run.db" --json "$run.json" > "$run.log" 2>&1
      rm -rf "$run.db"
    done
  done
done
python3 - "$OUT" "$BPK" "$@" <<'PY'
import json, os, sys
out, bpk, bins = sys.argv[1], sys.argv[2], sys.argv[3:]
def ir(path):
    for line in open(path):
        if line.startswith(("summary:", "totals:")):
            return int(line.split()[1])
print(f"{'binary':24} {'fill instr/key':>14} {'bpk on disk':>11} {'bpk in use':>10} "
      f"{'readmissing instr':>17} {'readrandom instr':>16} {'filter blocks/missing':>21}")
for b in bins:
    tag = f"{os.path.basename(b)}-{bpk}"
    fill = json.load(open(f"{out}/{tag}-fill.json"))["results"][0]
    row = [f"{tag:24}", f"{ir(f'{out}/{tag}-fill.cg') / 200000:14.0f}",
           f"{fill.get('avg_bits_per_key', float('nan')):11.2f}",
           f"{fill.get('effective_bits_per_key', float('nan')):10.2f}"]
    for wl in ["readmissing", "readrandom"]:
        a, z = (f"{out}/{tag}-{wl}-{n}" for n in (20000, 60000))
        row.append(f"{(ir(z + '.cg') - ir(a + '.cg')) / 40000:17.1f}")
    r = json.load(open(f"{out}/{tag}-readmissing-60000.json"))["results"][0]
    row.append(f"{r['io_per_op']['filter']:21.4f}")
    print(" ".join(row))
PY
