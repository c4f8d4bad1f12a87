#!/usr/bin/env bash
# The lookup model against the engine's counters on the main job's settings (`strata bench
# --quick`: 500,000 keys, 4 MiB buffers, an 8 MiB block cache), for every merge policy and
# filter allocator given, once per seed given: the read phases readrandom, readhot and
# readmissing each print the model's device reads per lookup beside the ones the engine counted
# (strata::model::tree, DESIGN.md §7.6). A seed draws the keys, so it draws which keys the filters
# pass: one seed's runs all see the same false positives, and a model of the expected reads is
# compared with one draw of them. Runs on several seeds measure the draw's spread as well.
#
# Prints, per phase, a table of each configuration's measured/predicted data-block reads: the
# median over the seeds, the range, and the tree before the phase on the first seed; then how many
# configurations' medians are within 10%. Counts, not times: the machine's load does not change
# them (only when background merges ran, which the main job settles before its reads).
#
#   scripts/lookup_model_over_seeds.sh [SEEDS] [ALLOCATORS] [POLICIES]
#   defaults: "42,43,44" "uniform,monkey,mnemosyne,mnemosyne-plus,elastic"
#             "leveling,leveling-dynamic,tiering,lazy-leveling,garnering,ecotune,moose"
#
# Set CARGO_TARGET_DIR to reuse a build, STRATA to run a given binary instead of building one,
# OUT to keep the reports in a given directory.
set -euo pipefail
seeds=${1:-"42,43,44"}
allocators=${2:-"uniform,monkey,mnemosyne,mnemosyne-plus,elastic"}
policies=${3:-"leveling,leveling-dynamic,tiering,lazy-leveling,garnering,ecotune,moose"}
root=$(cd "$(dirname "$0")/.." && pwd)
out=${OUT:-$(mktemp -d)}
mkdir -p "$out"
if [ -z "${STRATA:-}" ]; then
  cargo build --release -p strata-cli --manifest-path "$root/Cargo.toml" >&2
  STRATA="${CARGO_TARGET_DIR:-$root/target}/release/strata"
fi
IFS=',' read -r -a seed_list <<< "$seeds"
for seed in "${seed_list[@]}"; do
  echo "seed $seed: load average $(cut -d' ' -f1-3 /proc/loadavg)" >&2
  "$STRATA" bench --quick --engines strata --workloads fillrandom,readrandom,readhot,readmissing \
    --filter-policy "$allocators" --compaction "$policies" --seed "$seed" \
    --json "$out/seed-$seed.json" > "$out/seed-$seed.txt"
done
python3 - "$out" "$allocators" "$policies" "${seed_list[@]}" <<'PY'
import re, statistics, sys
out, allocators, policies, seeds = sys.argv[1], sys.argv[2].split(","), sys.argv[3].split(","), sys.argv[4:]
# A report's configurations open with "strata/ALLOCATOR/POLICY (run 1/1) bench: ..."; each
# read phase's row "strata   PHASE ..." is followed by the model's line "model
# (strata::model::tree): device reads per lookup predicted/measured: data P/M (R), ...". The
# report prints R to two decimals; the JSON beside it (when there) gives both counts unrounded,
# and the ratios are taken from it: a median of ratios printed as 1.10 can lie either side of
# the 10% bound.
import json, os
ratios, trees, exact = {}, {}, {}
for seed in seeds:
    path = f"{out}/seed-{seed}.json"
    if os.path.exists(path):
        for result in json.load(open(path))["results"]:
            predicted = (result.get("predicted_reads_per_lookup") or {}).get("data")
            measured = (result.get("io_per_op") or {}).get("data")
            if result["phase"].startswith("read") and predicted and measured is not None:
                key = (result["phase"], result["filter_policy"], result["compaction"])
                exact.setdefault(key, []).append(measured / predicted)
for seed in seeds:
    configuration = phase = tree = None
    for line in open(f"{out}/seed-{seed}.txt"):
        m = re.match(r"^strata/(\S+)/(\S+) \(run \d+/\d+\) bench:", line)
        if m:
            configuration, phase = m.groups(), None
        m = re.match(r"^tree strata before (\w+): (.*?), \d+ files", line)
        if m:
            tree = m.group(2)
        m = re.match(r"^strata\s+(read\w+)\s", line)
        if m:
            phase = m.group(1)
        m = re.search(r"model \(strata::model::tree\): device reads per lookup predicted/measured: "
                      r"data ([0-9.]+)/([0-9.]+) \(([0-9.]+|-)\)", line)
        if m and phase and configuration:
            if m.group(3) != "-":
                ratios.setdefault((phase, *configuration), []).append(float(m.group(3)))
                trees.setdefault((phase, *configuration), tree)
            phase = None
# Unrounded ratios for every configuration the JSON covers on every seed.
for key, values in exact.items():
    if len(values) == len(ratios.get(key, [])):
        ratios[key] = values
print(f"Seeds {', '.join(seeds)}; each cell: measured/predicted data-block reads per lookup, the "
      "median over the seeds [lowest-highest], and the tree before the phase on the first seed.")
for phase in ["readrandom", "readhot", "readmissing"]:
    print(f"\n{phase}:\n")
    print("| allocator | " + " | ".join(policies) + " |")
    print("|---|" + "---|" * len(policies))
    inside = cells = 0
    for allocator in allocators:
        row = []
        for policy in policies:
            values = ratios.get((phase, allocator, policy))
            if not values:
                row.append("-")
                continue
            median = statistics.median(values)
            cells += 1
            inside += abs(median - 1.0) <= 0.10
            row.append(f"{median:.2f} [{min(values):.2f}-{max(values):.2f}], {trees[(phase, allocator, policy)]}")
        print(f"| {allocator} | " + " | ".join(row) + " |")
    print(f"\n{phase}: {inside} of {cells} medians within 10%")
PY
echo "(reports in $out)"
