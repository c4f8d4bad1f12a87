#!/usr/bin/env bash
# Elastic filters' regret with access statistics on (Merlin, DESIGN.md §4), the configuration
# the weights of DESIGN.md §3.5 are judged in, on three workloads of `strata study regret
# --no-settle` (600,000 keys, 200,000 lookups, BUDGET bits per key), SEEDS seeds each:
#
#   type II    every lookup for a present key, no block cache: regret = the policy's unnecessary
#              reads over the per-file optimum's;
#   type I     every lookup for an absent key, no block cache: the same regret;
#   type I 8M  absent keys with an 8 MiB block cache: the policy's device reads over the
#              cache-weighted optimum's (the optimum of z_i times each file's measured miss share
#              under uniform filters, on the same tree).
#
# Prints, per workload, the median over the seeds with the least and most, and each seed's value.
# With DUMP set, each run also writes the per-file weights (`--dump-weights`) beside its JSON.
# WORKLOADS names a subset (default "typeII typeI typeI-cache"). With SAMPLE_EVERY set, the
# statistics record one lookup in that many (`--access-sample-every`; default the engine's).
#
# Before and after a change of the engine: run it once with STRATA a build of the commit before
# (e.g. `git archive BASE | tar -x -C SRC` and `cargo build --release -p strata-cli` there) and
# once on this workspace's build, each with its own OUT.
#
#   scripts/elastic_filters_regret_with_statistics.sh [SEEDS] [BUDGET] [STRATA]
#     defaults: "42 7 8 9 10", 2, the workspace's release build
#
# STRATA names another build to compare (e.g. one of an earlier commit). About 30-90 s per seed
# and workload on this machine.
set -euo pipefail
seeds=${1:-"42 7 8 9 10"}
bpk=${2:-2}
root=$(cd "$(dirname "$0")/.." && pwd)
out=${OUT:-$(mktemp -d)}
mkdir -p "$out"
. "$root/scripts/strata_binary.sh"
strata=$(strata_binary "${3:-}")
for seed in $seeds; do
  for workload in ${WORKLOADS:-typeII typeI typeI-cache}; do
    flags=(--empty-fraction 1)
    case $workload in
      typeII) flags=(--empty-fraction 0) ;;
      typeI-cache) flags=(--empty-fraction 1 --block-cache-bytes 8MiB) ;;
    esac
    dump=()
    [ -n "${SAMPLE_EVERY:-}" ] && flags+=(--access-sample-every "$SAMPLE_EVERY")
    [ -n "${DUMP:-}" ] && dump=(--dump-weights "$out/$workload-$seed.csv")
    "$strata" study regret --no-settle --bits-per-key "$bpk" --filter-policies elastic \
      --access-statistics --seed "$seed" "${flags[@]}" "${dump[@]}" \
      --json "$out/$workload-$seed.json" > "$out/$workload-$seed.txt"
    echo "$workload seed $seed done" >&2
  done
done
echo "JSON and tables in $out" >&2
python3 - "$out" <<'PY'
import glob, json, statistics, sys
out = sys.argv[1]
by = {}
for path in sorted(glob.glob(f"{out}/*.json")):
    doc = json.load(open(path))
    row = doc["rows"][0]
    if doc["block_cache_bytes"]:
        name = "type I, 8 MiB cache (vs cache-weighted optimum)"
        value = (row["policy_unnecessary_reads_per_lookup"]
                 / row["cache_weighted_unnecessary_reads_per_lookup"])
    else:
        name = "type II" if doc["empty_fraction"] == 0 else "type I"
        value = row["regret"]
    by.setdefault(name, []).append((doc["seed"], value))
for name, values in sorted(by.items()):
    values.sort()
    only = [v for _, v in values]
    print(f"{name}: median {statistics.median(only):.3f} ({min(only):.3f}-{max(only):.3f}); "
          + ", ".join(f"seed {s} {v:.3f}" for s, v in values))
PY
