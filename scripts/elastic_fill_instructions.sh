#!/bin/bash
# Fill cost of elastic filters against uniform filters, load-independent: instructions (callgrind,
# every thread of the process) of one `fillrandom` per binary, filter family and filter policy,
# and the instructions inside the filter builds (`FilterFamily::build_modules`, inclusive).
#
#   scripts/elastic_fill_instructions.sh OUT BIN [BIN...]
#
# 200,000 keys, seed 7, 4 MiB memtables (several flushes and compactions); elastic filters keep
# their default modules on disk (docs/DESIGN.md §3.5, "modules on disk": at the default budget of
# 10, five modules of 2.5 bits per key on levels 0 and 1; at 2, the level-0 and level-1 headrooms
# of 12 and 6 bits per key). Prints, per binary and
# family, the total and filter-build instructions of each policy and elastic's ratio to uniform.
# About a minute per run under valgrind; not timed, so independent of the machine's load.
# BITS_PER_KEY=B sets the filter budget (the bench's default, 10, when unset).
set -euo pipefail
OUT=$1; shift
mkdir -p "$OUT"
COMMON="--workloads fillrandom --num 200000 --runs 1 --seed 7 --write-buffer-bytes 4MiB"
if [ -n "${BITS_PER_KEY:-}" ]; then COMMON="$COMMON --bits-per-key $BITS_PER_KEY"; fi
for BIN in "$@"; do
  TAG=$(basename "$BIN")
  for family in bloom ribbon; do
    for policy in uniform elastic; do
      run="$OUT/$TAG-$family-$policy"
      rm -rf "$run.db"
      valgrind --tool=callgrind --callgrind-out-file="$run.cg" "$BIN" bench $COMMON \
        --filter-family $family --filter-policy $policy --db "$run.db" > "$run.log" 2>&1
      rm -rf "$run.db"
      callgrind_annotate --inclusive=yes --threshold=100 "$run.cg" > "$run.annotate" 2>/dev/null
    done
  done
done
python3 - "$OUT" "$@" <<'PY'
import os, re, sys
out, bins = sys.argv[1], sys.argv[2:]
def total(path):
    for line in open(path):
        if line.startswith(("summary:", "totals:")):
            return int(line.split()[1])
def builds(path):
    # The largest inclusive count of a function named build_modules (the family's dispatch,
    # or the family's own where the dispatch is inlined).
    best = 0
    for line in open(path):
        m = re.match(r"\s*([\d,]+)\s.*::build_modules\b", line)
        if m:
            best = max(best, int(m.group(1).replace(",", "")))
    return best
print("| binary | family | uniform instr | elastic instr | elastic / uniform | uniform builds | elastic builds | builds elastic / uniform |")
print("| --- | --- | --- | --- | --- | --- | --- | --- |")
for b in bins:
    tag = os.path.basename(b)
    for family in ["bloom", "ribbon"]:
        u, e = (f"{out}/{tag}-{family}-{p}" for p in ("uniform", "elastic"))
        tu, te = total(u + ".cg"), total(e + ".cg")
        bu, be = builds(u + ".annotate"), builds(e + ".annotate")
        print(f"| {tag} | {family} | {tu:,} | {te:,} | {te / tu:.3f} | {bu:,} ({bu / tu:.1%}) | "
              f"{be:,} ({be / te:.1%}) | {be / max(bu, 1):.2f} |")
PY
