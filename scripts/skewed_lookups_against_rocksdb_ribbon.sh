#!/usr/bin/env bash
# Strata's default options (elastic filters with access statistics) against RocksDB with its
# Ribbon filter at the same filter memory, on a skewed workload under memory pressure: 500,000
# keys, 3 bits/key, a block cache of 5% of the data, direct reads, 2 MiB buffers and files,
# T = 4, a paced fill that leaves an unsettled tree of dozens of files, then lookups with a hot
# spot (keys drawn from a normal distribution, sd 5% of the key range, around the middle) of which
# 90% are of absent keys (Mnemosyne's type II mix at 0.9). Strata's uniform filters run too, as
# the reference the allocation is measured against. Medians of RUNS alternating runs, trees
# printed before the lookups.
#
#   scripts/skewed_lookups_against_rocksdb_ribbon.sh [RUNS] [BITS_PER_KEY] [STRATA]
#     defaults: 3, 3, a release build of the workspace with the peers
#
# Read `unnec/lk` (data blocks read from the device by lookups in files that did not hold the
# key) and ops/s of the `mnemosyne-ii:0.9` phase, against `rocksdb-ribbon`: the summary's ratio
# columns are against the first configuration (Strata's default). RocksDB's unnecessary reads are
# counted from its perf context lookup by lookup: all data blocks of a lookup that found nothing,
# all but the last of one that found its key; where such a lookup read data blocks both from the
# device and from the cache the count is a range, whose ends the lines under the summary give
# (the table shows the lower end). Three runs of the three configurations took 45 s on the 2-core
# machine the log was measured on; the load average is printed before and
# after, throughput is compared as ratios between the configurations' alternated runs. With
# SAMPLE_EVERY set, Strata's statistics record one lookup in that many (`--access-sample-every`;
# default the engine's).
set -euo pipefail
runs=${1:-3}
bpk=${2:-3}
root=$(cd "$(dirname "$0")/.." && pwd)
out=${OUT:-$(mktemp -d)}
mkdir -p "$out"
. "$root/scripts/strata_binary.sh"
strata=$(strata_binary "${3:-}" peers)
sampling=()
[ -n "${SAMPLE_EVERY:-}" ] && sampling=(--access-sample-every "$SAMPLE_EVERY")
echo "$(uptime)"
"$strata" bench --engines strata,rocksdb-ribbon --filter-policy elastic,uniform --compare \
  --runs "$runs" --num 500000 --reads 200000 --bits-per-key "$bpk" --cache-fraction 0.05 \
  --direct-reads --write-buffer-bytes 2MiB --target-file-bytes 2MiB --size-ratio 4 --paced-fill \
  --workloads fillrandom,mnemosyne-ii:0.9 --distribution normal:0.5:0.05 "${sampling[@]}" \
  --json "$out/skewed.json" | tee "$out/skewed.log"
echo "$(uptime)"
echo "log and JSON in $out" >&2
