#!/usr/bin/env bash
# `strata stress` (the expected-state oracle, docs/TESTING.md) once over every merge policy x
# filter allocator pair, TOTAL_SECONDS spread evenly over the pairs (7 x 7 = 49 pairs; default 600
# seconds, about 12 seconds each), 4 threads, fixed seeds (seed 1000 + the pair's index). Stops at
# the first violation, whose seed, operation, expected and read values `strata stress` prints.
#
#   scripts/stress_every_policy_pair.sh [TOTAL_SECONDS]
#
# Builds `strata` in release mode. Prints one line per pair and a summary; exits 1 on a violation.
set -euo pipefail
total=${1:-600}
root=$(cd "$(dirname "$0")/.." && pwd)
cargo build --release -q -p strata-cli --manifest-path "$root/Cargo.toml"
strata="${CARGO_TARGET_DIR:-$root/target}/release/strata"
compactions=(leveling leveling-dynamic tiering lazy-leveling garnering ecotune moose)
allocators=(uniform monkey mnemosyne mnemosyne-min1 mnemosyne-plus mnemosyne-plus-first-come elastic)
pairs=$((${#compactions[@]} * ${#allocators[@]}))
seconds=$(python3 -c "print(max(1, round($total / $pairs, 1)))")
log=$(mktemp)
trap 'rm -f "$log"' EXIT
index=0
started=$(date +%s)
for compaction in "${compactions[@]}"; do
    for allocator in "${allocators[@]}"; do
        seed=$((1000 + index))
        if ! "$strata" stress --duration "$seconds" --threads 4 --seed "$seed" \
            --compaction "$compaction" --filter-policy "$allocator" > "$log" 2>&1 ||
            ! grep -q "^no violations" "$log"; then
            echo "VIOLATION or failure: $compaction x $allocator, seed $seed, $seconds s:"
            tail -20 "$log"
            exit 1
        fi
        echo "ok  $compaction x $allocator  seed $seed: $(grep -E '^puts' "$log")"
        index=$((index + 1))
    done
done
echo "$pairs pairs, $seconds s each, no violation, $(( $(date +%s) - started )) s in all"
