#!/usr/bin/env bash
# Auto-tune against fixed designs on a shifting workload: `strata bench --preset shifting` (a fill,
# then overwrites, hot-spot reads, short scans and absent-key lookups on one open database; 2 MiB
# buffers and files, direct reads, a 5% block cache) once with each fixed design and once with
# `--auto-tune` (starting from the default leveling, T = 10), RUNS times in rotating order. Prints
# each configuration's median ops/s per phase, the whole run's time (the sum over phases of
# operations over median ops/s), each phase's ratio of auto-tune to the best fixed design, each
# round's whole run for auto-tune against the fastest fixed design of that round, and the
# design in force as each phase began, and how long auto-tune's decisions took (its info log).
#
#   scripts/auto_tune_on_shifting_workload.sh [RUNS] [NUM] [OPS] [EVERY] [STRATA]
#   defaults:                                  3      1000000 200000 50000
#
# NUM keys are filled; every later phase runs OPS operations, or OPS is four counts, one per later
# phase in order (e.g. 1000000,1000000,20000,1000000: phases that last alike, a scan costing what
# a hundred point operations do; `strata bench --workloads NAME@OPS`); auto-tune decides every EVERY
# operations, or after EVERY_SECONDS (environment; default the engine's, 60) with fewer. DESIGNS
# (environment) lists the fixed designs as policy:T, default
# "leveling:10 leveling:4 tiering:4 tiering:10 lazy-leveling:4 lazy-leveling:10 garnering:10
# leveling-dynamic:10 ecotune:10 moose:10": every merge policy auto-tune's tuner chooses among.
# A design listed again with a suffix (leveling:10#2) runs again as a configuration of its own: the
# per-phase ratio between the copies' medians is the noise floor of a per-phase comparison.
# STRATA is a binary to run instead of the workspace's release build. Reports are kept in OUT
# (environment; a temporary directory by default). AUTO_FLAGS (environment) adds `strata bench`
# flags to auto-tune's runs, for its own settings, for example
# AUTO_FLAGS="--auto-tune-min-gain 0.03 --auto-tune-confirmations 1".
set -euo pipefail
runs=${1:-3}
num=${2:-1000000}
ops=${3:-200000}
every=${4:-50000}
source "$(dirname "$0")/strata_binary.sh"
strata=$(strata_binary "${5:-}")
designs=(${DESIGNS:-leveling:10 leveling:4 tiering:4 tiering:10 lazy-leveling:4 lazy-leveling:10 garnering:10 leveling-dynamic:10 ecotune:10 moose:10})
configs=("${designs[@]}" auto)
out=${OUT:-$(mktemp -d)}
mkdir -p "$out"
phases="fillrandom overwrite readhot seekrandom readmissing"
IFS=',' read -r -a phase_ops <<< "$ops"
if [ "${#phase_ops[@]}" -eq 1 ]; then
  phase_ops=("$ops" "$ops" "$ops" "$ops")
elif [ "${#phase_ops[@]}" -ne 4 ]; then
  echo "OPS is one count or four (overwrite, readhot, seekrandom, readmissing): $ops" >&2
  exit 2
fi
workloads="fillrandom,overwrite@${phase_ops[0]},readhot@${phase_ops[1]},seekrandom@${phase_ops[2]},readmissing@${phase_ops[3]}"
n=${#configs[@]}
for run in $(seq 1 "$runs"); do
  for offset in $(seq 0 $((n - 1))); do
    config=${configs[$(( (run - 1 + offset) % n ))]}
    name=${config/:/-T}
    report="$out/${name/\#/-copy}-run$run.txt"
    design=${config%%#*}
    if [ "$config" = auto ]; then
      # Auto-tune's database is kept for its info log (each decision's line and the time it
      # took), then removed.
      flags=(--auto-tune --auto-tune-every "$every" --db "$out/auto-run$run.db"
        ${EVERY_SECONDS:+--auto-tune-every-seconds "$EVERY_SECONDS"} ${AUTO_FLAGS:-})
    else
      flags=(--compaction "${design%%:*}" --size-ratio "${design##*:}")
    fi
    echo "run $run: $config (load $(cut -d' ' -f1 /proc/loadavg))" >&2
    "$strata" bench --engines strata --preset shifting --num "$num" --workloads "$workloads" "${flags[@]}" \
      > "$report"
    if [ "$config" = auto ]; then
      find "$out/auto-run$run.db" -name LOG -exec grep -h "auto-tune" {} + > "$out/auto-run$run.log" || true
      rm -rf "$out/auto-run$run.db"
    fi
  done
done
python3 - "$out" "$runs" "$num" "$(IFS=,; echo "${phase_ops[*]}")" "$phases" "${configs[@]}" <<'PY'
import re, statistics, sys
out, runs, num, phases = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[5].split()
# Operations of each phase: the fill's NUM, then the four later phases' counts.
ops = dict(zip(phases, [num] + [int(count) for count in sys.argv[4].split(",")]))
configs = sys.argv[6:]
def report(config, run):
    return f"{out}/{config.replace(':', '-T').replace('#', '-copy')}-run{run}.txt"
median, trees, designs, per_run = {}, {}, {}, {}
for config in configs:
    per_phase = {phase: [] for phase in phases}
    per_run[config] = []
    for run in range(1, runs + 1):
        text = open(report(config, run)).read()
        seen = {}
        for line in text.splitlines():
            fields = line.split()
            if len(fields) > 4 and fields[0] == "strata" and fields[1] in per_phase and fields[1] not in seen:
                seen[fields[1]] = float(fields[3])
                per_phase[fields[1]].append(float(fields[3]))
        per_run[config].append(seen)
        if run == 1:
            trees[config] = {m.group(1): m.group(2) for m in re.finditer(r"^tree strata before (\S+): ([^,]+, [^,]+),", text, re.M)}
            entering, designs[config] = None, []
            for line in text.splitlines():
                m = re.match(r"tree strata before (\S+):", line)
                if m:
                    entering = m.group(1)
                m = re.search(r"design in force: compaction (\S+?\([^)]*\))", line)
                if m and entering:
                    designs[config].append((entering, m.group(1)))
    median[config] = {phase: statistics.median(values) for phase, values in per_phase.items() if values}
def seconds(config):
    return sum(ops[phase] / median[config][phase] for phase in phases)
print(f"Median ops/s of {runs} runs per phase (operations: " + ", ".join(f"{phase} {ops[phase]:,}" for phase in phases) + ")\n")
print("| configuration | " + " | ".join(phases) + " | whole run (s) |")
print("|---|" + "---:|" * (len(phases) + 1))
for config in configs:
    name = "auto-tune" if config == "auto" else config.replace(":", " T=")
    print(f"| {name} | " + " | ".join(f"{median[config][p]:,.0f}" for p in phases) + f" | {seconds(config):.1f} |")
fixed = [c for c in configs if c != "auto"]
print("\n| phase | best fixed design | auto-tune / best | within 10% |")
print("|---|---|---:|---|")
for phase in phases:
    best = max(fixed, key=lambda c: median[c][phase])
    ratio = median["auto"][phase] / median[best][phase]
    print(f"| {phase} | {best.replace(':', ' T=')} | {ratio:.2f} | {'yes' if ratio >= 0.9 else 'no'} |")
fastest = min(fixed, key=seconds)
behind = [c.replace(':', ' T=') for c in fixed if seconds(c) <= seconds('auto')]
print(f"\nWhole run: auto-tune {seconds('auto'):.1f} s; fastest fixed design {fastest.replace(':', ' T=')} {seconds(fastest):.1f} s "
      f"({seconds(fastest) / seconds('auto'):.2f}x auto-tune's time); auto-tune is "
      + ("ahead of every fixed design" if not behind else f"behind {len(behind)} of {len(fixed)} fixed designs: {', '.join(behind)}"))
# Each round runs every configuration once, in rotating order: the whole run per round is the sum
# over phases of that run's operations over its ops/s.
def round_seconds(config, run):
    served = per_run[config][run]
    if any(phase not in served for phase in phases):
        return None
    return sum(ops[phase] / served[phase] for phase in phases)
ahead = 0
print("\nPer round (each configuration's run of that round; whole run in s):")
for run in range(runs):
    mine = round_seconds("auto", run)
    others = [(round_seconds(c, run), c) for c in fixed if round_seconds(c, run) is not None]
    if mine is None or not others:
        print(f"  round {run + 1}: a report lacks a phase")
        continue
    best_seconds, best = min(others)
    ahead += mine < best_seconds
    print(f"  round {run + 1}: auto-tune {mine:.2f}; fastest fixed design {best.replace(':', ' T=')} {best_seconds:.2f}: "
          + ("ahead" if mine < best_seconds else f"behind by {mine - best_seconds:.2f}"))
print(f"Auto-tune ahead of every fixed design in {ahead} of {runs} rounds")
copies = {}
for config in fixed:
    copies.setdefault(config.split("#")[0], []).append(config)
for design, same in copies.items():
    if len(same) < 2:
        continue
    print(f"\nThe same design run as {len(same)} configurations ({design.replace(':', ' T=')}): each copy's median over the first's, per phase")
    for other in same[1:]:
        print(f"  {other.replace(':', ' T=')}: " + ", ".join(f"{p} {median[other][p] / median[same[0]][p]:.2f}" for p in phases))
decided, merges = [], []
for run in range(1, runs + 1):
    try:
        log = open(f"{out}/auto-run{run}.log").read()
    except FileNotFoundError:
        continue
    decided += [float(m.group(1)) for m in re.finditer(r"decided in ([0-9.]+) ms", log)]
    merges += [(run, m.group(1), float(m.group(2))) for m in re.finditer(r"decision (\d+): merged the tree into one run for reads in ([0-9.]+) s", log)]
if decided:
    print(f"\nAuto-tune's decisions, {len(decided)} in {runs} runs: median {statistics.median(decided):.1f} ms each, "
          f"max {max(decided):.1f} ms, {sum(decided) / 1e3 / runs:.2f} s per run in all (its info log)")
if merges:
    print(f"Auto-tune's merges for reads, {len(merges)} in {runs} runs: "
          + "; ".join(f"run {run} decision {number} in {seconds:.2f} s" for run, number, seconds in merges))
print("\nDesign in force as each phase began, auto-tune's run 1: " + "; ".join(f"{p}: {d}" for p, d in designs.get("auto", [])))
print("Tree before each phase, run 1 of auto-tune: " + "; ".join(f"{p}: {t}" for p, t in trees.get("auto", {}).items()))
print(f"(reports in {out})")
PY
