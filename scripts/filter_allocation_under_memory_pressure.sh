#!/bin/bash
# Filter allocation under memory pressure: the Mnemosyne paper's experiments scaled to this machine
# (docs/BENCHMARKS.md, "Filter allocation under memory pressure"). Release, seed 42, medians of 3.
set -x
# Usage: scripts/filter_allocation_under_memory_pressure.sh [OUT_DIR]   (needs `apt-get install libclang-dev valgrind`; about 4 hours)
cd "$(dirname "$0")/.."
cargo build --release -p strata-cli
CARGO_TARGET_DIR=target/peers cargo build --release -p strata-cli --features peers
S=target/release/strata
P=target/peers/release/strata
OUT=${1:-filter-allocation-results}
mkdir -p $OUT
# Workload-aware allocation (Figs. 12-13): type II at 1/100 scale (reads 150,000 per phase),
# 2..7 bits/key, uniform and normal keys, with RocksDB.
for bpk in 2 3 4 5 6 7; do
  for dist in normal uniform; do
    $P bench --preset paper-mnemosyne --reads 150000 --bits-per-key $bpk --engines strata,rocksdb --filter-policy uniform,mnemosyne,mnemosyne-plus --distribution $dist --compare --runs 3 --write-buffer-bytes 2MiB --target-file-bytes 2MiB --json $OUT/typeII_${dist}_$bpk.json > $OUT/typeII_${dist}_$bpk.txt 2>&1
  done
done
# The solver variant at 2 bits/key (pure vs minimum-1-bit).
$P bench --preset paper-mnemosyne --reads 150000 --filter-policy mnemosyne,mnemosyne-min1 --distribution uniform --compare --runs 3 --write-buffer-bytes 2MiB --target-file-bytes 2MiB --json $OUT/variant.json > $OUT/variant.txt 2>&1
# "Lookups, then a write burst with no lookups, then lookups".
$P bench --workloads load,readmissing,overwrite,readmissing --num 210000 --reads 150000 --key-size 128 --value-size 384 --size-ratio 4 --bits-per-key 2 --cache-fraction 0.05 --direct-reads --settle --engines strata,rocksdb --filter-policy uniform,mnemosyne,mnemosyne-plus --compare --runs 3 --write-buffer-bytes 2MiB --target-file-bytes 2MiB --json $OUT/burst.json > $OUT/burst.txt 2>&1
# Overheads in instructions: Merlin's cost on the lookup path (callgrind, DbInner::get only).
for cfg in off on on4; do
  case $cfg in off) extra="";; on) extra="--access-statistics";; on4) extra="--access-statistics --access-sample-every 4";; esac
  valgrind --tool=callgrind --callgrind-out-file=$OUT/cg.$cfg.out --collect-atstart=no --toggle-collect='strata::db::read::<impl strata::db::DbInner>::get' $S bench --filter-policy uniform --workloads fillrandom,readrandom --num 100000 --reads 200000 --settle --cache-bytes 512MiB $extra > $OUT/cg.$cfg.txt 2>&1
  callgrind_annotate $OUT/cg.$cfg.out | grep 'PROGRAM TOTALS' > $OUT/cg.$cfg.total
done
# Overheads: readrandom with Merlin on vs off, everything cached (CPU cost only), alternating.
for r in 1 2 3; do
  $S bench --filter-policy uniform --workloads fillrandom,readrandom --num 1000000 --reads 1000000 --settle --cache-bytes 512MiB --json $OUT/merlin_off_$r.json > $OUT/merlin_off_$r.txt 2>&1
  $S bench --filter-policy uniform --workloads fillrandom,readrandom --num 1000000 --reads 1000000 --settle --cache-bytes 512MiB --access-statistics --json $OUT/merlin_on_$r.json > $OUT/merlin_on_$r.txt 2>&1
done
# Overheads: fillrandom with the Mnemosyne policies vs uniform (default buffer, then 2 MiB
# buffers: many more allocations).
$S bench --workloads fillrandom --num 1000000 --bits-per-key 2 --filter-policy uniform,mnemosyne,mnemosyne-plus --compare --runs 5 --json $OUT/overhead_fill.json > $OUT/overhead_fill.txt 2>&1
$S bench --workloads fillrandom --num 1000000 --bits-per-key 2 --filter-policy uniform,mnemosyne,mnemosyne-plus --compare --runs 5 --write-buffer-bytes 2MiB --target-file-bytes 2MiB --settle --json $OUT/overhead_fill_2m.json > $OUT/overhead_fill_2m.txt 2>&1
# ... and in instructions (the policies' own functions; compaction work varies with timing).
for p in uniform mnemosyne mnemosyne-plus; do
  valgrind --tool=callgrind --callgrind-out-file=$OUT/cg_fill.$p.out $S bench --workloads fillrandom --num 200000 --bits-per-key 2 --filter-policy $p --write-buffer-bytes 1MiB --target-file-bytes 1MiB --settle > $OUT/cg_fill.$p.txt 2>&1
  callgrind_annotate --inclusive=yes $OUT/cg_fill.$p.out | grep -E 'PROGRAM TOTALS|FilterAllocator>::allocate|stats/merlin.rs:strata::compaction|save_access_statistics|executor::run_compaction \[' > $OUT/cg_fill.$p.total
done
# Type II from a fresh load per f0 (the paper's protocol), where the sequential phases showed
# Mnemosyne+ behind Mnemosyne.
for cell in uniform:1:2 uniform:1:3 uniform:1:4 uniform:1:5 uniform:1:6 uniform:1:7 uniform:0.5:3 uniform:0.5:5 uniform:0.5:7 normal:0.5:7; do
  IFS=: read dist f0 bpk <<< "$cell"
  $P bench --preset paper-mnemosyne --workloads load,mnemosyne-ii:$f0 --reads 150000 --bits-per-key $bpk --engines strata,rocksdb --filter-policy uniform,mnemosyne,mnemosyne-plus,mnemosyne-plus-first-come --distribution $dist --compare --runs 3 --write-buffer-bytes 2MiB --target-file-bytes 2MiB --json $OUT/fresh_${dist}_${f0}_$bpk.json > $OUT/fresh_${dist}_${f0}_$bpk.txt 2>&1
done
# Evolving tree (Fig. 11): type I at 1/200 scale, 2/4/6 bits/key, top-down and bottom-up growth.
$S bench --workloads load,mnemosyne-i --scale 0.005 --key-size 32 --value-size 96 --size-ratio 4 --bits-per-key 2,4,6 --filter-policy uniform,monkey,mnemosyne,mnemosyne-plus --compaction leveling,leveling-dynamic --compare --runs 3 --write-buffer-bytes 512KiB --target-file-bytes 512KiB --cache-fraction 0.05 --direct-reads --sample-every 25000 --json $OUT/typeI.json --plot $OUT/typeI.svg > $OUT/typeI.txt 2>&1
echo ALL DONE
