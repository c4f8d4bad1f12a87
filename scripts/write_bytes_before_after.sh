#!/usr/bin/env bash
# Strata's bytes written per user byte, by cause, for two builds alternated run by run: the
# settings of scripts/write_bytes_by_cause.sh (a load of 400,000 entries of 16 + 256 bytes and the
# type-II mix, 1 MiB buffers, 2 MiB files, T = 4, direct reads) and fillrandom at the bench's
# defaults. For a change to the compaction picker where no peer build is at hand; byte counts do
# not depend on the machine's load (which jobs run depends a little on timing), ops/s do.
#
#   scripts/write_bytes_before_after.sh BEFORE AFTER [RUNS]      (two strata binaries; RUNS 2)
set -euo pipefail
before=${1:?usage: write_bytes_before_after.sh BEFORE AFTER [RUNS]}
after=${2:?usage: write_bytes_before_after.sh BEFORE AFTER [RUNS]}
runs=${3:-2}
out=$(mktemp -d)
for run in $(seq 1 "$runs"); do
  for build in before after; do
    binary=$before
    [ "$build" = after ] && binary=$after
    echo "== $build, run $run: load and mnemosyne-ii:0.5, 400,000 x (16 + 256) B, 1 MiB buffers, 2 MiB files, T = 4"
    "$binary" bench --engines strata --workloads load,mnemosyne-ii:0.5 --num 400000 --reads 200000 \
      --key-size 16 --value-size 256 --write-buffer-bytes 1MiB --target-file-bytes 2MiB \
      --size-ratio 4 --direct-reads --settle --db "$out/db" > "$out/small-$build-$run.txt"
    rm -rf "$out/db"
    grep -E '^strata +(load|mnemosyne)|^  writes:|^settled|^tree|^  L[0-9]' "$out/small-$build-$run.txt" | head -20
    echo "== $build, run $run: fillrandom at the bench's defaults"
    "$binary" bench --engines strata --workloads fillrandom --settle --db "$out/db" \
      > "$out/defaults-$build-$run.txt"
    rm -rf "$out/db"
    grep -E '^strata +fillrandom|^  writes:|^settled' "$out/defaults-$build-$run.txt" | head -4
  done
done
echo "(full reports in $out)"
