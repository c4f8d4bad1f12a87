#!/bin/bash
# Issue 5 measurements (docs/BENCHMARKS.md, "Filter allocation under memory pressure"). Release, seed 42, medians of 3.
set -x
# Usage: scripts/issue5_measurements.sh [OUT_DIR]   (needs `apt-get install libclang-dev`)
cd "$(dirname "$0")/.."
cargo build --release -p strata-cli
CARGO_TARGET_DIR=target/peers cargo build --release -p strata-cli --features peers
S=target/release/strata
P=target/peers/release/strata
OUT=${1:-issue5-results}
mkdir -p $OUT
# 3. Workload-aware (Figs. 12-13): type II at 1/100 scale (reads 150,000 per phase), 2 bits/key, uniform and normal keys, with RocksDB.
for dist in uniform normal; do
  $P bench --preset paper-mnemosyne --reads 150000 --engines strata,rocksdb --filter-policy uniform,mnemosyne,mnemosyne-min1,mnemosyne-plus --distribution $dist --compare --runs 3 --write-buffer-bytes 2MiB --target-file-bytes 2MiB --json $OUT/typeII_$dist.json > $OUT/typeII_$dist.txt 2>&1
done
# 5. Overheads: readrandom with Merlin on vs off, everything cached (CPU cost only), alternating.
for r in 1 2 3; do
  $S bench --workloads fillrandom,readrandom --num 1000000 --reads 1000000 --settle --cache-bytes 512MiB --json $OUT/merlin_off_$r.json > $OUT/merlin_off_$r.txt 2>&1
  $S bench --workloads fillrandom,readrandom --num 1000000 --reads 1000000 --settle --cache-bytes 512MiB --access-statistics --json $OUT/merlin_on_$r.json > $OUT/merlin_on_$r.txt 2>&1
done
# 5. Overheads: fillrandom with the Mnemosyne policies vs uniform.
$S bench --workloads fillrandom --num 1000000 --bits-per-key 2 --filter-policy uniform,mnemosyne,mnemosyne-plus --compare --runs 3 --json $OUT/overhead_fill.json > $OUT/overhead_fill.txt 2>&1
# 2. Evolving tree (Fig. 11): type I at 1/200 scale, 2/4/6 bits/key, top-down and bottom-up growth.
$S bench --workloads load,mnemosyne-i --scale 0.005 --key-size 32 --value-size 96 --size-ratio 4 --bits-per-key 2,4,6 --filter-policy uniform,monkey,mnemosyne,mnemosyne-plus --compaction leveling,leveling-dynamic --compare --runs 3 --write-buffer-bytes 512KiB --target-file-bytes 512KiB --cache-fraction 0.05 --direct-reads --sample-every 25000 --json $OUT/typeI.json --plot $OUT/typeI.svg > $OUT/typeI.txt 2>&1
echo ALL DONE
