#!/usr/bin/env bash
# Range-filter probe and build cost, load-independent: instructions (callgrind) per key built, per
# key decoded (the reader's work at open) and per probe, by difference between the phases of
# `crates/strata/examples/range_filter_instructions.rs` (each phase runs the ones before it).
# KEYS sorted 16-digit decimal keys (a quarter of the key space), PROBES one-key ranges
# `[key i, key i + 1]` at random `i`, at each quantum `b` in BITS. Also prints the block's and
# the decoded filter's bits per key and, from one run outside valgrind that checks every answer
# against the keys, the ranges answered "maybe" and the false positives.
#
#   scripts/range_filter_probe_instructions.sh [BITS] [KEYS] [PROBES]
#     defaults: "6 10", 200000, 200000
#
# About a minute per quantum; OUT=dir keeps the callgrind files.
set -euo pipefail
bits_list=${1:-"6 10"}
keys=${2:-200000}
probes=${3:-200000}
root=$(cd "$(dirname "$0")/.." && pwd)
out=${OUT:-$(mktemp -d)}
mkdir -p "$out"
cargo build --release -p strata --features internal-benches --example range_filter_instructions \
  --manifest-path "$root/Cargo.toml" >&2
bin="${CARGO_TARGET_DIR:-$root/target}/release/examples/range_filter_instructions"
total() {
  valgrind --tool=callgrind --callgrind-out-file="$out/$1-$2.cg" "$bin" "$1" "$2" "$keys" "$probes" \
    > "$out/$1-$2.txt" 2> "$out/$1-$2.log"
  grep -E '^(summary|totals):' "$out/$1-$2.cg" | head -1 | awk '{print $2}'
}
printf '%-3s %12s %13s %12s %11s %11s %8s %8s %10s\n' b "build/key" "decode/key" "probe" \
  "block b/key" "memory b/key" maybe holding "false pos"
for bits in $bits_list; do
  k=$(total keys "$bits"); b=$(total build "$bits"); d=$(total decode "$bits"); p=$(total probe "$bits")
  check=$("$bin" check "$bits" "$keys" "$probes")
  python3 - "$bits" "$keys" "$probes" "$k" "$b" "$d" "$p" "$check" <<'PY'
import sys
bits, keys, probes, k, b, d, p = (int(x) for x in sys.argv[1:8])
fields = sys.argv[8].split()
check = dict(zip(fields[1::2], (int(x) for x in fields[2::2])))
print(f"{bits:<3} {(b - k) / keys:>12.1f} {(d - b) / keys:>13.1f} {(p - d) / probes:>12.1f} "
      f"{check['block_bytes'] * 8 / keys:>11.2f} {check['memory_bytes'] * 8 / keys:>11.2f} "
      f"{check['maybe']:>8} {check['holding']:>8} {check['false_positives']:>10}")
PY
done
echo "callgrind files in $out" >&2
