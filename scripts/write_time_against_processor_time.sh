#!/usr/bin/env bash
# Write phases' time against the process's processor time, per merge policy: `strata bench
# --preset shifting --workloads fillrandom,overwrite` (1,000,000 keys, 2 MiB buffers, direct
# reads, a 5% cache) once per design, RUNS times in rotating order, with `--json`. For each
# design and phase it prints the median ops/s and wall seconds, the processor seconds of the
# process split as the bench reports them (compaction threads, flush thread, the rest: the
# writing thread and the bench), and two estimates of the wall time: the rest alone (writes
# priced at their own processor time, merges on threads of their own, as auto-tune's keep rule
# assumes) and the rest plus the compaction and flush threads' time over the processors (the
# background's processor time spread over every processor, the writer's included). Each estimate
# is followed by its ratio to the measured wall time.
#
#   scripts/write_time_against_processor_time.sh [RUNS] [NUM] [OPS] [STRATA]
#   defaults:                                     3      1000000 100000
#
# DESIGNS (environment) lists the designs as policy:T, default "leveling:10 leveling:4 tiering:4
# tiering:10 lazy-leveling:4 moose:10". PROCESSORS (environment) overrides the processor count
# (default `nproc`). Reports are kept in OUT (environment; a temporary directory by default).
set -euo pipefail
runs=${1:-3}
num=${2:-1000000}
ops=${3:-100000}
source "$(dirname "$0")/strata_binary.sh"
strata=$(strata_binary "${4:-}")
designs=(${DESIGNS:-leveling:10 leveling:4 tiering:4 tiering:10 lazy-leveling:4 moose:10})
processors=${PROCESSORS:-$(nproc)}
out=${OUT:-$(mktemp -d)}
mkdir -p "$out"
n=${#designs[@]}
for run in $(seq 1 "$runs"); do
  for offset in $(seq 0 $((n - 1))); do
    design=${designs[$(( (run - 1 + offset) % n ))]}
    echo "run $run: $design (load $(cut -d' ' -f1 /proc/loadavg))" >&2
    "$strata" bench --engines strata --preset shifting --num "$num" --reads "$ops" \
      --workloads fillrandom,overwrite --compaction "${design%%:*}" --size-ratio "${design##*:}" \
      --json "$out/${design/:/-T}-run$run.json" > "$out/${design/:/-T}-run$run.txt"
  done
done
python3 - "$out" "$runs" "$processors" "${designs[@]}" <<'PY'
import json, statistics, sys
out, runs, processors = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
designs = sys.argv[4:]
print(f"Medians of {runs} runs; {processors:g} processors. Seconds are the phase's; 'rest' is the "
      "process's processor time less its compaction and flush threads'.")
print()
print("| design | phase | ops/s | wall s | processor s: all / compaction / flush / rest | "
      "rest alone (ratio) | rest + background / processors (ratio) |")
print("|---|---|---:|---:|---|---|---|")
fits = {"alone": [], "shared": []}
for design in designs:
    phases = {}
    for run in range(1, runs + 1):
        with open(f"{out}/{design.replace(':', '-T')}-run{run}.json") as f:
            report = json.load(f)
        for result in report["results"]:
            cpu = result.get("cpu_seconds") or {}
            if not cpu:
                continue
            wall = result["ops"] / result["ops_per_sec"]
            phases.setdefault(result["phase"], []).append(
                (result["ops_per_sec"], wall, cpu["total"], cpu.get("compaction", 0.0),
                 cpu.get("flush", 0.0)))
    for phase, rows in phases.items():
        med = [statistics.median(column) for column in zip(*rows)]
        ops, wall, total, compaction, flush = med
        rest = total - compaction - flush
        shared = rest + (compaction + flush) / processors
        fits["alone"].append(rest / wall)
        fits["shared"].append(shared / wall)
        print(f"| {design.replace(':', ' T=')} | {phase} | {ops:,.0f} | {wall:.2f} | "
              f"{total:.2f} / {compaction:.2f} / {flush:.2f} / {rest:.2f} | "
              f"{rest:.2f} ({rest / wall:.2f}) | {shared:.2f} ({shared / wall:.2f}) |")
print()
for name, ratios in fits.items():
    within = sum(1 for r in ratios if abs(r - 1) <= 0.10)
    print(f"{name}: estimate/measured {min(ratios):.2f}-{max(ratios):.2f}, "
          f"{within} of {len(ratios)} within 10%")
print(f"(reports in {out})")
PY
