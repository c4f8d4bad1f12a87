#!/usr/bin/env bash
# Bytes written per user byte, by cause (flush, level-0 merges, merges into each level, full
# compactions, filter rebuilds), Strata against RocksDB in the same run, runs alternated:
#   1. a load and a mixed phase at small settings: 400,000 entries of 16-byte keys and 256-byte
#      values, 1 MiB write buffers, 2 MiB files, T = 4, direct reads; the mixed phase is the
#      Mnemosyne paper's type-II mix (10 updates in 41 operations, half the lookups empty);
#   2. the same load and mixed phase at the bench's defaults (1,000,000 entries of 16 + 100 bytes,
#      the default buffers, files and cache).
# Every phase that writes is followed by a settle (`--settle`: a flush, then a wait until no
# compaction is due) whose bytes count with it, so each phase pays for the compactions its own
# writes made due, in both engines: the load before the mix, the mix at the end. The mix runs
# OPERATIONS operations (by default 2,000,000: about 488,000 updates, 1.2 times the small data
# set's bytes), long enough for a phase's figure not to hang on what the one before it left.
# Byte counts do not depend on the machine's load (which jobs run depends a little on timing);
# the ops/s the bench prints beside them do, so the load average is printed before each part and
# throughput is compared as ratios between the engines' alternated runs.
#
#   scripts/write_bytes_by_cause.sh [RUNS] [OPERATIONS] [STRATA]   (defaults 3, 2000000, a
#                                                                    release build with the peers)
#
# Read the medians table at the end of each part: `w-amp` (bytes written per user byte with the
# settle after the phase), `w-phase` (the phase alone) and the ops/s ratio; the `writes:` lines
# under each run's rows split them by cause (the first under a phase is the phase alone, the
# second with its settle).
set -euo pipefail
runs=${1:-3}
operations=${2:-2000000}
root=$(cd "$(dirname "$0")/.." && pwd)
out=${OUT:-$(mktemp -d)}
mkdir -p "$out"
. "$root/scripts/strata_binary.sh"
strata=$(strata_binary "${3:-${STRATA:-}}" peers)
summary='^(== |--- |  writes:|settled in|medians|configuration)|^(strata|rocksdb)[ /].*(load|mnemosyne)'
echo "== load and mnemosyne-ii:0.5, 400,000 x (16 + 256) B, 1 MiB buffers, 2 MiB files, T = 4, direct reads; $(uptime)"
"$strata" bench --engines strata,rocksdb --runs "$runs" --compare --workloads load,mnemosyne-ii:0.5 \
  --num 400000 --reads "$operations" --key-size 16 --value-size 256 --write-buffer-bytes 1MiB \
  --target-file-bytes 2MiB --size-ratio 4 --direct-reads --settle --json "$out/small.json" > "$out/small.txt"
grep -E "$summary" "$out/small.txt" || cat "$out/small.txt"
echo "== load and mnemosyne-ii:0.5 at the bench's defaults; $(uptime)"
"$strata" bench --engines strata,rocksdb --runs "$runs" --compare --workloads load,mnemosyne-ii:0.5 \
  --reads "$operations" --settle --json "$out/defaults.json" > "$out/defaults.txt"
grep -E "$summary" "$out/defaults.txt" || cat "$out/defaults.txt"
echo "(JSON and full reports in $out; $(uptime))"
