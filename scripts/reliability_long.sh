#!/usr/bin/env bash
# The long version of the reliability suite (docs/TESTING.md). CI runs the short
# version inside `cargo test --workspace`. This runs, in order:
#
#   1. the crash loop: ITERATIONS crash iterations (default 1008) spread round-robin over every
#      compaction policy x filter allocator (7 x 7 pairs), each crash checked by the next child;
#   2. multi-threaded stress: six runs of STRESS_SECONDS each (default 330, 33 minutes in all)
#      over different policy pairs, three of them with random write and read faults;
#   3. the fuzz targets, FUZZ_SECONDS each (default 600), two at a time (needs cargo-fuzz and a
#      nightly toolchain: `cargo install cargo-fuzz`; skipped with a message if absent);
#   4. the background coordination under the shuttle schedule explorer: SCHEDULES schedules
#      (default 100000) of each scenario of crates/strata/tests/schedules.rs;
#   5. the memtable's tests (the skiplist's `unsafe` node access) under valgrind's memcheck, which
#      fails on any read or write outside the arena (skipped with a message if valgrind is absent);
#   6. the same tests under Miri, Stacked Borrows and Tree Borrows, the concurrent one with 8
#      scheduler seeds each (scripts/miri_memtable.sh --long), then under ThreadSanitizer and
#      AddressSanitizer with the concurrency test (scripts/sanitize_memtable.sh); each skipped
#      with a message without a nightly toolchain with miri and rust-src.
#
# The soak (hours of stress and crash-test with memory and descriptors sampled) is apart:
# scripts/soak.sh HOURS.
#
#   scripts/reliability_long.sh [ITERATIONS] [STRESS_SECONDS] [FUZZ_SECONDS] [SCHEDULES]
#
# Logs go to $OUT (default a new temporary directory), one file per step; the script stops at the
# first failure, whose log names the seed and the operation.
set -euo pipefail
iterations=${1:-1008}
stress_seconds=${2:-330}
fuzz_seconds=${3:-600}
schedules=${4:-100000}
root=$(cd "$(dirname "$0")/.." && pwd)
out=${OUT:-$(mktemp -d)}
echo "logs in $out"
cargo build --release -p strata-cli --manifest-path "$root/Cargo.toml" >&2
strata="${CARGO_TARGET_DIR:-$root/target}/release/strata"

echo "== crash loop: $iterations iterations"
"$strata" crash-test --iterations "$iterations" --seed 1000 --dir "$out/crash" | tee "$out/crash.log"

echo "== stress: 6 runs of $stress_seconds s"
run=0
for config in \
  "leveling uniform 0 0 4" \
  "tiering mnemosyne-plus 0.002 0.001 4" \
  "leveling-dynamic monkey 0.002 0.001 4" \
  "leveling mnemosyne 0 0 8" \
  "tiering mnemosyne-min1 0.002 0.001 4" \
  "leveling mnemosyne-plus-first-come 0 0 4"; do
  read -r compaction policy write_faults read_faults threads <<<"$config"
  run=$((run + 1))
  "$strata" stress --duration "$stress_seconds" --threads "$threads" --seed "$run" \
    --compaction "$compaction" --filter-policy "$policy" \
    --fault-rate "$write_faults" --read-fault-rate "$read_faults" | tee "$out/stress-$run.log"
done

echo "== fuzz: $fuzz_seconds s per target"
if ! cargo +nightly fuzz --version >/dev/null 2>&1; then
  echo "cargo-fuzz or the nightly toolchain is missing: fuzzing skipped"
else
  run_fuzz=1
fi
if [ -n "${run_fuzz:-}" ]; then
(
cd "$root/fuzz"
targets=$(cargo +nightly fuzz list)
set -- $targets
while [ $# -gt 0 ]; do
  for target in "$1" "${2:-}"; do
    [ -n "$target" ] || continue
    cargo +nightly fuzz run "$target" -- -max_total_time="$fuzz_seconds" \
      >"$out/fuzz-$target.log" 2>&1 &
  done
  wait
  for target in "$1" "${2:-}"; do
    [ -n "$target" ] || continue
    if grep -qE "deadly signal|panicked|SUMMARY: libFuzzer" "$out/fuzz-$target.log"; then
      echo "$target found a failure: $out/fuzz-$target.log"
      exit 1
    fi
    grep -E "^#[0-9]+.*DONE|Done [0-9]+ runs" "$out/fuzz-$target.log" | tail -1 | sed "s/^/$target: /"
  done
  shift; [ $# -gt 0 ] && shift
done
)
fi

echo "== schedules: $schedules per scenario"
STRATA_SCHEDULES="$schedules" cargo test -p strata --features shuttle --test schedules \
  --manifest-path "$root/Cargo.toml" -- --nocapture --test-threads 1 2>&1 | tee "$out/schedules.log"

echo "== memcheck: the memtable's tests"
if ! command -v valgrind >/dev/null 2>&1; then
  echo "valgrind is missing: memcheck skipped"
else
  tests=$(cargo test -p strata --lib --no-run --manifest-path "$root/Cargo.toml" --message-format=json 2>/dev/null |
    sed -n 's/.*"executable":"\([^"]*\)".*/\1/p' | head -1)
  valgrind --error-exitcode=9 -q "$tests" memtable | tee "$out/memcheck.log"
fi

echo "== Miri and the sanitizers: the memtable's tests"
"$root/scripts/miri_memtable.sh" --long 2>&1 | tee "$out/miri.log"
"$root/scripts/sanitize_memtable.sh" 2>&1 | tee "$out/sanitizers.log"
